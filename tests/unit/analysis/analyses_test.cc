// Analyses A1–A7 on hand-made evaluation records with known answers (SPEC §3, §4).
#include "xsp/analysis/analyses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "trace_builder.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

using testing::TraceBuilder;

// One batch: conv (module layer1.conv, 2 nested ops, 100 B), relu (no module, no bytes), linear (fc, 300 B),
// relu (no module, 50 B). Latencies scale with `scale` so batches differ.
void add_batch(TraceBuilder& tb, SpanId app, int batch, std::int64_t t0, std::int64_t scale) {
  const SpanId pred = tb.add(Level::kModel, "predict", t0, t0 + 1000 * scale, app, {{"batch", std::to_string(batch)}});
  tb.add(Level::kModel, "preprocess", t0 - 100, t0 - 1, app, {{"batch", std::to_string(batch)}});
  // Added out of execution order on purpose: index must follow start time, not insertion order.
  const SpanId relu2 =
      tb.add(Level::kFramework, "aten::relu", t0 + 700 * scale, t0 + 750 * scale, pred, {{"allocated_bytes", "50"}});
  (void)relu2;
  const SpanId conv =
      tb.add(Level::kFramework, "aten::conv2d", t0 + 10 * scale, t0 + 410 * scale, pred,
             {{"module", "layer1.conv"}, {"shapes", "[1,3,224,224],[64,3,7,7]"}, {"allocated_bytes", "100"}});
  const SpanId inner = tb.add(Level::kFramework, "aten::convolution", t0 + 20 * scale, t0 + 400 * scale, conv);
  tb.add(Level::kFramework, "aten::_convolution", t0 + 30 * scale, t0 + 390 * scale, inner);
  tb.add(Level::kFramework, "aten::relu", t0 + 420 * scale, t0 + 520 * scale, pred);
  tb.add(Level::kFramework, "aten::linear", t0 + 530 * scale, t0 + 690 * scale, pred,
         {{"module", "fc"}, {"allocated_bytes", "300"}});
}

Trace framework_trace(int batches) {
  TraceBuilder tb;
  const SpanId app = tb.add(Level::kApplication, "evaluation", 0, 1'000'000'000, kNoSpan);
  for (int b = 0; b < batches; ++b) add_batch(tb, app, b, 1'000'000 * (b + 1), b + 1);
  // An op outside any predict span (e.g. from pre-processing) is not a layer.
  tb.add(Level::kFramework, "aten::resize", 10, 20, app);
  return tb.trace;
}

RunRecord model_run(int batch, std::vector<double> predict_ns) {
  RunRecord r;
  r.batch_size = batch;
  r.trace_level = TraceLevel::kModel;
  r.iterations = static_cast<int>(predict_ns.size());
  r.stage_latency_ns[kStagePredict] = summarize(predict_ns);
  r.predict_latency_ns = std::move(predict_ns);
  return r;
}

EvaluationRecord framework_record(int batches = 5) {
  EvaluationRecord e;
  e.batch_sizes = {1};
  e.trace_level = TraceLevel::kFramework;
  e.leveled = true;
  e.runs.push_back(model_run(1, {1e6, 1e6, 1e6}));
  RunRecord f;
  f.batch_size = 1;
  f.trace_level = TraceLevel::kFramework;
  f.iterations = batches;
  f.trace = framework_trace(batches);
  e.runs.push_back(std::move(f));
  return e;
}

double num(const Cell& c) {
  if (auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  return std::get<double>(c);
}
const std::string& str(const Cell& c) { return std::get<std::string>(c); }

bool has_note(const Table& t, const std::string& part) {
  for (const auto& n : t.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------

TEST(ExtractLayers, TopLevelOpsOnlyInExecutionOrder) {
  LayerExtractionReport rep;
  const auto layers = extract_layers(framework_trace(2), &rep);
  ASSERT_EQ(layers.size(), 8u);  // 4 per batch; nested convolution ops are not layers
  EXPECT_EQ(rep.predict_spans, 2u);
  EXPECT_EQ(rep.framework_spans, 13u);
  EXPECT_EQ(rep.outside_predict, 1u);
  const std::vector<std::string> types = {"aten::conv2d", "aten::relu", "aten::linear", "aten::relu"};
  const std::vector<std::string> names = {"layer1.conv", "aten::relu", "fc", "aten::relu"};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(layers[i].index, i % 4);
    EXPECT_EQ(layers[i].type, types[i % 4]);
    EXPECT_EQ(layers[i].name, names[i % 4]);
  }
  EXPECT_EQ(layers[0].shapes, "[1,3,224,224],[64,3,7,7]");
  EXPECT_EQ(layers[0].nested_ops, 2u);
  EXPECT_EQ(layers[1].nested_ops, 0u);
  EXPECT_EQ(layers[0].latency_ns, 400);
  EXPECT_EQ(layers[4].latency_ns, 800);  // second batch, scale 2
  EXPECT_EQ(layers[0].allocated_bytes, 100);
  EXPECT_FALSE(layers[1].allocated_bytes.has_value());
  EXPECT_NE(layers[0].predict_span_id, layers[4].predict_span_id);
  EXPECT_EQ(layers[0].predict_span_id, layers[3].predict_span_id);
}

TEST(ExtractLayers, SparseIdsCyclesAndBadTags) {
  TraceBuilder tb;
  tb.next = 1'000'000'000'000;  // sparse ids force the hash-map path
  const SpanId pred = tb.add(Level::kModel, "predict", 0, 100, kNoSpan);
  tb.add(Level::kFramework, "aten::add", 1, 2, pred, {{"allocated_bytes", "12x"}});
  // Two FRAMEWORK spans that name each other as parent: no layer, no hang.
  Span a;
  a.id = 5;
  a.parent_id = 6;
  a.level = Level::kFramework;
  a.name = "a";
  Span b = a;
  b.id = 6;
  b.parent_id = 5;
  tb.trace.spans.push_back(a);
  tb.trace.spans.push_back(b);
  LayerExtractionReport rep;
  const auto layers = extract_layers(tb.trace, &rep);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_FALSE(layers[0].allocated_bytes.has_value());
  EXPECT_EQ(rep.outside_predict, 2u);
}

// A batch that replayed a CUDA graph (docs/cuda-graphs.md): its layers are the replayed ops, on the GPU; the host
// ops around the replay (input copy, output copy) overlap them in time and are left out. Another batch stays eager.
TEST(ExtractLayers, ABatchReplayedFromACudaGraphHasTheReplayedOpsAsLayers) {
  TraceBuilder tb;
  const SpanId graph_batch = tb.add(Level::kModel, "predict", 0, 100, kNoSpan);
  tb.add(Level::kFramework, "aten::to", 1, 5, graph_batch);
  tb.add(Level::kFramework, "aten::to", 8, 99, graph_batch);  // the output copy waits for the replay
  for (auto [name, start, end] : {std::tuple{"aten::conv2d", 10, 40}, std::tuple{"aten::relu_", 41, 50}})
    tb.add(Level::kFramework, name, start, end, graph_batch, {{"replayed_from", "cuda-graph"}});
  const SpanId eager_batch = tb.add(Level::kModel, "predict", 200, 300, kNoSpan);
  tb.add(Level::kFramework, "aten::to", 201, 205, eager_batch);
  tb.add(Level::kFramework, "aten::conv2d", 206, 240, eager_batch);
  LayerExtractionReport rep;
  const auto layers = extract_layers(tb.trace, &rep);
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[0].type, "aten::conv2d");
  EXPECT_EQ(layers[0].latency_ns, 30);
  EXPECT_EQ(layers[1].type, "aten::relu_");
  EXPECT_EQ(layers[2].type, "aten::to");  // the eager batch keeps its host ops
  EXPECT_EQ(layers[3].type, "aten::conv2d");
  EXPECT_EQ(rep.host_ops_beside_replays, 2u);
}

TEST(LayerStats, TrimmedMeanAcrossBatches) {
  // 5 batches, conv latency 400 * scale for scale 1..5: trimmed mean drops 1 at each end -> mean(800,1200,1600).
  const LayerStats s = layer_stats(framework_trace(5));
  EXPECT_EQ(s.batches, 5u);
  EXPECT_TRUE(s.consistent);
  ASSERT_EQ(s.layers.size(), 4u);
  EXPECT_DOUBLE_EQ(s.layers[0].latency_ns, 1200.0);
  EXPECT_DOUBLE_EQ(s.layers[0].latency_ns, trimmed_mean({400, 800, 1200, 1600, 2000}));
  EXPECT_EQ(s.layers[0].samples, 5u);
  EXPECT_EQ(s.layers[0].allocated_bytes, 100);
  EXPECT_FALSE(s.layers[1].allocated_bytes.has_value());
  EXPECT_DOUBLE_EQ(s.layers[0].nested_ops, 2.0);
  EXPECT_TRUE(s.any_allocated_bytes);
  EXPECT_EQ(s.notes.size(), 1u);  // the op outside any predict span
}

TEST(LayerStats, InconsistentSequencesAreNoted) {
  Trace t = framework_trace(3);
  for (Span& s : t.spans) {
    if (s.name == "aten::linear" && s.start_ns > 3'000'000) s.name = "aten::matmul";  // third batch differs
  }
  const LayerStats s = layer_stats(t);
  EXPECT_FALSE(s.consistent);
  bool found = false;
  for (const auto& n : s.notes) found |= n.find("batch 2") != std::string::npos;
  EXPECT_TRUE(found);
}

// ---------------------------------------------------------------------------------------------------------

TEST(OptimalBatch, SmallestAfterWhichNextRaisesAtMost5Percent) {
  EXPECT_EQ(optimal_batch_size({{1, 100}, {2, 180}, {4, 200}, {8, 205}}), 4);
  EXPECT_EQ(optimal_batch_size({{8, 205}, {1, 100}, {4, 200}, {2, 180}}), 4);  // any order
  EXPECT_EQ(optimal_batch_size({{1, 100}, {2, 250}, {4, 600}}), 4);            // none: the largest
  EXPECT_EQ(optimal_batch_size({{1, 100}, {2, 105}}), 1);                      // exactly +5% counts
  EXPECT_EQ(optimal_batch_size({{1, 100}, {2, 90}}), 1);                       // a drop counts
  EXPECT_EQ(optimal_batch_size({{16, 50}}), 16);
  EXPECT_FALSE(optimal_batch_size({}).has_value());
}

TEST(OptimalBatch, LatencyBound) {
  const std::vector<BatchThroughput> pts = {{1, 100, 2.0}, {2, 180, 4.0}, {4, 200, 9.0}, {8, 205, 20.0}};
  EXPECT_EQ(optimal_batch_size_within_bound(pts, 10.0), 4);
  EXPECT_EQ(optimal_batch_size_within_bound(pts, 4.0), 2);  // bound inclusive
  EXPECT_EQ(optimal_batch_size_within_bound(pts, 100.0), 8);
  EXPECT_FALSE(optimal_batch_size_within_bound(pts, 1.0).has_value());
}

EvaluationRecord sweep_record() {
  // Predict latency b * 10 ms / thr-factor chosen so throughputs are 100, 180, 200, 205 samples/s.
  EvaluationRecord e;
  e.batch_sizes = {4, 1, 8, 2};
  const std::vector<std::pair<int, double>> thr = {{1, 100}, {2, 180}, {4, 200}, {8, 205}};
  for (auto [b, t] : thr) {
    const double ns = b / t * 1e9;
    e.runs.push_back(model_run(b, {ns * 0.9, ns, ns, ns, ns * 1.5}));  // trimmed mean = ns
  }
  return e;
}

TEST(A1, NumbersAndOptimalBatch) {
  const Table t = a1_model_information(sweep_record(), std::nullopt);
  EXPECT_EQ(t.id, "A1");
  ASSERT_EQ(t.rows.size(), 4u);
  ASSERT_EQ(t.columns.size(), 10u);
  EXPECT_EQ(t.columns[1].name, "median_ms");
  EXPECT_EQ(t.columns[4].name, "stability");
  EXPECT_EQ(t.columns[9].name, "throughput_samples_per_s");
  const std::vector<int> b = {1, 2, 4, 8};
  const std::vector<double> thr = {100, 180, 200, 205};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(num(t.rows[i][0]), b[i]);
    const double ns = b[i] / thr[i] * 1e9;
    EXPECT_DOUBLE_EQ(num(t.rows[i][5]), ns / 1e6);  // trimmed mean
    EXPECT_NEAR(num(t.rows[i][9]), thr[i], 1e-9);
    EXPECT_DOUBLE_EQ(num(t.rows[i][6]), ns / 1e6);  // p50
    EXPECT_DOUBLE_EQ(num(t.rows[i][8]), percentile({ns * 0.9, ns, ns, ns, ns * 1.5}, 99) / 1e6);
    // Stored before stability: assessed afterwards on 3 windows {0.9, 1}, {1, 1}, {1.5} x ns: medians 0.95, 1, 1.5.
    EXPECT_DOUBLE_EQ(num(t.rows[i][1]), ns / 1e6);  // median
    EXPECT_LE(num(t.rows[i][2]), 0.9 * ns / 1e6);   // interval holds every batch of 5 (n < 6)
    EXPECT_GE(num(t.rows[i][3]), 1.5 * ns / 1e6);
    EXPECT_EQ(std::get<std::string>(t.rows[i][4]).rfind("UNSTABLE (spread 47.8%)", 0), 0u)
        << std::get<std::string>(t.rows[i][4]);
  }
  EXPECT_TRUE(has_note(t, "UNSTABLE latency at batch size 1 2 4 8"));
  EXPECT_TRUE(has_note(t, "optimal batch size: 4"));
  EXPECT_TRUE(has_note(t, "M run (trace level model)"));
}

TEST(A1, LatencyBoundNote) {
  // p99 of batch 4 is ~ 1.5 * 20 ms = 29.6 ms; batch 8 ~ 58 ms.
  const Table t = a1_model_information(sweep_record(), 40.0);
  EXPECT_TRUE(has_note(t, "optimal batch size under a p99 latency bound of 40.000 ms: 4"));
  const Table none = a1_model_information(sweep_record(), 0.001);
  EXPECT_TRUE(has_note(none, "no batch size meets"));
}

// ---------------------------------------------------------------------------------------------------------

TEST(A2, LayerInformationFromFrameworkRun) {
  const Table t = a2_layer_information(framework_record(5), 1);
  EXPECT_EQ(t.id, "A2");
  EXPECT_NE(t.title.find("batch size 1"), std::string::npos);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(num(t.rows[0][0]), 0);
  EXPECT_EQ(str(t.rows[0][1]), "layer1.conv");
  EXPECT_EQ(str(t.rows[0][2]), "aten::conv2d");
  EXPECT_EQ(str(t.rows[0][3]), "[1,3,224,224],[64,3,7,7]");
  EXPECT_DOUBLE_EQ(num(t.rows[0][4]), 1200.0 / 1e6);
  EXPECT_EQ(num(t.rows[0][5]), 100);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[1][5]));
  EXPECT_TRUE(has_note(t, "latencies from the M/F run (trace level framework), 5 batches, trimmed mean"));
}

TEST(A2, NoFrameworkRun) {
  EvaluationRecord e = sweep_record();
  const Table t = a2_layer_information(e, 1);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_EQ(t.columns.size(), 6u);
  EXPECT_TRUE(has_note(t, "no FRAMEWORK-level run in this evaluation (use --trace-level framework)"));
}

TEST(A2, NonLeveledRunNotesOverhead) {
  EvaluationRecord e = framework_record(3);
  e.runs.erase(e.runs.begin());
  e.runs[0].trace_level = TraceLevel::kKernel;
  const Table t = a2_layer_information(e, 1);
  EXPECT_EQ(t.rows.size(), 4u);
  EXPECT_TRUE(has_note(t, "M/F/K run"));
  EXPECT_TRUE(has_note(t, "profiling overhead"));
}

TEST(A3A4, ByIndexWithBars) {
  const auto e = framework_record(5);
  const Table a3 = a3_layer_latency(e, 1);
  ASSERT_EQ(a3.rows.size(), 4u);
  EXPECT_EQ(a3.columns[a3.bar_column].name, "latency_ms");
  EXPECT_DOUBLE_EQ(num(a3.rows[2][2]), 480.0 / 1e6);  // linear: 160 * 3
  const Table a4 = a4_layer_memory(e, 1);
  EXPECT_EQ(a4.columns[a4.bar_column].name, "allocated_bytes");
  EXPECT_EQ(num(a4.rows[2][2]), 300);
  EXPECT_EQ(num(a4.rows[3][2]), 50);
  EXPECT_TRUE(has_note(a4, "allocated bytes from the M/F run (trace level framework), 5 batches, mean"));
}

TEST(A5A6A7, AggregatesByTypeExact) {
  const auto e = framework_record(5);
  // Per-index trimmed means (ns): conv 1200, relu 300, linear 480, relu 150 -> relu 450; total 2130.
  const Table a5 = a5_layer_type_distribution(e, 1);
  ASSERT_EQ(a5.rows.size(), 3u);
  EXPECT_EQ(str(a5.rows[0][0]), "aten::relu");
  EXPECT_EQ(num(a5.rows[0][1]), 2);
  EXPECT_DOUBLE_EQ(num(a5.rows[0][2]), 50.0);
  EXPECT_EQ(str(a5.rows[1][0]), "aten::conv2d");  // ties (count 1) by type name
  EXPECT_EQ(str(a5.rows[2][0]), "aten::linear");
  EXPECT_DOUBLE_EQ(num(a5.rows[1][2]), 25.0);

  const Table a6 = a6_layer_latency_by_type(e, 1);
  ASSERT_EQ(a6.rows.size(), 3u);
  EXPECT_EQ(str(a6.rows[0][0]), "aten::conv2d");
  EXPECT_DOUBLE_EQ(num(a6.rows[0][1]), 1200.0 / 1e6);
  EXPECT_DOUBLE_EQ(num(a6.rows[0][2]), 100.0 * 1200.0 / 2130.0);
  EXPECT_EQ(str(a6.rows[1][0]), "aten::linear");
  EXPECT_DOUBLE_EQ(num(a6.rows[1][1]), 480.0 / 1e6);
  EXPECT_EQ(str(a6.rows[2][0]), "aten::relu");
  EXPECT_DOUBLE_EQ(num(a6.rows[2][1]), 450.0 / 1e6);
  EXPECT_DOUBLE_EQ(num(a6.rows[2][2]), 100.0 * 450.0 / 2130.0);
  EXPECT_EQ(a6.bar_column, 1);

  const Table a7 = a7_layer_memory_by_type(e, 1);
  ASSERT_EQ(a7.rows.size(), 3u);
  EXPECT_EQ(str(a7.rows[0][0]), "aten::linear");
  EXPECT_EQ(num(a7.rows[0][1]), 300);
  EXPECT_DOUBLE_EQ(num(a7.rows[0][2]), 100.0 * 300 / 450);
  EXPECT_EQ(str(a7.rows[1][0]), "aten::conv2d");
  EXPECT_EQ(str(a7.rows[2][0]), "aten::relu");
  EXPECT_EQ(num(a7.rows[2][1]), 50);
}

// ---------------------------------------------------------------------------------------------------------

TEST(RunAnalyses, IdsBatchSizesAndErrors) {
  EvaluationRecord e = framework_record(3);
  e.batch_sizes = {1, 2};
  e.runs.push_back(model_run(2, {2e6, 2e6}));  // batch 2 has no FRAMEWORK run
  const auto all = run_analyses(e, {"a1", "A2", "a7"}, std::nullopt);
  ASSERT_EQ(all.size(), 5u);  // A1 once, A2 and A7 per batch size
  EXPECT_EQ(all[0].id, "A1");
  EXPECT_EQ(all[0].rows.size(), 2u);
  EXPECT_EQ(all[1].id, "A2");
  EXPECT_EQ(all[1].rows.size(), 4u);
  EXPECT_EQ(all[2].id, "A2");
  EXPECT_TRUE(all[2].rows.empty());
  EXPECT_TRUE(has_note(all[2], "no FRAMEWORK-level run"));
  EXPECT_NE(all[2].title.find("batch size 2"), std::string::npos);
  EXPECT_EQ(all[4].id, "A7");

  const auto one = run_analyses(e, {"A3"}, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rows.size(), 4u);

  try {
    run_analyses(e, {"A2", "A99"}, std::nullopt);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& ex) {
    const std::string msg = ex.what();
    EXPECT_NE(msg.find("A99"), std::string::npos);
    EXPECT_NE(msg.find("A1 A2 A3 A4 A5 A6 A7"), std::string::npos);
  }
  EXPECT_THROW(run_analyses(e, {"A2"}, 16), std::invalid_argument);
}

}  // namespace
}  // namespace xsp
