// The REST API (docs/server.md) end to end on loopback: every endpoint's answer and its failures (bad ids, filters,
// bodies, tokens, methods, routes), submissions that really run on the fake framework, cancel, and a bounded
// concurrent load that must leave the store as it was.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "server_fixture.h"
#include "xsp/report/report.h"

namespace xsp {
namespace {

using nlohmann::json;
using testing::ServerFixture;

class ServerApi : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    first_ = seed_evaluation();
    second_ = seed_evaluation();
    start();
  }
  // Asserts status and error shape; returns the message.
  static std::string expect_error(const httplib::Result& r, int status, const std::string& field = "") {
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, status) << r->body;
    const json j = body(r);
    EXPECT_EQ(j["error"]["status"], status) << r->body;
    if (!field.empty()) EXPECT_EQ(j["error"].value("field", ""), field) << r->body;
    return j["error"].value("message", "");
  }
  std::int64_t first_ = 0, second_ = 0;
};

TEST_F(ServerApi, ModelsListsTheZooWithItsFrameworks) {
  auto c = client();
  const auto r = c.Get("/api/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const json j = body(r);
  ASSERT_EQ(j["models"].size(), 1u);
  EXPECT_EQ(j["models"][0]["name"], "server_model");
  EXPECT_EQ(j["models"][0]["frameworks"][0]["name"], "server-fake");
  EXPECT_EQ(j["models"][0]["frameworks"][0]["exported"], true);
  EXPECT_EQ(j["models"][0]["frameworks"][0]["in_this_build"], true);
  EXPECT_TRUE(j["problems"].empty());
}

TEST_F(ServerApi, IndexPageAndEndpointList) {
  auto c = client();
  const auto page = c.Get("/api");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("/api/v1/evaluations/{id}/trace"), std::string::npos);
  const json j = body(c.Get("/api/v1"));
  EXPECT_EQ(j["endpoints"].size(), 18u);
  // The web UI's page: its sections, and the API paths its script reads, each answered by the server.
  const auto ui = c.Get("/");
  ASSERT_TRUE(ui);
  EXPECT_EQ(ui->status, 200);
  for (const char* id :
       {"id=\"evaluations\"", "id=\"submit\"", "id=\"jobs\"", "id=\"models\"", "id=\"filters\"", "id=\"agents\""})
    EXPECT_NE(ui->body.find(id), std::string::npos) << id;
  for (const char* path : {"/evaluations", "/models", "/jobs", "/agents"}) {
    EXPECT_NE(ui->body.find("'" + std::string(path) + "'"), std::string::npos) << path;
    const auto r = c.Get(std::string("/api/v1") + path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << path;
  }
  EXPECT_NE(ui->body.find("'/api/v1/report?ids='"), std::string::npos);
}

TEST_F(ServerApi, ReportPagesOfOneOrSeveralEvaluations) {
  auto c = client();
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  const auto one = c.Get("/api/v1/report?ids=" + std::to_string(first_));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200) << one->body.substr(0, 300);
  EXPECT_NE(one->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(one->body.find("id=\"xsp-charts\""), std::string::npos);
  EXPECT_NE(one->body.find("id=\"evaluation-" + std::to_string(first_) + "\""), std::string::npos);
  const auto two = c.Get("/api/v1/report?ids=" + std::to_string(first_) + "," + std::to_string(second_));
  ASSERT_TRUE(two);
  EXPECT_EQ(two->status, 200);
  EXPECT_NE(two->body.find("id=\"comparison\""), std::string::npos);
  expect_error(c.Get("/api/v1/report?ids=abc"), 400, "ids");
  expect_error(c.Get("/api/v1/report"), 400, "ids");
  expect_error(c.Get("/api/v1/report?ids=999"), 404, "id");
  expect_error(c.Get("/api/v1/report?ids=1&colour=red"), 400, "colour");
}

TEST_F(ServerApi, EvaluationsListNewestFirstWithFiltersAndPages) {
  auto c = client();
  json j = body(c.Get("/api/v1/evaluations"));
  EXPECT_EQ(j["total"], 2);
  ASSERT_EQ(j["evaluations"].size(), 2u);
  EXPECT_EQ(j["evaluations"][0]["id"], second_);  // newest first
  EXPECT_EQ(j["evaluations"][1]["id"], first_);
  EXPECT_EQ(j["evaluations"][0]["model"], "server_model");
  EXPECT_EQ(j["evaluations"][0]["runs"], 4);
  const std::string host = j["evaluations"][0]["host"];
  ASSERT_FALSE(host.empty());

  EXPECT_EQ(body(c.Get("/api/v1/evaluations?model=server_model&framework=server-fake&device=cpu"))["total"], 2);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?host=" + host))["total"], 2);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?host=no-such-host"))["total"], 0);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?model=other"))["evaluations"].size(), 0u);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?device=cuda"))["total"], 0);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?device=cuda:1"))["total"], 0);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?since=2000-01-01&until=2999-12-31"))["total"], 2);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?until=2000-01-01T00:00:00Z"))["total"], 0);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations?since=2999-01-01"))["total"], 0);
  j = body(c.Get("/api/v1/evaluations?limit=1&offset=1"));
  EXPECT_EQ(j["total"], 2);  // the total behind the page
  ASSERT_EQ(j["evaluations"].size(), 1u);
  EXPECT_EQ(j["evaluations"][0]["id"], first_);
}

TEST_F(ServerApi, BadFiltersAre400NamingTheParameter) {
  auto c = client();
  EXPECT_NE(expect_error(c.Get("/api/v1/evaluations?device=tpu"), 400, "device").find("cpu, cuda or cuda:N, got 'tpu'"),
            std::string::npos);
  expect_error(c.Get("/api/v1/evaluations?device=cuda:x"), 400, "device");
  expect_error(c.Get("/api/v1/evaluations?limit=0"), 400, "limit");
  expect_error(c.Get("/api/v1/evaluations?limit=1001"), 400, "limit");
  expect_error(c.Get("/api/v1/evaluations?limit=abc"), 400, "limit");
  expect_error(c.Get("/api/v1/evaluations?offset=-1"), 400, "offset");
  expect_error(c.Get("/api/v1/evaluations?since=yesterday"), 400, "since");
  expect_error(c.Get("/api/v1/evaluations?until=2026-13"), 400, "until");
  expect_error(c.Get("/api/v1/evaluations?model=" + std::string(300, 'm')), 400, "model");
  EXPECT_NE(expect_error(c.Get("/api/v1/evaluations?modle=x"), 400, "modle").find("takes device, framework"),
            std::string::npos);
}

TEST_F(ServerApi, OneEvaluationHasRunsStabilitySystemAndSummary) {
  auto c = client();
  const auto r = c.Get("/api/v1/evaluations/" + std::to_string(first_));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = body(r);
  EXPECT_EQ(j["id"], first_);
  EXPECT_EQ(j["status"], "complete");
  EXPECT_EQ(j["framework"], "server-fake");
  EXPECT_EQ(j["batch_sizes"], json({1, 2}));
  ASSERT_EQ(j["runs"].size(), 4u);
  std::set<std::string> names;
  for (const json& run : j["runs"]) {
    names.insert(run["name"].get<std::string>());
    EXPECT_GT(run["iterations"].get<int>(), 0);
    EXPECT_GT(run["stage_latency_ns"]["predict"]["p50"].get<double>(), 0);
    EXPECT_TRUE(run["stability"]["verdict"].is_string());
    EXPECT_GT(run["span_count"].get<int>(), 0);
  }
  EXPECT_EQ(names, (std::set<std::string>{"M", "M/F"}));
  EXPECT_TRUE(j["system"].contains("host"));
  EXPECT_FALSE(j["summary"].empty());
  EXPECT_EQ(j["settings"]["request"]["model"], "server_model");
}

TEST_F(ServerApi, BadIdsAre400AndMissingOnes404) {
  auto c = client();
  for (const std::string id : {"abc", "-1", "0", "1.5", "1e3", "%201"})
    expect_error(c.Get("/api/v1/evaluations/" + id), 400, "id");
  EXPECT_NE(expect_error(c.Get("/api/v1/evaluations/99999999999999999999"), 400, "id").find("out of range"),
            std::string::npos);
  EXPECT_NE(expect_error(c.Get("/api/v1/evaluations/12345"), 404, "id").find("no evaluation 12345"), std::string::npos);
  expect_error(c.Get("/api/v1/evaluations/abc/analyses"), 400, "id");
  expect_error(c.Get("/api/v1/evaluations/12345/analyses/A1"), 404, "id");
  expect_error(c.Get("/api/v1/evaluations/12345/trace"), 404, "id");
  expect_error(c.Get("/api/v1/jobs/abc"), 400, "id");
  expect_error(c.Get("/api/v1/jobs/777"), 404, "id");
}

TEST_F(ServerApi, AnalysesAsTables) {
  auto c = client();
  const std::string base = "/api/v1/evaluations/" + std::to_string(first_) + "/analyses";
  json j = body(c.Get(base));
  EXPECT_EQ(j["batch_sizes"], json({1, 2}));
  EXPECT_EQ(j["analyses"][0], "A1");

  j = body(c.Get(base + "/A1"));
  ASSERT_EQ(j["tables"].size(), 1u);
  EXPECT_EQ(j["tables"][0]["id"], "A1");
  ASSERT_EQ(j["tables"][0]["rows"].size(), 2u);  // one row per batch size
  EXPECT_EQ(j["tables"][0]["rows"][0]["batch_size"], 1);
  EXPECT_GT(j["tables"][0]["rows"][0]["throughput_samples_per_s"].get<double>(), 0);

  j = body(c.Get(base + "/a2?batch_size=2"));  // ids are case-insensitive
  EXPECT_EQ(j["analysis"], "A2");
  ASSERT_EQ(j["tables"].size(), 1u);
  for (const json& row : j["tables"][0]["rows"]) EXPECT_EQ(row["batch_size"], 2);

  expect_error(c.Get(base + "/A2?batch_size=7"), 400, "batch_size");
  expect_error(c.Get(base + "/A2?batch_size=x"), 400, "batch_size");
  expect_error(c.Get(base + "/A1?latency_bound_ms=-3"), 400, "latency_bound_ms");
  EXPECT_NE(expect_error(c.Get(base + "/Z9"), 404, "analysis").find("expected one of A1"), std::string::npos);
}

TEST_F(ServerApi, CompareSideBySide) {
  auto c = client();
  const std::string ids = std::to_string(first_) + "," + std::to_string(second_);
  const json j = body(c.Get("/api/v1/compare?ids=" + ids));
  EXPECT_EQ(j["ids"], json({first_, second_}));
  ASSERT_FALSE(j["tables"].empty());
  EXPECT_EQ(j["tables"][0]["id"], "compare.evaluations");
  EXPECT_EQ(j["tables"][0]["rows"].size(), 2u);

  expect_error(c.Get("/api/v1/compare"), 400, "ids");
  expect_error(c.Get("/api/v1/compare?ids=" + std::to_string(first_)), 400, "ids");
  expect_error(c.Get("/api/v1/compare?ids=1,abc"), 400, "ids");
  expect_error(c.Get("/api/v1/compare?ids=1,,2"), 400, "ids");
  expect_error(c.Get("/api/v1/compare?ids=" + std::to_string(first_) + ",999"), 404, "id");
  expect_error(c.Get("/api/v1/compare?ids=" + ids + "&batch_size=8"), 400, "batch_size");
}

TEST_F(ServerApi, TraceDownloadsInEachFormat) {
  auto c = client();
  const std::string base = "/api/v1/evaluations/" + std::to_string(first_) + "/trace";
  auto r = c.Get(base);  // chrome, the first batch size's deepest run
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Disposition"),
            "attachment; filename=\"xsp-evaluation-" + std::to_string(first_) + "-run-2.json\"");
  const json chrome = json::parse(r->body);
  EXPECT_FALSE(chrome["traceEvents"].empty());

  r = c.Get(base + "?format=otlp&run=1");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(json::parse(r->body).contains("resourceSpans"));
  EXPECT_NE(r->get_header_value("Content-Disposition").find("-run-1.otlp.json"), std::string::npos);

  r = c.Get(base + "?format=sqlite&batch_size=2&trace_level=model");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body.substr(0, 15), "SQLite format 3");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/vnd.sqlite3");

  expect_error(c.Get(base + "?format=xml"), 400, "format");
  expect_error(c.Get(base + "?trace_level=deep"), 400, "trace_level");
  expect_error(c.Get(base + "?run=0"), 400, "run");
  expect_error(c.Get(base + "?run=99"), 404, "run");
  expect_error(c.Get(base + "?batch_size=64"), 404, "batch_size");
}

TEST_F(ServerApi, UnknownRoutes404AndWrongMethods405) {
  auto c = client();
  expect_error(c.Get("/api/v1/nothing"), 404);
  expect_error(c.Get("/api/v2/evaluations"), 404);
  const auto r = c.Delete("/api/v1/models");
  EXPECT_NE(expect_error(r, 405).find("allowed: GET"), std::string::npos);
  EXPECT_EQ(r->get_header_value("Allow"), "GET");
  EXPECT_EQ(c.Put("/api/v1/jobs/1", "{}", "application/json")->status, 405);
  EXPECT_EQ(c.Post("/api/v1/models", "{}", "application/json")->status, 405);
  EXPECT_EQ(c.Get("/api/v1/jobs/1/cancel")->status, 405);
}

TEST_F(ServerApi, BadBodiesAre400NamingTheFieldOrPosition) {
  auto c = client();
  EXPECT_NE(expect_error(c.Post("/api/v1/evaluations", "{\"model\": 3", "application/json"), 400, "body")
                .find("line 1, column 12"),
            std::string::npos);
  expect_error(c.Post("/api/v1/evaluations", "[1, 2]", "application/json"), 400, "body");
  expect_error(c.Post("/api/v1/evaluations", "", "application/json"), 400, "body");
  json bad = testing::quick_request();
  bad["batch_sizes"] = {0};
  expect_error(c.Post("/api/v1/evaluations", bad.dump(), "application/json"), 400, "batch_sizes");
  bad = testing::quick_request();
  bad["model"] = "no_such_model";
  EXPECT_NE(
      expect_error(c.Post("/api/v1/evaluations", bad.dump(), "application/json"), 400, "model").find("no_such_model"),
      std::string::npos);
  bad = testing::quick_request();
  bad["trace_level"] = "deepest";
  expect_error(c.Post("/api/v1/evaluations", bad.dump(), "application/json"), 400, "trace_level");
  // A form content type (curl -d without -H, or an HTML form on any site) is refused before the body is read.
  bad = testing::quick_request();
  bad["leveled"] = "yes";
  expect_error(c.Post("/api/v1/evaluations", bad.dump(), "application/x-www-form-urlencoded"), 415, "Content-Type");
  expect_error(c.Post("/api/v1/evaluations", bad.dump(), "application/json"), 400, "leveled");
  const std::string huge = "{\"model\": \"" + std::string(2 << 20, 'x') + "\"}";
  expect_error(c.Post("/api/v1/evaluations", huge, "application/json"), 413, "body");
  EXPECT_TRUE(body(c.Get("/api/v1/jobs"))["jobs"].empty());  // nothing was queued
}

TEST_F(ServerApi, SubmittedEvaluationRunsToDoneAndIsListed) {
  auto c = client();
  const auto r = c.Post("/api/v1/evaluations", testing::quick_request().dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const json j = body(r);
  const std::int64_t job = j["job"]["id"];
  EXPECT_EQ(r->get_header_value("Location"), "/api/v1/jobs/" + std::to_string(job));
  const json done = wait_for_job(job);
  ASSERT_EQ(done["state"], "done") << done.dump();
  EXPECT_EQ(done["evaluation_status"], "complete");
  EXPECT_GT(done["progress"]["total"].get<int>(), 0);
  EXPECT_EQ(done["progress"]["done"], done["progress"]["total"]);
  const std::int64_t id = done["evaluation_id"];
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["evaluations"][0]["id"], id);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations/" + std::to_string(id)))["runs"].size(), 4u);
  EXPECT_EQ(body(c.Get("/api/v1/jobs"))["jobs"][0]["id"], job);
  // A finished job cannot be cancelled.
  expect_error(c.Post("/api/v1/jobs/" + std::to_string(job) + "/cancel", "", "application/json"), 409, "id");
}

TEST_F(ServerApi, CancelQueuedAndRunningJobs) {
  auto c = client();
  testing::g_block_at_batch_2 = true;
  const std::int64_t running =
      body(c.Post("/api/v1/evaluations", testing::quick_request().dump(), "application/json"))["job"]["id"];
  for (int i = 0; i < 30000 && !testing::g_blocked; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(testing::g_blocked);
  const std::int64_t queued =
      body(c.Post("/api/v1/evaluations", testing::quick_request().dump(), "application/json"))["job"]["id"];
  json j = body(c.Get("/api/v1/jobs/" + std::to_string(running)));
  EXPECT_EQ(j["job"]["state"], "running");
  EXPECT_FALSE(j["job"]["progress"]["phase"].get<std::string>().empty());
  EXPECT_EQ(body(c.Get("/api/v1/jobs/" + std::to_string(queued)))["job"]["state"], "queued");

  auto r = c.Post("/api/v1/jobs/" + std::to_string(queued) + "/cancel", "", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body(r)["job"]["state"], "cancelled");
  r = c.Post("/api/v1/jobs/" + std::to_string(running) + "/cancel", "", "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(body(r)["job"]["cancel_requested"], true);
  testing::g_release = true;

  const json done = wait_for_job(running);
  EXPECT_EQ(done["state"], "cancelled");
  EXPECT_EQ(done["evaluation_status"], "incomplete");
  const json e = body(c.Get("/api/v1/evaluations/" + std::to_string(done["evaluation_id"].get<std::int64_t>())));
  EXPECT_EQ(e["status"], "incomplete");
  ASSERT_EQ(e["runs"].size(), 2u);  // batch size 1's M and M/F; batch size 2 was cut short
  for (const json& run : e["runs"]) EXPECT_EQ(run["batch_size"], 1);
  EXPECT_EQ(body(c.Get("/api/v1/jobs/" + std::to_string(queued)))["job"]["evaluation_id"], nullptr);
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["total"], 3);  // the cancelled queued job never ran
  expect_error(c.Post("/api/v1/jobs/999/cancel", "", "application/json"), 404, "id");
}

TEST_F(ServerApi, DeleteRemovesTheEvaluationAndItsRuns) {
  auto c = client();
  const std::string path = "/api/v1/evaluations/" + std::to_string(first_);
  const auto r = c.Delete(path);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body(r)["deleted"], first_);
  expect_error(c.Get(path), 404, "id");
  expect_error(c.Delete(path), 404, "id");
  expect_error(c.Delete("/api/v1/evaluations/x"), 400, "id");
  EXPECT_EQ(body(c.Get("/api/v1/evaluations"))["total"], 1);
  auto store = Store::open(dir_ / "s.db", StoreAccess::kRead);
  EXPECT_FALSE(store->load(first_).has_value());
  EXPECT_TRUE(store->load(second_).has_value());
}

// 8 clients x 100 mixed GETs at once: every answer 200, and the store holds what it held (timings: BENCHMARKS.md).
TEST_F(ServerApi, ConcurrentReadersAllSucceedAndTheStoreIsUnchanged) {
  const std::vector<std::string> paths = {"/api/v1/evaluations", "/api/v1/evaluations/" + std::to_string(first_),
                                          "/api/v1/evaluations/" + std::to_string(second_) + "/analyses/A1",
                                          "/api/v1/models"};
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", server_->port());
      for (int i = 0; i < 100; ++i) {
        const auto r = c.Get(paths[(t + i) % paths.size()]);
        (r && r->status == 200 ? ok : bad)++;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok, 800);
  EXPECT_EQ(bad, 0);
  auto store = Store::open(dir_ / "s.db", StoreAccess::kRead);
  EXPECT_EQ(store->count({}), 2u);
  EXPECT_EQ(store->list().front().run_count, 4u);
}

class ServerSecurity : public ServerFixture {};

TEST_F(ServerSecurity, LoopbackAddresses) {
  EXPECT_TRUE(is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("127.1.2.3"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_TRUE(is_loopback_address("localhost"));
  EXPECT_FALSE(is_loopback_address("0.0.0.0"));
  EXPECT_FALSE(is_loopback_address("192.168.1.5"));
  EXPECT_FALSE(is_loopback_address("::"));
  EXPECT_FALSE(is_loopback_address("example.com"));
}

TEST_F(ServerSecurity, AnotherAddressWithoutATokenIsRefused) {
  ServerOptions o = options();
  o.host = "0.0.0.0";
  try {
    Server s(o);
    FAIL() << "started on 0.0.0.0 without a token";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("writes need a token"), std::string::npos) << e.what();
  }
}

TEST_F(ServerSecurity, ASecondServerOnTheSamePortFailsToBind) {
  start();
  ServerOptions o = options();
  o.port = server_->port();
  Server second(o);
  try {
    second.bind();
    FAIL() << "a second server bound port " << o.port;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot bind 127.0.0.1:" + std::to_string(o.port)), std::string::npos)
        << e.what();
  }
}

TEST_F(ServerSecurity, WritesNeedTheTokenOnceOneIsSet) {
  seed_evaluation();
  ServerOptions o = options();
  o.token = "s3cret-token";
  start(o);
  auto c = client();
  const std::string request = testing::quick_request().dump();
  auto r = c.Post("/api/v1/evaluations", request, "application/json");
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(body(r)["error"]["field"], "Authorization");
  r = c.Post("/api/v1/evaluations", {{"Authorization", "Basic czNjcmV0"}}, request, "application/json");
  EXPECT_EQ(r->status, 401);
  r = c.Post("/api/v1/evaluations", {{"Authorization", "Bearer s3cret-tokeN"}}, request, "application/json");
  EXPECT_EQ(r->status, 403);
  r = c.Post("/api/v1/evaluations", {{"Authorization", "Bearer s3cret"}}, request, "application/json");
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(c.Delete("/api/v1/evaluations/1")->status, 401);
  EXPECT_EQ(c.Delete("/api/v1/evaluations/1", {{"Authorization", "Bearer wrong"}})->status, 403);
  EXPECT_EQ(c.Post("/api/v1/jobs/1/cancel", "", "application/json")->status, 401);
  EXPECT_TRUE(body(c.Get("/api/v1/jobs"))["jobs"].empty());  // nothing ran
  EXPECT_EQ(c.Get("/api/v1/evaluations/1")->status, 200);    // reads stay open
  // The right token.
  const httplib::Headers auth = {{"Authorization", "Bearer s3cret-token"}};
  r = c.Post("/api/v1/evaluations", auth, request, "application/json");
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(wait_for_job(body(r)["job"]["id"])["state"], "done");
  EXPECT_EQ(c.Delete("/api/v1/evaluations/1", auth)->status, 200);
}

TEST_F(ServerSecurity, TokenFileIsTrimmedAndAnEmptyOneRefused) {
  std::filesystem::create_directories(dir_);
  { std::ofstream(dir_ / "t") << "  abc123\n"; }
  EXPECT_EQ(read_token_file(dir_ / "t"), "abc123");
  { std::ofstream(dir_ / "empty") << "\n"; }
  EXPECT_THROW(read_token_file(dir_ / "empty"), std::runtime_error);
  EXPECT_THROW(read_token_file(dir_ / "missing"), std::runtime_error);
}

}  // namespace
}  // namespace xsp
