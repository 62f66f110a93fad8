// A serving evaluation as stored and shown: the record's layout (what src/analysis/serving_join.cc reads), its round
// trip through the SQLite store, the sweep's stopping rules, and `xsp bench-serve` / `xsp show` in-process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../cli/cli_harness.h"
#include "cli.h"
#include "test_server.h"
#include "xsp/serve/serving.h"
#include "xsp/store/store.h"

namespace xsp::serve {
namespace {

class ServingRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xsp-serve-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int xsp(const std::vector<std::string>& args) {
    cli::CliEnvironment env;
    env.record_machine_state = false;
    return xsp::testing::run_xsp_captured(args, env, out_, err_);
  }

  std::filesystem::path dir_;
  std::string out_, err_;
};

ServingStudy study_against(const testing::ScriptedServer& server) {
  ClientOptions o;
  o.url = server.url();
  o.model = "scripted";
  o.prompts = {{"ttft=5 itl=2 tokens=4", 0, 0}, {"mode=http500", 0, 0}, {"tokens=2 usage=0", 0, 0}};
  o.num_requests = 3;
  ServingStudy study;
  ServingPoint point;
  point.options = o;
  point.run = run_client(o);
  point.summary = summarize(point.run, study.bounds);
  study.points.push_back(std::move(point));
  study.prompts = {{"source", "file"}, {"file", "scripts.txt"}, {"count", 3}};
  return study;
}

TEST_F(ServingRecordTest, RequestRowsCarryTheJoinsFieldNamesAndRoundTripThroughTheStore) {
  testing::ScriptedServer server;
  const ServingStudy study = study_against(server);
  EvaluationRecord record = serving_record(study);
  EXPECT_EQ(record.kind(), RecordKind::kServing);
  EXPECT_EQ(record.scenario, "serving");
  EXPECT_EQ(to_string(RecordKind::kServing), "serving");
  const nlohmann::json& rows = record.settings["serving"]["requests"];
  ASSERT_EQ(rows.size(), 3u);
  // ClientRequestTimes (xsp/analysis/serving_join.h): request_id, arrival_ns, sent_ns, token_ns, output_tokens, ok,
  // error, with its types.
  for (const nlohmann::json& row : rows) {
    EXPECT_TRUE(row["request_id"].is_string());
    EXPECT_TRUE(row["arrival_ns"].is_number_integer());
    EXPECT_TRUE(row["sent_ns"].is_number_integer());
    EXPECT_TRUE(row["token_ns"].is_array());
    EXPECT_TRUE(row["output_tokens"].is_number_integer());
    EXPECT_TRUE(row["ok"].is_boolean());
    EXPECT_TRUE(row["error"].is_string());
    EXPECT_EQ(row["trace_id"].get<std::string>().size(), 32u);
  }
  EXPECT_EQ(rows[0]["token_ns"].size(), 4u);
  EXPECT_FALSE(rows[1]["ok"].get<bool>());
  EXPECT_EQ(rows[1]["reason"], "http_500");
  EXPECT_EQ(rows[2]["usage_reported"], false);
  EXPECT_TRUE(record.settings["serving"]["output_tokens_estimated"].get<bool>());
  EXPECT_EQ(record.settings["serving"]["summary"][0]["failures"]["http_500"], 1);

  auto store = Store::open(dir_ / "xsp.db");
  const std::int64_t id = store->save(record);
  const auto loaded = store->load(id);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->kind(), RecordKind::kServing);
  EXPECT_EQ(loaded->settings, record.settings);
  EXPECT_TRUE(loaded->runs.empty());
  // The summary reads back to the same figures.
  const ServingSummary back = summary_from_json(loaded->settings["serving"]["summary"][0]);
  EXPECT_EQ(back.completed, 2u);
  EXPECT_EQ(back.failures, study.points[0].summary.failures);
  EXPECT_DOUBLE_EQ(back.ttft_ns.p50, study.points[0].summary.ttft_ns.p50);
  EXPECT_DOUBLE_EQ(back.tpot_ns.p99, study.points[0].summary.tpot_ns.p99);
  EXPECT_TRUE(std::isnan(back.goodput_per_s));
  const std::vector<Table> tables = serving_tables(*loaded);
  ASSERT_EQ(tables.size(), 3u);
  ASSERT_EQ(tables[0].rows.size(), 1u);
  EXPECT_EQ(std::get<std::int64_t>(tables[0].rows[0][2]), 2);  // ok
  ASSERT_EQ(tables[2].rows.size(), 1u);
  EXPECT_EQ(std::get<std::string>(tables[2].rows[0][1]), "http_500");
}

TEST(ServingSweep, ParsesAndRefusesWithTheFlagsWords) {
  const Sweep s = parse_sweep("request-rate=1,2.5,inf");
  EXPECT_EQ(s.parameter, "request-rate");
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_TRUE(std::isinf(s.values[2]));
  EXPECT_EQ(parse_sweep("max-concurrency=1,8").values, (std::vector<double>{1, 8}));
  for (const char* bad : {"request-rate", "qps=1,2", "request-rate=1,,2", "request-rate=0", "max-concurrency=1.5",
                          "max-concurrency=inf", "request-rate=x"})
    EXPECT_THROW(parse_sweep(bad), std::invalid_argument) << bad;
}

TEST(ServingSweep, StopsPastSaturationByTheRuleOfItsParameter) {
  const Sweep rate{"request-rate", {1, 2, 4}};
  ServingSummary keeps_up, falls_behind;
  keeps_up.offered_requests_per_s = 4.0;
  keeps_up.requests_per_s = 3.7;  // 92.5%
  falls_behind.offered_requests_per_s = 4.0;
  falls_behind.requests_per_s = 3.5;  // 87.5%
  EXPECT_FALSE(saturation(rate, 4, keeps_up, nullptr).has_value());
  const auto why = saturation(rate, 4, falls_behind, nullptr);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("achieved < 0.9 x offered"), std::string::npos);
  const Sweep cap{"max-concurrency", {1, 2, 4}};
  ServingSummary a, b, c;
  a.output_tokens_per_s = 100;
  b.output_tokens_per_s = 106;  // +6%: goes on
  c.output_tokens_per_s = 110;  // +3.8% over b: stops
  EXPECT_FALSE(saturation(cap, 1, a, nullptr).has_value());
  EXPECT_FALSE(saturation(cap, 2, b, &a).has_value());
  const auto stop = saturation(cap, 4, c, &b);
  ASSERT_TRUE(stop.has_value());
  EXPECT_NE(stop->find("rising <= 5%"), std::string::npos);
}

TEST_F(ServingRecordTest, BenchServeStoresAnEvaluationThatShowRenders) {
  testing::ScriptedServer server;
  {
    std::ofstream prompts(dir_ / "prompts.jsonl");
    prompts << R"({"prompt": "ttft=5 itl=2 tokens=3"})"
            << "\n"
            << R"({"prompt": "mode=http500"})"
            << "\n";
  }
  const std::string store = (dir_ / "xsp.db").string();
  ASSERT_EQ(xsp({"bench-serve", "--store", store, "--url", server.url(), "--model", "scripted", "--prompts",
                 (dir_ / "prompts.jsonl").string(), "--max-concurrency", "2", "--num-requests", "4", "--ttft-bound-ms",
                 "1000", "--tpot-bound-ms", "1000"}),
            0)
      << err_;
  EXPECT_NE(out_.find("Serving Benchmark Result"), std::string::npos) << out_;
  EXPECT_NE(out_.find("Successful requests:                      2"), std::string::npos) << out_;
  EXPECT_NE(out_.find("http_500"), std::string::npos) << out_;
  EXPECT_NE(out_.find("evaluation 1 (xsp show 1)"), std::string::npos) << out_;
  ASSERT_EQ(xsp({"show", "1", "--store", store}), 0) << err_;
  EXPECT_NE(out_.find("serving benchmark of scripted"), std::string::npos) << out_;
  EXPECT_NE(out_.find("S1 — Serving summary"), std::string::npos) << out_;
  EXPECT_NE(out_.find("S3 — Failed requests by reason"), std::string::npos) << out_;
  EXPECT_NE(out_.find("http_500"), std::string::npos) << out_;
  EXPECT_NE(out_.find("4 rows"), std::string::npos) << out_;
  ASSERT_EQ(xsp({"show", "1", "--store", store, "--format", "csv"}), 0) << err_;
  EXPECT_NE(out_.find("point,requests,completed,failed"), std::string::npos) << out_;
}

TEST_F(ServingRecordTest, BadFlagsAreUsageErrorsNamingTheFlag) {
  const std::string store = (dir_ / "xsp.db").string();
  const std::vector<std::string> base{"bench-serve",           "--store", store, "--url",
                                      "http://127.0.0.1:9/v1", "--model", "m"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return xsp(args);
  };
  EXPECT_EQ(run({"--synthetic", "--request-rate", "-3", "--num-requests", "5"}), 2);
  EXPECT_NE(err_.find("--request-rate"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--request-rate", "fast", "--num-requests", "5"}), 2);
  EXPECT_NE(err_.find("--request-rate fast"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--num-requests", "5"}), 2);  // neither rate nor concurrency
  EXPECT_NE(err_.find("--max-concurrency"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--request-rate", "2"}), 2);  // no end
  EXPECT_NE(err_.find("--duration-s"), std::string::npos) << err_;
  EXPECT_EQ(run({"--request-rate", "2", "--num-requests", "5"}), 2);  // no prompts
  EXPECT_NE(err_.find("--prompts"), std::string::npos) << err_;
  EXPECT_EQ(run({"--prompts", (dir_ / "none.txt").string(), "--request-rate", "2", "--num-requests", "5"}), 3);
  EXPECT_NE(err_.find("none.txt"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--prompt-tokens", "9:3", "--request-rate", "2", "--num-requests", "5"}), 2);
  EXPECT_NE(err_.find("--prompt-tokens 9:3"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--sweep", "qps=1,2", "--num-requests", "5"}), 2);
  EXPECT_NE(err_.find("--sweep qps=1,2"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--max-concurrency", "2", "--burstiness", "0.5", "--num-requests", "5"}), 2);
  EXPECT_NE(err_.find("--burstiness"), std::string::npos) << err_;
  EXPECT_EQ(run({"--synthetic", "--endpoint", "embeddings", "--max-concurrency", "2", "--num-requests", "5"}), 2);
  EXPECT_NE(err_.find("--endpoint"), std::string::npos) << err_;
  // Nothing reached a server, so nothing was stored.
  EXPECT_FALSE(std::filesystem::exists(store) && xsp({"show", "1", "--store", store}) == 0);
}

TEST_F(ServingRecordTest, AServerPidThatIsNoProfiledProcessIsRefusedBeforeAnyRequest) {
  testing::ScriptedServer server;
  const std::string store = (dir_ / "xsp.db").string();
  EXPECT_EQ(xsp({"bench-serve", "--store", store, "--url", server.url(), "--model", "m", "--synthetic",
                 "--prompt-tokens", "4", "--max-concurrency", "1", "--num-requests", "2", "--server-pid", "4194000"}),
            1);
  EXPECT_NE(err_.find("no process 4194000"), std::string::npos) << err_;
  EXPECT_EQ(server.requests(), 0);
  // This test process is no `xsp profile --signal` program either: refused with how to run one.
  EXPECT_EQ(
      xsp({"bench-serve", "--store", store, "--url", server.url(), "--model", "m", "--synthetic", "--prompt-tokens",
           "4", "--max-concurrency", "1", "--num-requests", "2", "--server-pid", std::to_string(::getpid())}),
      1);
  EXPECT_NE(err_.find("xsp profile --signal"), std::string::npos) << err_;
  EXPECT_EQ(server.requests(), 0);
}

#ifdef XSP_TEST_NVTX_PROGRAM
// The server side of the join: a program running "step" ranges every 10 ms (a server's loop) under the real
// `xsp profile --signal`; bench-serve turns its collection on before the first request and stores the window it
// collected after the last as the serving evaluation's run, on the client's clock.
TEST_F(ServingRecordTest, AServerPidWindowIsStoredInTheServingEvaluation) {
  testing::ScriptedServer server;
  const std::string cmd = std::string("XSP_INJECT_LIBRARY=") + XSP_TEST_INJECT_LIB + " exec " + XSP_TEST_XSP_BINARY +
                          " --store " + (dir_ / "profile.db").string() + " profile --signal -- " +
                          XSP_TEST_NVTX_PROGRAM + " --loop-ms 3000 >/dev/null 2>&1";
  const pid_t profiled = ::fork();
  if (profiled == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(profiled, 0);
  const std::string store = (dir_ / "xsp.db").string();
  std::ofstream(dir_ / "p.txt") << "ttft=30 itl=10 tokens=5\n";
  int rc = -1;
  // The program loads the injection library at its first NVTX call: until then, the pid is refused before any request.
  for (int attempt = 0; attempt < 40 && rc != 0; ++attempt) {
    ::usleep(50'000);
    rc = xsp({"bench-serve", "--store", store, "--url", server.url(), "--model", "m", "--prompts",
              (dir_ / "p.txt").string(), "--max-concurrency", "2", "--num-requests", "6", "--server-pid",
              std::to_string(profiled)});
  }
  int status = 0;
  ::waitpid(profiled, &status, 0);
  ASSERT_EQ(rc, 0) << err_;
  auto s = Store::open(store);
  const auto record = s->load(1);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->kind(), RecordKind::kServing);
  ASSERT_EQ(record->runs.size(), 1u);
  EXPECT_TRUE(record->settings["serving"].contains("server_window"));
  const nlohmann::json& requests = record->settings["serving"]["requests"];
  ASSERT_EQ(requests.size(), 6u);
  const std::int64_t first_sent = requests[0]["sent_ns"].get<std::int64_t>();
  std::int64_t last_token = 0;
  for (const auto& r : requests) last_token = std::max(last_token, r["token_ns"].back().get<std::int64_t>());
  // Steps of the window overlap the requests' interval: one clock on both sides.
  std::size_t overlapping = 0;
  for (const Span& span : record->runs[0].trace.spans)
    if (span.name == "step" && span.start_ns < last_token && span.end_ns > first_sent) ++overlapping;
  EXPECT_GE(overlapping, 3u);
}
#endif

TEST_F(ServingRecordTest, AServerThatIsNotThereFailsEveryRequestAndTheRunIsStillStored) {
  const std::string store = (dir_ / "xsp.db").string();
  std::string url;
  {
    testing::ScriptedServer gone;
    url = gone.url();
  }
  EXPECT_EQ(xsp({"bench-serve", "--store", store, "--url", url, "--model", "m", "--synthetic", "--prompt-tokens", "4",
                 "--max-concurrency", "2", "--num-requests", "3"}),
            1);
  EXPECT_NE(out_.find("connect"), std::string::npos) << out_;
  ASSERT_EQ(xsp({"show", "1", "--store", store}), 0) << err_;
  EXPECT_NE(out_.find("cannot connect"), std::string::npos) << out_;
}

}  // namespace
}  // namespace xsp::serve
