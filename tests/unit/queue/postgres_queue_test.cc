// The job queue in PostgreSQL (include/xsp/queue/postgres_queue.h) on a real PostgreSQL 15 that CTest starts
// (tests/pg/pg_cluster.sh): claiming, leases, attempts, publishing, matching, cancel/retry/delete, NOTIFY, hostile
// text. The agents as processes (SIGKILL, a database restart) are tested by tests/pg/agents_test.sh.
#include "xsp/queue/postgres_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "../store/minimal_record.h"
#include "pg_test_db.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

using namespace std::chrono_literals;

JobSubmission submission(const std::string& model, int max_attempts = 3) {
  JobSubmission s;
  s.request.model = model;
  s.request.framework = "libtorch";
  s.constraints = constraints_for(s.request);
  s.max_attempts = max_attempts;
  return s;
}

AgentCapabilities cpu_agent(const std::string& host = "host-a") {
  AgentCapabilities c;
  c.hostname = host;
  c.frameworks = {{"libtorch", "2.11.0"}, {"opencv-dnn", "4.6.0"}};
  return c;
}

AgentCapabilities gpu_agent(const std::string& gpu, std::uint64_t memory_gib, const std::string& host = "host-g") {
  AgentCapabilities c = cpu_agent(host);
  c.gpus = {{gpu, memory_gib << 30, "GPU-1"}};
  c.has_cuda = true;
  return c;
}

QueueOptions short_lease(std::chrono::milliseconds lease = 300ms) {
  QueueOptions o;
  o.lease = lease;
  o.agent_lost_after = 10s;
  return o;
}

std::int64_t count(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec1(sql)[0].as<std::int64_t>();
}

TEST(PostgresQueue, SubmitClaimCompletePublishesOneResultInTheJobsTransaction) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  const std::int64_t id = q->submit(submission("Digits_CNN"));
  const std::string agent = q->register_agent("a", cpu_agent(), nlohmann::json::object());
  auto job = q->claim(agent, cpu_agent());
  ASSERT_TRUE(job);
  EXPECT_EQ(job->id, id);
  EXPECT_EQ(job->state, JobState::kRunning);
  EXPECT_EQ(job->attempts, 1);
  EXPECT_EQ(job->request.model, "Digits_CNN");
  EXPECT_FALSE(q->claim(agent, cpu_agent())) << "the only job is running";
  EvaluationRecord r = testing::minimal_record("Digits_CNN");
  ASSERT_TRUE(q->complete(agent, id, r));
  EXPECT_GT(r.id, 0);
  const auto done = q->get(id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, JobState::kDone);
  EXPECT_EQ(done->evaluation_id, r.id);
  EXPECT_EQ(done->evaluation_status, "complete");
  EXPECT_EQ(done->agent_name, "a");
  // Completing again (as after a COMMIT whose outcome was unknown) publishes nothing more.
  EvaluationRecord again = testing::minimal_record("Digits_CNN");
  EXPECT_TRUE(q->complete(agent, id, again));
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM evaluations"), 1);
  auto store = Store::open(db.url(), StoreAccess::kRead);
  const auto loaded = store->load(r.id);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->runs.size(), 1u);
  const auto agents = q->agents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].jobs_done, 1);
  EXPECT_EQ(agents[0].state, "idle");
}

TEST(PostgresQueue, FourAgentsTwoHundredJobsEachDoneExactlyOnce) {
  XSP_PG_TEST_DATABASE(db);
  auto submitter = PostgresJobQueue::open(db.url());
  constexpr int kJobs = 200;
  for (int i = 0; i < kJobs; ++i) submitter->submit(submission("m" + std::to_string(i)));
  std::mutex mu;
  std::map<std::int64_t, int> claimed_by;  // job -> agent index
  std::atomic<int> duplicate_claims{0};
  std::vector<std::thread> agents;
  for (int a = 0; a < 4; ++a) {
    agents.emplace_back([&, a] {
      auto q = PostgresJobQueue::open(db.url());
      const std::string id = q->register_agent("agent" + std::to_string(a), cpu_agent(), nlohmann::json::object());
      while (auto job = q->claim(id, cpu_agent())) {
        {
          std::lock_guard lock(mu);
          if (!claimed_by.emplace(job->id, a).second) ++duplicate_claims;
        }
        EvaluationRecord r = testing::minimal_record(job->request.model);
        EXPECT_TRUE(q->complete(id, job->id, r));
      }
    });
  }
  for (auto& t : agents) t.join();
  EXPECT_EQ(duplicate_claims.load(), 0);
  EXPECT_EQ(claimed_by.size(), static_cast<std::size_t>(kJobs));
  std::set<int> agents_used;
  for (const auto& [job, a] : claimed_by) agents_used.insert(a);
  EXPECT_GE(agents_used.size(), 2u) << "SKIP LOCKED lets agents claim side by side";
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM jobs WHERE state = 'done'"), kJobs);
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM evaluations"), kJobs);
  // One result per job, each the job's own model.
  EXPECT_EQ(count(db.url(), "SELECT count(DISTINCT evaluation_id) FROM jobs"), kJobs);
  EXPECT_EQ(count(db.url(),
                  "SELECT count(*) FROM jobs j JOIN evaluations e ON e.id = j.evaluation_id "
                  "WHERE e.model_name <> j.model"),
            0);
}

TEST(PostgresQueue, ExpiredLeaseRequeuesTheJobAndTheOldAgentCannotPublish) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url(), short_lease());
  const std::int64_t id = q->submit(submission("m"));
  const std::string dead = q->register_agent("dead", cpu_agent(), nlohmann::json::object());
  const std::string alive = q->register_agent("alive", cpu_agent(), nlohmann::json::object());
  ASSERT_TRUE(q->claim(dead, cpu_agent()));
  EXPECT_FALSE(q->claim(alive, cpu_agent())) << "the lease still holds";
  std::this_thread::sleep_for(450ms);
  const auto job = q->claim(alive, cpu_agent());
  ASSERT_TRUE(job) << "the lease expired: the job is claimable again";
  EXPECT_EQ(job->id, id);
  EXPECT_EQ(job->attempts, 2);
  EXPECT_NE(job->error.find("agent dead stopped renewing its lease"), std::string::npos) << job->error;
  EXPECT_EQ(q->renew(dead, id, {}), PostgresJobQueue::LeaseState::kLost);
  EvaluationRecord late = testing::minimal_record("m");
  EXPECT_FALSE(q->complete(dead, id, late)) << "the dead agent's result would be a duplicate";
  EvaluationRecord r = testing::minimal_record("m");
  EXPECT_TRUE(q->complete(alive, id, r));
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM evaluations"), 1);
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM job_attempts WHERE outcome = 'expired'"), 1);
}

TEST(PostgresQueue, RenewingKeepsTheJob) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url(), short_lease());
  const std::int64_t id = q->submit(submission("m"));
  const std::string a = q->register_agent("a", cpu_agent(), nlohmann::json::object());
  const std::string b = q->register_agent("b", cpu_agent(), nlohmann::json::object());
  ASSERT_TRUE(q->claim(a, cpu_agent()));
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(100ms);
    Progress p;
    p.done = i + 1;
    p.total = 5;
    p.what = "batch size 1";
    EXPECT_EQ(q->renew(a, id, p), PostgresJobQueue::LeaseState::kHeld);
  }
  EXPECT_FALSE(q->claim(b, cpu_agent())) << "500 ms with renewals every 100 ms: still a's";
  const auto job = q->get(id);
  EXPECT_EQ(job->progress.done, 5);
  EXPECT_EQ(job->progress.what, "batch size 1");
}

TEST(PostgresQueue, AttemptsAreCappedThenTheJobFailsWithTheReason) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url(), short_lease(200ms));
  const std::int64_t id = q->submit(submission("m", 2));
  const std::string a = q->register_agent("crashy", cpu_agent(), nlohmann::json::object());
  ASSERT_TRUE(q->claim(a, cpu_agent()));
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(q->claim(a, cpu_agent())) << "attempt 2 of 2";
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(q->claim(a, cpu_agent())) << "no third attempt";
  const auto job = q->get(id);
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->attempts, 2);
  EXPECT_NE(job->error.find("attempt 2 of 2"), std::string::npos) << job->error;
  EXPECT_FALSE(job->finished_at.empty());

  // A run that fails counts as well: with one attempt left it is queued again, then failed.
  const std::int64_t id2 = q->submit(submission("m2", 2));
  auto j = q->claim(a, cpu_agent());
  ASSERT_TRUE(j);
  EXPECT_TRUE(q->fail(a, id2, "predictor crashed", "", false));
  EXPECT_EQ(q->get(id2)->state, JobState::kQueued);
  EXPECT_NE(q->get(id2)->error.find("attempt 1 of 2: predictor crashed"), std::string::npos);
  ASSERT_TRUE(q->claim(a, cpu_agent()));
  EXPECT_TRUE(q->fail(a, id2, "predictor crashed", "", false));
  EXPECT_EQ(q->get(id2)->state, JobState::kFailed);
}

TEST(PostgresQueue, BadRequestFailsAtOnceNamingTheField) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  const std::int64_t id = q->submit(submission("no_such_model", 3));
  const std::string a = q->register_agent("a", cpu_agent(), nlohmann::json::object());
  ASSERT_TRUE(q->claim(a, cpu_agent()));
  EXPECT_TRUE(q->fail(a, id, "model: no model 'no_such_model' in the zoo", "model", true));
  const auto job = q->get(id);
  EXPECT_EQ(job->state, JobState::kFailed) << "a bad request is not retried";
  EXPECT_EQ(job->attempts, 1);
  EXPECT_EQ(job->error_field, "model");
  EXPECT_NE(job->error.find("no model 'no_such_model'"), std::string::npos);
  // Refused on its face at submit: no job is written.
  JobSubmission bad = submission("m");
  bad.max_attempts = 0;
  EXPECT_THROW(q->submit(bad), RequestError);
  bad = submission("");
  EXPECT_THROW(q->submit(bad), RequestError);
  bad = submission("m");
  bad.constraints.framework = "";
  bad.request.framework = "";
  bad.constraints.framework_version = "2.11";
  EXPECT_THROW(q->submit(bad), RequestError);
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM jobs"), 1);
}

TEST(PostgresQueue, HandBackDoesNotCountTheAttempt) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  const std::int64_t id = q->submit(submission("m", 1));
  const std::string a = q->register_agent("a", cpu_agent(), nlohmann::json::object());
  ASSERT_TRUE(q->claim(a, cpu_agent()));
  EXPECT_TRUE(q->hand_back(a, id));
  auto job = q->get(id);
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->attempts, 0);
  ASSERT_TRUE(q->claim(a, cpu_agent())) << "its one attempt is still there";
  EXPECT_FALSE(q->hand_back("00000000-0000-0000-0000-000000000000", id)) << "only the owner hands it back";
}

TEST(PostgresQueue, ClaimMatchesTheSameRuleAsMismatchReason) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  struct Case {
    std::string name;
    JobConstraints c;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& name, auto edit) {
    JobConstraints c;
    c.framework = "libtorch";
    edit(c);
    cases.push_back({name, c});
  };
  add("any cpu", [](JobConstraints&) {});
  add("cuda", [](JobConstraints& c) { c.device = "cuda"; });
  add("gpu H100", [](JobConstraints& c) {
    c.gpu_pattern = "*H100*";
    c.device = "cuda";
  });
  add("gpu H200", [](JobConstraints& c) {
    c.gpu_pattern = "*H200*";
    c.device = "cuda";
  });
  add("gpu literal %", [](JobConstraints& c) { c.gpu_pattern = "NVIDIA%"; });
  add("gpu literal _", [](JobConstraints& c) { c.gpu_pattern = "NVIDIA_H100*"; });
  add("gpu ?", [](JobConstraints& c) { c.gpu_pattern = "NVIDIA H?00 80GB HBM3"; });
  add("memory 64 GiB", [](JobConstraints& c) { c.min_gpu_memory_bytes = 64ull << 30; });
  add("memory 100 GiB", [](JobConstraints& c) { c.min_gpu_memory_bytes = 100ull << 30; });
  add("host a", [](JobConstraints& c) { c.host = "host-a"; });
  add("host g", [](JobConstraints& c) { c.host = "host-g"; });
  add("version 2.11", [](JobConstraints& c) { c.framework_version = "2.11"; });
  add("version 2.1", [](JobConstraints& c) { c.framework_version = "2.1"; });
  add("version 2.11.0", [](JobConstraints& c) { c.framework_version = "2.11.0"; });
  add("onnxruntime", [](JobConstraints& c) { c.framework = "onnxruntime"; });
  add("any framework", [](JobConstraints& c) { c.framework = ""; });

  const std::vector<AgentCapabilities> agents = {cpu_agent("host-a"), gpu_agent("NVIDIA H100 80GB HBM3", 80)};
  for (const AgentCapabilities& caps : agents) {
    for (const Case& k : cases) {
      // One job at a time: whether this agent claims it must equal mismatch_reason() == "".
      JobSubmission s = submission("m");
      s.request.framework = k.c.framework;
      s.request.device = k.c.device;
      s.constraints = k.c;
      const std::int64_t id = q->submit(s);
      const std::string agent = q->register_agent("probe", caps, nlohmann::json::object());
      const auto job = q->claim(agent, caps);
      const std::string why = mismatch_reason(k.c, caps);
      EXPECT_EQ(job.has_value(), why.empty()) << k.name << " on " << caps.hostname << ": " << why;
      if (job) EXPECT_EQ(job->id, id);
      if (job) EXPECT_TRUE(q->hand_back(agent, id));
      ASSERT_EQ(q->cancel(id), JobService::CancelResult::kRemoved);
    }
  }
}

TEST(PostgresQueue, AJobNoAgentCanRunStaysQueuedAndSaysWhy) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  JobSubmission s = submission("resnet50");
  s.request.device = "cuda";
  s.constraints.device = "cuda";
  s.constraints.gpu_pattern = "*H100*";
  const std::int64_t id = q->submit(s);
  EXPECT_NE(q->get(id)->waiting_reason.find("no live agent"), std::string::npos);
  const std::string cpu = q->register_agent("cpu-box", cpu_agent(), nlohmann::json::object());
  const std::string h200 = q->register_agent("h200-box", gpu_agent("NVIDIA H200", 141), nlohmann::json::object());
  EXPECT_FALSE(q->claim(cpu, cpu_agent()));
  EXPECT_FALSE(q->claim(h200, gpu_agent("NVIDIA H200", 141)));
  const auto job = q->get(id);
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_NE(job->waiting_reason.find("cpu-box: needs a CUDA device"), std::string::npos) << job->waiting_reason;
  EXPECT_NE(job->waiting_reason.find("h200-box: needs a GPU matching '*H100*' (this agent has NVIDIA H200 141 GiB)"),
            std::string::npos)
      << job->waiting_reason;
  const auto listed = q->list({JobState::kQueued, 10});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].waiting_reason, job->waiting_reason);
  const std::string h100 =
      q->register_agent("h100-box", gpu_agent("NVIDIA H100 80GB HBM3", 80), nlohmann::json::object());
  EXPECT_EQ(q->get(id)->waiting_reason, "") << "a live agent can run it now";
  EXPECT_TRUE(q->claim(h100, gpu_agent("NVIDIA H100 80GB HBM3", 80)));
}

TEST(PostgresQueue, PriorityThenSubmissionOrder) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  JobSubmission low = submission("low"), high = submission("high");
  high.priority = 5;
  const std::int64_t first_low = q->submit(low);
  const std::int64_t second_low = q->submit(low);
  const std::int64_t h = q->submit(high);
  const std::string a = q->register_agent("a", cpu_agent(), nlohmann::json::object());
  EXPECT_EQ(q->claim(a, cpu_agent())->id, h);
  EXPECT_EQ(q->claim(a, cpu_agent())->id, first_low);
  EXPECT_EQ(q->claim(a, cpu_agent())->id, second_low);
}

TEST(PostgresQueue, CancelRetryDelete) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  const std::int64_t queued = q->submit(submission("q"));
  EXPECT_EQ(q->cancel(queued), JobService::CancelResult::kRemoved);
  EXPECT_EQ(q->get(queued)->state, JobState::kCancelled);
  EXPECT_EQ(q->cancel(queued), JobService::CancelResult::kAlreadyFinished);
  EXPECT_EQ(q->cancel(999), JobService::CancelResult::kNotFound);

  const std::int64_t running = q->submit(submission("r"));
  const std::string a = q->register_agent("a", cpu_agent(), nlohmann::json::object());
  ASSERT_EQ(q->claim(a, cpu_agent())->id, running);
  EXPECT_EQ(q->retry(running), JobService::RetryResult::kNotFinished);
  EXPECT_EQ(q->remove(running), JobService::DeleteResult::kRunning);
  EXPECT_EQ(q->cancel(running), JobService::CancelResult::kStopping);
  EXPECT_EQ(q->renew(a, running, {}), PostgresJobQueue::LeaseState::kCancelRequested);
  EvaluationRecord partial = testing::minimal_record("r", "incomplete");
  ASSERT_TRUE(q->complete(a, running, partial));
  auto job = q->get(running);
  EXPECT_EQ(job->state, JobState::kCancelled);
  EXPECT_EQ(job->evaluation_status, "incomplete");
  EXPECT_EQ(job->evaluation_id, partial.id) << "the complete runs are kept, as Ctrl-C does";

  EXPECT_EQ(q->retry(running), JobService::RetryResult::kRequeued);
  job = q->get(running);
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->attempts, 0);
  EXPECT_FALSE(job->evaluation_id);
  ASSERT_EQ(q->claim(a, cpu_agent())->id, running);
  EvaluationRecord r = testing::minimal_record("r");
  ASSERT_TRUE(q->complete(a, running, r));
  EXPECT_EQ(q->retry(running), JobService::RetryResult::kDone);
  EXPECT_EQ(q->remove(running), JobService::DeleteResult::kDeleted);
  EXPECT_FALSE(q->get(running));
  EXPECT_EQ(q->remove(running), JobService::DeleteResult::kNotFound);
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM evaluations"), 2) << "deleting a job keeps its evaluations";
}

TEST(PostgresQueue, NotifyWakesAWaitingAgent) {
  XSP_PG_TEST_DATABASE(db);
  auto agent_side = PostgresJobQueue::open(db.url());
  auto submitter = PostgresJobQueue::open(db.url());
  EXPECT_FALSE(agent_side->wait_for_work(200ms)) << "nothing submitted: the wait times out";
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    submitter->submit(submission("m"));
  });
  const auto t0 = std::chrono::steady_clock::now();
  const bool woke = agent_side->wait_for_work(10s);
  const auto waited = std::chrono::steady_clock::now() - t0;
  later.join();
  EXPECT_TRUE(woke);
  EXPECT_LT(waited, 5s) << "woken by NOTIFY, not by the timeout";
}

TEST(PostgresQueue, ConnectionLostIsReportedThenRecovered) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  q->submit(submission("m"));
  {
    pqxx::connection admin(db.url());
    pqxx::nontransaction tx(admin);
    tx.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        db.name());
  }
  EXPECT_THROW(q->list({}), QueueUnavailable);
  EXPECT_EQ(q->list({}).size(), 1u) << "the next call reconnects";
}

TEST(PostgresQueue, HostileTextInEveryFieldIsStoredAsData) {
  XSP_PG_TEST_DATABASE(db);
  auto q = PostgresJobQueue::open(db.url());
  const std::vector<std::string> hostile = {"x'); DROP TABLE jobs; --",        "\" OR 1=1 --", "$1", "%_\\",
                                            "Robert'); DELETE FROM agents;--", "ünïcødé ✓"};
  for (const std::string& text : hostile) {
    JobSubmission s = submission(text);
    s.request.framework = text;
    s.constraints.framework = text;
    s.constraints.framework_version = text;
    s.constraints.gpu_pattern = text;
    s.constraints.host = text;
    const std::int64_t id = q->submit(s);
    AgentCapabilities caps = cpu_agent(text);
    caps.frameworks = {{text, text}};
    caps.gpus = {{text, 1ull << 30, text}};
    const std::string agent = q->register_agent(text, caps, nlohmann::json{{"note", text}});
    const auto job = q->get(id);
    ASSERT_TRUE(job);
    EXPECT_EQ(job->request.model, text);
    EXPECT_EQ(job->constraints.gpu_pattern, text);
    EXPECT_EQ(job->constraints.host, text);
    EXPECT_EQ(job->constraints.framework_version, text);
    // The pattern is a glob: its % and _ are literal, so a GPU named exactly `text` matches only if the glob does.
    const auto claimed = q->claim(agent, caps);
    EXPECT_EQ(claimed.has_value(), mismatch_reason(job->constraints, caps).empty()) << text;
    if (claimed) {
      EXPECT_TRUE(q->fail(agent, id, text, text, true));
      EXPECT_EQ(q->get(id)->error, text);
    }
  }
  const auto agents = q->agents();
  ASSERT_EQ(agents.size(), hostile.size());
  std::set<std::string> names;
  for (const AgentInfo& a : agents) names.insert(a.name);
  EXPECT_EQ(names, std::set<std::string>(hostile.begin(), hostile.end()));
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM jobs"), static_cast<std::int64_t>(hostile.size()));
}

}  // namespace
}  // namespace xsp
