// /api/v1/jobs, POST /api/v1/evaluations and /api/v1/agents: submissions and their jobs, through the JobService
// (xsp/queue/jobs.h) that `xsp submit`, `xsp jobs` and `xsp agents` call too.
#include <algorithm>
#include <iterator>
#include <string_view>

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

// A Slurm task's id ("1234_5", as `xsp jobs` and squeue write it), which the queue's decimal ids never match.
bool is_slurm_id(const std::string& id) {
  const auto us = id.find('_');
  auto digits = [](std::string_view v) {
    return !v.empty() && v.size() <= 18 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return us != std::string::npos && digits(std::string_view(id).substr(0, us)) &&
         digits(std::string_view(id).substr(us + 1));
}

// The Slurm engine, for a request naming a Slurm task: 404 when the server was started without one.
JobEngine& slurm_engine(Api& api, const std::string& id) {
  if (!api.options.slurm)
    throw HttpError{
        404, "no job " + id + ": this server reads no Slurm submissions (start it with `xsp serve --slurm-dir`)", "id"};
  return *api.options.slurm;
}

// Calls the Slurm engine (squeue, sacct, scancel under the hood) one request at a time: it rewrites its folder's
// job.json files as it refreshes. A Slurm command that fails or times out is a 503 to retry later.
template <typename F>
auto slurm_call(Api& api, F&& f) -> decltype(f()) {
  std::lock_guard<std::mutex> lock(api.slurm_mutex);
  try {
    return f();
  } catch (const std::runtime_error& e) {
    throw HttpError{503, std::string("slurm: ") + e.what(), ""};
  }
}

json slurm_job_json(Api& api, const std::string& id) {
  auto job = slurm_call(api, [&] { return slurm_engine(api, id).get(id); });
  if (!job) throw HttpError{404, "no Slurm task " + id + " in this server's Slurm folder", "id"};
  return {{"job", to_json(*job)}};
}

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

// An operation the queue has and Slurm does not (delete, retry): 404 for an unknown task, else 409 saying `why`.
[[noreturn]] void refuse_for_slurm(Api& api, const std::string& id, const std::string& why) {
  slurm_job_json(api, id);
  throw HttpError{409, "Slurm task " + id + ": " + why, "id"};
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
  check_params(req, {"state", "limit", "engine"});
  JobFilter filter;
  if (auto v = param(req, "state")) {
    filter.state = parse_job_state(*v);
    if (!filter.state)
      throw HttpError{400, "state: expected queued, running, done, failed or cancelled, got '" + *v + "'", "state"};
  }
  if (auto v = param(req, "limit")) filter.limit = static_cast<std::size_t>(parse_int_param(*v, "limit", 1, kMaxLimit));
  std::string engine;
  if (auto v = param(req, "engine")) {
    engine = *v;
    if (engine != "queue" && engine != "slurm")
      throw HttpError{400, "engine: expected queue or slurm, got '" + engine + "'", "engine"};
  }
  std::vector<JobInfo> jobs;
  if (engine != "slurm") jobs = call([&] { return api.jobs->list(filter); });
  if (engine != "queue" && api.options.slurm) {
    auto tasks = slurm_call(api, [&] { return api.options.slurm->list(filter); });
    jobs.insert(jobs.end(), std::make_move_iterator(tasks.begin()), std::make_move_iterator(tasks.end()));
    // Both lists are newest first; merged by submission time (ISO 8601 UTC sorts as text), then cut to the limit.
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const JobInfo& a, const JobInfo& b) { return a.submitted_at > b.submitted_at; });
    if (jobs.size() > filter.limit) jobs.resize(filter.limit);
  }
  json list = json::array();
  for (const JobInfo& j : jobs) list.push_back(to_json(j));
  send_json(res, 200, {{"jobs", list}});
}

void routes::get_job(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  if (is_slurm_id(m[1])) {
    send_json(res, 200, slurm_job_json(api, m[1]));
    return;
  }
  send_json(res, 200, job_json(api, parse_id(m[1], "id")));
}

void routes::delete_job(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  if (is_slurm_id(m[1])) {
    refuse_for_slurm(api, m[1],
                     "a Slurm submission is kept in its folder (job.json, the tasks' outputs); remove the folder to "
                     "forget it");
  }
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
  if (is_slurm_id(m[1])) {
    const std::string sid = m[1];
    const auto result = slurm_call(api, [&] { return slurm_engine(api, sid).cancel(sid); });
    switch (result) {
      case JobService::CancelResult::kNotFound:
        throw HttpError{404, "no Slurm task " + sid + " in this server's Slurm folder", "id"};
      case JobService::CancelResult::kAlreadyFinished:
        throw HttpError{409, "Slurm task " + sid + " has finished: nothing to cancel", "id"};
      case JobService::CancelResult::kRemoved:
        send_json(res, 200, slurm_job_json(api, sid));
        return;
      case JobService::CancelResult::kStopping:
        send_json(res, 202, slurm_job_json(api, sid));  // scancel sent SIGTERM; Slurm kills after KillWait
        return;
    }
  }
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
  if (is_slurm_id(m[1])) {
    refuse_for_slurm(api, m[1],
                     "the Slurm engine resubmits a task that failed retryably by itself, up to its max_attempts "
                     "(docs/deploy.md); submit the model again to repeat it");
  }
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
