// `xsp serve` on a PostgreSQL store (docs/deploy.md): a submission through the REST API waits in the shared queue
// with its reason, an agent (run_agent(), the library call of `xsp agent`, on the fake framework) runs it, and the
// result appears in the API's evaluation list; the agent is listed by GET /agents.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "pg_test_db.h"
#include "server_fixture.h"
#include "xsp/queue/agent.h"
#include "xsp/queue/postgres_queue.h"

namespace xsp {
namespace {

using json = nlohmann::json;

class ServerOnPostgres : public testing::ServerFixture {
 protected:
  /// One job on `store` by an agent named `name` that runs the fake framework of the fixture's zoo on its fake clock.
  AgentOptions one_job_agent(const std::string& store, const std::string& name) {
    AgentOptions a;
    a.store = store;
    a.name = name;
    a.zoo = dir_ / "zoo";
    a.record_machine_state = false;
    a.clock = &clock();
    a.max_jobs = 1;
    AgentCapabilities caps;
    caps.hostname = "test-host";
    caps.frameworks = {{"server-fake", "1.0.0"}};
    a.capabilities = caps;
    return a;
  }
};

TEST_F(ServerOnPostgres, SubmittedThroughTheApiRunByAnAgentListedWithItsResult) {
  XSP_PG_TEST_DATABASE(db);
  ServerOptions o = options();
  o.store = db.url();
  start(o);
  auto c = client();
  const auto r =
      c.Post("/api/v1/jobs", json({{"request", testing::quick_request()}, {"priority", 3}, {"max_attempts", 2}}).dump(),
             "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  const std::int64_t id = body(r)["job"]["id"];
  json job = body(c.Get("/api/v1/jobs/" + std::to_string(id)))["job"];
  EXPECT_EQ(job["state"], "queued");
  EXPECT_EQ(job["priority"], 3);
  EXPECT_NE(job["waiting_reason"].get<std::string>().find("no live agent"), std::string::npos) << job;

  const AgentSummary s = run_agent(one_job_agent(db.url(), "test-agent"));
  EXPECT_EQ(s.jobs_done, 1u);

  job = body(c.Get("/api/v1/jobs/" + std::to_string(id)))["job"];
  EXPECT_EQ(job["state"], "done") << job;
  EXPECT_EQ(job["attempts"], 1);
  EXPECT_EQ(job["agent"]["name"], "test-agent");
  const json evaluations = body(c.Get("/api/v1/evaluations"));
  ASSERT_EQ(evaluations["total"], 1) << evaluations;
  EXPECT_EQ(evaluations["evaluations"][0]["id"], job["evaluation_id"]);
  EXPECT_EQ(evaluations["evaluations"][0]["model"], "server_model");
  const json agents = body(c.Get("/api/v1/agents"))["agents"];
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0]["name"], "test-agent");
  EXPECT_EQ(agents[0]["state"], "stopped");
  EXPECT_EQ(agents[0]["jobs_done"], 1);

  // Retry of a done job is refused; delete keeps the evaluation.
  EXPECT_EQ(c.Post("/api/v1/jobs/" + std::to_string(id) + "/retry", "", "application/json")->status, 409);
  EXPECT_EQ(c.Delete("/api/v1/jobs/" + std::to_string(id))->status, 200);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["total"], 1);
}

TEST_F(ServerOnPostgres, ABadRequestIsFailedByTheAgentNamingTheField) {
  XSP_PG_TEST_DATABASE(db);
  ServerOptions o = options();
  o.store = db.url();
  start(o);
  auto c = client();
  json request = testing::quick_request();
  request["model"] = "not_in_the_zoo";
  const auto r = c.Post("/api/v1/jobs", json({{"request", request}}).dump(), "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  const std::int64_t id = body(r)["job"]["id"];
  EXPECT_EQ(run_agent(one_job_agent(db.url(), "")).jobs_failed, 1u);
  const json job = body(c.Get("/api/v1/jobs/" + std::to_string(id)))["job"];
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["attempts"], 1) << "a bad request is not retried";
  EXPECT_EQ(job["error"]["field"], "model");
  EXPECT_NE(job["error"]["message"].get<std::string>().find("not_in_the_zoo"), std::string::npos) << job;
}

// Jobs come from whoever can submit to the shared store: an agent reads only files of its zoo and data folders, and
// the job that names another one fails naming the field, without its content anywhere.
TEST_F(ServerOnPostgres, AnAgentRefusesAJobNamingAFileOutsideItsFolders) {
  XSP_PG_TEST_DATABASE(db);
  std::filesystem::create_directories(dir_ / "outside");
  { std::ofstream(dir_ / "outside" / "secret.txt") << "TOP-SECRET-LINE\n"; }
  ServerOptions o = options();
  o.store = db.url();
  start(o);
  auto c = client();
  json request = testing::quick_request();
  request["generation"] = {{"prompts_file", (dir_ / "outside" / "secret.txt").string()}};
  const auto r = c.Post("/api/v1/jobs", json({{"request", request}}).dump(), "application/json");
  ASSERT_EQ(r->status, 202) << r->body;  // the server on a shared queue checks requests on their face only
  const std::int64_t id = body(r)["job"]["id"];
  EXPECT_EQ(run_agent(one_job_agent(db.url(), "")).jobs_failed, 1u);
  const auto answer = c.Get("/api/v1/jobs/" + std::to_string(id));
  const json job = body(answer)["job"];
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["error"]["field"], "generation.prompts_file") << job;
  EXPECT_EQ(answer->body.find("TOP-SECRET"), std::string::npos);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["total"], 0);
}

}  // namespace
}  // namespace xsp
