// The jobs API (docs/server.md "Jobs"): with the server's own queue on the fake framework (retry that really runs
// again, delete, state filter, priority order) and with a fake JobService standing for the shared PostgreSQL queue
// (constraints passed through, agents, waiting reasons, an unreachable queue).
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "fake_job_service.h"
#include "server_fixture.h"

namespace xsp {
namespace {

using nlohmann::json;
using testing::ServerFixture;

class ServerJobs : public ServerFixture {
 protected:
  static std::int64_t submit(httplib::Client& c, const json& body) {
    const auto r = c.Post("/api/v1/jobs", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return 0;
    EXPECT_EQ(r->status, 202) << r->body;
    return ServerFixture::body(r)["job"].value("id", std::int64_t{0});
  }
  // Starts a job that stays running (blocked at its batch size 2) until g_release.
  std::int64_t submit_blocking(httplib::Client& c) {
    testing::g_block_at_batch_2 = true;
    const std::int64_t id = submit(c, testing::quick_request());
    for (int i = 0; i < 30000 && !testing::g_blocked; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(testing::g_blocked);
    return id;
  }
  static json error_of(const httplib::Result& r, int status) {
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, status) << r->body;
    return ServerFixture::body(r)["error"];
  }
  static std::string path(std::int64_t job, const std::string& tail = "") {
    return "/api/v1/jobs/" + std::to_string(job) + tail;
  }
};

TEST_F(ServerJobs, SubmissionWithConstraintsPriorityAndItsErrors) {
  start();
  auto c = client();
  json s = {{"request", testing::quick_request()},
            {"constraints", {{"framework", "server-fake"}, {"host", "here"}}},
            {"priority", 3},
            {"max_attempts", 2}};
  const auto r = c.Post("/api/v1/jobs", s.dump(), "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  const json job = body(r)["job"];
  EXPECT_EQ(job["priority"], 3);
  EXPECT_EQ(job["max_attempts"], 1);  // the server's own queue runs a job once
  EXPECT_EQ(job["constraints"]["host"], "here");
  EXPECT_EQ(job["request"]["model"], "server_model");
  const json done = wait_for_job(job["id"]);
  EXPECT_EQ(done["state"], "done");
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_EQ(done["waiting_reason"], nullptr);

  // A bare EvaluationRequest still works on both routes, with the constraints it implies.
  const std::int64_t bare = submit(c, testing::quick_request());
  EXPECT_EQ(body(c.Get(path(bare)))["job"]["constraints"]["framework"], "server-fake");

  json bad = s;
  bad["constraints"]["gpu_pattern"] = 3;
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "constraints.gpu_pattern");
  bad = s;
  bad["constraints"]["device"] = "tpu";
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "constraints.device");
  bad = s;
  bad["priority"] = "high";
  json e = error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400);
  EXPECT_EQ(e["field"], "priority");
  EXPECT_NE(e["message"].get<std::string>().find("expected an integer"), std::string::npos) << e;
  bad = s;
  bad["max_attempts"] = 0;
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "max_attempts");
  bad = s;
  bad["max_attempts"] = 1.5;
  EXPECT_EQ(error_of(c.Post("/api/v1/evaluations", bad.dump(), "application/json"), 400)["field"], "max_attempts");
  bad = s;
  bad["priority"] = 18446744073709551615u;
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "priority");
  bad = s;
  bad["request"]["model"] = "no_such_model";
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "request.model");
  bad = s;
  bad["request"]["batch_sizes"] = "one";
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "request.batch_sizes");
  bad = s;
  bad["request"] = 1;
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "request");
  bad = s;
  bad["priorty"] = 1;
  EXPECT_EQ(error_of(c.Post("/api/v1/jobs", bad.dump(), "application/json"), 400)["field"], "priorty");
  EXPECT_EQ(body(c.Get("/api/v1/jobs"))["jobs"].size(), 2u);  // none of the bad ones was queued
  EXPECT_EQ(body(c.Get("/api/v1/agents")), json({{"agents", json::array()}}));
}

TEST_F(ServerJobs, RetryRunsAFailedJobAgainWithItsAttemptsReset) {
  start();
  auto c = client();
  const std::int64_t first = submit_blocking(c);
  const std::int64_t job = submit(c, testing::quick_request());
  // The model leaves the zoo while the job waits: when it runs, evaluate()'s validation fails it.
  std::filesystem::rename(dir_ / "zoo", dir_ / "zoo-away");
  std::filesystem::create_directory(dir_ / "zoo");
  testing::g_release = true;
  EXPECT_EQ(wait_for_job(first)["state"], "done");
  json failed = wait_for_job(job);
  ASSERT_EQ(failed["state"], "failed") << failed;
  EXPECT_EQ(failed["attempts"], 1);
  EXPECT_EQ(failed["error"]["field"], "model");

  auto r = c.Post(path(job, "/retry"), "", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body(r)["job"]["id"], job);
  EXPECT_LE(body(r)["job"]["attempts"].get<int>(), 1);  // 0 while queued; the worker may have started it already
  failed = wait_for_job(job);
  ASSERT_EQ(failed["state"], "failed") << failed;
  EXPECT_EQ(failed["attempts"], 1);  // counted again from 0, not 2

  // With the model back, the same job runs to done.
  std::filesystem::remove(dir_ / "zoo");
  std::filesystem::rename(dir_ / "zoo-away", dir_ / "zoo");
  ASSERT_EQ(c.Post(path(job, "/retry"), "", "application/json")->status, 200);
  const json done = wait_for_job(job);
  ASSERT_EQ(done["state"], "done") << done;
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_FALSE(done.contains("error")) << done;
  EXPECT_TRUE(done["evaluation_id"].is_number());

  EXPECT_NE(
      error_of(c.Post(path(job, "/retry"), "", "application/json"), 409)["message"].get<std::string>().find("done"),
      std::string::npos);
  error_of(c.Post(path(999, "/retry"), "", "application/json"), 404);
  error_of(c.Post("/api/v1/jobs/x/retry", "", "application/json"), 400);
}

TEST_F(ServerJobs, RetryOfACancelledJobAndNotOfAQueuedOne) {
  start();
  auto c = client();
  const std::int64_t running = submit_blocking(c);
  const std::int64_t queued = submit(c, testing::quick_request());
  EXPECT_NE(error_of(c.Post(path(queued, "/retry"), "", "application/json"), 409)["message"].get<std::string>().find(
                "queued"),
            std::string::npos);
  error_of(c.Post(path(running, "/retry"), "", "application/json"), 409);
  ASSERT_EQ(c.Post(path(queued, "/cancel"), "", "application/json")->status, 200);
  EXPECT_EQ(body(c.Get(path(queued)))["job"]["state"], "cancelled");
  const auto r = c.Post(path(queued, "/retry"), "", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body(r)["job"]["state"], "queued");
  EXPECT_EQ(body(r)["job"]["cancel_requested"], false);
  testing::g_release = true;
  EXPECT_EQ(wait_for_job(running)["state"], "done");
  const json done = wait_for_job(queued);
  EXPECT_EQ(done["state"], "done");
  EXPECT_EQ(done["attempts"], 1);
}

TEST_F(ServerJobs, DeleteQueuedAndFinishedJobsButNotARunningOne) {
  start();
  auto c = client();
  const std::int64_t running = submit_blocking(c);
  const std::int64_t queued = submit(c, testing::quick_request());
  json e = error_of(c.Delete(path(running)), 409);
  EXPECT_EQ(e["field"], "id");
  EXPECT_NE(e["message"].get<std::string>().find("running"), std::string::npos) << e;
  auto r = c.Delete(path(queued));
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body(r), json({{"deleted", queued}}));
  error_of(c.Get(path(queued)), 404);
  testing::g_release = true;
  const json done = wait_for_job(running);
  ASSERT_EQ(done["state"], "done");
  // The deleted job never ran: one evaluation in the store, the running job's.
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["total"], 1);
  r = c.Delete(path(running));
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(body(c.Get("/api/v1/jobs"))["jobs"].empty());
  // Its evaluation stays.
  EXPECT_EQ(c.Get("/api/v1/evaluations/" + std::to_string(done["evaluation_id"].get<std::int64_t>()))->status, 200);
  error_of(c.Delete(path(running)), 404);
}

TEST_F(ServerJobs, StateFilterAndLimit) {
  start();
  auto c = client();
  const std::int64_t running = submit_blocking(c);
  const std::int64_t a = submit(c, testing::quick_request());
  const std::int64_t b = submit(c, testing::quick_request());
  ASSERT_EQ(c.Post(path(a, "/cancel"), "", "application/json")->status, 200);
  json j = body(c.Get("/api/v1/jobs?state=queued"));
  ASSERT_EQ(j["jobs"].size(), 1u) << j;
  EXPECT_EQ(j["jobs"][0]["id"], b);
  j = body(c.Get("/api/v1/jobs?state=running"));
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["id"], running);
  EXPECT_EQ(body(c.Get("/api/v1/jobs?state=cancelled"))["jobs"][0]["id"], a);
  EXPECT_TRUE(body(c.Get("/api/v1/jobs?state=done"))["jobs"].empty());
  j = body(c.Get("/api/v1/jobs?limit=2"));
  ASSERT_EQ(j["jobs"].size(), 2u);
  EXPECT_EQ(j["jobs"][0]["id"], b);  // newest first
  EXPECT_EQ(j["jobs"][1]["id"], a);
  json e = error_of(c.Get("/api/v1/jobs?state=waiting"), 400);
  EXPECT_EQ(e["field"], "state");
  const std::string message = e["message"];
  for (const char* word : {"waiting", "queued", "running", "done", "failed", "cancelled"})
    EXPECT_NE(message.find(word), std::string::npos) << word << " in " << message;
  EXPECT_EQ(error_of(c.Get("/api/v1/jobs?limit=0"), 400)["field"], "limit");
  EXPECT_EQ(error_of(c.Get("/api/v1/jobs?sort=id"), 400)["field"], "sort");
  testing::g_release = true;
}

TEST_F(ServerJobs, HigherPriorityRunsFirstThenSubmissionOrder) {
  start();
  auto c = client();
  const std::int64_t running = submit_blocking(c);
  const std::int64_t low = submit(c, {{"request", testing::quick_request()}});
  const std::int64_t high = submit(c, {{"request", testing::quick_request()}, {"priority", 5}});
  const std::int64_t low2 = submit(c, {{"request", testing::quick_request()}, {"priority", 0}});
  testing::g_release = true;
  wait_for_job(running);
  // Evaluation ids are given in the order the jobs saved, which is the order they ran (one worker).
  const auto evaluation = [&](std::int64_t job) { return wait_for_job(job)["evaluation_id"].get<std::int64_t>(); };
  EXPECT_LT(evaluation(high), evaluation(low));
  EXPECT_LT(evaluation(low), evaluation(low2));
}

TEST_F(ServerJobs, WritesOnJobsNeedTheToken) {
  ServerOptions o = options();
  o.token = "t0ken";
  start(o);
  auto c = client();
  const json s = {{"request", testing::quick_request()}};
  EXPECT_EQ(c.Post("/api/v1/jobs", s.dump(), "application/json")->status, 401);
  EXPECT_EQ(c.Post(path(1, "/retry"), "", "application/json")->status, 401);
  EXPECT_EQ(c.Delete(path(1))->status, 401);
  EXPECT_EQ(c.Get("/api/v1/agents")->status, 200);  // reads stay open
  const httplib::Headers auth = {{"Authorization", "Bearer t0ken"}};
  const auto r = c.Post("/api/v1/jobs", auth, s.dump(), "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  const std::int64_t job = body(r)["job"]["id"];
  EXPECT_EQ(wait_for_job(job)["state"], "done");
  EXPECT_EQ(c.Delete(path(job), auth)->status, 200);
}

// ---- the server over a job service it does not run (the shared queue's part, played by a fake) ----

class ServerOverSharedQueue : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    ServerOptions o = options();
    o.jobs = fake_;
    start(o);
  }
  std::shared_ptr<testing::FakeJobService> fake_ = std::make_shared<testing::FakeJobService>();
};

TEST_F(ServerOverSharedQueue, ConstraintsGoThroughUnchangedAndNothingRunsHere) {
  auto c = client();
  json request = testing::quick_request();
  request["model"] = "only_on_the_agents";  // the server's zoo does not decide: agents validate against theirs
  const json constraints = {{"framework", "libtorch"}, {"framework_version", "2.11"},          {"device", "cuda"},
                            {"gpu_pattern", "*H100*"}, {"min_gpu_memory_bytes", 85899345920u}, {"host", "gpu-7"}};
  const auto r =
      c.Post("/api/v1/jobs",
             json({{"request", request}, {"constraints", constraints}, {"priority", -4}, {"max_attempts", 5}}).dump(),
             "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  ASSERT_EQ(fake_->submissions.size(), 1u);
  const JobSubmission& s = fake_->submissions[0];
  EXPECT_EQ(s.request.model, "only_on_the_agents");
  EXPECT_EQ(s.constraints.framework, "libtorch");
  EXPECT_EQ(s.constraints.framework_version, "2.11");
  EXPECT_EQ(s.constraints.device, "cuda");
  EXPECT_EQ(s.constraints.gpu_pattern, "*H100*");
  EXPECT_EQ(s.constraints.min_gpu_memory_bytes, 85899345920u);
  EXPECT_EQ(s.constraints.host, "gpu-7");
  EXPECT_EQ(s.priority, -4);
  EXPECT_EQ(s.max_attempts, 5);
  const json job = body(r)["job"];
  EXPECT_EQ(job["constraints"], constraints);
  EXPECT_EQ(job["max_attempts"], 5);
  EXPECT_EQ(r->get_header_value("Location"), "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()));

  // Without constraints: the ones the request implies; without max_attempts: JobSubmission's default.
  ASSERT_EQ(c.Post("/api/v1/jobs", json({{"request", testing::quick_request()}}).dump(), "application/json")->status,
            202);
  ASSERT_EQ(fake_->submissions.size(), 2u);
  EXPECT_EQ(fake_->submissions[1].constraints.framework, "server-fake");
  EXPECT_EQ(fake_->submissions[1].constraints.device, "cpu");
  EXPECT_EQ(fake_->submissions[1].max_attempts, JobSubmission{}.max_attempts);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["total"], 0);  // the server ran nothing
}

TEST_F(ServerOverSharedQueue, WaitingReasonAgentAndFilterInJson) {
  JobInfo waiting;
  waiting.id = 7;
  waiting.state = JobState::kQueued;
  waiting.request = evaluation_request_from_json(testing::quick_request());
  waiting.constraints.gpu_pattern = "H100*";
  waiting.max_attempts = 3;
  waiting.waiting_reason = "no live agent matches: needs a GPU matching 'H100*' (agents: a: CPU only)";
  JobInfo ran = waiting;
  ran.id = 8;
  ran.state = JobState::kRunning;
  ran.waiting_reason.clear();
  ran.attempts = 2;
  ran.agent_id = "0b5e";
  ran.agent_name = "gpu-box";
  ran.lease_expires_at = "2026-11-24T12:00:30Z";
  fake_->jobs = {waiting, ran};
  auto c = client();
  json j = body(c.Get("/api/v1/jobs/7"))["job"];
  EXPECT_EQ(j["waiting_reason"], waiting.waiting_reason);
  EXPECT_EQ(j["agent"], nullptr);
  j = body(c.Get("/api/v1/jobs/8"))["job"];
  EXPECT_EQ(j["waiting_reason"], nullptr);
  EXPECT_EQ(j["attempts"], 2);
  EXPECT_EQ(j["agent"], json({{"id", "0b5e"}, {"name", "gpu-box"}}));
  EXPECT_EQ(j["lease_expires_at"], "2026-11-24T12:00:30Z");
  j = body(c.Get("/api/v1/jobs?state=queued&limit=5"));
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["id"], 7);
  ASSERT_TRUE(fake_->last_filter);
  EXPECT_EQ(fake_->last_filter->limit, 5u);
  EXPECT_EQ(fake_->last_filter->state, JobState::kQueued);
  // The service's answers become the API's: running cannot be deleted, queued cannot be retried.
  EXPECT_EQ(c.Delete("/api/v1/jobs/8")->status, 409);
  EXPECT_EQ(c.Post("/api/v1/jobs/7/retry", "", "application/json")->status, 409);
  EXPECT_EQ(c.Delete("/api/v1/jobs/9")->status, 404);
}

TEST_F(ServerOverSharedQueue, AgentsAreListed) {
  AgentInfo a;
  a.id = "0b5e";
  a.name = "gpu-box";
  a.state = "busy";
  a.capabilities.hostname = "gpu-box.lab";
  a.capabilities.frameworks = {{"libtorch", "2.11.0"}, {"onnxruntime", "1.20.1"}};
  a.capabilities.gpus = {{"NVIDIA H100 80GB HBM3", 85899345920u, "GPU-1"}};
  a.capabilities.has_cuda = true;
  a.current_job = 8;
  a.jobs_done = 12;
  a.jobs_failed = 1;
  a.last_heartbeat_at = "2026-11-24T12:00:05Z";
  AgentInfo b;
  b.id = "77aa";
  b.name = "cpu-box";
  b.state = "lost";
  fake_->agent_list = {a, b};
  auto c = client();
  const json j = body(c.Get("/api/v1/agents"));
  ASSERT_EQ(j["agents"].size(), 2u);
  EXPECT_EQ(j["agents"][0], to_json(a));
  EXPECT_EQ(j["agents"][0]["gpus"][0]["memory_bytes"], 85899345920u);
  EXPECT_EQ(j["agents"][0]["current_job"], 8);
  EXPECT_EQ(j["agents"][1]["name"], "cpu-box");
  EXPECT_EQ(j["agents"][1]["current_job"], nullptr);
  EXPECT_EQ(c.Get("/api/v1/agents?x=1")->status, 400);
}

TEST_F(ServerOverSharedQueue, AnUnreachableQueueIs503AndTheServerStaysUp) {
  fake_->unavailable = true;
  auto c = client();
  auto r = c.Get("/api/v1/jobs");
  ASSERT_EQ(r->status, 503) << r->body;
  EXPECT_NE(r->body.find("connection refused"), std::string::npos) << r->body;
  r = c.Post("/api/v1/jobs", json({{"request", testing::quick_request()}}).dump(), "application/json");
  EXPECT_EQ(r->status, 503) << r->body;
  fake_->unavailable = false;
  EXPECT_EQ(c.Get("/api/v1/jobs")->status, 200);
}

}  // namespace
}  // namespace xsp

namespace xsp {
namespace {

// Slurm's tasks beside the queue's jobs (issue 28): a fake engine standing for slurm::SlurmEngine (the real one, over
// Debian's slurmctld/slurmd, is tested by tests/slurm/slurm_test.sh).
class FakeSlurmEngine final : public JobEngine {
 public:
  std::string name() const override { return "slurm"; }
  std::vector<JobInfo> list(const JobFilter& filter) override {
    std::lock_guard lock(mu);
    std::vector<JobInfo> out;
    for (const JobInfo& j : tasks)
      if ((!filter.state || j.state == *filter.state) && out.size() < filter.limit) out.push_back(j);
    return out;
  }
  std::optional<JobInfo> get(const std::string& id) override {
    std::lock_guard lock(mu);
    for (const JobInfo& j : tasks)
      if (j.external_id == id) return j;
    return std::nullopt;
  }
  JobService::CancelResult cancel(const std::string& id) override {
    std::lock_guard lock(mu);
    for (JobInfo& j : tasks) {
      if (j.external_id != id) continue;
      if (j.state == JobState::kRunning) {
        cancelled.push_back(id);
        j.cancel_requested = true;
        return JobService::CancelResult::kStopping;
      }
      return JobService::CancelResult::kAlreadyFinished;
    }
    return JobService::CancelResult::kNotFound;
  }
  bool owns(const std::string& id) const override { return id.find('_') != std::string::npos; }

  std::mutex mu;
  std::vector<JobInfo> tasks;  // newest first, as the real engine lists them
  std::vector<std::string> cancelled;
};

JobInfo slurm_task(const std::string& id, JobState state, const std::string& submitted_at) {
  JobInfo j;
  j.engine = "slurm";
  j.external_id = id;
  j.state = state;
  j.request = evaluation_request_from_json(testing::quick_request());
  j.submitted_at = submitted_at;
  j.agent_name = "node1";
  return j;
}

class ServerWithSlurm : public testing::ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    slurm_->tasks = {slurm_task("41_1", JobState::kRunning, "2026-11-24T12:00:05Z"),
                     slurm_task("41_0", JobState::kDone, "2026-11-24T12:00:05Z"),
                     slurm_task("40_0", JobState::kFailed, "2026-11-24T11:59:00Z")};
    JobInfo queued;
    queued.id = 7;
    queued.request = evaluation_request_from_json(testing::quick_request());
    queued.submitted_at = "2026-11-24T12:00:00Z";
    fake_->jobs = {queued};
    ServerOptions o = options();
    o.jobs = fake_;
    o.slurm = slurm_;
    start(o);
  }
  std::shared_ptr<testing::FakeJobService> fake_ = std::make_shared<testing::FakeJobService>();
  std::shared_ptr<FakeSlurmEngine> slurm_ = std::make_shared<FakeSlurmEngine>();
};

std::vector<std::string> ids_of(const nlohmann::json& list) {
  std::vector<std::string> out;
  for (const auto& j : list["jobs"])
    out.push_back(j["engine"].get<std::string>() + ":" + j["external_id"].get<std::string>());
  return out;
}

TEST_F(ServerWithSlurm, ListsSlurmTasksBesideQueueJobsNewestFirst) {
  auto c = client();
  EXPECT_EQ(ids_of(body(c.Get("/api/v1/jobs"))),
            (std::vector<std::string>{"slurm:41_1", "slurm:41_0", "queue:7", "slurm:40_0"}));
  EXPECT_EQ(ids_of(body(c.Get("/api/v1/jobs?limit=2"))), (std::vector<std::string>{"slurm:41_1", "slurm:41_0"}));
  EXPECT_EQ(ids_of(body(c.Get("/api/v1/jobs?engine=queue"))), (std::vector<std::string>{"queue:7"}));
  EXPECT_EQ(ids_of(body(c.Get("/api/v1/jobs?engine=slurm&state=failed"))), (std::vector<std::string>{"slurm:40_0"}));
  const auto bad = c.Get("/api/v1/jobs?engine=k8s");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(body(bad)["error"]["field"], "engine");
}

TEST_F(ServerWithSlurm, ASlurmTaskByItsIdCancelOnly) {
  auto c = client();
  const nlohmann::json task = body(c.Get("/api/v1/jobs/41_1"))["job"];
  EXPECT_EQ(task["engine"], "slurm");
  EXPECT_EQ(task["external_id"], "41_1");
  EXPECT_EQ(task["state"], "running");
  EXPECT_EQ(task["agent"]["name"], "node1");
  EXPECT_EQ(c.Get("/api/v1/jobs/41_9")->status, 404);
  // Cancel goes to scancel (202: the task stops after Slurm's signal); a finished task is a 409.
  const auto r = c.Post("/api/v1/jobs/41_1/cancel", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(body(r)["job"]["cancel_requested"], true);
  EXPECT_EQ(slurm_->cancelled, std::vector<std::string>{"41_1"});
  EXPECT_EQ(c.Post("/api/v1/jobs/41_0/cancel", "", "application/json")->status, 409);
  // Slurm retries its own tasks and keeps its submissions: retry and delete are refused with the reason.
  const auto retry = c.Post("/api/v1/jobs/40_0/retry", "", "application/json");
  EXPECT_EQ(retry->status, 409);
  EXPECT_NE(body(retry)["error"]["message"].get<std::string>().find("max_attempts"), std::string::npos);
  EXPECT_EQ(c.Delete("/api/v1/jobs/40_0")->status, 409);
  EXPECT_EQ(c.Delete("/api/v1/jobs/40_7")->status, 404);
  // The queue's jobs keep their routes.
  EXPECT_EQ(body(c.Get("/api/v1/jobs/7"))["job"]["engine"], "queue");
}

TEST_F(ServerOverSharedQueue, ASlurmIdWithoutASlurmFolderIs404NamingTheFlag) {
  auto c = client();
  const auto r = c.Get("/api/v1/jobs/12_3");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(body(r)["error"]["message"].get<std::string>().find("--slurm-dir"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace xsp
