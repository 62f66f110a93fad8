// The join of a serving benchmark's slow tokens to the server's trace (serving_join.h): hand-made server traces with
// known steps, kernels and stalls, and the analysis "serving-tail" through the registry.
#include "xsp/analysis/serving_join.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMs = 1'000'000;
const Track kThread = Track::host_thread(10);
const Track kStream7 = Track::stream(0, 7);
const Track kStream8 = Track::stream(0, 8);

// A server trace built span by span, with tracks and correlation ids (what `xsp profile` assembles).
struct ServerTrace {
  Trace trace;
  SpanId next = 1;
  std::uint64_t correlation = 1;

  SpanId add(Level level, const std::string& name, std::int64_t start, std::int64_t end, SpanId parent, Track track,
             std::vector<Tag> tags = {}, std::uint64_t correlation_id = 0) {
    Span s;
    s.id = next++;
    s.parent_id = parent;
    s.level = level;
    s.name = name;
    s.start_ns = start;
    s.end_ns = end;
    s.track = track;
    s.tags = std::move(tags);
    s.correlation_id = correlation_id;
    trace.spans.push_back(std::move(s));
    return next - 1;
  }
  SpanId range(const std::string& name, std::int64_t start, std::int64_t end, SpanId parent,
               Level level = Level::kModel, Track track = kThread) {
    return add(level, name, start, end, parent, track, {{"nvtx", "push"}});
  }
  // A launch call under `parent` and its kernel on `stream`; `by_correlation`: the kernel has no parent id and
  // reaches its launch through the correlation id alone.
  void kernel(const std::string& name, std::int64_t start, std::int64_t end, SpanId parent, Track stream,
              bool by_correlation = false) {
    const std::uint64_t c = correlation++;
    const SpanId launch = add(Level::kSystem, "cudaLaunchKernel", start - 5'000, start - 1'000, parent, kThread, {}, c);
    add(Level::kKernel, name, start, end, by_correlation ? kNoSpan : launch, stream, {}, c);
  }
};

// The server of the join tests: 2,112 short steps, then execute_model steps at 10, 20, 30 and 50 ms (a stall from
// 40 to 50 ms: no step, no kernel), each 10 ms with a nested NVTX range "attention" and an emit_nvtx-style op range
// holding the launches of flash_fwd (stream 7, +1..+7 ms) and gemm (stream 8, +2..+4 ms).
ServerTrace server() {
  ServerTrace t;
  const SpanId app =
      t.add(Level::kApplication, "python3 -m vllm.entrypoints.openai.api_server", 0, 100 * kMs, kNoSpan, kThread);
  for (int i = 0; i < 2112; ++i) t.range("execute_model", i * 2'000, i * 2'000 + 1'000, app);
  for (std::int64_t s : {10, 20, 30, 50}) {
    const std::int64_t s0 = s * kMs;
    const SpanId step = t.range("execute_model", s0, s0 + 10 * kMs, app);
    const SpanId nested = t.range("attention", s0 + kMs / 2, s0 + 9 * kMs, step);
    const SpanId op =
        t.range("aten::scaled_dot_product_attention", s0 + kMs / 2, s0 + 8 * kMs, nested, Level::kFramework);
    t.kernel("flash_fwd", s0 + 1 * kMs, s0 + 7 * kMs, op, kStream7, /*by_correlation=*/s == 20);
    t.kernel("gemm", s0 + 2 * kMs, s0 + 4 * kMs, op, kStream8);
  }
  return t;
}

ClientRequestTimes request(std::string id, std::int64_t arrival, std::vector<std::int64_t> tokens, bool ok = true) {
  ClientRequestTimes r;
  r.request_id = std::move(id);
  r.arrival_ns = arrival;
  r.sent_ns = arrival;
  r.token_ns = std::move(tokens);
  r.output_tokens = static_cast<std::int64_t>(r.token_ns.size());
  r.ok = ok;
  if (!ok) r.error = "HTTP 500";
  return r;
}

SlowInterval itl(std::int64_t start, std::int64_t end, std::string id = "731", std::size_t rank = 0,
                 std::size_t population = 1) {
  SlowInterval in{std::move(id), "itl", 1, start, end};
  in.rank = rank;
  in.population = population;
  return in;
}

// ---- the client's intervals ----

TEST(ServingJoin, PercentileLabelsAreTheShareNoSlowerRoundedDown) {
  EXPECT_EQ(percentile_label(0, 12'000), "max");
  EXPECT_EQ(percentile_label(120, 12'000), "p99");
  EXPECT_EQ(percentile_label(12, 12'000), "p99.9");
  EXPECT_EQ(percentile_label(1, 12'000), "p99.99");
  EXPECT_EQ(percentile_label(6'000, 12'000), "p50");
  EXPECT_EQ(percentile_label(121, 12'000), "p98");  // 98.99...: rounded down, never up to p99
  EXPECT_EQ(percentile_label(3, 1'000), "p99.7");
  EXPECT_EQ(percentile_label(2, 10'000), "p99.98");
  EXPECT_EQ(percentile_label(1, 3), "p66");
  EXPECT_EQ(percentile_label(1, 10), "p90");
  EXPECT_EQ(percentile_label(0, 1), "max");
  EXPECT_EQ(percentile_label(5, 5), "");
}

TEST(ServingJoin, SlowestIntervalsRankEachKindTiesByIdThenTokenAndLeaveFailedRequestsOut) {
  const std::vector<ClientRequestTimes> requests = {
      request("b", 0, {50, 80, 110}),        // TTFT 50, ITLs 30, 30
      request("a", 0, {50, 60, 90}),         // TTFT 50, ITLs 10, 30
      request("c", 0, {900, 2'000}, false),  // failed: its 1,100 ns gap is no interval
      request("d", 100, {}),                 // no token: no TTFT
      request("e", 0, {20, 25}),             // TTFT 20, ITL 5
  };
  const std::vector<SlowInterval> v = slowest_intervals(requests, 3);
  ASSERT_EQ(v.size(), 6u);
  // TTFTs first: a and b tie at 50 ns (a first), then e.
  EXPECT_EQ(v[0].kind, "ttft");
  EXPECT_EQ(v[0].request_id, "a");
  EXPECT_EQ(v[1].request_id, "b");
  EXPECT_EQ(v[2].request_id, "e");
  EXPECT_EQ(v[2].rank, 2u);
  EXPECT_EQ(v[2].population, 3u);
  // ITLs: the three 30 ns gaps, by request id then token index; 5 of them in all.
  for (std::size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(v[i].kind, "itl");
    EXPECT_EQ(v[i].duration_ns(), 30);
    EXPECT_EQ(v[i].population, 5u);
    EXPECT_EQ(v[i].rank, i - 3);
  }
  EXPECT_EQ(v[3].request_id, "a");
  EXPECT_EQ(v[3].token_index, 2);
  EXPECT_EQ(v[4].request_id, "b");
  EXPECT_EQ(v[4].token_index, 1);
  EXPECT_EQ(v[5].token_index, 2);
  EXPECT_EQ(v[3].start_ns, 60);
  EXPECT_EQ(v[3].end_ns, 90);
  // The same input in another order gives the same answer.
  std::vector<ClientRequestTimes> reversed(requests.rbegin(), requests.rend());
  const std::vector<SlowInterval> again = slowest_intervals(reversed, 3);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(again[i].request_id, v[i].request_id);
    EXPECT_EQ(again[i].token_index, v[i].token_index);
  }
}

TEST(ServingJoin, RequestsRoundTripThroughTheirJsonAndMalformedOnesAreNamed) {
  std::vector<ClientRequestTimes> requests = {request("r1", 5, {10, 20}), request("r2", 7, {}, false)};
  requests[0].trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  const nlohmann::json j = client_requests_to_json(requests);
  EXPECT_EQ(j[0]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_FALSE(j[1].contains("trace_id"));
  EXPECT_EQ(j[0]["token_ns"], nlohmann::json::array({10, 20}));
  EXPECT_EQ(j[1]["error"], "HTTP 500");
  EXPECT_EQ(client_requests_from_json(j), requests);
  // A numeric id reads as its text; missing fields keep their defaults.
  const auto read = client_requests_from_json(nlohmann::json::parse(R"([{"request_id": 731, "token_ns": [1]}])"));
  EXPECT_EQ(read[0].request_id, "731");
  EXPECT_TRUE(read[0].ok);
  EXPECT_THROW(client_requests_from_json(nlohmann::json::object()), std::invalid_argument);
  try {
    client_requests_from_json(nlohmann::json::parse(R"([{}, {"token_ns": "soon"}])"));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("serving request 1"), std::string::npos) << e.what();
  }
}

// ---- the join ----

TEST(ServingJoin, AGapOverThreeStepsNamesThemTheirKernelsAndTheStallAsGpuIdle) {
  const ServerTrace t = server();
  const ServerTraceIndex index({&t.trace});
  EXPECT_EQ(index.source(), StepSource::kNvtxRanges);
  EXPECT_EQ(index.steps(), 2112u + 4);  // the nested ranges and op ranges are not steps
  EXPECT_EQ(index.kernels(), 8u);

  const IntervalJoin j = index.join(itl(15 * kMs, 45 * kMs));
  ASSERT_EQ(j.steps.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    const StepOverlap& s = j.steps[k];
    EXPECT_EQ(s.name, "execute_model");
    EXPECT_EQ(s.ordinal, 2113 + k);
    EXPECT_EQ(s.duration_ns(), 10 * kMs);
    EXPECT_EQ(s.kernels, 2u);  // the step at 20 ms reaches flash_fwd through its correlation id alone
    EXPECT_EQ(s.kernel_ns, 8 * kMs);
    EXPECT_EQ(s.top_kernel, "flash_fwd");
    EXPECT_EQ(s.top_kernel_ns, 6 * kMs);
    EXPECT_EQ(s.track, kThread);
  }
  EXPECT_EQ(j.steps[0].overlap_ns, 5 * kMs);
  EXPECT_EQ(j.steps[1].overlap_ns, 10 * kMs);
  EXPECT_EQ(j.steps[2].overlap_ns, 10 * kMs);
  // Busy: the union of the two streams, [11, 17) ∩ [15, 45) + [21, 27) + [31, 37) = 2 + 6 + 6 ms.
  EXPECT_EQ(j.gpu_busy_ns, 14 * kMs);
  EXPECT_EQ(j.gpu_idle_ns, 16 * kMs);  // the stall (40–45 ms) and the gaps between kernels
  EXPECT_EQ(j.outside_window_ns, 0);
  EXPECT_EQ(j.kernels, 5u);  // gemm of the step at 10 ms ended before the gap
  EXPECT_EQ(j.sentence,
            "the max ITL of request 731 (30 ms) overlaps steps 2,113–2,115: execute_model ×3 (30 ms, 6 kernels, top "
            "flash_fwd 18 ms); GPU idle 16 ms");
}

TEST(ServingJoin, AGapInsideTheStallIsAllGpuIdleAndOverlapsNoStep) {
  const ServerTrace t = server();
  const ServerTraceIndex index({&t.trace});
  const IntervalJoin j = index.join(itl(41 * kMs, 49 * kMs, "9", 119, 12'000));
  EXPECT_TRUE(j.steps.empty());
  EXPECT_EQ(j.gpu_busy_ns, 0);
  EXPECT_EQ(j.gpu_idle_ns, 8 * kMs);
  EXPECT_EQ(j.kernels, 0u);
  EXPECT_EQ(j.tail, "p99");
  EXPECT_EQ(j.sentence, "the p99 ITL of request 9 (8.0 ms) overlaps no steps; GPU idle 8.0 ms");
}

TEST(ServingJoin, StepsOfSeveralNamesAreGroupedAndEachRangeOfOrdinalsWritten) {
  ServerTrace t = server();
  const SpanId app = 1;
  // A sampler step on another thread that overlaps the stall.
  t.add(Level::kModel, "sample", 38 * kMs, 52 * kMs, app, Track::host_thread(11), {{"nvtx", "start"}});
  const ServerTraceIndex index({&t.trace});
  const IntervalJoin j = index.join(itl(35 * kMs, 55 * kMs));
  ASSERT_EQ(j.steps.size(), 3u);  // execute_model 2,115 and 2,116 (30 and 50 ms) and sample 1, by start
  EXPECT_EQ(j.steps[1].name, "sample");
  EXPECT_EQ(j.steps[1].ordinal, 1u);
  EXPECT_EQ(j.sentence,
            "the max ITL of request 731 (20 ms) overlaps steps 2,115–2,116: execute_model ×2 (20 ms, 4 kernels, top "
            "flash_fwd 12 ms); step 1: sample (14 ms, no kernels); GPU idle 14 ms");
}

TEST(ServingJoin, AnIntervalPartlyOutsideTheTraceWindowSaysHowMuch) {
  const ServerTrace t = server();
  const ServerTraceIndex index({&t.trace});
  EXPECT_EQ(index.window_start_ns(), 0);
  EXPECT_EQ(index.window_end_ns(), 100 * kMs);
  const IntervalJoin part = index.join(itl(90 * kMs, 120 * kMs));
  EXPECT_EQ(part.outside_window_ns, 20 * kMs);
  EXPECT_EQ(part.gpu_idle_ns, 10 * kMs);  // only the recorded part counts as idle
  EXPECT_NE(part.sentence.find("; 20 ms of it outside the server's trace window"), std::string::npos) << part.sentence;
  const IntervalJoin out = index.join(itl(200 * kMs, 210 * kMs));
  EXPECT_EQ(out.outside_window_ns, 10 * kMs);
  EXPECT_EQ(out.gpu_idle_ns, 0);
  EXPECT_EQ(out.sentence, "the max ITL of request 731 (10 ms) lies outside the server's trace window");
}

TEST(ServingJoin, WithoutNvtxRangesTheOutermostOpsAreTheStepsThenTheLaunches) {
  ServerTrace ops;
  const SpanId app = ops.add(Level::kApplication, "server", 0, 10 * kMs, kNoSpan, kThread);
  const SpanId mm = ops.add(Level::kFramework, "aten::linear", 1 * kMs, 5 * kMs, app, kThread);
  const SpanId inner = ops.add(Level::kFramework, "aten::addmm", 2 * kMs, 4 * kMs, mm, kThread);
  ops.kernel("gemm", 2 * kMs + 10'000, 3 * kMs, inner, kStream7);
  const ServerTraceIndex by_ops({&ops.trace});
  EXPECT_EQ(by_ops.source(), StepSource::kFrameworkOps);
  EXPECT_EQ(by_ops.steps(), 1u);
  const IntervalJoin j = by_ops.join(itl(0, 6 * kMs));
  ASSERT_EQ(j.steps.size(), 1u);
  EXPECT_EQ(j.steps[0].name, "aten::linear");
  EXPECT_EQ(j.steps[0].kernels, 1u);
  EXPECT_EQ(j.sentence.rfind("the max ITL of request 731 (6.0 ms) overlaps op 1: aten::linear (4.0 ms, 1 kernel", 0),
            0u)
      << j.sentence;

  ServerTrace calls;
  const SpanId root = calls.add(Level::kApplication, "server", 0, 10 * kMs, kNoSpan, kThread);
  calls.kernel("gemm", 2 * kMs, 3 * kMs, root, kStream7);
  calls.add(Level::kSystem, "cudaMalloc", 4 * kMs, 5 * kMs, root, kThread);  // a call, but no launch
  const ServerTraceIndex by_calls({&calls.trace});
  EXPECT_EQ(by_calls.source(), StepSource::kCudaLaunches);
  EXPECT_EQ(by_calls.steps(), 1u);
  EXPECT_EQ(by_calls.join(itl(0, 10 * kMs)).steps.at(0).name, "cudaLaunchKernel");

  ServerTrace kernels_only;
  kernels_only.add(Level::kApplication, "server", 0, 10 * kMs, kNoSpan, kThread);
  kernels_only.add(Level::kKernel, "gemm", 2 * kMs, 3 * kMs, kNoSpan, kStream7);
  const ServerTraceIndex bare({&kernels_only.trace});
  EXPECT_EQ(bare.source(), StepSource::kNone);
  const IntervalJoin b = bare.join(itl(2 * kMs, 4 * kMs));
  EXPECT_EQ(b.gpu_busy_ns, 1 * kMs);
  EXPECT_EQ(b.sentence, "the max ITL of request 731 (2.0 ms) overlaps no server step; GPU busy 1.0 ms, idle 1.0 ms");
}

TEST(ServingJoin, OpObserverOpsAreNotRangesButUserScopesAre) {
  ServerTrace t;
  const SpanId app = t.add(Level::kApplication, "server", 0, 10 * kMs, kNoSpan, kThread);
  // Ops from XSP's op observer: FRAMEWORK ranges of domain torch.ops; the program's record_function scope: MODEL.
  const SpanId scope =
      t.add(Level::kModel, "forward", 1 * kMs, 8 * kMs, app, kThread, {{"domain", "torch.ops"}, {"nvtx", "push"}});
  t.add(Level::kFramework, "aten::mm", 2 * kMs, 3 * kMs, scope, kThread, {{"domain", "torch.ops"}, {"nvtx", "push"}});
  const ServerTraceIndex index({&t.trace});
  EXPECT_EQ(index.source(), StepSource::kNvtxRanges);
  EXPECT_EQ(index.steps(), 1u);
  EXPECT_EQ(index.join(itl(0, 9 * kMs)).steps.at(0).name, "forward");
}

// The sweep finds exactly what comparing every step with every interval finds.
TEST(ServingJoin, TheSweepAgreesWithComparingEveryStepWithEveryInterval) {
  std::mt19937_64 rng(27);
  ServerTrace t;
  const SpanId app = t.add(Level::kApplication, "server", 0, 1'000 * kMs, kNoSpan, kThread);
  for (int thread = 0; thread < 4; ++thread) {
    std::int64_t at = 0;
    while (at < 1'000 * kMs) {
      at += static_cast<std::int64_t>(rng() % (2 * kMs));
      const std::int64_t length = 1 + static_cast<std::int64_t>(rng() % (thread == 3 ? 50 * kMs : 3 * kMs));
      t.add(Level::kModel, thread % 2 == 0 ? "step" : "other", at, at + length, app, Track::host_thread(20 + thread),
            {{"nvtx", "push"}});
      at += length;
    }
  }
  const ServerTraceIndex index({&t.trace});
  for (int q = 0; q < 500; ++q) {
    const std::int64_t a = static_cast<std::int64_t>(rng() % (1'000 * kMs));
    const std::int64_t b = a + 1 + static_cast<std::int64_t>(rng() % (10 * kMs));
    std::multiset<std::pair<std::int64_t, std::int64_t>> want, got;
    for (const Span& s : t.trace.spans)
      if (s.level == Level::kModel && s.start_ns < b && s.end_ns > a) want.emplace(s.start_ns, s.end_ns);
    const IntervalJoin j = index.join(itl(a, b));
    for (const StepOverlap& s : j.steps) got.emplace(s.start_ns, s.end_ns);
    ASSERT_EQ(got, want) << "interval " << a << "–" << b;
    EXPECT_TRUE(std::is_sorted(j.steps.begin(), j.steps.end(),
                               [](const StepOverlap& x, const StepOverlap& y) { return x.start_ns < y.start_ns; }));
  }
}

// ---- the analysis ----

EvaluationRecord serving_record(bool with_server) {
  EvaluationRecord e;
  e.scenario = "serving";
  e.batch_sizes = {1};
  // Request 731's third token waits through steps 2,113–2,115 and the stall; 12 quick requests beside it.
  std::vector<ClientRequestTimes> requests = {request("731", 2 * kMs, {5 * kMs, 15 * kMs, 45 * kMs})};
  requests[0].trace_id = "0af7651916cd43dd8448eb211c80319c";  // its traceparent: the key to the engine's OTel spans
  for (int i = 0; i < 12; ++i) {
    const std::int64_t a = (60 + i) * kMs;
    requests.push_back(request(std::to_string(800 + i), a, {a + kMs / 2, a + kMs}));
  }
  requests.push_back(request("999", 0, {1 * kMs, 90 * kMs}, false));  // failed: left out
  e.settings["serving"]["requests"] = client_requests_to_json(requests);
  RunRecord client;  // the client's own run: no server spans
  e.runs.push_back(client);
  if (with_server) {
    RunRecord server_run;
    server_run.trace = server().trace;
    server_run.trace_level = TraceLevel::kKernel;
    e.runs.push_back(std::move(server_run));
  }
  return e;
}

TEST(ServingTail, TheRegistryAnalysisJoinsTheSlowestTokensOfAServingEvaluation) {
  const EvaluationRecord record = serving_record(true);
  EXPECT_TRUE(is_serving_evaluation(record));
  ASSERT_EQ(server_runs(record).size(), 1u);
  const std::vector<std::string> defaults = default_analysis_ids(record);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "serving-tail"), defaults.end());
  EXPECT_EQ(std::find(defaults.begin(), defaults.end(), "A2"), defaults.end());
  EXPECT_EQ(analysis_spec("serving-tail").family, AnalysisFamily::kServing);

  const std::vector<Table> tables = run_analyses(record, {"serving-tail"}, std::nullopt);
  ASSERT_EQ(tables.size(), 1u);
  const Table& t = tables[0];
  EXPECT_EQ(t.spec, "serving-tail");
  // The slowest ITL (731's 30 ms gap) is the first ITL row, one row per overlapping step, the sentence on its first.
  std::vector<const std::vector<Cell>*> slowest;
  for (const auto& row : t.rows)
    if (std::get<std::string>(cell(t, row, "kind")) == "itl" && std::get<std::string>(cell(t, row, "tail")) == "max")
      slowest.push_back(&row);
  ASSERT_EQ(slowest.size(), 3u);
  const auto& first = *slowest[0];
  EXPECT_EQ(std::get<std::string>(cell(t, first, "request_id")), "731");
  EXPECT_EQ(std::get<std::string>(cell(t, first, "trace_id")), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(std::get<std::int64_t>(cell(t, first, "token_index")), 2);
  EXPECT_DOUBLE_EQ(std::get<double>(cell(t, first, "interval_ms")), 30.0);
  EXPECT_DOUBLE_EQ(std::get<double>(cell(t, first, "gpu_idle_ms")), 16.0);
  EXPECT_EQ(std::get<std::int64_t>(cell(t, first, "step_ordinal")), 2113);
  EXPECT_EQ(std::get<std::string>(cell(t, first, "top_kernel")), "flash_fwd");
  EXPECT_EQ(std::get<std::string>(cell(t, first, "sentence")),
            "the max ITL of request 731 (30 ms) overlaps steps 2,113–2,115: execute_model ×3 (30 ms, 6 kernels, top "
            "flash_fwd 18 ms); GPU idle 16 ms");
  EXPECT_EQ(std::get<std::int64_t>(cell(t, *slowest[2], "step_ordinal")), 2115);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(t, *slowest[1], "sentence")));
  // 13 successful requests: 13 TTFTs and 14 ITLs, 10 of each joined; the failed one is counted, not joined.
  std::size_t ttft_intervals = 0;
  for (const auto& row : t.rows)
    if (std::get<std::string>(cell(t, row, "kind")) == "ttft" &&
        !std::holds_alternative<std::monostate>(cell(t, row, "sentence")))
      ++ttft_intervals;
  EXPECT_EQ(ttft_intervals, 10u);
  // 731's first token waits through 1,112 short steps: the 16 with the largest overlap, the rest summed in one row.
  std::vector<const std::vector<Cell>*> first_token;
  for (const auto& row : t.rows)
    if (std::get<std::string>(cell(t, row, "kind")) == "ttft" &&
        std::get<std::string>(cell(t, row, "request_id")) == "731")
      first_token.push_back(&row);
  ASSERT_EQ(first_token.size(), kServingTailStepsPerInterval + 1);
  EXPECT_EQ(std::get<std::string>(cell(t, *first_token.back(), "step_name")), "(other 1096 steps)");
  EXPECT_EQ(std::get<std::int64_t>(cell(t, *first_token.back(), "step_kernels")), 0);
  EXPECT_EQ(std::get<std::int64_t>(cell(t, *first_token.front(), "steps")), 1112);
  // The notes read out the slowest three of each kind.
  EXPECT_NE(std::find(t.notes.begin(), t.notes.end(), std::get<std::string>(cell(t, first, "sentence"))),
            t.notes.end());
  ASSERT_GE(t.notes.size(), 2u);
  EXPECT_NE(t.notes[0].find("13 TTFTs and of 14 ITLs over 13 successful requests (1 failed request left out)"),
            std::string::npos)
      << t.notes[0];
  EXPECT_NE(t.notes[1].find("the outermost NVTX ranges"), std::string::npos) << t.notes[1];
  for (const auto& row : t.rows) EXPECT_NE(std::get<std::string>(cell(t, row, "request_id")), "999");
}

TEST(ServingTail, EachSweepPointIsRankedOnItsOwn) {
  EvaluationRecord record = serving_record(true);
  std::vector<ClientRequestTimes> requests = client_requests_from_json(record.settings["serving"]["requests"]);
  ClientRequestTimes later = request("r0", 80 * kMs, {81 * kMs, 82 * kMs});  // point 1's only request: its max
  later.point = 1;
  requests.push_back(later);
  record.settings["serving"]["requests"] = client_requests_to_json(requests);
  EXPECT_EQ(record.settings["serving"]["requests"].back()["point"], 1);
  const Table t = serving_tail(record);
  std::size_t maxima = 0;
  for (const auto& row : t.rows) {
    if (std::holds_alternative<std::monostate>(cell(t, row, "sentence"))) continue;
    if (std::get<std::string>(cell(t, row, "tail")) != "max") continue;
    ++maxima;
    const std::string sentence = std::get<std::string>(cell(t, row, "sentence"));
    const bool second = std::get<std::int64_t>(cell(t, row, "point")) == 1;
    EXPECT_EQ(sentence.find("(sweep point 1)") != std::string::npos, second) << sentence;
  }
  EXPECT_EQ(maxima, 4u);  // the slowest TTFT and ITL of each point
  EXPECT_NE(t.notes[0].find("14 TTFTs and of 15 ITLs"), std::string::npos) << t.notes[0];
  EXPECT_NE(t.notes[0].find("per sweep point"), std::string::npos) << t.notes[0];
}

TEST(ServingTail, WithoutAServerTraceItSaysWhatTheJoinNeeds) {
  const Table t = run_analyses(serving_record(false), {"serving-tail"}, std::nullopt).at(0);
  EXPECT_TRUE(t.rows.empty());
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_EQ(t.notes[0], kNoServerTrace);
  EXPECT_NE(t.notes[0].find("xsp profile --signal"), std::string::npos);
  EXPECT_NE(t.notes[0].find("--server-pid"), std::string::npos);

  EvaluationRecord broken = serving_record(true);
  broken.settings["serving"]["requests"][0]["token_ns"] = "soon";
  const Table b = serving_tail(broken);
  EXPECT_TRUE(b.rows.empty());
  ASSERT_EQ(b.notes.size(), 1u);
  EXPECT_NE(b.notes[0].find("serving request 0"), std::string::npos) << b.notes[0];

  EvaluationRecord other;  // an inference evaluation
  other.batch_sizes = {1};
  other.runs.emplace_back();
  EXPECT_FALSE(is_serving_evaluation(other));
  const Table n = serving_tail(other);
  EXPECT_TRUE(n.rows.empty());
  EXPECT_EQ(n.notes, std::vector<std::string>{kNotServing});
  const std::vector<std::string> defaults = default_analysis_ids(other);
  EXPECT_EQ(std::find(defaults.begin(), defaults.end(), "serving-tail"), defaults.end());
}

// A trace recorded on an H200 by `xsp profile` (tests/fixtures/cuda_graphs: a program that replays a CUDA graph in each
// of its "step" NVTX ranges) stands for the server.
const RunRecord& recorded_graph_program() {
  static const EvaluationRecord record = [] {
    const fs::path copy = fs::temp_directory_path() / ("xsp-serving-join-" + std::to_string(::getpid()) + ".db");
    fs::copy_file(fs::path(XSP_TEST_FIXTURES) / "cuda_graphs/graph_program_h200.db", copy,
                  fs::copy_options::overwrite_existing);
    EvaluationRecord e;
    {
      auto store = Store::open(copy);
      e = *store->load(store->list().at(0).id);
    }
    fs::remove(copy);
    return e;
  }();
  return record.runs.at(0);
}

// The recorded program's steps each replay a CUDA graph of 20 kernels: a gap over three of them finds the three
// steps, the replayed kernels under each (through the ranges replayed at capture) and a GPU busy most of the time.
TEST(ServingJoin, OnARecordedH200TraceTheReplayedKernelsAreUnderTheirSteps) {
  const Trace& trace = recorded_graph_program().trace;
  const ServerTraceIndex index({&trace});
  EXPECT_EQ(index.source(), StepSource::kNvtxRanges);
  EXPECT_EQ(index.kernels(), 490u);
  std::vector<const Span*> steps;
  for (const Span& s : trace.spans)
    if (s.name == "step" && !s.track.is_device()) steps.push_back(&s);
  ASSERT_EQ(steps.size(), 20u);
  std::sort(steps.begin(), steps.end(), [](const Span* a, const Span* b) { return a->start_ns < b->start_ns; });
  const IntervalJoin j = index.join(itl(steps[0]->start_ns + 1'000, steps[2]->end_ns - 1'000));
  ASSERT_EQ(j.steps.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(j.steps[k].name, "step");
    EXPECT_EQ(j.steps[k].ordinal, k + 1);
    EXPECT_EQ(j.steps[k].kernels, 20u);
    EXPECT_FALSE(j.steps[k].top_kernel.empty());
  }
  EXPECT_GT(j.gpu_busy_ns, 4 * j.gpu_idle_ns);
  EXPECT_EQ(j.outside_window_ns, 0);
  EXPECT_EQ(
      j.sentence.rfind("the max ITL of request 731 (5.4 ms) overlaps steps 1–3: step ×3 (5.4 ms, 60 kernels, top ", 0),
      0u)
      << j.sentence;
}

}  // namespace
}  // namespace xsp
