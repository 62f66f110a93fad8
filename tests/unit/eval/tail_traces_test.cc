// Tail-query traces: keep_tail_query_traces() on a hand-made trace (ranking, ties, median, warm-up, helper
// threads, counters), then run_scenario() with a predictor of controlled latency and a framework profiler
// fake that emits nested ops, so that the kept queries can be checked against the measured latencies.
#include "xsp/eval/tail_traces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "fake_graph_profiler.h"
#include "run_helpers.h"
#include "xsp/eval/scenario_runner.h"
#include "xsp/trace/assembler.h"

namespace xsp {
namespace {

Span make_span(SpanId id, SpanId parent, Level level, std::string name, std::int64_t start, std::int64_t end,
               std::uint64_t thread, std::vector<Tag> tags = {}) {
  Span s;
  s.id = id;
  s.parent_id = parent;
  s.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
  s.level = level;
  s.name = std::move(name);
  s.start_ns = start;
  s.end_ns = end;
  s.track = Track::host_thread(thread);
  s.tags = std::move(tags);
  return s;
}

const Span* find(const Trace& t, SpanId id) {
  for (const auto& s : t.spans)
    if (s.id == id) return &s;
  return nullptr;
}

// Five measured queries (latencies 5, 9, 1, 9, 3 ms) and one warm-up query, each one predict span (1 ms after
// issue) with an op and a nested op on the worker thread, and one parentless op of a helper thread.
struct HandMade {
  Trace trace;
  loadgen::Result result;
  HandMade() {
    result.settings.warmup_queries = 1;
    result.latency_ns = {5'000'000, 9'000'000, 1'000'000, 9'000'000, 3'000'000};
    result.query_count = 5;
    SpanId id = 1;
    auto add_query = [&](std::uint64_t query, std::uint64_t sequence, std::int64_t issue, std::int64_t latency) {
      const std::int64_t start = issue + 100'000, end = issue + latency;
      const SpanId predict = id++;
      trace.spans.push_back(make_span(predict, kNoSpan, Level::kModel, "predict", start, end, 7,
                                      {{"query", std::to_string(query)},
                                       {"sequence", std::to_string(sequence)},
                                       {"batch", "0"},
                                       {"batch_size", "1"}}));
      const SpanId op = id++;
      trace.spans.push_back(make_span(op, predict, Level::kFramework, "aten::linear", start + 10, end - 10, 7));
      trace.spans.push_back(make_span(id++, op, Level::kFramework, "aten::addmm", start + 20, end - 20, 7));
      trace.spans.push_back(make_span(id++, kNoSpan, Level::kFramework, "helper::op", start + 30, end - 30, 99));
    };
    add_query(0, 0, 0, 4'000'000);  // the warm-up query: same id 0 as the first measured query
    std::int64_t t = 10'000'000;
    for (std::uint64_t q = 0; q < 5; ++q) {
      result.issue_ns.push_back(t);
      result.complete_ns.push_back(t + result.latency_ns[q]);
      add_query(q, q + 1, t, result.latency_ns[q]);
      t += result.latency_ns[q] + 1'000'000;
    }
  }
};

TEST(TailTraces, KeepsTheSlowestAndTheMedianWithTheirWholeSubtree) {
  HandMade h;
  const auto sel = keep_tail_query_traces(h.trace, h.result, 2, "fake single-stream");
  // Latencies desc: q1 (9), q3 (9, tie: later id), q0 (5), q4 (3), q2 (1). Median = ascending position 2 = q0.
  ASSERT_EQ(sel.kept.size(), 3u);
  EXPECT_EQ(sel.kept[0].query, 1u);
  EXPECT_EQ(sel.kept[0].rank, 1u);
  EXPECT_DOUBLE_EQ(sel.kept[0].percentile, 100.0);
  EXPECT_EQ(sel.kept[1].query, 3u);
  EXPECT_DOUBLE_EQ(sel.kept[1].percentile, 80.0);
  EXPECT_EQ(sel.kept[2].query, 0u);
  EXPECT_EQ(sel.kept[2].kind, "median");
  EXPECT_EQ(sel.kept[2].rank, 3u);
  EXPECT_EQ(sel.traced_queries, 5u);
  EXPECT_EQ(sel.dropped_query_traces, 2u);
  EXPECT_EQ(sel.dropped_spans, 3u * 4u);  // q2, q4 and the warm-up query: 4 spans each
  EXPECT_EQ(h.trace.counters.at("scenario.dropped_query_traces"), 2u);
  EXPECT_EQ(h.trace.counters.at("scenario.kept_query_traces"), 3u);
  EXPECT_EQ(h.trace.counters.at("scenario.dropped_spans"), 12u);
  for (const auto& k : sel.kept) EXPECT_EQ(k.spans, 5u);  // query + predict + 2 ops + helper op
  // 3 queries x 5 spans + the root.
  ASSERT_EQ(h.trace.spans.size(), 16u);
  assemble(h.trace);
  // The helper-thread ops are kept (inside a kept predict span) but, as in every run, not placed: containment
  // works per thread (SPEC §2), so they stay unparented and counted.
  EXPECT_EQ(h.trace.assembly.unparented, 3u);
  std::map<std::string, const Span*> query_spans;
  for (const auto& s : h.trace.spans)
    if (s.name == "query") query_spans[std::string(*s.tag("query"))] = &s;
  ASSERT_EQ(query_spans.size(), 3u);
  const Span& q1 = *query_spans.at("1");
  EXPECT_EQ(q1.tag("latency_ns"), "9000000");
  EXPECT_EQ(q1.tag("rank"), "1");
  EXPECT_EQ(q1.tag("percentile"), "100");
  EXPECT_EQ(q1.find_tag("percentile")->type, TagType::kReal);
  EXPECT_EQ(q1.tag("kept"), "tail");
  EXPECT_EQ(q1.tag("queue_ns"), "100000");
  EXPECT_EQ(q1.start_ns, h.result.issue_ns[1]);
  EXPECT_EQ(q1.end_ns, h.result.complete_ns[1]);
  EXPECT_EQ(find(h.trace, q1.parent_id)->level, Level::kApplication);
  for (const auto& s : h.trace.spans) {
    if (s.name == "predict") {
      // Every kept predict span hangs under the query span of its own query, never a warm-up one.
      const Span* q = find(h.trace, s.parent_id);
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(q->name, "query");
      EXPECT_EQ(q->tag("query"), s.tag("query"));
      EXPECT_NE(s.tag("sequence"), "0");
    }
    if (s.name == "helper::op") EXPECT_EQ(s.parent_id, kNoSpan);
  }
}

TEST(TailTraces, TailLargerThanTheRunKeepsEverythingAndBadInputThrows) {
  HandMade h;
  const auto sel = keep_tail_query_traces(h.trace, h.result, 10, "x");
  EXPECT_EQ(sel.kept.size(), 5u);  // the median is among them: not repeated
  EXPECT_EQ(sel.dropped_query_traces, 0u);
  EXPECT_EQ(sel.dropped_spans, 4u);  // the warm-up query only
  HandMade bad;
  EXPECT_THROW(keep_tail_query_traces(bad.trace, bad.result, 0, "x"), std::invalid_argument);
  bad.result.complete_ns.pop_back();
  EXPECT_THROW(keep_tail_query_traces(bad.trace, bad.result, 1, "x"), std::invalid_argument);
}

// ---- through run_scenario ------------------------------------------------------------------------------

// Emits two nested FRAMEWORK spans per predict() under the current parent, like the LibTorch observer.
class FakeFrameworkProfiler final : public FrameworkProfiler {
 public:
  void start(TraceRecorder& recorder, SpanId parent) override {
    recorder_ = &recorder;
    parent_ = parent;
    start_thread = std::this_thread::get_id();
  }
  void set_parent(SpanId parent) override { parent_ = parent; }
  void stop() override {
    stop_thread = std::this_thread::get_id();
    recorder_ = nullptr;
  }
  void emit(std::int64_t start, std::int64_t end) {
    if (!recorder_) return;
    const SpanId op = recorder_->next_id();
    recorder_->add(make_span(op, parent_, Level::kFramework, "aten::linear", start, end, current_thread_id()));
    recorder_->add(
        make_span(recorder_->next_id(), op, Level::kFramework, "aten::addmm", start + 1, end - 1, current_thread_id()));
  }
  std::thread::id start_thread, stop_thread;

 private:
  TraceRecorder* recorder_ = nullptr;
  SpanId parent_ = kNoSpan;
};

// predict() takes 1, 2 or 4 ms in a fixed pattern, so that the slow queries differ from the fast ones by far
// more than sleep jitter.
class PatternPredictor final : public Predictor {
 public:
  FakeFrameworkProfiler profiler;
  std::thread::id predict_thread;
  int calls = 0;
  std::string framework_name() const override { return "pattern"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest&, const DeviceSpec&) override {}
  Tensor predict(const Tensor& input) override {
    predict_thread = std::this_thread::get_id();
    static constexpr int kMs[] = {1, 1, 2, 1, 4, 1, 1, 2, 1, 1, 4, 1};
    const std::int64_t start = now_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(kMs[calls++ % 12]));
    profiler.emit(start + 1000, now_ns() - 1000);
    return Tensor{{input.shape.at(0), 2}, std::vector<float>(static_cast<std::size_t>(input.shape.at(0)) * 2)};
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return &profiler; }
};

Manifest fake_manifest() {
  Manifest m;
  m.name = "fake";
  m.version = "1.0.0";
  InputSpec in;
  in.type = "tensor";
  in.dimensions = {4};
  m.inputs.push_back(in);
  m.outputs.push_back(OutputSpec{});
  return m;
}

RunPlan traced_options(loadgen::Scenario scenario, std::size_t tail) {
  RunPlan o;
  o.inputs.synthetic = true;
  o.scenario.settings.scenario = scenario;
  o.scenario.settings.min_duration_ms = 1;
  o.scenario.settings.min_query_count = 36;
  o.scenario.settings.max_query_count = 36;
  o.scenario.settings.warmup_queries = 2;
  o.scenario.synthetic_samples = 4;
  o.scenario.trace_tail = tail;
  o.trace_level = TraceLevel::kFramework;
  return o;
}

EvaluationRecord run_scenario(const Manifest& manifest, Predictor& predictor, const RunPlan& plan) {
  return testing::scenario(manifest, predictor, plan, testing::quiet_session());
}

TEST(TailTracesScenario, SingleStreamKeepsExactlyTheSlowestQueriesFrameworkSpansNested) {
  PatternPredictor p;
  const auto rec = run_scenario(fake_manifest(), p, traced_options(loadgen::Scenario::kSingleStream, 4));
  ASSERT_EQ(rec.runs.size(), 1u);
  const RunRecord& run = rec.runs[0];
  EXPECT_EQ(run.trace_level, TraceLevel::kFramework);
  EXPECT_EQ(rec.trace_level, TraceLevel::kFramework);
  // The profiler ran on the predict thread, not the load generator's.
  EXPECT_EQ(p.profiler.start_thread, p.predict_thread);
  EXPECT_EQ(p.profiler.stop_thread, p.predict_thread);
  EXPECT_NE(p.predict_thread, std::this_thread::get_id());

  const std::size_t n = run.predict_latency_ns.size();
  ASSERT_EQ(n, 36u);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return run.predict_latency_ns[a] > run.predict_latency_ns[b]; });
  const std::set<std::uint64_t> slowest(order.begin(), order.begin() + 4);

  std::map<SpanId, const Span*> by_id;
  for (const auto& s : run.trace.spans) by_id[s.id] = &s;
  std::set<std::uint64_t> tail_queries;
  std::uint64_t median_query = ~0ull;
  std::size_t predicts = 0, ops = 0;
  for (const auto& s : run.trace.spans) {
    if (s.name == "query") {
      const auto q = static_cast<std::uint64_t>(*s.tag_int("query"));
      EXPECT_EQ(*s.tag_int("latency_ns"), static_cast<std::int64_t>(run.predict_latency_ns[q]));
      if (s.tag("kept") == "tail")
        tail_queries.insert(q);
      else
        median_query = q;
      EXPECT_EQ(by_id.at(s.parent_id)->level, Level::kApplication);
    } else if (s.name == "predict") {
      ++predicts;
      const Span& q = *by_id.at(s.parent_id);
      EXPECT_EQ(q.name, "query");
      EXPECT_EQ(q.tag("query"), s.tag("query"));
      EXPECT_LE(q.start_ns, s.start_ns);
      EXPECT_GE(q.end_ns, s.end_ns);
    } else if (s.name == "aten::linear") {
      ++ops;
      const Span& parent = *by_id.at(s.parent_id);
      EXPECT_EQ(parent.name, "predict");
      EXPECT_LE(parent.start_ns, s.start_ns);
      EXPECT_GE(parent.end_ns, s.end_ns);
    } else if (s.name == "aten::addmm") {
      EXPECT_EQ(by_id.at(s.parent_id)->name, "aten::linear");
    }
  }
  EXPECT_EQ(tail_queries, slowest);  // exactly the 4 largest latencies
  EXPECT_EQ(median_query, order[n - 1 - (n - 1) / 2]);
  EXPECT_EQ(predicts, 5u);
  EXPECT_EQ(ops, 5u);
  EXPECT_EQ(run.trace.assembly.unparented, 0u);
  EXPECT_EQ(run.trace.counters.at("scenario.dropped_query_traces"), 31u);
  // 31 dropped queries + 2 warm-ups, 3 spans each (predict + 2 ops).
  EXPECT_EQ(run.trace.counters.at("scenario.dropped_spans"), 33u * 3u);
  const TailTraceSelection& tt = rec.runs.at(0).scenario_result.value().tail_traces.value();
  EXPECT_EQ(tt.kept.size(), 5u);
  EXPECT_EQ(tt.trace_level, "framework");
  const std::string report = format_scenario_record(rec);
  EXPECT_NE(report.find("dropped 31 query traces"), std::string::npos) << report;
  EXPECT_NE(report.find("rank 1, p100.00"), std::string::npos) << report;
}

TEST(TailTracesScenario, MultiStreamQueriesKeepAllTheirBatches) {
  PatternPredictor p;
  auto o = traced_options(loadgen::Scenario::kMultiStream, 2);
  o.scenario.settings.samples_per_query = 4;
  o.scenario.max_batch = 2;
  o.trace_level = TraceLevel::kModel;  // query -> predict spans only, no profiler
  const auto rec = run_scenario(fake_manifest(), p, o);
  const RunRecord& run = rec.runs[0];
  EXPECT_EQ(run.trace_level, TraceLevel::kModel);
  std::map<SpanId, std::size_t> batches_per_query;
  for (const auto& s : run.trace.spans) {
    EXPECT_NE(s.level, Level::kFramework);
    if (s.name == "predict") ++batches_per_query[s.parent_id];
  }
  ASSERT_EQ(batches_per_query.size(), 3u);  // 2 slowest + median
  for (const auto& [query, batches] : batches_per_query) EXPECT_EQ(batches, 2u);
}

// Offline with tail traces, framework level without them and kernel level on CPU are refused by validation
// (tests/unit/cli/errors_test.cc, ScenarioCombinationsThatCannotRunAreRefusedNamingTheFlag).

// --cuda-graphs with a scenario: the predictor's graph is captured in the first (warm-up) query, whose spans the tail
// selection drops; every replay kept in the tail traces must still go under the op that was open at the capture.
class GraphPredictor final : public Predictor {
 public:
  testing::FakeGraphProfiler graphs;
  FakeFrameworkProfiler profiler;  // started per query; the ops come from the fake capture
  std::string framework_name() const override { return "graph-pattern"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest&, const DeviceSpec&) override {}
  Tensor predict(const Tensor& input) override {
    static constexpr int kMs[] = {1, 1, 3, 1, 1, 1};
    const std::int64_t start = now_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(kMs[calls++ % 6]));
    graphs.step(start + 1000, now_ns() - 1000);
    return Tensor{{input.shape.at(0), 2}, std::vector<float>(static_cast<std::size_t>(input.shape.at(0)) * 2)};
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return &profiler; }
  int calls = 0;
};

TEST(TailTracesScenario, ReplaysOfAGraphCapturedInAWarmUpQueryGoUnderTheCapturedOp) {
  GraphPredictor p;
  p.graphs.node = 7001;  // the registry of capture contexts is the process's: a node no other test uses
  RunPlan o = traced_options(loadgen::Scenario::kSingleStream, 3);
  o.trace_level = TraceLevel::kKernel;
  SessionOptions session = testing::quiet_session();
  session.profilers.device = &p.graphs;
  const auto rec = testing::scenario(fake_manifest(), p, o, session);
  ASSERT_TRUE(p.graphs.captured);
  ASSERT_EQ(rec.runs.size(), 1u);
  const Trace& t = rec.runs[0].trace;
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id[s.id] = &s;
  std::size_t replayed = 0, captured_ops = 0;
  for (const Span& s : t.spans) {
    if (s.name == "fake::attention" && !s.tag("replayed_from")) ++captured_ops;
    if (s.level != Level::kKernel || !s.tag("graph_id")) continue;
    ++replayed;
    const Span& op = *by_id.at(s.parent_id);
    EXPECT_EQ(op.name, "fake::attention");
    EXPECT_EQ(op.tag("replayed_from"), std::optional<std::string_view>("cuda-graph"));
    EXPECT_EQ(op.tag("module"), std::optional<std::string_view>("h.0.attn"));
  }
  EXPECT_EQ(captured_ops, 0u);  // the capturing warm-up query is not in the kept traces
  EXPECT_EQ(replayed, 4u);      // the 3 slowest queries and the median one, one predict each
  EXPECT_EQ(t.counters.at("cuda_graph.attributed_activities"), replayed);
  EXPECT_EQ(t.counters.at("cuda_graph.unknown_capture_context"), 0u);
}

}  // namespace
}  // namespace xsp
