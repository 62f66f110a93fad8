// GPU analyses (A8, A10, A11, A13, A15, gpu-idle, launch-stats) on hand-made leveled evaluations with known
// answers (SPEC §3, §4; docs/spans.md). Parent ids are set by hand, as the assembler would.
#include "xsp/analysis/gpu_analyses.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/roofline.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

constexpr std::int64_t kUs = 1000;  // ns per µs
constexpr std::uint64_t kStream7 = 0x5354000000000000ULL | 7;
constexpr std::uint64_t kStream9 = 0x5354000000000000ULL | 9;

struct TraceBuilder {
  Trace trace;
  SpanId next = 1;
  SpanId add(Level level, const std::string& name, std::int64_t start, std::int64_t end, SpanId parent,
             std::vector<Tag> tags = {}, std::uint64_t thread = 1) {
    Span s;
    s.id = next++;
    s.parent_id = parent;
    s.level = level;
    s.parent_rule = parent == kNoSpan                                    ? ParentRule::kNone
                    : level == Level::kKernel || level == Level::kSystem ? ParentRule::kCorrelation
                                                                         : ParentRule::kContext;
    s.name = name;
    s.start_ns = start;
    s.end_ns = end;
    s.track = Track::host_thread(thread);
    s.tags = std::move(tags);
    trace.spans.push_back(std::move(s));
    return next - 1;
  }
  // A launch API call (SYSTEM) under `op` and the kernel it launched (KERNEL, parent = the call); times in µs
  // relative to t0.
  void launch(SpanId op, std::int64_t t0, const std::string& api, double api_start, double api_end,
              const std::string& kernel, double k_start, double k_end, std::uint64_t stream,
              const std::string& kind = "kernel") {
    const auto ns = [&](double us) { return t0 + static_cast<std::int64_t>(std::llround(us * kUs)); };
    const SpanId call = add(Level::kSystem, api, ns(api_start), ns(api_end), op, {{"domain", "runtime"}});
    add(Level::kKernel, kernel, ns(k_start), ns(k_end), call, {{"kind", kind}}, stream);
  }
};

double num(const Cell& c) {
  if (auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&c)) return *d;
  ADD_FAILURE() << "cell is not numeric";
  return std::nan("");
}
std::string str(const Cell& c) {
  if (auto* s = std::get_if<std::string>(&c)) return *s;
  ADD_FAILURE() << "cell is not text";
  return "";
}
bool empty(const Cell& c) { return std::holds_alternative<std::monostate>(c); }
bool has_note(const Table& t, const std::string& part) {
  for (const auto& n : t.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}
int col(const Table& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no column " << name << " in " << t.id;
  return 0;
}
double at(const Table& t, std::size_t row, const std::string& column) { return num(t.rows.at(row).at(col(t, column))); }

// ---------------------------------------------------------------------------------------------------------
// The evaluation: batch size 1, 2 measured batches per run.
//
// M run: predict 400 µs in both batches.
// M/F run: layer 0 conv1 (aten::conv2d) 100 µs, layer 1 aten::relu 20 µs, layer 2 fc (aten::linear) 50/70 µs.
// M/F/K run, per batch, predict [0, 300] µs (times relative to the batch's t0):
//   conv1 [10,160]  > aten::convolution [15,150] > cudaLaunchKernel [20,25] -> implicit_gemm s7 [30,60]   (30 µs)
//                   > cudaLaunchKernel [26,30]                             -> bias_add      s7 [60,80]   (20 µs)
//   relu  [170,180] > cudaLaunchKernel [172,175]                           -> relu_kernel   s7 [185,190] (5 µs)
//   fc    [190,260] > cudaLaunchKernel [192,195]                           -> gemm          s7 [200,240] (40 µs;
//                                                                                              44 in batch 1)
//                   > cudaLaunchKernel [196,198]                           -> gemm          s9 [220,250] (30 µs)
//                   > cudaLaunchKernel [199,201]                           -> bias_add      s7 [252,253.5] (1.5)
//   predict         > cudaMemcpyAsync [262,265]                            -> Memcpy DtoH   s7 [270,280] (10 µs)
// GPU union per batch: [30,80] [185,190] [200,250] [252,253.5] [270,280] = 116.5 µs.
// Idle 183.5 µs: before first 30; host-bound 80→185 (105), 190→200 (10), 253.5→270 (16.5) = 131.5; launch latency
// 250→252 (2; bias_add launched at 199 < 250); after last 280→300 (20).
// ---------------------------------------------------------------------------------------------------------

RunRecord model_run(int batch, std::vector<double> predict_ns) {
  RunRecord r;
  r.batch_size = batch;
  r.trace_level = TraceLevel::kModel;
  r.iterations = static_cast<int>(predict_ns.size());
  r.stage_latency_ns[kStagePredict] = summarize(predict_ns);
  r.predict_latency_ns = std::move(predict_ns);
  return r;
}

Trace framework_trace() {
  TraceBuilder tb;
  const SpanId app = tb.add(Level::kApplication, "evaluation", 0, 1'000'000'000, kNoSpan);
  for (int b = 0; b < 2; ++b) {
    const std::int64_t t0 = 1'000'000 * (b + 1);
    const SpanId pred = tb.add(Level::kModel, "predict", t0, t0 + 200 * kUs, app, {{"batch", std::to_string(b)}});
    tb.add(Level::kFramework, "aten::conv2d", t0, t0 + 100 * kUs, pred, {{"module", "conv1"}});
    tb.add(Level::kFramework, "aten::relu", t0 + 100 * kUs, t0 + 120 * kUs, pred);
    tb.add(Level::kFramework, "aten::linear", t0 + 120 * kUs, t0 + (b == 0 ? 170 : 190) * kUs, pred,
           {{"module", "fc"}});
  }
  return tb.trace;
}

// `second_layer_type` lets a test break the op sequence between the M/F and the M/F/K run.
Trace kernel_trace(const std::string& second_layer_type = "aten::relu") {
  TraceBuilder tb;
  const SpanId app = tb.add(Level::kApplication, "evaluation", 0, 1'000'000'000, kNoSpan);
  for (int b = 0; b < 2; ++b) {
    const std::int64_t t0 = 1'000'000 * (b + 1);
    const auto ns = [&](double us) { return t0 + static_cast<std::int64_t>(std::llround(us * kUs)); };
    const SpanId pred = tb.add(Level::kModel, "predict", ns(0), ns(300), app, {{"batch", std::to_string(b)}});
    const SpanId conv = tb.add(Level::kFramework, "aten::conv2d", ns(10), ns(160), pred, {{"module", "conv1"}});
    const SpanId convolution = tb.add(Level::kFramework, "aten::convolution", ns(15), ns(150), conv);
    tb.launch(convolution, t0, "cudaLaunchKernel", 20, 25, "implicit_gemm", 30, 60, kStream7);
    tb.launch(conv, t0, "cudaLaunchKernel", 26, 30, "bias_add", 60, 80, kStream7);
    const SpanId relu = tb.add(Level::kFramework, second_layer_type, ns(170), ns(180), pred);
    tb.launch(relu, t0, "cudaLaunchKernel", 172, 175, "relu_kernel", 185, 190, kStream7);
    const SpanId fc = tb.add(Level::kFramework, "aten::linear", ns(190), ns(260), pred, {{"module", "fc"}});
    tb.launch(fc, t0, "cudaLaunchKernel", 192, 195, "gemm", 200, b == 0 ? 240 : 244, kStream7);
    tb.launch(fc, t0, "cudaLaunchKernel", 196, 198, "gemm", 220, 250, kStream9);
    tb.launch(fc, t0, "cudaLaunchKernel", 199, 201, "bias_add", 252, 253.5, kStream7);
    tb.launch(pred, t0, "cudaMemcpyAsync", 262, 265, "Memcpy DtoH", 270, 280, kStream7, "memcpy");
  }
  return tb.trace;
}

EvaluationRecord gpu_record(const std::string& second_layer_type = "aten::relu") {
  EvaluationRecord e;
  e.device = "cuda";
  e.batch_sizes = {1};
  e.trace_level = TraceLevel::kKernel;
  e.leveled = true;
  e.runs.push_back(model_run(1, {400e3, 400e3}));
  RunRecord f;
  f.batch_size = 1;
  f.trace_level = TraceLevel::kFramework;
  f.iterations = 2;
  f.trace = framework_trace();
  e.runs.push_back(std::move(f));
  RunRecord k;
  k.batch_size = 1;
  k.trace_level = TraceLevel::kKernel;
  k.iterations = 2;
  k.trace = kernel_trace(second_layer_type);
  e.runs.push_back(std::move(k));
  return e;
}

// ---------------------------------------------------------------------------------------------------------

TEST(ExtractKernels, PlacesKernelsInBatchesAndLayers) {
  const EvaluationRecord e = gpu_record();
  const KernelTimeline kt = extract_kernels(e.runs[2].trace);
  ASSERT_EQ(kt.batches(), 2u);
  EXPECT_EQ(kt.kernel_spans, 14u);
  EXPECT_EQ(kt.outside_predict, 0u);
  EXPECT_EQ(kt.without_launch, 0u);
  ASSERT_EQ(kt.kernels.size(), 14u);
  // Batch 0 in (layer, start) order, the memcpy outside layers last.
  const std::vector<std::pair<std::size_t, std::string>> expect = {
      {0, "implicit_gemm"}, {0, "bias_add"}, {1, "relu_kernel"},       {2, "gemm"},
      {2, "gemm"},          {2, "bias_add"}, {kNoLayer, "Memcpy DtoH"}};
  const std::vector<std::size_t> kernel_index = {0, 1, 0, 0, 1, 2, 0};
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(kt.kernels[i].batch, 0u);
    EXPECT_EQ(kt.kernels[i].layer_index, expect[i].first) << i;
    EXPECT_EQ(kt.kernels[i].name, expect[i].second) << i;
    EXPECT_EQ(kt.kernels[i].kernel_index, kernel_index[i]) << i;
    EXPECT_TRUE(kt.kernels[i].has_launch());
    EXPECT_EQ(kt.kernels[i + 7].batch, 1u);
  }
  EXPECT_EQ(kt.kernels[0].launch_api, "cudaLaunchKernel");
  EXPECT_EQ(kt.kernels[0].launch_delay_ns(), 10 * kUs);
  EXPECT_EQ(kt.kernels[4].stream, kStream9);
  EXPECT_EQ(kt.kernels[6].launch_api, "cudaMemcpyAsync");
  ASSERT_EQ(kt.layers.layers.size(), 3u);
  EXPECT_EQ(kt.layers.layers[0].name, "conv1");
}

TEST(ExtractKernels, UnplacedKernelsAreCountedNotDropped) {
  TraceBuilder tb;
  tb.next = 1'000'000'000'000;  // sparse ids: hash-map index path
  const SpanId pred = tb.add(Level::kModel, "predict", 0, 1000, kNoSpan);
  const SpanId op = tb.add(Level::kFramework, "aten::add", 10, 100, pred);
  // A kernel hanging directly under the op (no SYSTEM parent): placed, but its launch is unknown.
  tb.add(Level::kKernel, "add_kernel", 20, 30, op, {{"kind", "kernel"}, {"attribution", "graph-launch"}});
  tb.add(Level::kKernel, "orphan", 40, 50, kNoSpan);  // unparented
  tb.add(Level::kKernel, "dangling", 40, 50, 77);     // parent id absent
  // A parent cycle between two SYSTEM spans: the walk ends, no hang.
  Span a;
  a.id = 5;
  a.parent_id = 6;
  a.level = Level::kSystem;
  a.name = "cudaLaunchKernel";
  Span b = a;
  b.id = 6;
  b.parent_id = 5;
  tb.trace.spans.push_back(a);
  tb.trace.spans.push_back(b);
  tb.add(Level::kKernel, "cyclic", 60, 70, 5);
  const KernelTimeline kt = extract_kernels(tb.trace);
  EXPECT_EQ(kt.kernel_spans, 4u);
  EXPECT_EQ(kt.outside_predict, 3u);
  ASSERT_EQ(kt.kernels.size(), 1u);
  EXPECT_EQ(kt.kernels[0].layer_index, 0u);
  EXPECT_FALSE(kt.kernels[0].has_launch());
  EXPECT_TRUE(kt.kernels[0].graph_launch);
  EXPECT_EQ(kt.without_launch, 1u);
  EXPECT_EQ(kt.graph_launched, 1u);
}

TEST(Timeline, UnionCountsOverlapOnce) {
  EXPECT_EQ(union_length_ns({}), 0);
  EXPECT_EQ(union_length_ns({{0, 10}, {5, 15}}), 15);             // overlap on two streams
  EXPECT_EQ(union_length_ns({{20, 30}, {0, 10}, {2, 4}}), 20);    // nested and disjoint, unsorted
  EXPECT_EQ(union_length_ns({{0, 10}, {10, 20}, {30, 30}}), 20);  // touching; empty interval adds nothing
}

TEST(Timeline, IdleBreakdownCategories) {
  // Window [0, 100). Kernels: [10,20] launched at 5; [15,30] launched at 6 (overlaps); [40,50] launched at 35
  // (after the GPU went idle at 30 → host-bound 10); [55,60] launched at 45 (< 50 → launch latency 5);
  // [70,80] with no known launch (unattributed 10); [75,120] clipped to 100 → after last 0.
  const IdleBreakdown r = idle_breakdown(
      0, 100, {{40, 50, 35}, {10, 20, 5}, {15, 30, 6}, {55, 60, 45}, {70, 80, std::nullopt}, {75, 120, 60}});
  EXPECT_EQ(r.window_ns, 100);
  EXPECT_EQ(r.before_first_ns, 10);
  EXPECT_EQ(r.host_wait_ns, 10);
  EXPECT_EQ(r.launch_latency_ns, 5);
  EXPECT_EQ(r.unattributed_ns, 10);
  EXPECT_EQ(r.after_last_ns, 0);
  EXPECT_EQ(r.idle_ns, 35);
  EXPECT_EQ(r.busy_ns, 65);  // [10,30] + [40,50] + [55,60] + [70,100]
  EXPECT_EQ(r.gaps, 3u);

  // Launch exactly at the idle point counts as host-bound; a trailing gap is "after last".
  const IdleBreakdown s = idle_breakdown(0, 50, {{0, 10, 0}, {20, 30, 10}});
  EXPECT_EQ(s.before_first_ns, 0);
  EXPECT_EQ(s.host_wait_ns, 10);
  EXPECT_EQ(s.launch_latency_ns, 0);
  EXPECT_EQ(s.after_last_ns, 20);
  EXPECT_EQ(s.busy_ns, 20);

  const IdleBreakdown none = idle_breakdown(0, 50, {{60, 70, 0}});  // outside the window
  EXPECT_EQ(none.busy_ns, 0);
  EXPECT_EQ(none.unattributed_ns, 50);
  EXPECT_EQ(none.idle_ns, 50);
}

TEST(GpuAnalyses, A8KernelInformation) {
  const Table t = a8_kernel_information(gpu_record(), 1);
  EXPECT_EQ(t.id, "A8");
  ASSERT_EQ(t.rows.size(), 7u);
  const std::vector<std::string> names = {"implicit_gemm", "bias_add", "relu_kernel", "gemm",
                                          "gemm",          "bias_add", "Memcpy DtoH"};
  const std::vector<double> ms = {0.030, 0.020, 0.005, 0.042, 0.030, 0.0015, 0.010};
  const std::vector<std::string> layer_names = {"conv1", "conv1", "aten::relu", "fc", "fc", "fc", "(outside layers)"};
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(str(t.rows[i][col(t, "kernel_name")]), names[i]) << i;
    EXPECT_EQ(str(t.rows[i][col(t, "layer_name")]), layer_names[i]) << i;
    EXPECT_NEAR(at(t, i, "latency_ms"), ms[i], 1e-12) << i;
    for (const char* c : {"gflops", "dram_read_bytes", "dram_write_bytes", "achieved_occupancy", "arithmetic_intensity",
                          "achieved_flops_per_s", "bound"}) {
      EXPECT_TRUE(empty(t.rows[i][col(t, c)])) << c;
    }
  }
  EXPECT_EQ(at(t, 3, "layer_index"), 2);
  EXPECT_EQ(at(t, 4, "kernel_index"), 1);
  EXPECT_TRUE(empty(t.rows[6][col(t, "layer_index")]));
  EXPECT_TRUE(has_note(t, "kernel latencies from the M/F/K run (trace level kernel), 2 batches"));
  EXPECT_TRUE(has_note(t, "hardware counters were not collected"));
}

TEST(GpuAnalyses, A10KernelsByName) {
  const Table t = a10_kernels_by_name(gpu_record(), 1);
  ASSERT_EQ(t.rows.size(), 5u);
  // Per batch: gemm 70/74 → 72, implicit_gemm 30, bias_add 21.5, Memcpy 10, relu 5; all kernels 138.5 µs.
  const std::vector<std::string> names = {"gemm", "implicit_gemm", "bias_add", "Memcpy DtoH", "relu_kernel"};
  const std::vector<double> count = {2, 1, 2, 1, 1};
  const std::vector<double> total_us = {72, 30, 21.5, 10, 5};
  const std::vector<double> mean_us = {36, 30, 10.75, 10, 5};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(str(t.rows[i][0]), names[i]);
    EXPECT_DOUBLE_EQ(at(t, i, "count"), count[i]);
    EXPECT_NEAR(at(t, i, "total_latency_ms"), total_us[i] / 1e3, 1e-12);
    EXPECT_NEAR(at(t, i, "mean_latency_us"), mean_us[i], 1e-9);
    EXPECT_NEAR(at(t, i, "percent_of_model_latency"), 100.0 * total_us[i] / 400.0, 1e-9);
    EXPECT_NEAR(at(t, i, "percent_of_kernel_time"), 100.0 * total_us[i] / 138.5, 1e-9);
  }
  EXPECT_TRUE(has_note(t, "model latencies from the M run (trace level model)"));
}

TEST(GpuAnalyses, A11KernelsByLayer) {
  const Table t = a11_kernels_by_layer(gpu_record(), 1);
  ASSERT_EQ(t.rows.size(), 4u);  // 3 layers + GPU work outside layers
  EXPECT_EQ(str(t.rows[0][col(t, "layer_type")]), "aten::conv2d");
  EXPECT_DOUBLE_EQ(at(t, 0, "kernel_count"), 2);
  EXPECT_NEAR(at(t, 0, "kernel_latency_ms"), 0.050, 1e-12);
  EXPECT_NEAR(at(t, 0, "layer_latency_ms"), 0.100, 1e-12);
  EXPECT_NEAR(at(t, 0, "gpu_percent"), 50.0, 1e-9);
  EXPECT_NEAR(at(t, 1, "gpu_percent"), 25.0, 1e-9);
  EXPECT_DOUBLE_EQ(at(t, 2, "kernel_count"), 3);
  EXPECT_NEAR(at(t, 2, "kernel_latency_ms"), 0.0735, 1e-12);  // (71.5 + 75.5) / 2 µs
  EXPECT_NEAR(at(t, 2, "layer_latency_ms"), 0.060, 1e-12);    // (50 + 70) / 2 µs
  EXPECT_NEAR(at(t, 2, "gpu_percent"), 122.5, 1e-9);
  EXPECT_EQ(str(t.rows[3][1]), "(outside layers)");
  EXPECT_TRUE(empty(t.rows[3][0]));
  EXPECT_NEAR(at(t, 3, "kernel_latency_ms"), 0.010, 1e-12);
  EXPECT_TRUE(empty(t.rows[3][col(t, "layer_latency_ms")]));
  EXPECT_TRUE(has_note(t, "layer latencies from the M/F run (trace level framework), 2 batches"));
}

TEST(GpuAnalyses, A13GpuVsNonGpu) {
  const Table t = a13_gpu_vs_non_gpu(gpu_record(), 1);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.bar_column, col(t, "non_gpu_latency_ms"));
  EXPECT_EQ(str(t.rows[0][1]), "conv1");
  EXPECT_NEAR(at(t, 0, "layer_latency_ms"), 0.100, 1e-12);
  EXPECT_NEAR(at(t, 0, "gpu_latency_ms"), 0.050, 1e-12);
  EXPECT_NEAR(at(t, 0, "non_gpu_latency_ms"), 0.050, 1e-12);
  EXPECT_NEAR(at(t, 1, "non_gpu_latency_ms"), 0.015, 1e-12);
  // fc: kernels overlap on two streams and outlast the op: 60 − 73.5 µs, kept negative and explained.
  EXPECT_NEAR(at(t, 2, "non_gpu_latency_ms"), -0.0135, 1e-12);
  EXPECT_TRUE(has_note(t, "1 layer has a negative non-GPU latency"));
  EXPECT_TRUE(has_note(t, "GPU work launched outside layers"));
  EXPECT_FALSE(has_note(t, "matched by index"));
}

TEST(GpuAnalyses, LayerTypeMismatchIsNoted) {
  const Table t = a13_gpu_vs_non_gpu(gpu_record("aten::gelu"), 1);
  EXPECT_TRUE(has_note(t, "first difference at layer index 1 (aten::relu in M/F, aten::gelu in M/F/K)"));
  EXPECT_EQ(t.rows.size(), 3u);  // still reported
}

TEST(GpuAnalyses, A15KernelsByModel) {
  EvaluationRecord e = gpu_record();
  e.batch_sizes = {1, 2};
  e.runs.push_back(model_run(2, {700e3, 700e3}));  // batch 2 has no KERNEL-level run
  const Table t = a15_kernels_by_model(e);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(at(t, 0, "batch_size"), 1);
  EXPECT_NEAR(at(t, 0, "model_latency_ms"), 0.400, 1e-12);
  EXPECT_NEAR(at(t, 0, "kernel_latency_ms"), 0.1385, 1e-12);
  EXPECT_DOUBLE_EQ(at(t, 0, "kernel_count"), 7);
  // gemm on stream 7 [200,240/244] and on stream 9 [220,250] overlap: the union counts [200,250] once.
  EXPECT_NEAR(at(t, 0, "gpu_busy_ms"), 0.1165, 1e-12);
  for (const char* c : {"gflops", "dram_read_bytes", "dram_write_bytes", "achieved_occupancy", "bound"}) {
    EXPECT_TRUE(empty(t.rows[0][col(t, c)])) << c;
  }
  EXPECT_TRUE(has_note(t, "batch sizes without a KERNEL-level run (left out): 2"));
  EXPECT_TRUE(has_note(t, "hardware counters were not collected"));
}

TEST(GpuAnalyses, GpuIdleTime) {
  const Table t = gpu_idle_time(gpu_record());
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_NEAR(at(t, 0, "predict_ms"), 0.300, 1e-12);
  EXPECT_NEAR(at(t, 0, "gpu_busy_ms"), 0.1165, 1e-12);
  EXPECT_NEAR(at(t, 0, "idle_ms"), 0.1835, 1e-12);
  EXPECT_NEAR(at(t, 0, "idle_percent"), 100.0 * 183.5 / 300.0, 1e-9);
  EXPECT_NEAR(at(t, 0, "host_wait_ms"), 0.1315, 1e-12);
  EXPECT_NEAR(at(t, 0, "launch_latency_ms"), 0.002, 1e-12);
  EXPECT_NEAR(at(t, 0, "before_first_kernel_ms"), 0.030, 1e-12);
  EXPECT_NEAR(at(t, 0, "after_last_kernel_ms"), 0.020, 1e-12);
  EXPECT_NEAR(at(t, 0, "unattributed_ms"), 0.0, 1e-12);
  EXPECT_TRUE(has_note(t, "GPU timeline from the M/F/K run (trace level kernel), 2 batches"));
  EXPECT_FALSE(has_note(t, "trimmed mean"));
}

TEST(GpuAnalyses, LaunchStatistics) {
  const Table t = kernel_launch_statistics(gpu_record());
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(at(t, 0, "launches_per_batch"), 7);
  EXPECT_DOUBLE_EQ(at(t, 0, "launch_api_calls_per_batch"), 7);
  // Delays (µs) per batch: 10, 34, 13, 8, 24, 53, 8; twice. Sorted: 8 8 8 8 10 10 13 13 24 24 34 34 53 53.
  EXPECT_NEAR(at(t, 0, "launch_delay_p50_us"), 13.0, 1e-9);
  EXPECT_NEAR(at(t, 0, "launch_delay_p90_us"), 34.0 + 0.7 * (53.0 - 34.0), 1e-9);  // rank 11.7
  EXPECT_NEAR(at(t, 0, "launch_delay_p99_us"), 53.0, 1e-9);
  // API durations (µs): 5 4 3 3 2 2 3, twice → p50 3, p99 5.
  EXPECT_NEAR(at(t, 0, "launch_api_p50_us"), 3.0, 1e-9);
  EXPECT_NEAR(at(t, 0, "launch_api_p99_us"), 5.0, 1e-9);
  // < 10 µs: relu_kernel (5) and bias_add (1.5); the 10 µs memcpy is not below 10. < 2 µs: bias_add.
  EXPECT_DOUBLE_EQ(at(t, 0, "kernels_under_10us"), 2);
  EXPECT_NEAR(at(t, 0, "kernels_under_10us_percent"), 200.0 / 7.0, 1e-9);
  EXPECT_DOUBLE_EQ(at(t, 0, "kernels_under_2us"), 1);
  EXPECT_NEAR(at(t, 0, "kernels_under_2us_percent"), 100.0 / 7.0, 1e-9);
  // Six of the seven kernels run inside layers; the memcpy outside layers has no framework-op ancestor.
  EXPECT_NEAR(at(t, 0, "with_framework_op_percent"), 600.0 / 7.0, 1e-9);

  const Table top = kernel_launch_delay_top(gpu_record(), 1, 3);
  EXPECT_EQ(top.id, "launch-stats");
  ASSERT_EQ(top.rows.size(), 3u);
  EXPECT_EQ(at(top, 0, "batch"), 0);
  EXPECT_EQ(at(top, 1, "batch"), 1);
  EXPECT_EQ(str(top.rows[0][col(top, "kernel_name")]), "bias_add");
  EXPECT_EQ(str(top.rows[0][col(top, "layer_name")]), "fc");
  EXPECT_EQ(str(top.rows[0][col(top, "launch_api")]), "cudaLaunchKernel");
  EXPECT_NEAR(at(top, 0, "launch_delay_us"), 53.0, 1e-9);
  EXPECT_NEAR(at(top, 0, "duration_us"), 1.5, 1e-9);
  EXPECT_NEAR(at(top, 2, "launch_delay_us"), 34.0, 1e-9);
}

TEST(GpuAnalyses, NoKernelRunGivesEmptyTablesWithNote) {
  EvaluationRecord e = gpu_record();
  e.runs.pop_back();  // drop the M/F/K run
  const std::vector<std::string> ids = {"A8", "a10", "A11", "A13", "A15", "GPU-IDLE", "launch-stats"};
  const auto tables = run_analyses(e, ids, std::nullopt);
  ASSERT_EQ(tables.size(), 7u);  // no top-delay table without kernels
  const std::vector<std::string> want = {"A8", "A10", "A11", "A13", "A15", "gpu-idle", "launch-stats"};
  for (std::size_t i = 0; i < tables.size(); ++i) {
    EXPECT_EQ(tables[i].id, want[i]);
    EXPECT_TRUE(tables[i].rows.empty()) << want[i];
    EXPECT_FALSE(tables[i].columns.empty()) << want[i];
    EXPECT_TRUE(has_note(tables[i], kNoKernelRun)) << want[i];
  }
}

TEST(GpuAnalyses, RunAnalysesDispatchKeepsA1ToA7) {
  const EvaluationRecord e = gpu_record();
  const auto& ids = analysis_ids();
  const std::vector<std::string> want = {
      "A1",           "A2",  "A3",  "A4",  "A5",  "A6",  "A7",          "ops",           "A8",
      "A9",           "A10", "A11", "A12", "A13", "A14", "A15",         "roofline-hier", "gpu-idle",
      "launch-stats", "G1",  "G2",  "G3",  "G4",  "G5",  "serving-tail"};
  EXPECT_EQ(ids, want);
  const auto tables = run_analyses(e, {"A2", "A13", "launch-stats", "A1"}, 1);
  ASSERT_EQ(tables.size(), 5u);  // launch-stats: statistics + top-10 table
  EXPECT_EQ(tables[0].id, "A2");
  EXPECT_EQ(tables[0].rows.size(), 3u);
  EXPECT_EQ(tables[1].id, "A13");
  EXPECT_EQ(tables[1].rows.size(), 3u);
  EXPECT_EQ(tables[2].id, "launch-stats");
  EXPECT_EQ(tables[3].id, "launch-stats");
  EXPECT_EQ(tables[3].rows.size(), 10u);
  EXPECT_EQ(tables[4].id, "A1");

  try {
    run_analyses(e, {"A2", "A16"}, std::nullopt);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& ex) {
    const std::string msg = ex.what();
    EXPECT_NE(msg.find("'A16'"), std::string::npos);
    EXPECT_NE(msg.find("A1 A2 A3 A4 A5 A6 A7 ops A8 A9 A10 A11 A12 A13 A14 A15 roofline-hier gpu-idle launch-stats"),
              std::string::npos)
        << msg;
  }
  // The GPU ids are the registry's GPU family; A1–A7 and ops are not among them.
  EXPECT_EQ(gpu_analysis_ids(), std::vector<std::string>(want.begin() + 8, want.end() - 6));
  EXPECT_EQ(analysis_spec("A2").family, AnalysisFamily::kModel);
}

TEST(GpuAnalyses, SingleKernelRunNotesOverhead) {
  // Not leveled: the M/F/K run is the only run, so model and layer latencies carry kernel-profiling overhead.
  EvaluationRecord e = gpu_record();
  e.leveled = false;
  e.runs.erase(e.runs.begin(), e.runs.begin() + 2);
  e.runs[0].stage_latency_ns[kStagePredict] = summarize({300e3, 300e3});
  const Table t = a13_gpu_vs_non_gpu(e, 1);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_NEAR(at(t, 0, "layer_latency_ms"), 0.150, 1e-12);  // conv1 in the M/F/K run
  EXPECT_TRUE(has_note(t, "no run stopped at the FRAMEWORK level"));
  const Table a10 = a10_kernels_by_name(e, 1);
  EXPECT_NEAR(at(a10, 0, "percent_of_model_latency"), 100.0 * 72.0 / 300.0, 1e-9);
  EXPECT_TRUE(has_note(a10, "no run stopped at the MODEL level"));
}

// A million-span M/F/K trace: every GPU analysis must stay linear (SPEC: traces reach a million spans).

// ---------------------------------------------------------------------------------------------------------
// Hardware counters: a counter run (M/F/K/H) joined to the M/F/K run above.
//
// Counter run, per batch: the same layers; one HARDWARE span per compute kernel, parent = the innermost op
// (docs/spans.md), start = the launch call. Values (per batch 0; batch 1 of a two-batch run doubles the FLOPs of
// implicit_gemm, so the mean is 1.5×):
//   conv1 > aten::convolution > implicit_gemm: tensor_fp16 1.5e9 + fp32 1e8 FLOPs, DRAM 6e7 read + 2e7 write,
//                                              L2 1.6e8, L1 4e8, occupancy 50, SM 70
//   conv1 > bias_add:      fp32 1e6, DRAM 4e6 + 4e6, occupancy 90
//   relu  > relu_kernel:   fp32 5e5, DRAM 2e6 + 2e6, occupancy 80
//   fc    > gemm:          fp32 2e9, DRAM 1e7 + 1e7, L2 4e7, L1 1e8, occupancy 25
//   fc    > gemm:          fp32 1e9, DRAM 1e7 + 0, occupancy 75
//   fc    > bias_add:      fp32 1e5, DRAM 1e5 + 1e5, occupancy 60
// Ceilings: fp32 50 TFLOP/s, tensor_fp16 800 TFLOP/s, DRAM 4 TB/s, L2 10 TB/s, L1 30 TB/s.
// ---------------------------------------------------------------------------------------------------------

struct HwKernel {
  std::string name;
  std::vector<Tag> values;
};

Trace counter_trace(int batches = 1, const std::string& fc_second_gemm = "gemm") {
  TraceBuilder tb;
  const SpanId app = tb.add(Level::kApplication, "evaluation", 0, 1'000'000'000, kNoSpan);
  std::int64_t range = 0;
  for (int b = 0; b < batches; ++b) {
    const std::int64_t t0 = 1'000'000 * (b + 1);
    const auto ns = [&](double us) { return t0 + static_cast<std::int64_t>(std::llround(us * kUs)); };
    const auto hw = [&](SpanId op, double at_us, const std::string& name, std::vector<Tag> tags) {
      tags.push_back({"range_index", std::to_string(range++)});
      tags.push_back({"replay", "kernel"});
      tb.add(Level::kHardware, name, ns(at_us), ns(at_us + 1), op, std::move(tags));
    };
    const SpanId pred = tb.add(Level::kModel, "predict", ns(0), ns(3000), app, {{"batch", std::to_string(b)}});
    const SpanId conv = tb.add(Level::kFramework, "aten::conv2d", ns(10), ns(1600), pred, {{"module", "conv1"}});
    const SpanId convolution = tb.add(Level::kFramework, "aten::convolution", ns(15), ns(1500), conv);
    hw(convolution, 20, "implicit_gemm",
       {{"tensor_fp16_flops", b == 0 ? "1500000000" : "3000000000"},
        {"fp32_flops", "1e8"},
        {"dram_read_bytes", "60000000"},
        {"dram_write_bytes", "20000000"},
        {"l2_bytes", "160000000"},
        {"l1_bytes", "400000000"},
        {"achieved_occupancy_percent", "50"},
        {"sm_throughput_percent", "70"},
        {"replay_duration_ns", "99000"}});
    hw(conv, 1510, "bias_add",
       {{"fp32_flops", "1000000"},
        {"dram_read_bytes", "4000000"},
        {"dram_write_bytes", "4000000"},
        {"achieved_occupancy_percent", "90"}});
    const SpanId relu = tb.add(Level::kFramework, "aten::relu", ns(1700), ns(1800), pred);
    hw(relu, 1720, "relu_kernel",
       {{"fp32_flops", "500000"},
        {"dram_read_bytes", "2000000"},
        {"dram_write_bytes", "2000000"},
        {"achieved_occupancy_percent", "80"}});
    const SpanId fc = tb.add(Level::kFramework, "aten::linear", ns(1900), ns(2600), pred, {{"module", "fc"}});
    hw(fc, 1920, "gemm",
       {{"fp32_flops", "2000000000"},
        {"dram_read_bytes", "10000000"},
        {"dram_write_bytes", "10000000"},
        {"l2_bytes", "40000000"},
        {"l1_bytes", "100000000"},
        {"achieved_occupancy_percent", "25"}});
    hw(fc, 1960, fc_second_gemm,
       {{"fp32_flops", "1000000000"},
        {"dram_read_bytes", "10000000"},
        {"dram_write_bytes", "0"},
        {"achieved_occupancy_percent", "75"}});
    hw(fc, 1990, "bias_add",
       {{"fp32_flops", "100000"},
        {"dram_read_bytes", "100000"},
        {"dram_write_bytes", "100000"},
        {"achieved_occupancy_percent", "60"}});
  }
  return tb.trace;
}

EvaluationRecord counter_record(int counter_batches = 1, const std::string& fc_second_gemm = "gemm") {
  EvaluationRecord e = gpu_record();
  e.trace_level = TraceLevel::kHardware;
  e.system = {{"host", {{"hostname", "node7"}}}, {"gpu", {{{"index", 0}, {"name", "NVIDIA H200"}}}}};
  RunRecord h;
  h.batch_size = 1;
  h.trace_level = TraceLevel::kHardware;
  h.iterations = counter_batches;
  h.trace = counter_trace(counter_batches, fc_second_gemm);
  e.runs.push_back(std::move(h));
  return e;
}

MachineCeilings test_ceilings() {
  MachineCeilings m;
  m.hostname = "node7";
  m.gpu_name = "NVIDIA H200";
  m.measured_at = "2026-11-20T10:00:00Z";
  m.ceilings = {{"fp32", 50e12, "flop/s", "fma"},
                {"tensor_fp16", 800e12, "flop/s", "gemm"},
                {"dram", 4e12, "bytes/s", "copy"},
                {"l2", 10e12, "bytes/s", "copy"},
                {"l1", 30e12, "bytes/s", "load"}};
  return m;
}

TEST(ExtractCounters, PlacesHardwareSpansLikeKernels) {
  const Trace tr = counter_trace(2);
  const CounterTimeline ct = extract_counters(tr);
  ASSERT_EQ(ct.batches(), 2u);
  EXPECT_EQ(ct.hardware_spans, 12u);
  EXPECT_EQ(ct.outside_predict, 0u);
  EXPECT_EQ(ct.unparsed_values, 0u);
  ASSERT_EQ(ct.ranges.size(), 12u);
  const std::vector<std::tuple<std::size_t, std::size_t, std::string>> want = {
      {0, 0, "implicit_gemm"}, {0, 1, "bias_add"}, {1, 0, "relu_kernel"},
      {2, 0, "gemm"},          {2, 1, "gemm"},     {2, 2, "bias_add"}};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(ct.ranges[i].batch, 0u);
    EXPECT_EQ(ct.ranges[i].layer_index, std::get<0>(want[i])) << i;
    EXPECT_EQ(ct.ranges[i].kernel_index, std::get<1>(want[i])) << i;
    EXPECT_EQ(ct.ranges[i].name, std::get<2>(want[i])) << i;
    EXPECT_EQ(ct.ranges[i + 6].batch, 1u);
  }
  EXPECT_EQ(ct.ranges[0].range_index, 0);
  EXPECT_DOUBLE_EQ(ct.ranges[0].counters.at("fp32_flops"), 1e8);  // "1e8" parses
  EXPECT_DOUBLE_EQ(ct.ranges[0].counters.at("achieved_occupancy_percent"), 50);
  EXPECT_EQ(ct.ranges[0].counters.count("range_index"), 0u);  // not a counter
  EXPECT_EQ(ct.layers.layers.size(), 3u);

  std::size_t renamed = 99;
  const auto occ = counters_by_occurrence(ct, &renamed);
  EXPECT_EQ(renamed, 0u);
  ASSERT_EQ(occ.size(), 6u);
  EXPECT_EQ(occ[0].samples, 2u);
  // Batch 0 has 1.5e9, batch 1 3e9 tensor FLOPs: averaged per occurrence.
  EXPECT_DOUBLE_EQ(occ[0].counters.at("tensor_fp16_flops"), 2.25e9);
  EXPECT_DOUBLE_EQ(occ[0].counters.at("dram_read_bytes"), 6e7);
}

TEST(ExtractCounters, CountsValuesThatAreNotNumbers) {
  TraceBuilder tb;
  const SpanId pred = tb.add(Level::kModel, "predict", 0, 1000, kNoSpan);
  const SpanId op = tb.add(Level::kFramework, "aten::mm", 10, 900, pred);
  tb.add(Level::kHardware, "k", 20, 30, op,
         {{"fp32_flops", "12abc"}, {"dram_read_bytes", "64"}, {"collection_note", "pass 2 failed"}});
  tb.add(Level::kHardware, "orphan", 20, 30, kNoSpan, {{"fp32_flops", "1"}});
  const CounterTimeline ct = extract_counters(tb.trace);
  EXPECT_EQ(ct.hardware_spans, 2u);
  EXPECT_EQ(ct.outside_predict, 1u);
  EXPECT_EQ(ct.unparsed_values, 1u);
  EXPECT_NE(ct.first_unparsed.find("fp32_flops = '12abc'"), std::string::npos) << ct.first_unparsed;
  EXPECT_EQ(ct.partial, 1u);
  ASSERT_EQ(ct.ranges.size(), 1u);
  EXPECT_EQ(ct.ranges[0].counters.size(), 1u);
  EXPECT_DOUBLE_EQ(ct.ranges[0].counters.at("dram_read_bytes"), 64);
}

TEST(HardwareAnalyses, A8JoinsCountersAndClassifiesAgainstCeilings) {
  const EvaluationRecord e = counter_record();
  const MachineCeilings c = test_ceilings();
  const GpuRuns runs = gpu_runs(e, 1, &c);
  ASSERT_TRUE(runs.has_counters());
  EXPECT_EQ(runs.joined, 6u);
  EXPECT_EQ(runs.name_mismatches, 0u);
  const Table t = a8_kernel_information(runs);
  ASSERT_EQ(t.rows.size(), 7u);
  // implicit_gemm: 1.6e9 FLOPs over 8e7 DRAM bytes = AI 20, tensor_fp16 (ridge 200) -> memory-bound;
  // achieved = 1.6e9 / 30 µs (M/F/K latency, not the 99 µs replay duration).
  EXPECT_NEAR(at(t, 0, "gflops"), 1.6, 1e-12);
  EXPECT_DOUBLE_EQ(at(t, 0, "dram_read_bytes"), 6e7);
  EXPECT_DOUBLE_EQ(at(t, 0, "dram_write_bytes"), 2e7);
  EXPECT_DOUBLE_EQ(at(t, 0, "achieved_occupancy"), 50);
  EXPECT_NEAR(at(t, 0, "arithmetic_intensity"), 20, 1e-12);
  EXPECT_NEAR(at(t, 0, "achieved_flops_per_s"), 1.6e9 / 30e-6, 1e3);
  EXPECT_EQ(str(t.rows[0][col(t, "bound")]), "memory");
  EXPECT_EQ(str(t.rows[0][col(t, "precision")]), "tensor_fp16");
  EXPECT_DOUBLE_EQ(at(t, 0, "l2_bytes"), 1.6e8);
  EXPECT_DOUBLE_EQ(at(t, 0, "sm_throughput_percent"), 70);
  // fc gemm (row 3): fp32, AI 2e9 / 2e7 = 100 >= ridge 12.5 -> compute-bound; latency 42 µs (mean of 40, 44).
  EXPECT_NEAR(at(t, 3, "arithmetic_intensity"), 100, 1e-12);
  EXPECT_NEAR(at(t, 3, "achieved_flops_per_s"), 2e9 / 42e-6, 1e3);
  EXPECT_EQ(str(t.rows[3][col(t, "bound")]), "compute");
  EXPECT_EQ(str(t.rows[3][col(t, "precision")]), "fp32");
  // relu_kernel: AI 5e5 / 4e6 = 0.125 -> memory-bound.
  EXPECT_EQ(str(t.rows[2][col(t, "bound")]), "memory");
  // The memcpy has no counters.
  EXPECT_TRUE(empty(t.rows[6][col(t, "gflops")]));
  EXPECT_TRUE(empty(t.rows[6][col(t, "bound")]));
  EXPECT_TRUE(has_note(t, "counters from the counter run (trace level hardware), 1 batch"));
  EXPECT_TRUE(has_note(t, "ceilings of NVIDIA H200 on host node7"));
  EXPECT_TRUE(has_note(t, "tensor_fp16 (peak 800 Tflop/s): dram 200, l2 80, l1 26.67"));
  EXPECT_TRUE(has_note(t, "fp32 (peak 50 Tflop/s): dram 12.5, l2 5, l1 1.667"));
  EXPECT_FALSE(has_note(t, "hardware counters were not collected"));
}

TEST(HardwareAnalyses, WithoutCeilingsBoundIsEmptyWithNote) {
  const EvaluationRecord e = counter_record();
  const Table t = a8_kernel_information(gpu_runs(e, 1));
  EXPECT_NEAR(at(t, 0, "arithmetic_intensity"), 20, 1e-12);  // intensities need no ceilings
  EXPECT_TRUE(empty(t.rows[0][col(t, "bound")]));
  EXPECT_TRUE(has_note(t, "no measured ceilings for GPU NVIDIA H200 on host node7: run `xsp machine ceilings`"));
  // Through run_analyses() with the ceilings passed in, the bound is filled.
  AnalysisOptions options;
  options.ceilings = test_ceilings();
  const auto tables = run_analyses(e, {"A8"}, options);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(str(tables[0].rows[0][col(tables[0], "bound")]), "memory");
}

TEST(HardwareAnalyses, NameMismatchIsNotJoinedAndNoted) {
  const EvaluationRecord e = counter_record(1, "gemm_splitk");
  const MachineCeilings c = test_ceilings();
  const GpuRuns runs = gpu_runs(e, 1, &c);
  EXPECT_EQ(runs.name_mismatches, 1u);
  EXPECT_EQ(runs.joined, 5u);
  const Table t = a8_kernel_information(runs);
  EXPECT_TRUE(empty(t.rows[4][col(t, "gflops")]));  // fc's second gemm
  EXPECT_FALSE(empty(t.rows[3][col(t, "gflops")]));
  EXPECT_TRUE(has_note(t,
                       "1 of 6 compute-kernel positions have a different kernel name in the counter run than in "
                       "the M/F/K run (first: layer 2 kernel 1: 'gemm' in M/F/K, 'gemm_splitk' in the counter "
                       "run)"));
  const Table a9 = a9_kernel_roofline(runs);
  EXPECT_EQ(a9.rows.size(), 5u);
  // The layer sums still hold the unjoined kernel's FLOPs, but not its occupancy (no latency to weight it by).
  const Table a12 = a12_counters_by_layer(runs);
  EXPECT_NEAR(at(a12, 2, "gflops"), 3.0001, 1e-12);
  EXPECT_NEAR(at(a12, 2, "achieved_occupancy"), (25 * 42 + 60 * 1.5) / 43.5, 1e-9);
  EXPECT_TRUE(has_note(a12, "1 kernels of the counter run have no joined M/F/K latency"));
}

TEST(HardwareAnalyses, A9KernelRoofline) {
  const EvaluationRecord e = counter_record();
  const MachineCeilings c = test_ceilings();
  const Table t = a9_kernel_roofline(gpu_runs(e, 1, &c));
  ASSERT_EQ(t.rows.size(), 6u);  // compute kernels only
  EXPECT_EQ(str(t.rows[0][col(t, "kernel_name")]), "implicit_gemm");
  EXPECT_NEAR(at(t, 0, "ai_dram"), 20, 1e-12);
  EXPECT_NEAR(at(t, 0, "ai_l2"), 10, 1e-12);
  EXPECT_NEAR(at(t, 0, "ai_l1"), 4, 1e-12);
  EXPECT_DOUBLE_EQ(at(t, 0, "peak_flops_per_s"), 800e12);
  EXPECT_NEAR(at(t, 0, "attainable_flops_per_s"), 80e12, 1);  // 4 TB/s × 20
  EXPECT_NEAR(at(t, 0, "percent_of_roofline"), 100 * (1.6e9 / 30e-6) / 80e12, 1e-9);
  EXPECT_NEAR(at(t, 3, "attainable_flops_per_s"), 50e12, 1);  // capped by the fp32 peak
  EXPECT_NEAR(at(t, 3, "percent_of_roofline"), 100 * (2e9 / 42e-6) / 50e12, 1e-9);
  EXPECT_EQ(str(t.rows[3][col(t, "bound")]), "compute");
  EXPECT_TRUE(empty(t.rows[4][col(t, "ai_l2")]));  // no l2_bytes counter on that kernel

  EXPECT_EQ(str(t.rows[0][col(t, "binding_level")]), "dram");  // roofs L1 120e12, L2 100e12, DRAM 80e12
  EXPECT_EQ(str(t.rows[3][col(t, "binding_level")]), "compute");

  const nlohmann::json chart = roofline_chart({t}, &c);
  EXPECT_EQ(chart["$schema"], "https://vega.github.io/schema/vega-lite/v5.json");
  ASSERT_EQ(chart["layer"].size(), 4u);  // ceiling lines, diagonal labels, peak labels, points
  EXPECT_EQ(chart["layer"][3]["data"]["values"].size(), 6u);
  // Ceilings: L1, L2 and DRAM diagonals and the fp32 and tensor_fp16 peaks, 2 points each, one label each.
  const auto& roofs = chart["layer"][0]["data"]["values"];
  EXPECT_EQ(roofs.size(), 5u * 2);
  EXPECT_EQ(chart["layer"][1]["data"]["values"].size() + chart["layer"][2]["data"]["values"].size(), 5u);
  bool peak_seen = false;
  for (const auto& r : roofs)
    if (r["ceiling"] == "fp32 peak 50 TFLOP/s" && std::fabs(r["ai"].get<double>() - 50.0 / 30) < 1e-12) {
      peak_seen = true;  // starts at its ridge with L1, the fastest level: 50e12 / 30e12
      EXPECT_DOUBLE_EQ(r["flops_per_s"].get<double>(), 50e12);
    }
  EXPECT_TRUE(peak_seen);
  EXPECT_THROW(roofline_chart({a8_kernel_information(gpu_runs(e, 1, &c))}, &c), std::invalid_argument);
}

TEST(HardwareAnalyses, A12AndA14AggregateByLayer) {
  const EvaluationRecord e = counter_record();
  const MachineCeilings c = test_ceilings();
  const GpuRuns runs = gpu_runs(e, 1, &c);
  const Table t = a12_counters_by_layer(runs);
  ASSERT_EQ(t.rows.size(), 3u);  // no counted kernel outside layers (the memcpy has no counters)
  EXPECT_EQ(t.bar_column, col(t, "gflops"));
  EXPECT_EQ(str(t.rows[0][col(t, "layer_name")]), "conv1");
  EXPECT_EQ(at(t, 0, "kernels"), 2);
  EXPECT_NEAR(at(t, 0, "gflops"), 1.601, 1e-12);
  EXPECT_DOUBLE_EQ(at(t, 0, "dram_read_bytes"), 6.4e7);
  EXPECT_DOUBLE_EQ(at(t, 0, "dram_write_bytes"), 2.4e7);
  EXPECT_DOUBLE_EQ(at(t, 0, "l2_bytes"), 1.6e8);  // only implicit_gemm has it
  // Occupancy weighted by the M/F/K latencies 30 and 20 µs: (50·30 + 90·20) / 50 = 66 (the plain mean is 70).
  EXPECT_NEAR(at(t, 0, "achieved_occupancy"), 66, 1e-12);
  EXPECT_NEAR(at(t, 0, "arithmetic_intensity"), 1.601e9 / 8.8e7, 1e-9);  // from the sums
  EXPECT_EQ(str(t.rows[0][col(t, "precision")]), "tensor_fp16");
  EXPECT_EQ(str(t.rows[0][col(t, "bound")]), "memory");
  // fc: (25·42 + 75·30 + 60·1.5) / 73.5.
  EXPECT_NEAR(at(t, 2, "achieved_occupancy"), 3390.0 / 73.5, 1e-9);
  EXPECT_NEAR(at(t, 2, "arithmetic_intensity"), 3.0001e9 / 3.02e7, 1e-9);
  EXPECT_EQ(str(t.rows[2][col(t, "bound")]), "compute");

  const Table r = a14_layer_roofline(runs);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_NEAR(at(r, 0, "kernel_latency_ms"), 0.050, 1e-12);
  EXPECT_NEAR(at(r, 0, "achieved_flops_per_s"), 1.601e9 / 50e-6, 1e3);
  EXPECT_NEAR(at(r, 2, "kernel_latency_ms"), 0.0735, 1e-12);  // mean of 71.5 and 75.5 µs
  EXPECT_NEAR(at(r, 2, "attainable_flops_per_s"), 50e12, 1);
  EXPECT_TRUE(has_note(r, "compute-kernel (kind kernel) latencies in the M/F/K run"));
  EXPECT_NO_THROW(roofline_chart({r}, &c));
}

TEST(HardwareAnalyses, HierarchicalRoofline) {
  const EvaluationRecord e = counter_record();
  const MachineCeilings c = test_ceilings();
  const Table t = roofline_hierarchical(gpu_runs(e, 1, &c));
  ASSERT_EQ(t.rows.size(), 6u + 3u);  // kernels, then layers
  // implicit_gemm: roofs L1 30e12·4 = 120e12, L2 10e12·10 = 100e12, DRAM 4e12·20 = 80e12 < peak 800e12.
  EXPECT_EQ(str(t.rows[0][col(t, "scope")]), "kernel");
  EXPECT_EQ(str(t.rows[0][col(t, "bound_l1")]), "memory");    // 4 < 26.67
  EXPECT_EQ(str(t.rows[0][col(t, "bound_l2")]), "memory");    // 10 < 80
  EXPECT_EQ(str(t.rows[0][col(t, "bound_dram")]), "memory");  // 20 < 200
  EXPECT_EQ(str(t.rows[0][col(t, "limiting")]), "dram");
  EXPECT_NEAR(at(t, 0, "attainable_flops_per_s"), 80e12, 1);
  // fc gemm: every roof (L1 600e12, L2 500e12, DRAM 400e12) is above the fp32 peak.
  EXPECT_EQ(str(t.rows[3][col(t, "bound_l1")]), "compute");
  EXPECT_EQ(str(t.rows[3][col(t, "limiting")]), "compute");
  EXPECT_EQ(str(t.rows[6][col(t, "scope")]), "layer");
  EXPECT_TRUE(empty(t.rows[6][col(t, "kernel_index")]));
  EXPECT_EQ(str(t.rows[6][col(t, "name")]), "conv1");
}

TEST(HardwareAnalyses, A15AggregatesTheModel) {
  const EvaluationRecord e = counter_record();
  GpuRunsCache cache(e);
  cache.set_ceilings(test_ceilings(), "");
  const Table t = a15_kernels_by_model(cache, {1});
  ASSERT_EQ(t.rows.size(), 1u);
  const double flops = 1.6e9 + 1e6 + 5e5 + 2e9 + 1e9 + 1e5;
  EXPECT_NEAR(at(t, 0, "gflops"), flops / 1e9, 1e-12);
  EXPECT_DOUBLE_EQ(at(t, 0, "dram_read_bytes"), 6e7 + 4e6 + 2e6 + 1e7 + 1e7 + 1e5);
  EXPECT_DOUBLE_EQ(at(t, 0, "dram_write_bytes"), 2e7 + 4e6 + 2e6 + 1e7 + 0 + 1e5);
  const double occ = (50 * 30 + 90 * 20 + 80 * 5 + 25 * 42 + 75 * 30 + 60 * 1.5) / (30 + 20 + 5 + 42 + 30 + 1.5);
  EXPECT_NEAR(at(t, 0, "achieved_occupancy"), occ, 1e-9);
  // Compute-kernel time per batch: 126.5 and 130.5 µs (the memcpy excluded), mean 128.5 µs.
  EXPECT_NEAR(at(t, 0, "achieved_flops_per_s"), flops / 128.5e-6, 1e3);
  // The model's dominant precision is fp32 (3.1016e9 vs 1.5e9 tensor), AI = flops / DRAM bytes.
  EXPECT_EQ(str(t.rows[0][col(t, "precision")]), "fp32");
  const double bytes = (6e7 + 4e6 + 2e6 + 1e7 + 1e7 + 1e5) + (2e7 + 4e6 + 2e6 + 1e7 + 0 + 1e5);
  EXPECT_NEAR(at(t, 0, "arithmetic_intensity"), flops / bytes, 1e-9);
  EXPECT_EQ(str(t.rows[0][col(t, "bound")]), "compute");  // AI 37.7 >= fp32 ridge 12.5
  EXPECT_TRUE(has_note(t, "ceilings of NVIDIA H200 on host node7"));
}

TEST(HardwareAnalyses, NoCounterRunKeepsColumnsEmpty) {
  const EvaluationRecord e = gpu_record();
  for (const char* id : {"A9", "A12", "A14", "roofline-hier"}) {
    const auto tables = run_analyses(e, {id}, 1);
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_TRUE(tables[0].rows.empty()) << id;
    EXPECT_TRUE(has_note(tables[0], kNoCounterRun)) << id;
  }
}
}  // namespace
}  // namespace xsp
