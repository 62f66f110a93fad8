// /api/v1/jobs, POST /api/v1/evaluations and /api/v1/agents: submissions and their jobs, through the JobService
// (xsp/queue/jobs.h) that `xsp submit`, `xsp jobs` and `xsp agents` call too.
#include "api.h"
#include "xsp/eval/measurement.h"

namespace xsp::detail {
namespace {

using json = nlohmann::json;

HttpError not_found(std::int64_t id) {
  return HttpError{404, "no job " + std::to_string(id) + " (never submitted, deleted, or forgotten)", "id"};
}

// Calls the job service, turning what JobService documents it throws into answers: a request or constraint it
// refuses is the client's 400; a full queue, a stopping server or an unreachable queue are 503s to retry later.
template <typename F>
auto call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const RequestError& e) {
    throw HttpError{400, e.what(), e.field()};
  } catch (const std::length_error& e) {
    throw HttpError{503, e.what(), ""};
  } catch (const std::logic_error& e) {
    throw HttpError{503, e.what(), ""};
  } catch (const StoreError&) {
    throw;  // the dispatcher's 503 naming the store
  } catch (const std::runtime_error& e) {
    throw HttpError{503, std::string("job queue: ") + e.what(), ""};
  }
}

// A job read back after an operation on it: another client (or an agent) may have deleted it in between.
JobInfo job_or_404(Api& api, std::int64_t id) {
  auto job = call([&] { return api.jobs->get(id); });
  if (!job) throw not_found(id);
  return std::move(*job);
}

json job_json(Api& api, std::int64_t id) { return {{"job", to_json(job_or_404(api, id))}}; }

// The body of a submission (job_submission_from_json). `request_prefix` is set to where the request's fields are
// in the body ("" or "request."), for the fields of errors found later by validate().
JobSubmission submission_from_body(const httplib::Request& req, std::string& request_prefix) {
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400): the client's mistake, not the server's.
    throw HttpError{400, std::string("request body: invalid JSON: ") + e.what(), "body"};
  }
  request_prefix = body.is_object() && body.contains("request") ? "request." : "";
  try {
    return job_submission_from_json(body);
  } catch (const RequestError& e) {
    throw HttpError{400, e.what(), e.field()};
  }
}

}  // namespace

// POST /evaluations and POST /jobs.
void routes::submit(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {});
  std::string prefix;
  const JobSubmission submission = submission_from_body(req, prefix);
  // Everything checkable without running (model, framework, ranges, files) is a 400 now, not a failed job later.
  // Only when the server runs the job itself: agents have zoos and frameworks of their own, and validate there.
  if (api.local_jobs != nullptr) {
    try {
      validate(submission.request, api.context());
    } catch (const RequestError& e) {
      throw HttpError{400, prefix + e.what(), prefix + e.field()};
    }
  }
  const std::int64_t id = call([&] { return api.jobs->submit(submission); });
  res.set_header("Location", std::string(kPrefix) + "/jobs/" + std::to_string(id));
  send_json(res, 202, job_json(api, id));
}

void routes::list_jobs(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {"state", "limit"});
  JobFilter filter;
  if (auto v = param(req, "state")) {
    filter.state = parse_job_state(*v);
    if (!filter.state)
      throw HttpError{400, "state: expected queued, running, done, failed or cancelled, got '" + *v + "'", "state"};
  }
  if (auto v = param(req, "limit")) filter.limit = static_cast<std::size_t>(parse_int_param(*v, "limit", 1, kMaxLimit));
  json list = json::array();
  for (const JobInfo& j : call([&] { return api.jobs->list(filter); })) list.push_back(to_json(j));
  send_json(res, 200, {{"jobs", list}});
}

void routes::get_job(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  send_json(res, 200, job_json(api, parse_id(m[1], "id")));
}

void routes::delete_job(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  switch (call([&] { return api.jobs->remove(id); })) {
    case JobService::DeleteResult::kNotFound:
      throw not_found(id);
    case JobService::DeleteResult::kRunning:
      throw HttpError{409, "job " + std::to_string(id) + " is running: cancel it first, then delete it", "id"};
    case JobService::DeleteResult::kDeleted:
      send_json(res, 200, {{"deleted", id}});
      return;
  }
}

void routes::cancel_job(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  switch (call([&] { return api.jobs->cancel(id); })) {
    case JobService::CancelResult::kNotFound:
      throw not_found(id);
    case JobService::CancelResult::kAlreadyFinished:
      throw HttpError{409,
                      "job " + std::to_string(id) + " has finished (" + to_string(job_or_404(api, id).state) +
                          "): nothing to cancel",
                      "id"};
    case JobService::CancelResult::kRemoved:
      send_json(res, 200, job_json(api, id));
      return;
    case JobService::CancelResult::kStopping:
      // Accepted: the evaluation stops after its current batch and saves its complete runs.
      send_json(res, 202, job_json(api, id));
      return;
  }
}

void routes::retry_job(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  switch (call([&] { return api.jobs->retry(id); })) {
    case JobService::RetryResult::kNotFound:
      throw not_found(id);
    case JobService::RetryResult::kNotFinished:
      throw HttpError{409,
                      "job " + std::to_string(id) + " is " + to_string(job_or_404(api, id).state) +
                          ": nothing to retry (only failed or cancelled jobs are)",
                      "id"};
    case JobService::RetryResult::kDone:
      throw HttpError{409, "job " + std::to_string(id) + " is done: submit its request again to repeat it", "id"};
    case JobService::RetryResult::kRequeued:
      send_json(res, 200, job_json(api, id));
      return;
  }
}

void routes::list_agents(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {});
  json list = json::array();
  for (const AgentInfo& a : call([&] { return api.jobs->agents(); })) list.push_back(to_json(a));
  send_json(res, 200, {{"agents", list}});
}

}  // namespace xsp::detail
