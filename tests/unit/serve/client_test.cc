// bench-serve's client against the scripted server (test_server.h): timings, failures, usage, the schedule and the
// concurrency cap, as the client recorded them.
//
// Tolerances. Server and client share CLOCK_MONOTONIC, so each token's recorded time is checked against the server's
// own write time of that chunk: it can never be earlier (the bytes did not exist), and it is later by the loopback and
// the client's wake-up. kLateNs bounds that lateness at 20 ms: its p99 is 0.03–1 ms with 500 streams on the 2-core
// development machine (bench_serve_client, BENCHMARKS.md), and 20 ms leaves room for a CI machine that builds in
// parallel. Figures built from the scripted delays (TTFT, ITL, TPOT) are bounded below by the script exactly and above
// by the script + kLateNs.
#include "xsp/serve/client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "test_server.h"
#include "xsp/serve/serving.h"

namespace xsp::serve {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kLateNs = 20 * kMs;

ClientOptions options_for(const testing::ScriptedServer& server, std::vector<std::string> scripts) {
  ClientOptions o;
  o.url = server.url();
  o.model = "scripted";
  for (auto& s : scripts) o.prompts.push_back({std::move(s), 0, 0});
  o.output_tokens = 4;
  o.num_requests = o.prompts.size();
  o.request_timeout_ns = 20'000 * kMs;
  return o;
}

TEST(ServeClient, TokenTimesMatchTheServersWritesAndTheScriptedDelays) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"ttft=40 itl=15 tokens=6", "ttft=10 itl=30 tokens=3"});
  o.max_concurrency = 1;  // one after the other: no stream slows another
  const ClientRun run = run_client(o);
  ASSERT_EQ(run.requests.size(), 2u);
  const double scripted_ttft[] = {40, 10}, scripted_itl[] = {15, 30};
  const std::size_t scripted_tokens[] = {6, 3};
  for (std::size_t i = 0; i < 2; ++i) {
    const RequestResult& r = run.requests[i];
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.token_ns.size(), scripted_tokens[i]);
    EXPECT_EQ(r.output_tokens, static_cast<std::int64_t>(scripted_tokens[i]));
    EXPECT_TRUE(r.usage_reported);
    EXPECT_EQ(r.prompt_tokens, 7);
    const auto writes = server.writes(r.trace_id);
    ASSERT_EQ(writes.size(), r.token_ns.size());
    for (std::size_t k = 0; k < writes.size(); ++k) {
      EXPECT_GE(r.token_ns[k], writes[k]) << "request " << i << " token " << k;
      EXPECT_LE(r.token_ns[k] - writes[k], kLateNs) << "request " << i << " token " << k;
    }
    // The server sleeps at least the scripted delays (and may oversleep on a loaded machine): TTFT and each ITL are
    // at least the script's, and the client's gaps are the server's write gaps within the lateness.
    const std::int64_t ttft = r.token_ns[0] - r.sent_ns;
    EXPECT_GE(ttft, static_cast<std::int64_t>(scripted_ttft[i] * kMs));
    EXPECT_LE(ttft, writes[0] - r.sent_ns + kLateNs);
    for (std::size_t k = 1; k < r.token_ns.size(); ++k) {
      const std::int64_t itl = r.token_ns[k] - r.token_ns[k - 1];
      EXPECT_GE(writes[k] - writes[k - 1], static_cast<std::int64_t>(scripted_itl[i] * kMs)) << k;
      EXPECT_NEAR(static_cast<double>(itl), static_cast<double>(writes[k] - writes[k - 1]),
                  static_cast<double>(kLateNs))
          << k;
    }
  }
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.completed, 2u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.output_tokens, 9);
  EXPECT_EQ(s.input_tokens, 14);
  EXPECT_EQ(s.itl_ns.n, 5u + 2u);
  EXPECT_EQ(s.tpot_ns.n, 2u);
  // TPOT of a request = (last − first) / (tokens − 1): (5 × 15) / 5 and (2 × 30) / 2 ms, within the lateness.
  EXPECT_NEAR(s.tpot_ns.min, 15.0 * kMs, static_cast<double>(kLateNs));
  EXPECT_NEAR(s.tpot_ns.max, 30.0 * kMs, static_cast<double>(kLateNs));
  EXPECT_GE(s.ttft_ns.max, 40.0 * kMs);
  EXPECT_TRUE(std::isnan(s.goodput_per_s));  // no bounds
  EXPECT_EQ(s.max_in_flight, 1);
}

TEST(ServeClient, AStallShowsInOneItlAndIsSpreadInTpot) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"itl=5 tokens=8 stall_at=4 stall=150"});
  const ClientRun run = run_client(o);
  ASSERT_TRUE(run.requests[0].ok) << run.requests[0].error;
  const auto& t = run.requests[0].token_ns;
  ASSERT_EQ(t.size(), 8u);
  std::vector<std::int64_t> gaps;
  for (std::size_t k = 1; k < t.size(); ++k) gaps.push_back(t[k] - t[k - 1]);
  const auto slowest = std::max_element(gaps.begin(), gaps.end()) - gaps.begin();
  EXPECT_EQ(slowest, 3);  // the gap ending at token 4
  EXPECT_GE(gaps[3], 155 * kMs);
  EXPECT_LE(gaps[3], 155 * kMs + kLateNs);
  const ServingSummary s = summarize(run, {});
  EXPECT_GE(s.itl_ns.max, 155.0 * kMs);
  // TPOT = (6 × 5 + 155) / 7 ms: the stall spread over the request.
  EXPECT_NEAR(s.tpot_ns.p50, (6 * 5 + 155) / 7.0 * kMs, static_cast<double>(kLateNs));
}

TEST(ServeClient, FailuresAreCountedByReasonAndNeverStopTheRun) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"mode=http500", "mode=http400", "mode=malformed", "mode=nodone",
                                         "mode=error_event", "mode=empty", "tokens=2", "ttft=1500 tokens=1"});
  o.request_timeout_ns = 400 * kMs;  // the last request's first token comes after 1.5 s
  const ClientRun run = run_client(o);
  ASSERT_EQ(run.requests.size(), 8u);
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.completed, 1u);
  EXPECT_EQ(s.failed, 7u);
  const std::map<std::string, std::uint64_t> expected{
      {"http_500", 1},     {"http_400", 1},  {"malformed_stream", 1}, {"incomplete_stream", 1},
      {"server_error", 1}, {"no_output", 1}, {"timeout", 1}};
  EXPECT_EQ(s.failures, expected);
  EXPECT_NE(run.requests[0].error.find("scripted failure"), std::string::npos) << run.requests[0].error;
  EXPECT_EQ(run.requests[0].http_status, 500);
  EXPECT_NE(run.requests[1].error.find("--no-fixed-output-length"), std::string::npos) << run.requests[1].error;
  EXPECT_NE(run.requests[1].error.find("ignore_eos"), std::string::npos) << run.requests[1].error;
  EXPECT_NE(run.requests[4].error.find("out of KV cache"), std::string::npos);
  EXPECT_TRUE(run.requests[6].ok);
}

TEST(ServeClient, RandomBytesInTheStreamFailTheRequestNotTheClient) {
  testing::ScriptedServer server;
  std::vector<std::string> scripts;
  for (int seed = 1; seed <= 8; ++seed) scripts.push_back("mode=garbage ttft=" + std::to_string(seed));
  scripts.push_back("tokens=3");
  const ClientRun run = run_client(options_for(server, scripts));
  ASSERT_EQ(run.requests.size(), 9u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_FALSE(run.requests[i].ok) << i;
    EXPECT_TRUE(run.requests[i].reason == "malformed_stream" || run.requests[i].reason == "incomplete_stream" ||
                run.requests[i].reason == "server_error")
        << run.requests[i].reason << ": " << run.requests[i].error;
  }
  EXPECT_TRUE(run.requests[8].ok) << run.requests[8].error;
}

TEST(ServeClient, AClosedPortIsAConnectFailure) {
  std::string url;
  {
    testing::ScriptedServer server;  // a port that was just free, then closed again
    url = server.url();
  }
  ClientOptions o;
  o.url = url;
  o.model = "m";
  o.prompts = {{"x", 0, 0}};
  o.num_requests = 3;
  const ClientRun run = run_client(o);
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.failures, (std::map<std::string, std::uint64_t>{{"connect", 3}}));
  EXPECT_NE(run.requests[0].error.find("cannot connect"), std::string::npos) << run.requests[0].error;
}

TEST(ServeClient, UsageGivesTheTokenCountAndItsAbsenceIsAnEstimate) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"tokens=5 per_chunk=3 itl=2", "tokens=5 usage=0 itl=2"});
  const ClientRun run = run_client(o);
  ASSERT_TRUE(run.requests[0].ok && run.requests[1].ok);
  EXPECT_EQ(run.requests[0].output_tokens, 15);  // usage, not the 5 chunks
  EXPECT_TRUE(run.requests[0].usage_reported);
  EXPECT_EQ(run.requests[1].output_tokens, 5);  // chunks counted
  EXPECT_FALSE(run.requests[1].usage_reported);
  EXPECT_EQ(run.requests[1].prompt_tokens, -1);
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.requests_without_usage, 1u);
  EXPECT_EQ(s.output_tokens, 20);
  EXPECT_EQ(s.input_tokens, 7);
  // TPOT with usage: (last − first) / 14, not / 4.
  const auto& t = run.requests[0].token_ns;
  ClientRun first_only = run;
  first_only.requests.resize(1);
  const ServingSummary only_first = summarize(first_only, {});
  EXPECT_DOUBLE_EQ(only_first.tpot_ns.p50, static_cast<double>(t.back() - t.front()) / 14.0);
  const EvaluationRecord record = serving_record({{{"", 0, o, run, s}}, std::nullopt, "", {}, {}, std::nullopt});
  EXPECT_TRUE(record.settings["serving"]["output_tokens_estimated"].get<bool>());
}

TEST(ServeClient, RequestsCarryTheBodyAndATraceparent) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"tokens=1"});
  o.output_tokens = 9;
  o.endpoint = Endpoint::kChat;
  const ClientRun run = run_client(o);
  ASSERT_TRUE(run.requests[0].ok) << run.requests[0].error;
  const auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(bodies[0]["model"], "scripted");
  EXPECT_EQ(bodies[0]["max_tokens"], 9);
  EXPECT_EQ(bodies[0]["min_tokens"], 9);
  EXPECT_EQ(bodies[0]["ignore_eos"], true);
  EXPECT_EQ(bodies[0]["stream"], true);
  EXPECT_EQ(bodies[0]["stream_options"]["include_usage"], true);
  EXPECT_EQ(bodies[0]["messages"][0]["role"], "user");
  const std::string tp = server.traceparents()[0];
  ASSERT_EQ(tp.size(), 55u) << tp;  // 00-32 hex-16 hex-01
  EXPECT_EQ(tp.substr(0, 3), "00-");
  EXPECT_EQ(tp.substr(52), "-01");
  EXPECT_EQ(tp.substr(3, 32), run.requests[0].trace_id);
  // One output token: a TTFT and an E2E, no TPOT, no ITL.
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.ttft_ns.n, 1u);
  EXPECT_EQ(s.tpot_ns.n, 0u);
  EXPECT_EQ(s.itl_ns.n, 0u);
}

TEST(ServeClient, WithoutFixedOutputLengthTheExtensionsAreNotSent) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"tokens=1"});
  o.fixed_output_length = false;
  ASSERT_TRUE(run_client(o).requests[0].ok);
  const auto body = server.bodies()[0];
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_FALSE(body.contains("min_tokens"));
  EXPECT_EQ(body["prompt"], "tokens=1");
}

TEST(ServeClient, TheConcurrencyCapHoldsAndIsReached) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"ttft=20 itl=5 tokens=3"});
  o.num_requests = 24;
  o.max_concurrency = 4;  // closed loop: rate inf
  const ClientRun run = run_client(o);
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.completed, 24u);
  EXPECT_EQ(server.max_concurrent(), 4);
  EXPECT_LE(s.max_in_flight, 4);
  // Closed loop: a request arrives when a slot frees, so it is sent at once.
  for (const RequestResult& r : run.requests) EXPECT_LE(r.sent_ns - r.arrival_ns, 5 * kMs);
}

TEST(ServeClient, AnOpenLoopCapMakesRequestsWaitAndTheWaitIsTheQueueDelay) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"ttft=100 tokens=1"});
  o.num_requests = 6;
  o.request_rate = 1000;  // all six within ~6 ms
  o.max_concurrency = 2;
  const ClientRun run = run_client(o);
  const ServingSummary s = summarize(run, {});
  EXPECT_EQ(s.completed, 6u);
  EXPECT_EQ(server.max_concurrent(), 2);
  // Requests 5 and 6 wait for two rounds of ~100 ms.
  EXPECT_GE(run.requests[5].sent_ns - run.requests[5].arrival_ns, 180 * kMs);
  EXPECT_GE(s.queue_ns.max, 180.0 * kMs);
  // TTFT counts from the send: the wait is not in it (each first token within the lateness of its write).
  for (const RequestResult& r : run.requests) {
    const auto writes = server.writes(r.trace_id);
    ASSERT_FALSE(writes.empty());
    EXPECT_GE(r.token_ns[0] - r.sent_ns, 100 * kMs);
    EXPECT_LE(r.token_ns[0] - r.sent_ns, writes[0] - r.sent_ns + kLateNs);
  }
}

TEST(ServeClient, ArrivalsFollowTheSeededScheduleAndSendsAreOnTime) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"tokens=1"});
  o.num_requests = 40;
  o.request_rate = 100;
  o.seed = 7;
  const ClientRun run = run_client(o);
  const auto schedule = arrival_schedule(100, 1, 40, 7);
  ASSERT_EQ(run.requests.size(), 40u);
  std::vector<double> late;
  for (std::size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(run.requests[i].arrival_ns - run.start_ns, schedule[i]) << i;
    EXPECT_GE(run.requests[i].sent_ns, run.requests[i].arrival_ns);
    late.push_back(static_cast<double>(run.requests[i].sent_ns - run.requests[i].arrival_ns));
  }
  std::sort(late.begin(), late.end());
  EXPECT_LE(late[late.size() / 2], 2.0 * kMs);  // the median send is on time within 2 ms
}

TEST(ServeClient, GoodputCountsTheRequestsWithinBothBounds) {
  testing::ScriptedServer server;
  // TTFT 10 or 120 ms, TPOT 5 or 60 ms: with bounds TTFT 60 ms and TPOT 30 ms, only the fast-fast ones are good.
  ClientOptions o = options_for(server, {"ttft=10 itl=5 tokens=3", "ttft=120 itl=5 tokens=3", "ttft=10 itl=60 tokens=3",
                                         "ttft=10 itl=5 tokens=3", "ttft=10 tokens=1"});
  const ClientRun run = run_client(o);
  ServingBounds bounds;
  bounds.ttft_ns = 60.0 * kMs;
  bounds.tpot_ns = 30.0 * kMs;
  const ServingSummary s = summarize(run, bounds);
  ASSERT_EQ(s.completed, 5u);
  EXPECT_EQ(s.good_requests, 3u);  // the two fast ones and the one-token request (no TPOT: meets that bound)
  EXPECT_DOUBLE_EQ(s.goodput_per_s, 3.0 / (static_cast<double>(s.duration_ns) * 1e-9));
  // Five requests are too few for LoadGen's early-stopping p99 (459 needed): the verdict says so.
  ASSERT_TRUE(s.verdict.has_value());
  EXPECT_FALSE(s.verdict->valid);
  EXPECT_FALSE(s.verdict->ttft.enough_samples);
  EXPECT_EQ(s.verdict->ttft.min_samples, 459u);
  EXPECT_NE(s.verdict->reason.find("too few samples"), std::string::npos);
}

TEST(ServeClient, TheDurationEndsIssuingAndInFlightRequestsFinish) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"ttft=150 tokens=1"});
  o.num_requests = 0;
  o.duration_ns = 200 * kMs;
  o.request_rate = 50;
  const ClientRun run = run_client(o);
  const auto schedule = arrival_schedule(50, 1, 200, o.seed);
  const auto expected = static_cast<std::size_t>(
      std::count_if(schedule.begin(), schedule.end(), [](std::int64_t t) { return t < 200 * kMs; }));
  EXPECT_EQ(run.requests.size(), expected);
  for (const RequestResult& r : run.requests) EXPECT_TRUE(r.ok) << r.error;  // finished after the 200 ms
  EXPECT_GE(run.end_ns - run.start_ns, 150 * kMs);
}

TEST(ServeClient, RequestsStillWaitingForASlotWhenTheDurationEndsAreCancelled) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"ttft=300 tokens=1"});
  o.num_requests = 0;
  o.duration_ns = 100 * kMs;
  o.request_rate = 100;
  o.max_concurrency = 1;
  const ClientRun run = run_client(o);
  const ServingSummary s = summarize(run, {});
  ASSERT_GE(run.requests.size(), 2u);
  EXPECT_EQ(s.completed, 1u);  // the one holding the slot finishes after the duration
  EXPECT_EQ(s.failures, (std::map<std::string, std::uint64_t>{{"cancelled", run.requests.size() - 1}}));
  EXPECT_EQ(server.requests(), 1);
  for (std::size_t i = 1; i < run.requests.size(); ++i) EXPECT_EQ(run.requests[i].sent_ns, 0) << i;
}

TEST(ServeClient, AnInterruptCutsTheStreamsAndKeepsTheirTokens) {
  testing::ScriptedServer server;
  ClientOptions o = options_for(server, {"itl=50 tokens=40", "itl=50 tokens=40"});
  std::atomic<int> interrupt{0};
  o.interrupt = &interrupt;
  std::thread signaller([&interrupt] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    interrupt = 2;
  });
  const std::int64_t begin = now_ns();
  const ClientRun run = run_client(o);
  signaller.join();
  EXPECT_LT(now_ns() - begin, 1000 * kMs);  // not the 2 s the streams would take
  EXPECT_TRUE(run.interrupted);
  for (const RequestResult& r : run.requests) {
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.reason, "cancelled");
    EXPECT_GE(r.token_ns.size(), 3u);  // ~6 tokens in 300 ms
    EXPECT_LT(r.token_ns.size(), 40u);
  }
}

TEST(ServeClient, BadOptionsNameTheField) {
  ClientOptions o;
  o.model = "m";
  o.prompts = {{"x", 0, 0}};
  o.num_requests = 1;
  try {
    (void)run_client(o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("url"), std::string::npos);
  }
  o.url = "http://127.0.0.1:1/v1";
  o.num_requests = 0;
  EXPECT_THROW((void)run_client(o), std::invalid_argument);  // no end
  o.duration_ns = kMs;
  o.burstiness = 0;
  EXPECT_THROW((void)run_client(o), std::invalid_argument);
}

}  // namespace
}  // namespace xsp::serve
