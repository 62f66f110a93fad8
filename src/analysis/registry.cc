// The registry of analyses (registry.h): every analysis table's id, title, columns and default chart, in one
// place, and the Vega-Lite rendering of those charts.
#include "xsp/analysis/registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/op_table.h"
#include "xsp/analysis/serving_join.h"

namespace xsp {
namespace {

using L = Level;
using D = DefaultFor;

ColumnSpec col(std::string name, std::string unit, std::string title, std::string meaning, bool in_text = true,
               bool symbol = false) {
  return {std::move(name), std::move(unit), std::move(meaning), std::move(title), in_text, symbol};
}

// Columns several analyses share, so that one name has one meaning everywhere.
ColumnSpec layer_index(const char* title = "layer") {
  return col("layer_index", "", title,
             "0-based execution order of the layer within its predict span; empty for "
             "work outside layers");
}
ColumnSpec layer_name(const char* title = "name") {
  return col("layer_name", "", title, "the layer's TorchScript module path when reported, else its op name");
}
ColumnSpec layer_type(const char* title = "type") {
  return col("layer_type", "", title, "the layer's op name, e.g. aten::conv2d");
}
ColumnSpec kernel_index() {
  return col("kernel_index", "", "kernel", "0-based position of the kernel within its layer, by start time");
}
ColumnSpec kernel_name() {
  return col("kernel_name", "", "kernel name", "demangled name of the GPU kernel (or memcpy/memset)", true, true);
}
ColumnSpec batch_size_col() { return col("batch_size", "", "batch", "samples per batch of the run"); }
ColumnSpec gflops() {
  return col("gflops", "GFLOP", "GFLOPs", "floating-point operations counted by the hardware counters, in 1e9");
}
ColumnSpec dram_read() { return col("dram_read_bytes", "bytes", "DRAM read (B)", "bytes read from device DRAM"); }
ColumnSpec dram_write() { return col("dram_write_bytes", "bytes", "DRAM write (B)", "bytes written to device DRAM"); }
ColumnSpec l2_bytes() { return col("l2_bytes", "bytes", "L2 (B)", "bytes moved through the L2 cache"); }
ColumnSpec l1_bytes() { return col("l1_bytes", "bytes", "L1 (B)", "bytes moved through the L1/shared memory"); }
ColumnSpec occupancy() {
  return col("achieved_occupancy", "%", "occupancy", "achieved warps per SM over the maximum, in percent");
}
ColumnSpec ai(const char* level, const char* title) {
  return col(std::string("ai_") + level, "FLOP/byte", title,
             std::string("arithmetic intensity at the ") + (std::string(level) == "dram" ? "DRAM" : level) +
                 " level: FLOPs / bytes moved there");
}
ColumnSpec arithmetic_intensity() {
  return col("arithmetic_intensity", "FLOP/byte", "AI (FLOP/B)", "FLOPs / DRAM read+write bytes");
}
ColumnSpec achieved_flops() {
  return col("achieved_flops_per_s", "FLOP/s", "FLOP/s",
             "FLOPs (counter run) / kernel latency of the M/F/K run (never the replayed duration)");
}
ColumnSpec peak_flops() {
  return col("peak_flops_per_s", "FLOP/s", "peak FLOP/s", "measured compute ceiling of the row's precision");
}
ColumnSpec attainable_flops() {
  return col("attainable_flops_per_s", "FLOP/s", "attainable FLOP/s",
             "the tightest roof: min(peak, AI × bandwidth) over L1, L2 and DRAM");
}
ColumnSpec percent_of_roofline() {
  return col("percent_of_roofline", "%", "% of roof", "100 × achieved / attainable FLOP/s");
}
ColumnSpec bound() {
  return col("bound", "", "bound", "memory or compute, by the hierarchical roofline rule against measured ceilings");
}
ColumnSpec binding_level() {
  return col("binding_level", "", "binding level", "l1, l2, dram or compute: the level whose roof is the lowest");
}
ColumnSpec precision() {
  return col("precision", "", "precision", "compute ceiling of the FLOP counter with the most FLOPs (fp32, fp16...)");
}

// A further table of table_registry(): no function; per_batch_size as given.
AnalysisSpec spec(std::string id, std::string title, std::string meaning, std::vector<Level> levels,
                  bool per_batch_size, std::vector<ColumnSpec> columns, ChartSpec chart, std::string bar = "") {
  AnalysisSpec s{std::move(id),
                 std::move(title),
                 std::move(meaning),
                 std::move(levels),
                 per_batch_size,
                 std::move(columns),
                 std::move(chart),
                 -1,
                 ""};
  s.key = s.id;
  if (!bar.empty()) s.bar_column = static_cast<int>(s.column_index(bar));
  return s;
}

// An analysis: per_batch_size follows the kind of its function (per_batch() or over_batches()).
AnalysisSpec spec(std::string id, std::string title, std::string meaning, std::vector<Level> levels,
                  AnalysisFunction function, DefaultFor default_for, std::vector<ColumnSpec> columns, ChartSpec chart,
                  std::string bar = "") {
  if ((function.per_batch != nullptr) == (function.over_batches != nullptr))
    throw std::logic_error("analysis " + id + " needs exactly one function");
  const bool per_batch_size = function.per_batch != nullptr;
  AnalysisSpec s = spec(std::move(id), std::move(title), std::move(meaning), std::move(levels), per_batch_size,
                        std::move(columns), std::move(chart), std::move(bar));
  s.function = function;
  s.default_for = default_for;
  return s;
}

// ---- the analyses' functions: adapters from the context to each analysis's own signature ----

AnalysisFunction per_batch(Table (*fn)(AnalysisContext&, int)) { return {fn, nullptr}; }
AnalysisFunction over_batches(std::vector<Table> (*fn)(AnalysisContext&)) { return {nullptr, fn}; }

// A2–A7 on the context's aggregated M/F run (or its absence: empty stats and kNoFrameworkRun).
template <Table (*Fn)(const LayerStats&, int, const std::string&)>
Table on_layers(AnalysisContext& c, int batch_size) {
  const FrameworkLayers& l = c.layers(batch_size);
  return Fn(l.stats, batch_size, l.note);
}
// Per-batch GPU analyses on the context's memoised runs.
template <Table (*Fn)(const GpuRuns&)>
Table on_gpu_runs(AnalysisContext& c, int batch_size) {
  return Fn(c.gpu().get(batch_size));
}
template <Table (*Fn)(const EvaluationRecord&, int)>
Table on_record(AnalysisContext& c, int batch_size) {
  return Fn(c.record(), batch_size);
}
template <Table (*Fn)(GpuRunsCache&, const std::vector<int>&)>
std::vector<Table> over_gpu_runs(AnalysisContext& c) {
  std::vector<Table> out;
  out.push_back(Fn(c.gpu(), c.batch_sizes()));
  return out;
}
template <Table (*Fn)(const EvaluationRecord&, const std::vector<int>&)>
std::vector<Table> over_record(AnalysisContext& c) {
  std::vector<Table> out;
  out.push_back(Fn(c.record(), c.batch_sizes()));
  return out;
}

// A1 covers every measured batch size whatever the context's selection: its optimal batch size compares them.
std::vector<Table> a1(AnalysisContext& c) {
  std::vector<Table> out;
  out.push_back(a1_model_information(c.record(), c.options().latency_bound_ms));
  return out;
}

// serving-tail joins the same slowest intervals whatever the batch sizes (a serving evaluation has none of its own).
std::vector<Table> serving_tail_table(AnalysisContext& c) {
  std::vector<Table> out;
  out.push_back(serving_tail(c.record()));
  return out;
}

// The statistics table, then the top-10 launch delays of each batch size with a kernel run (table "launch-top").
std::vector<Table> launch_statistics(AnalysisContext& c) {
  std::vector<Table> out;
  out.push_back(kernel_launch_statistics(c.gpu(), c.batch_sizes()));
  for (int b : c.batch_sizes()) {
    const GpuRuns& runs = c.gpu().get(b);
    if (runs.kernel_run) out.push_back(kernel_launch_delay_top(runs, 10));
  }
  return out;
}

ChartSpec chart(ChartKind kind, std::string x, std::string y, std::string color = "",
                std::vector<std::string> series = {}) {
  ChartSpec c;
  c.kind = kind;
  c.x = std::move(x);
  c.y = std::move(y);
  c.color = std::move(color);
  c.series = std::move(series);
  return c;
}

// Per-layer bars named "index name", the 20 largest and the rest as one.
ChartSpec labelled_bars(std::string y) {
  ChartSpec c = chart(ChartKind::kBar, "layer_index", std::move(y));
  c.label = "layer_name";
  c.top_n = 20;
  return c;
}

ChartSpec roofline(std::string color) {
  ChartSpec c = chart(ChartKind::kRoofline, "ai_dram", "achieved_flops_per_s", std::move(color));
  c.log_x = c.log_y = true;
  return c;
}

// ---- ops: the op table (op_table.h), self and total time per op over every FRAMEWORK span ----
AnalysisSpec op_table_spec() {
  const char* kernel_run = " (M/F/K run; empty without a KERNEL-level run)";
  ChartSpec c = chart(ChartKind::kBar, "op_name", "self_ms");
  c.top_n = 25;
  c.title = "Self time per op";
  return spec(
      "ops", "Op table: self and total time per op",
      "which ops take the time once nested ops are counted (torch.profiler's key_averages table)",
      {L::kModel, L::kFramework, L::kKernel}, per_batch(op_table), D::kInference,
      {col("op_name", "", "op", "the op name (aten::conv2d); with --group-by module, the op's module path"),
       col("shapes", "", "shapes", "input shapes of the op's calls (--group-by shapes only)"),
       col("calls", "count/batch", "calls", "calls per batch (M/F run)"),
       col("self_ms", "ms", "self (ms)",
           "per-batch sum of the calls' durations minus their direct FRAMEWORK children's, trimmed mean (M/F run)"),
       col("total_ms", "ms", "total (ms)",
           "per-batch sum of the calls' durations (inclusive; recursion counts twice; per module: its outermost "
           "calls), trimmed mean (M/F run)"),
       col("avg_self_us", "us", "avg self (µs)", "self time per call over all measured batches"),
       col("avg_total_us", "us", "avg total (µs)", "total time per call over all measured batches"),
       col("self_percent", "%", "self %", "100 × self / the framework time (the sum of every op's self time)"),
       col("self_cuda_ms", "ms", "self CUDA (ms)",
           std::string("per-batch kernel time of the kernels the op launched itself, trimmed mean") + kernel_run),
       col("cuda_total_ms", "ms", "CUDA total (ms)",
           std::string("per-batch kernel time of the kernels below the op at any depth, trimmed mean") + kernel_run),
       col("kernels", "count/batch", "kernels", std::string("kernels the op launched itself per batch") + kernel_run)},
      c, "self_ms");
}

// ---- A1–A7 (MODEL and FRAMEWORK level) ----
std::vector<AnalysisSpec> model_analyses() {
  std::vector<AnalysisSpec> v;
  {
    ChartSpec c = chart(ChartKind::kLine, "batch_size", "latency_trimmed_mean_ms");
    c.y2 = "throughput_samples_per_s";
    c.y_low = "ci95_low_ms";
    c.y_high = "ci95_high_ms";
    c.title = "Predict latency (with the median's 95% interval) and throughput by batch size";
    v.push_back(
        spec("A1", "Model information", "predict latency, its stability and the throughput per batch size (M run)",
             {L::kModel}, over_batches(a1), D::kEvery,
             {batch_size_col(), col("median_ms", "ms", "median (ms)", "median predict latency over the result windows"),
              col("ci95_low_ms", "ms", "95% CI low", "low end of the median's 95% interval"),
              col("ci95_high_ms", "ms", "95% CI high", "high end of the median's 95% interval"),
              col("stability", "", "stability", "whether the last result windows agree within the tolerance (SPEC §3)"),
              col("latency_trimmed_mean_ms", "ms", "latency (ms, trimmed mean)",
                  "trimmed mean of the predict latency (20% dropped at each end)"),
              col("p50_ms", "ms", "p50 (ms)", "50th percentile of the predict latency"),
              col("p90_ms", "ms", "p90 (ms)", "90th percentile of the predict latency"),
              col("p99_ms", "ms", "p99 (ms)", "99th percentile of the predict latency"),
              col("throughput_samples_per_s", "samples/s", "throughput (samples/s)",
                  "batch size / trimmed-mean predict latency")},
             c));
  }
  const ColumnSpec latency_ms = col("latency_ms", "ms", "latency (ms)",
                                    "trimmed mean over the measured batches of the layer's latency (M/F run)");
  const ColumnSpec allocated =
      col("allocated_bytes", "bytes", "allocated (B)", "mean bytes the framework allocated while the layer ran");
  v.push_back(spec(
      "A2", "Layer information", "every layer of the model with its shapes, latency and memory", {L::kFramework},
      per_batch(on_layers<a2_layer_information>), D::kInference,
      {layer_index("index"), layer_name(), layer_type(),
       col("shapes", "", "shapes", "input shapes of the layer as the framework reports them"), latency_ms, allocated},
      ChartSpec{}));
  v.push_back(spec("A3", "Layer latency by index", "which layers take the time", {L::kFramework},
                   per_batch(on_layers<a3_layer_latency>), D::kInference,
                   {layer_index("index"), layer_name(), latency_ms}, labelled_bars("latency_ms"), "latency_ms"));
  v.push_back(spec("A4", "Layer allocated memory by index", "which layers allocate the memory", {L::kFramework},
                   per_batch(on_layers<a4_layer_memory>), D::kInference,
                   {layer_index("index"), layer_name(), allocated}, labelled_bars("allocated_bytes"),
                   "allocated_bytes"));
  const ColumnSpec type = layer_type();
  v.push_back(spec("A5", "Layer type distribution", "how many layers of each type the model has", {L::kFramework},
                   per_batch(on_layers<a5_layer_type_distribution>), D::kInference,
                   {type, col("count", "count", "count", "layers of the type"),
                    col("percent", "%", "%", "share of all layers, in percent")},
                   chart(ChartKind::kBar, "layer_type", "count")));
  v.push_back(spec("A6", "Layer latency by type", "which layer types take the time", {L::kFramework},
                   per_batch(on_layers<a6_layer_latency_by_type>), D::kInference,
                   {type,
                    col("latency_ms", "ms", "latency (ms)",
                        "sum of the per-index trimmed-mean latencies of the type's layers (M/F run)"),
                    col("percent", "%", "%", "share of the summed latency of all layers, in percent")},
                   chart(ChartKind::kBar, "layer_type", "latency_ms"), "latency_ms"));
  v.push_back(spec("A7", "Layer memory by type", "which layer types allocate the memory", {L::kFramework},
                   per_batch(on_layers<a7_layer_memory_by_type>), D::kInference,
                   {type,
                    col("allocated_bytes", "bytes", "allocated (B)",
                        "sum of the type's mean allocated bytes (layers without the tag count 0)"),
                    col("percent", "%", "%", "share of the bytes allocated by all layers, in percent")},
                   chart(ChartKind::kBar, "layer_type", "allocated_bytes"), "allocated_bytes"));
  v.push_back(op_table_spec());
  return v;
}

// ---- GPU analyses (KERNEL and HARDWARE level): SPEC §4 A8–A15 ----
std::vector<AnalysisSpec> kernel_analyses() {
  std::vector<AnalysisSpec> v;
  const ColumnSpec kernel_latency =
      col("latency_ms", "ms", "latency (ms)",
          "trimmed mean over the batches that have this kernel position of its duration (M/F/K run)");
  v.push_back(spec(
      "A8", "Kernel information", "every kernel the model launched, with its hardware counters",
      {L::kFramework, L::kKernel, L::kHardware}, per_batch(on_gpu_runs<a8_kernel_information>), D::kNone,
      {layer_index(), kernel_index(), layer_name("layer name"), kernel_name(), kernel_latency, gflops(), dram_read(),
       dram_write(), occupancy(), arithmetic_intensity(), achieved_flops(), bound(), l2_bytes(), l1_bytes(),
       col("sm_throughput_percent", "%", "SM %", "SM throughput over its peak, in percent"), precision()},
      labelled_bars("latency_ms")));
  const ColumnSpec ai_dram = ai("dram", "AI DRAM"), ai_l2 = ai("l2", "AI L2"), ai_l1 = ai("l1", "AI L1");
  v.push_back(spec("A9", "Kernel roofline", "how close each kernel gets to the machine's roofline",
                   {L::kFramework, L::kKernel, L::kHardware}, per_batch(on_gpu_runs<a9_kernel_roofline>), D::kNone,
                   {layer_index(), kernel_index(), layer_name("layer name"), kernel_name(), kernel_latency, gflops(),
                    precision(), ai_dram, ai_l2, ai_l1, achieved_flops(), peak_flops(), attainable_flops(),
                    percent_of_roofline(), bound(), binding_level()},
                   roofline("binding_level"), "percent_of_roofline"));
  v.push_back(
      spec("A10", "Kernels by name", "which kernels take the GPU time", {L::kModel, L::kKernel},
           per_batch(on_gpu_runs<a10_kernels_by_name>), D::kNone,
           {kernel_name(), col("count", "count/batch", "count / batch", "occurrences of the kernel per batch"),
            col("total_latency_ms", "ms", "total (ms / batch)",
                "trimmed mean over batches of the per-batch sum of the kernel's durations"),
            col("mean_latency_us", "us", "mean (µs)", "sum of the kernel's durations / its occurrences"),
            col("percent_of_model_latency", "%", "% of model", "100 × total / model latency of the M run"),
            col("percent_of_kernel_time", "%", "% of kernels", "100 × total / the sum of the totals of all kernels")},
           chart(ChartKind::kBar, "kernel_name", "total_latency_ms"), "total_latency_ms"));
  const ColumnSpec kernel_sum_ms = col("kernel_latency_ms", "ms", "kernels (ms)",
                                       "trimmed mean of the per-batch sum of the layer's kernel latencies (M/F/K run)");
  const ColumnSpec layer_latency_ms =
      col("layer_latency_ms", "ms", "layer (ms)", "trimmed mean of the layer's latency (M/F run)");
  v.push_back(
      spec("A11", "Kernels by layer", "how much of each layer's time its kernels take", {L::kFramework, L::kKernel},
           per_batch(on_gpu_runs<a11_kernels_by_layer>), D::kNone,
           {layer_index(), layer_name(), layer_type(),
            col("kernel_count", "count/batch", "kernels / batch", "kernels the layer launched per batch"),
            kernel_sum_ms, layer_latency_ms,
            col("gpu_percent", "%", "GPU %", "100 × kernel latency / layer latency; above 100 when kernels overlap")},
           labelled_bars("kernel_latency_ms")));
  v.push_back(spec(
      "A12", "Counters by layer", "each layer's hardware counters, summed over its kernels",
      {L::kFramework, L::kKernel, L::kHardware}, per_batch(on_gpu_runs<a12_counters_by_layer>), D::kNone,
      {layer_index(), layer_name(), layer_type(),
       col("kernels", "count/batch", "kernels / batch", "kernels with counters per batch"), gflops(), dram_read(),
       dram_write(), l2_bytes(), l1_bytes(),
       col("achieved_occupancy", "%", "occupancy", "achieved occupancy, mean weighted by each kernel's M/F/K latency"),
       col("arithmetic_intensity", "FLOP/byte", "AI (FLOP/B)", "summed FLOPs / summed DRAM read+write bytes"),
       precision(), bound()},
      labelled_bars("gflops"), "gflops"));
  {
    ChartSpec c =
        chart(ChartKind::kStackedBar, "layer_index", "gpu_latency_ms", "", {"gpu_latency_ms", "non_gpu_latency_ms"});
    c.title = "GPU and non-GPU latency per layer";
    v.push_back(spec("A13", "GPU vs non-GPU latency per layer", "how much of each layer's time is spent off the GPU",
                     {L::kFramework, L::kKernel}, per_batch(on_gpu_runs<a13_gpu_vs_non_gpu>), D::kNone,
                     {layer_index(), layer_name(), layer_latency_ms,
                      col("gpu_latency_ms", "ms", "GPU (ms)",
                          "trimmed mean of the per-batch sum of the layer's kernel latencies (M/F/K run)"),
                      col("non_gpu_latency_ms", "ms", "non-GPU (ms)",
                          "layer latency − GPU latency; negative when kernels overlap or outlast the layer")},
                     c, "non_gpu_latency_ms"));
  }
  v.push_back(spec("A14", "Layer roofline", "how close each layer gets to the machine's roofline",
                   {L::kFramework, L::kKernel, L::kHardware}, per_batch(on_gpu_runs<a14_layer_roofline>), D::kNone,
                   {layer_index(), layer_name(), layer_type(),
                    col("kernel_latency_ms", "ms", "kernels (ms)",
                        "trimmed mean of the per-batch sum of the layer's compute-kernel latencies (M/F/K run)"),
                    gflops(), precision(), ai_dram, ai_l2, ai_l1,
                    col("achieved_flops_per_s", "FLOP/s", "FLOP/s", "FLOPs (counter run) / kernel_latency_ms"),
                    peak_flops(), attainable_flops(), percent_of_roofline(), bound(), binding_level()},
                   roofline("binding_level"), "percent_of_roofline"));
  {
    ChartSpec c = chart(ChartKind::kLine, "batch_size", "model_latency_ms", "",
                        {"model_latency_ms", "kernel_latency_ms", "gpu_busy_ms"});
    c.title = "Model, kernel and GPU-busy time by batch size";
    v.push_back(spec(
        "A15", "Kernels by model", "how the model's time splits into GPU work, per batch size",
        {L::kModel, L::kKernel, L::kHardware}, over_batches(over_gpu_runs<a15_kernels_by_model>), D::kNone,
        {batch_size_col(), col("model_latency_ms", "ms", "model (ms)", "trimmed mean of the predict latency (M run)"),
         col("kernel_latency_ms", "ms", "kernels (ms)",
             "trimmed mean of the per-batch sum of kernel durations (M/F/K run)"),
         col("kernel_count", "count/batch", "kernels / batch", "kernels per batch"),
         col("gpu_busy_ms", "ms", "GPU busy (ms)",
             "trimmed mean of the per-batch union of kernel intervals over all streams"),
         gflops(), dram_read(), dram_write(),
         col("achieved_occupancy", "%", "occupancy", "achieved occupancy, mean weighted by M/F/K kernel latency"),
         bound(), l2_bytes(), l1_bytes(), arithmetic_intensity(),
         col("achieved_flops_per_s", "FLOP/s", "FLOP/s", "FLOPs / per-batch compute-kernel latency"), precision()},
        c));
  }
  return v;
}

// ---- GPU analyses beyond the paper: the hierarchical roofline, HTA's idle time and launch statistics ----
std::vector<AnalysisSpec> gpu_breakdown_analyses() {
  std::vector<AnalysisSpec> v;
  const ColumnSpec ai_dram = ai("dram", "AI DRAM"), ai_l2 = ai("l2", "AI L2"), ai_l1 = ai("l1", "AI L1");
  v.push_back(spec("roofline-hier", "Hierarchical roofline",
                   "which memory level (or compute) limits each kernel and layer (Yang, Kurth, Williams 2020)",
                   {L::kFramework, L::kKernel, L::kHardware}, per_batch(on_gpu_runs<roofline_hierarchical>), D::kNone,
                   {col("scope", "", "scope", "kernel (an A9 row) or layer (an A14 row)"), layer_index(),
                    col("kernel_index", "", "kernel", "position of the kernel in its layer; empty for layers"),
                    col("name", "", "name", "kernel name, or layer name for layers"), precision(), ai_l1, ai_l2,
                    ai_dram, col("bound_l1", "", "bound L1", "memory or compute against the L1 bandwidth alone"),
                    col("bound_l2", "", "bound L2", "memory or compute against the L2 bandwidth alone"),
                    col("bound_dram", "", "bound DRAM", "memory or compute against the DRAM bandwidth alone"),
                    col("limiting", "", "limiting", "l1, l2, dram or compute: the lowest roof (A9's binding_level)"),
                    attainable_flops(), achieved_flops()},
                   roofline("limiting")));
  {
    ChartSpec c = chart(ChartKind::kStackedBar, "batch_size", "gpu_busy_ms", "",
                        {"gpu_busy_ms", "host_wait_ms", "launch_latency_ms", "before_first_kernel_ms",
                         "after_last_kernel_ms", "unattributed_ms"});
    c.title = "Predict time: GPU busy and idle parts";
    auto mean = [](std::string what) { return "mean per predict span of " + what; };
    v.push_back(spec(
        "gpu-idle", "GPU idle time", "when and why the GPU waits during predict (HTA's idle-time breakdown)",
        {L::kModel, L::kKernel}, over_batches(over_gpu_runs<gpu_idle_time>), D::kNone,
        {batch_size_col(), col("predict_ms", "ms", "predict (ms)", mean("the predict span's duration")),
         col("gpu_busy_ms", "ms", "busy (ms)", mean("the union of GPU work on all streams")),
         col("idle_ms", "ms", "idle (ms)", mean("the time without GPU work")),
         col("idle_percent", "%", "idle %", "100 × idle / predict"),
         col("host_wait_ms", "ms", "host-bound (ms)", mean("idle gaps whose next kernel was launched after them")),
         col("launch_latency_ms", "ms", "launch latency (ms)",
             mean("idle gaps whose next kernel's launch call started before them")),
         col("before_first_kernel_ms", "ms", "before first (ms)", mean("the time before the first kernel")),
         col("after_last_kernel_ms", "ms", "after last (ms)", mean("the time after the last kernel")),
         col("unattributed_ms", "ms", "unattributed (ms)", mean("idle gaps before kernels without a launch call"))},
        c, "idle_percent"));
  }
  {
    ChartSpec c = chart(ChartKind::kLine, "batch_size", "launch_delay_p50_us", "",
                        {"launch_delay_p50_us", "launch_delay_p90_us", "launch_delay_p99_us"});
    c.title = "Kernel launch delay percentiles by batch size";
    v.push_back(spec(
        "launch-stats", "Kernel launch statistics", "how long kernels wait after their launch call (HTA)",
        {L::kSystem, L::kKernel}, over_batches(launch_statistics), D::kNone,
        {batch_size_col(), col("launches_per_batch", "count/batch", "kernels / batch", "kernels per batch"),
         col("launch_api_calls_per_batch", "count/batch", "launch calls / batch",
             "distinct launching API calls per batch (a graph launch starts many kernels)"),
         col("launch_delay_p50_us", "us", "delay p50 (µs)", "median of kernel start − launch call start"),
         col("launch_delay_p90_us", "us", "delay p90 (µs)", "90th percentile of kernel start − launch call start"),
         col("launch_delay_p99_us", "us", "delay p99 (µs)", "99th percentile of kernel start − launch call start"),
         col("launch_api_p50_us", "us", "API p50 (µs)", "median duration of the launching API calls"),
         col("launch_api_p99_us", "us", "API p99 (µs)", "99th percentile duration of the launching API calls"),
         col("kernels_under_10us", "count/batch", "<10 µs / batch", "kernels shorter than 10 µs per batch"),
         col("kernels_under_10us_percent", "%", "<10 µs %", "share of kernels shorter than 10 µs"),
         col("kernels_under_2us", "count/batch", "<2 µs / batch", "kernels shorter than 2 µs per batch"),
         col("kernels_under_2us_percent", "%", "<2 µs %", "share of kernels shorter than 2 µs"),
         col("with_framework_op_percent", "%", "under an op %", "share of kernels launched inside a framework op")},
        c));
  }
  return v;
}

// ---- Generation analyses (docs/generation.md "Analyses") ----
std::vector<AnalysisSpec> generation_analyses() {
  std::vector<AnalysisSpec> v;
  {
    ChartSpec c = chart(ChartKind::kStackedBar, "batch_size", "tokenize_ms", "",
                        {"tokenize_ms", "prefill_ms", "decode_ms", "detokenize_ms"});
    c.title = "Time of a request: tokenize, prefill, decode, detokenize";
    auto mean = [](std::string what) { return "mean over the request spans (M run) of " + what; };
    auto share = [](std::string what) { return "100 × mean " + what + " / mean request time"; };
    v.push_back(spec(
        "G1", "Prefill vs decode", "how a generation request's time splits into prefill and decode, per batch size",
        {L::kModel}, over_batches(over_record<g1_prefill_vs_decode>), D::kGeneration,
        {batch_size_col(), col("requests", "count", "requests", "request spans the time split comes from"),
         col("ttft_p50_ms", "ms", "TTFT p50", "median time to first token (RunRecord::generation, M run)"),
         col("ttft_p99_ms", "ms", "TTFT p99", "99th percentile of the time to first token"),
         col("tpot_p50_ms", "ms", "TPOT p50", "median time per output token after the first"),
         col("tpot_p99_ms", "ms", "TPOT p99", "99th percentile of the time per output token after the first"),
         col("e2e_p50_ms", "ms", "E2E p50", "median request latency (issue to last token)"),
         col("output_tokens_per_s", "tokens/s", "out tok/s", "output tokens / run duration"),
         col("input_tokens_per_s", "tokens/s", "in tok/s", "prompt tokens / run duration"),
         col("request_ms", "ms", "request (ms)", mean("the request span's duration")),
         col("tokenize_ms", "ms", "tokenize (ms)", mean("the tokenize span")),
         col("prefill_ms", "ms", "prefill (ms)", mean("the prefill span")),
         col("decode_ms", "ms", "decode (ms)", mean("the sum of the request's decode steps")),
         col("detokenize_ms", "ms", "detokenize (ms)", mean("the detokenize span")),
         col("tokenize_share_pct", "%", "tokenize %", share("tokenize")),
         col("prefill_share_pct", "%", "prefill %", share("prefill")),
         col("decode_share_pct", "%", "decode %", share("decode")),
         col("detokenize_share_pct", "%", "detokenize %", share("detokenize")),
         col("other_share_pct", "%", "other %", "100 − the four shares: request time outside the four stages")},
        c, "decode_share_pct"));
  }
  {
    ChartSpec c = chart(ChartKind::kStackedBar, "module", "prefill_ms", "", {"prefill_ms", "decode_total_ms"});
    c.title = "Module time per request: prefill and all decode steps";
    v.push_back(
        spec("G2", "Layer time in prefill vs decode",
             "which modules and transformer layers take the time in prefill and in decode", {L::kFramework},
             per_batch(on_record<g2_layer_prefill_decode>), D::kGeneration,
             {col("layer", "", "layer", "transformer layer of the module: its path up to the first numeric part (h.3)"),
              col("module", "", "module", "TorchScript module path of the top-level op, else its op name"),
              col("part", "", "part",
                  "what the module is in the transformer: q/k/v/qkv/o projection, attention, MLP, norm, embedding, "
                  "rotary embedding, lm head or other (transformer_part(): GPT-2 and Llama-style names)"),
              col("op", "", "op", "op name of the module's top-level spans (the first seen)"),
              col("prefill_ms", "ms", "prefill (ms)", "the module's time in prefill steps / prefill steps (M/F run)"),
              col("decode_step_ms", "ms", "decode/step (ms)", "the module's time in decode steps / decode steps"),
              col("decode_total_ms", "ms", "decode/request (ms)", "the module's time in decode steps / requests"),
              col("prefill_share_pct", "%", "prefill %", "100 × prefill_ms / the sum over modules"),
              col("decode_share_pct", "%", "decode %", "100 × decode_total_ms / the sum over modules")},
             c, "decode_total_ms"));
  }
  {
    ChartSpec c = chart(ChartKind::kLine, "batch_size", "kv_cache_bytes", "", {"kv_cache_bytes", "formula_bytes"});
    c.title = "KV cache size by batch size: recorded and formula";
    v.push_back(spec("G3", "KV cache memory", "how large the KV cache grows and whether it matches the model's formula",
                     {L::kModel}, over_batches(over_record<g3_kv_cache_memory>), D::kGeneration,
                     {batch_size_col(),
                      col("prompt_tokens", "tokens", "prompt", "prompt tokens of the request with the most positions"),
                      col("output_tokens", "tokens", "output", "output tokens of that request"),
                      col("positions", "tokens", "positions", "prompt + output tokens"),
                      col("cache_positions", "tokens", "cache positions",
                          "length a static KV cache was allocated for (settings[\"generation\"][\"model\"]); the "
                          "formula's positions when given"),
                      col("n_kv_head", "count", "KV heads",
                          "KV heads in the formula: n_kv_head (fewer than n_head with GQA, 1 with MQA), else n_head"),
                      col("kv_cache_bytes", "bytes", "KV cache (B)",
                          "the largest KV cache a request allocated (RunRecord::generation)"),
                      col("bytes_per_token", "bytes", "B / token", "kv_cache_bytes / (batch × positions)"),
                      col("formula_bytes", "bytes", "formula (B)",
                          "2 × n_layer × n_kv_head × head_dim × positions × batch × element_bytes (Kwon et al. 2023)"),
                      col("recorded_over_formula", "", "recorded / formula", "kv_cache_bytes / formula_bytes")},
                     c, "kv_cache_bytes"));
  }
  {
    ChartSpec c = chart(ChartKind::kLine, "step", "kernel_time_ms");
    c.y2 = "kernel_count";
    c.title = "Kernel time and kernel count per generation step (0 = prefill)";
    auto mean = [](std::string what) { return "mean per step of " + what + " (M/F/K run)"; };
    v.push_back(spec(
        "G4", "Kernels per decode step", "how many kernels and how much GPU time each prefill and decode step takes",
        {L::kSystem, L::kKernel}, per_batch(on_record<g4_kernels_per_step>), D::kGeneration,
        {col("step", "", "step", "0 = prefill, then decode steps 1, 2, ..."),
         col("samples", "count", "steps", "step spans with this index (one per request)"),
         col("step_ms", "ms", "step (ms)", mean("the step span's duration")),
         col("kernel_count", "count/step", "kernels", mean("the kernels (memcpy and memset included)")),
         col("kernel_time_ms", "ms", "kernel time (ms)", mean("the summed kernel durations")),
         col("launch_calls", "count/step", "launch calls", mean("the distinct API calls that launched them")),
         col("api_calls", "count/step", "API calls", mean("the traced CUDA runtime/driver calls (SYSTEM spans)")),
         col("gpu_busy_pct", "%", "GPU busy %", "100 × kernel time / step time")},
        c, "kernel_time_ms"));
  }
  {
    ChartSpec c = chart(ChartKind::kLine, "step", "arithmetic_intensity");
    c.y2 = "gflops";
    c.title = "Arithmetic intensity and FLOPs per generation step (0 = prefill)";
    auto mean = [](std::string what) { return "mean per step of " + what + " (counter run)"; };
    v.push_back(
        spec("G5", "Counters per generation step",
             "how much each prefill and decode step computes and moves, and which of the two bounds it", {L::kHardware},
             per_batch(on_record<g5_counters_per_step>), D::kGeneration,
             {col("step", "", "step", "0 = prefill, then decode steps 1, 2, ..."),
              col("samples", "count", "steps", "step spans with this index holding counters (one per request)"),
              col("kernels", "count/step", "kernels", mean("the profiled kernels (HARDWARE spans)")),
              col("gflops", "GFLOP", "GFLOP", mean("the FLOPs, all precisions (hw::total_flops)")),
              col("dram_mb", "MB", "DRAM (MB)", mean("the DRAM bytes read + written")),
              col("arithmetic_intensity", "FLOP/byte", "FLOP/byte", "FLOPs / DRAM bytes (Williams et al. 2009)")},
             c, "arithmetic_intensity"));
  }
  return v;
}

// ---- Serving analyses (docs/serving-join.md) ----
std::vector<AnalysisSpec> serving_analyses() {
  std::vector<AnalysisSpec> v;
  auto interval = [](std::string what) { return "the slow interval's " + what + " (same on each of its rows)"; };
  auto step = [](std::string what) { return "the overlapping step's " + what + "; empty when no step overlaps"; };
  v.push_back(
      spec("serving-tail", "Slowest tokens joined to the server's steps",
           "which server steps, kernels and GPU idle time lie under the slowest first tokens and inter-token gaps",
           {L::kModel, L::kFramework, L::kSystem, L::kKernel}, over_batches(serving_tail_table), D::kServing,
           {col("point", "", "point", "the sweep point (run) of the request, 0-based; 0 without a sweep"),
            col("kind", "", "kind", "ttft (arrival to first token) or itl (the gap before token token_index)"),
            col("tail", "", "tail",
                "max for the slowest of its kind (in its sweep point), else p + the share in percent of intervals "
                "of its kind no slower, rounded down (percentile_label())"),
            col("request_id", "", "request", "the client's id of the request"),
            col("token_index", "", "token", "0 for ttft; k for the gap ending at token k"),
            col("trace_id", "", "trace id",
                "the W3C traceparent trace id the request carried: its spans in the engine's OpenTelemetry "
                "collector (Jaeger, Tempo)",
                false),
            col("interval_ms", "ms", "interval (ms)", "the interval's length on the client"),
            col("start_ns", "ns", "start (ns)", interval("start, CLOCK_MONOTONIC"), false),
            col("end_ns", "ns", "end (ns)", interval("end, CLOCK_MONOTONIC"), false),
            col("gpu_busy_ms", "ms", "GPU busy (ms)",
                interval("union of the kernels of every stream and GPU, clipped to the interval")),
            col("gpu_idle_ms", "ms", "GPU idle (ms)", "interval − outside_window_ms − gpu_busy_ms"),
            col("outside_window_ms", "ms", "outside (ms)", interval("part outside every server trace window")),
            col("interval_kernels", "count", "kernels in interval", interval("count of kernels overlapping it"), false),
            col("host_spans", "count", "host spans", interval("count of host spans below APPLICATION overlapping it"),
                false),
            col("steps", "count", "steps", "steps overlapping the interval"),
            col("step_name", "", "step", step("name (NVTX message, op or CUDA call)")),
            col("step_ordinal", "", "step #", step("1-based position among the trace's steps of its name, by start")),
            col("step_track", "", "thread", step("host thread"), false),
            col("step_start_ns", "ns", "step start (ns)", step("start, CLOCK_MONOTONIC"), false),
            col("step_end_ns", "ns", "step end (ns)", step("end, CLOCK_MONOTONIC"), false),
            col("step_ms", "ms", "step (ms)", step("duration")),
            col("overlap_ms", "ms", "overlap (ms)", step("time inside the interval")),
            col("step_kernels", "count", "kernels", step("kernels below it (parent chain, correlation ids included)")),
            col("step_kernel_ms", "ms", "kernel time (ms)", step("kernels' durations summed")),
            col("top_kernel", "", "top kernel", step("kernel name with the largest summed duration"), true, true),
            col("top_kernel_ms", "ms", "top kernel (ms)", step("top kernel's summed duration")),
            col("sentence", "", "reading",
                "the interval in words (join_sentence()), on its first row: tail, kind, request, length, the steps "
                "grouped by name with their kernels and top kernel, GPU idle (the terminal reads out the slowest in "
                "the notes)",
                false)},
           ChartSpec{}, "overlap_ms"));
  return v;
}

// Every analysis, each group under its family, in analysis_ids() order.
std::vector<AnalysisSpec> make_analyses() {
  std::vector<AnalysisSpec> v;
  auto add = [&](AnalysisFamily family, std::vector<AnalysisSpec> group) {
    for (AnalysisSpec& s : group) {
      s.family = family;
      v.push_back(std::move(s));
    }
  };
  add(AnalysisFamily::kModel, model_analyses());
  add(AnalysisFamily::kGpu, kernel_analyses());
  add(AnalysisFamily::kGpu, gpu_breakdown_analyses());
  add(AnalysisFamily::kGeneration, generation_analyses());
  add(AnalysisFamily::kServing, serving_analyses());
  return v;
}

// The summary tables of a profiled command (RecordKind::kExternal).
std::vector<AnalysisSpec> external_summary_tables() {
  std::vector<AnalysisSpec> v;
  {
    AnalysisSpec s =
        spec("summary.ranges",
             "The program's own ranges (MODEL-level NVTX ranges of a profiled command): how often and how long",
             "per range name: count and duration percentiles, over every process of the command", {L::kModel}, false,
             {col("run", "", "run", "the run the ranges come from: M, M/F, M/F/K (one run unless --leveled)"),
              col("range", "", "range", "the range's name (NVTX message)"),
              col("count", "count", "count", "ranges of that name"),
              col("total_ms", "ms", "total ms", "their durations summed (nested ranges of one name count twice)"),
              col("mean_ms", "ms", "mean ms", "mean duration", false), col("p50_ms", "ms", "p50 ms", "median duration"),
              col("p90_ms", "ms", "p90 ms", "90th percentile of the durations"),
              col("p99_ms", "ms", "p99 ms", "99th percentile of the durations"),
              col("max_ms", "ms", "max ms", "the longest")},
             chart(ChartKind::kBar, "range", "total_ms"));
    s.key = s.id;
    v.push_back(std::move(s));
  }
  {
    AnalysisSpec s = spec(
        "summary.samples",
        "The program's samples (its outermost ranges of one name, e.g. each step) per run of a profiled command, with "
        "the 95% interval of their median and whether the command's runs agree",
        "per run (M, M/F, M/F/K): the sample range's median, interval and stability over every run of the command",
        {L::kModel}, false,
        {col("run", "", "run", "the run's name: M, M/F, M/F/K"),
         col("trace_level", "", "level", "the deepest span level the run traced", false),
         col("range", "", "range", "the sample range's name (--sample-range, else the most frequent outermost range)"),
         col("runs", "count", "runs", "runs of the command at this level (--repeat)"),
         col("samples", "count", "samples", "sample ranges over those runs"),
         col("median_ms", "ms", "median ms", "median duration of the samples"),
         col("ci95_low_ms", "ms", "95% CI low", "low end of the median's 95% interval"),
         col("ci95_high_ms", "ms", "95% CI high", "high end of the median's 95% interval"),
         col("stability", "", "stability",
             "whether the runs' medians (or one run's windows) agree within the tolerance"),
         col("spread_percent", "%", "spread %", "spread of the window medians, in percent", false),
         col("cv_percent", "%", "CV %", "coefficient of variation of the samples, in percent"),
         col("p90_ms", "ms", "p90 ms", "90th percentile of the samples", false),
         col("p99_ms", "ms", "p99 ms", "99th percentile of the samples")},
        chart(ChartKind::kBar, "run", "median_ms"));
    s.key = s.id;
    v.push_back(std::move(s));
  }
  return v;
}

// ---- The further tables of the analyses (launch-top) and of the summary (summary.h) ----
std::vector<AnalysisSpec> summary_tables() {
  std::vector<AnalysisSpec> v;
  {
    AnalysisSpec s =
        spec("launch-stats", "Kernels with the largest launch delay", "the kernel launches that waited longest",
             {L::kSystem, L::kKernel}, true,
             {col("batch", "", "batch", "0-based measured batch"), layer_index(), layer_name("layer name"),
              kernel_name(), col("launch_api", "", "launch API", "the CUDA API call that launched the kernel"),
              col("launch_delay_us", "us", "delay (µs)", "kernel start − start of its launching API call"),
              col("duration_us", "us", "duration (µs)", "the kernel's duration")},
             chart(ChartKind::kBar, "kernel_name", "launch_delay_us"), "launch_delay_us");
    s.key = "launch-top";
    v.push_back(std::move(s));
  }
  {
    AnalysisSpec s =
        spec("summary.runs",
             "Predict latency per batch size and run (each level's latency from its own run), with its 95% interval "
             "and stability",
             "every run of the evaluation: its latency, stability and what it recorded", {L::kModel}, false,
             {batch_size_col(),
              col("run", "", "run", "the run's name: M, M/F, M/F/K or the counter run"),
              col("trace_level", "", "level", "the deepest span level the run traced", false),
              col("median_ms", "ms", "median ms", "median predict latency over the result windows"),
              col("ci95_low_ms", "ms", "95% CI low", "low end of the median's 95% interval"),
              col("ci95_high_ms", "ms", "95% CI high", "high end of the median's 95% interval"),
              col("stability", "", "stability", "whether the last result windows agree within the tolerance"),
              col("spread_percent", "%", "spread %", "spread of the last windows' medians, in percent", false),
              col("cv_percent", "%", "CV %", "coefficient of variation of the predict latency, in percent"),
              col("drift_percent", "%", "drift %", "drift of the window medians over the run, in percent"),
              col("trimmed_mean_ms", "ms", "trimmed mean ms", "trimmed mean of the predict latency"),
              col("p50_ms", "ms", "p50 ms", "50th percentile of the predict latency", false),
              col("p90_ms", "ms", "p90 ms", "90th percentile of the predict latency"),
              col("p99_ms", "ms", "p99 ms", "99th percentile of the predict latency"),
              col("throughput_samples_per_s", "samples/s", "samples/s", "batch size / trimmed-mean predict latency"),
              col("batches", "count", "batches", "measured batches"),
              col("warmup_batches", "count", "warm-up", "warm-up batches (not measured)"),
              col("warmup_ms", "ms", "warm-up ms", "wall time of the warm-up"),
              col("spans", "count", "spans", "spans in the run's trace"),
              col("unparented", "count", "unparented", "spans the assembler could not place under a parent"),
              col("warnings", "count", "warnings", "warnings the run recorded (listed under the table)")},
             chart(ChartKind::kLine, "batch_size", "median_ms", "run"));
    s.key = s.id;
    v.push_back(std::move(s));
  }
  {
    AnalysisSpec s = spec(
        "summary.generation", "Token latencies per run: TTFT, TPOT, ITL, end-to-end, tokens/s (docs/generation.md)",
        "how fast the first token comes and how fast the others follow, per batch size and run", {L::kModel}, false,
        {batch_size_col(),
         col("run", "", "run", "the run's name: M, M/F, M/F/K"),
         col("requests", "count", "requests", "measured requests (each a batch of sequences)"),
         col("sequences", "count", "seqs", "measured sequences: what the distributions count"),
         col("prompt_tokens", "", "prompt", "prompt tokens per request: one value or the range drawn"),
         col("output_tokens", "", "output", "tokens generated per request: one value or the range drawn"),
         col("ttft_p50_ms", "ms", "TTFT p50", "median time to first token: issue to the end of prefill"),
         col("ttft_p90_ms", "ms", "TTFT p90", "90th percentile of TTFT", false),
         col("ttft_p99_ms", "ms", "TTFT p99", "99th percentile of TTFT"),
         col("tpot_p50_ms", "ms", "TPOT p50", "median time per output token after the first: (last - first) / (n - 1)"),
         col("tpot_p90_ms", "ms", "TPOT p90", "90th percentile of TPOT", false),
         col("tpot_p99_ms", "ms", "TPOT p99", "99th percentile of TPOT"),
         col("itl_p99_ms", "ms", "ITL p99", "99th percentile of the gaps between consecutive tokens, all pooled"),
         col("e2e_p50_ms", "ms", "E2E p50", "median end-to-end latency: issue to the last token"),
         col("output_tokens_per_s", "tokens/s", "out tok/s", "output tokens over the run's wall time"),
         col("input_tokens_per_s", "tokens/s", "in tok/s", "prompt tokens over the run's wall time", false),
         col("ttft_stability", "", "TTFT", "stability verdict of the per-request TTFT series"),
         col("tpot_stability", "", "TPOT", "stability verdict of the per-request TPOT series"),
         col("check", "", "check", "the scenario's token-latency check: early-stopping estimates against the bounds"),
         col("kv_cache_bytes", "bytes", "KV cache", "the largest KV cache a request allocated", false)},
        chart(ChartKind::kBar, "batch_size", "ttft_p50_ms", "run"));
    s.key = s.id;
    v.push_back(std::move(s));
  }
  {
    AnalysisSpec s = spec(
        "summary.generation_tail", "The slowest first tokens and decode steps, whose traces were kept",
        "which steps to open to see why a token was slow: their rank, percentile and span id", {L::kModel}, false,
        {batch_size_col(), col("run", "", "run", "the run's name: M, M/F, M/F/K"),
         col("kind", "", "kind", "first_token (its TTFT) or decode (one decode step)"),
         col("rank", "count", "rank", "1 = the slowest of the run"),
         col("percentile", "%", "pctl", "nearest-rank percentile of the step within the run: 100 (n - rank + 1) / n"),
         col("request", "count", "request", "measured request index"),
         col("step", "count", "step", "0 = prefill (first token), then each decode step"),
         col("latency_ms", "ms", "ms", "TTFT for first tokens, the step's duration for decode steps"),
         col("span_id", "", "span", "the step's MODEL span in the run's trace (xsp trace export)"),
         col("full_trace", "", "ops kept", "yes when the request's framework ops and kernels were kept")},
        chart(ChartKind::kBar, "rank", "latency_ms", "kind"));
    s.key = s.id;
    v.push_back(std::move(s));
  }
  {
    AnalysisSpec s = spec(
        "summary.outputs", "Outputs of the last batch per batch size: classes, detections, masks (docs/tasks.md)",
        "what a detection, segmentation or text classification model returned for a few inputs", {L::kModel}, false,
        {batch_size_col(), col("input", "", "input", "the input's id: image file, or text:<line> of the prompts"),
         col("task", "", "task", "the output type: detection, segmentation, text_classification"),
         col("rank", "count", "rank", "1 = the best detection, the class with most pixels, the likeliest class"),
         col("class", "count", "class", "class index"),
         col("label", "", "label", "the class's label (the manifest's labels file)"),
         col("score", "", "score", "detection: its score; segmentation: fraction of pixels; text: probability"),
         col("box", "", "box", "detection: x1,y1,x2,y2 in the model input's pixels"),
         col("of", "", "of", "detection: the input's detections after NMS; segmentation: the mask's size")},
        chart(ChartKind::kBar, "rank", "score", "input"));
    s.key = s.id;
    v.push_back(std::move(s));
  }
  {
    AnalysisSpec s = spec(
        "summary.overheads", "Overhead each level adds over the next shallower one (SPEC §3), with its 95% interval",
        "what each deeper trace level costs in predict latency", {L::kModel}, false,
        {batch_size_col(), col("trace_level", "", "run", "the deeper run"),
         col("baseline", "", "over", "the shallower run it is compared with"),
         col("design", "", "design", "how the two were measured: interleaved rounds or a residual estimate"),
         col("overhead", "", "overhead [95% CI]", "the overhead in percent with its 95% interval, as text"),
         col("overhead_percent", "%", "", "overhead over the baseline, in percent", false),
         col("ci95_low_percent", "%", "", "low end of the overhead's 95% interval, in percent", false),
         col("ci95_high_percent", "%", "", "high end of the overhead's 95% interval, in percent", false),
         col("significant", "", "", "yes when the interval excludes 0", false),
         col("latency_ms", "ms", "run ms", "predict latency of the deeper run"),
         col("baseline_latency_ms", "ms", "over ms", "predict latency of the baseline run"),
         col("rounds", "count", "rounds", "interleaved measurement rounds")},
        chart(ChartKind::kScatter, "batch_size", "overhead_percent", "trace_level"));
    v.push_back(std::move(s));
  }
  return v;
}

// ---- compare (compare.h): the tables with fixed columns (compare.A1 has columns per evaluation) ----
std::vector<AnalysisSpec> compare_tables() {
  std::vector<AnalysisSpec> v;
  auto keyed = [&](AnalysisSpec s) {
    s.key = s.id;
    v.push_back(std::move(s));
  };
  keyed(spec("compare.evaluations", "Evaluations compared", "which evaluations a comparison puts side by side", {},
             false,
             {col("evaluation", "", "evaluation", "evaluation id in the store"),
              col("model", "", "model", "model name and version"),
              col("framework", "", "framework", "framework name and version"),
              col("device", "", "device", "device the evaluation ran on"),
              col("trace_level", "", "", "deepest trace level, with (leveled) when each level had its run"),
              col("batch_sizes", "", "", "measured batch sizes"),
              col("predictions", "count", "stored predictions", "inputs whose predictions were stored")},
             {}));
  keyed(
      spec("compare.A1.significance", "A1 significance",
           "whether each evaluation's predict latency differs from the first's (Mann-Whitney U, bootstrap CI)",
           {L::kModel}, false,
           {batch_size_col(), col("evaluation_a", "", "A", "the first evaluation (the baseline)"),
            col("evaluation_b", "", "B", "the evaluation compared with it"),
            col("batches_a", "count", "n A", "measured batches of A's M run"),
            col("batches_b", "count", "n B", "measured batches of B's M run"),
            col("median_a_ms", "ms", "median A ms", "median predict latency of A's M run"),
            col("median_b_ms", "ms", "median B ms", "median predict latency of B's M run"),
            col("median_diff_ms", "ms", "B-A ms", "median(B) − median(A)"),
            col("ci_low_ms", "ms", "CI low", "low end of the bootstrap interval of median(B) − median(A)"),
            col("ci_high_ms", "ms", "CI high", "high end of the bootstrap interval of median(B) − median(A)"),
            col("u", "", "U (A)", "Mann-Whitney U statistic of A"), col("z", "", "z", "normal approximation's z score"),
            col("p_value", "", "p", "two-sided p-value"), col("significant", "", "significant", "yes when p < alpha"),
            col("p_method", "", "p method", "exact (permutation distribution) or normal approximation")},
           chart(ChartKind::kBar, "evaluation_b", "median_diff_ms", "")));
  keyed(
      spec("compare.A6.totals", "Layer totals per evaluation (FRAMEWORK level)",
           "how much of each evaluation's model latency its layers account for", {L::kModel, L::kFramework}, false,
           {col("evaluation", "", "evaluation", "evaluation id in the store"),
            col("framework", "", "framework", "framework name"), batch_size_col(),
            col("layers", "count", "layers", "layers per batch (M/F run)"),
            col("layer_types", "count", "types", "distinct layer types"),
            col("layer_latency_ms", "ms", "layers ms", "sum over layer indexes of the trimmed-mean latency (M/F run)"),
            col("model_latency_ms", "ms", "model ms", "trimmed-mean predict latency (M run)"),
            col("layer_share_percent", "%", "layers % of model", "100 × layer latency / model latency")},
           chart(ChartKind::kBar, "evaluation", "layer_latency_ms", "")));
  keyed(spec("compare.predictions", "Output agreement on the same inputs",
             "whether two evaluations give the same outputs on the same inputs", {}, false,
             {col("evaluation_a", "", "A", "the first evaluation (the baseline)"),
              col("evaluation_b", "", "B", "the evaluation compared with it"),
              col("common_inputs", "count", "inputs", "inputs both stored predictions for"),
              col("top1_agree", "count", "top-1 agree", "common inputs with the same top-1 class"),
              col("top1_agree_percent", "%", "top-1 %", "100 × top-1 agreements / common inputs"),
              col("max_abs_dp", "", "max |dp|", "largest absolute difference of a class probability"),
              col("mean_kl_ab", "nat", "mean KL(A||B)", "mean Kullback-Leibler divergence of A from B"),
              col("mean_kl_ba", "nat", "mean KL(B||A)", "mean Kullback-Leibler divergence of B from A"),
              col("mean_js", "nat", "mean JS", "mean Jensen-Shannon divergence"),
              col("max_js", "nat", "max JS", "largest Jensen-Shannon divergence")},
             chart(ChartKind::kBar, "evaluation_b", "top1_agree_percent", "")));
  return v;
}

std::vector<AnalysisSpec> make_tables() {
  std::vector<AnalysisSpec> v = analysis_registry();
  for (std::vector<AnalysisSpec> group : {summary_tables(), external_summary_tables(), compare_tables()})
    for (AnalysisSpec& s : group) v.push_back(std::move(s));
  return v;
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view to_string(ChartKind kind) {
  switch (kind) {
    case ChartKind::kNone:
      return "none";
    case ChartKind::kLine:
      return "line";
    case ChartKind::kBar:
      return "bar";
    case ChartKind::kArc:
      return "arc";
    case ChartKind::kStackedBar:
      return "stacked-bar";
    case ChartKind::kRoofline:
      return "roofline";
    case ChartKind::kScatter:
      return "scatter";
  }
  return "none";
}

std::size_t AnalysisSpec::column_index(std::string_view name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return i;
  throw std::logic_error("analysis " + key + " has no column '" + std::string(name) + "'");
}

const std::vector<AnalysisSpec>& analysis_registry() {
  static const std::vector<AnalysisSpec> specs = make_analyses();
  return specs;
}

const std::vector<AnalysisSpec>& table_registry() {
  static const std::vector<AnalysisSpec> specs = make_tables();
  return specs;
}

const AnalysisSpec& analysis_spec(std::string_view id) {
  for (const AnalysisSpec& s : analysis_registry())
    if (iequal(s.id, id)) return s;
  std::string msg = "unknown analysis id '" + std::string(id) + "'; valid ids:";
  for (const AnalysisSpec& s : analysis_registry()) msg += " " + s.id;
  throw std::invalid_argument(msg);
}

const AnalysisSpec& table_spec(std::string_view key) {
  for (const AnalysisSpec& s : table_registry())
    if (s.key == key) return s;
  std::string msg = "no table '" + std::string(key) + "' in the registry; keys:";
  for (const AnalysisSpec& s : table_registry()) msg += " " + s.key;
  throw std::invalid_argument(msg);
}

const AnalysisSpec* spec_of(const Table& table) {
  if (table.spec.empty()) return nullptr;
  for (const AnalysisSpec& s : table_registry())
    if (s.key == table.spec) return &s;
  return nullptr;
}

Table empty_table(const AnalysisSpec& spec) {
  Table t;
  t.id = spec.id;
  t.title = spec.title;
  t.spec = spec.key;
  t.bar_column = spec.bar_column;
  t.columns.reserve(spec.columns.size());
  for (const ColumnSpec& c : spec.columns) t.columns.push_back({c.name, c.title, c.in_text, c.symbol});
  return t;
}

Table empty_table(const AnalysisSpec& spec, int batch_size) {
  Table t = empty_table(spec);
  t.title += " (batch size " + std::to_string(batch_size) + ")";
  t.batch_size = batch_size;
  return t;
}

RowBuilder::RowBuilder(const Table& table) : table_(&table), cells_(table.columns.size()) {}

RowBuilder& RowBuilder::set(std::string_view name, Cell value) {
  const int i = column_index(*table_, name);
  if (i < 0)
    throw std::logic_error("table " + table_->id + " (" + table_->title + ") has no column '" + std::string(name) +
                           "'");
  cells_[static_cast<std::size_t>(i)] = std::move(value);
  return *this;
}

std::vector<Cell> RowBuilder::take() {
  std::vector<Cell> out = std::move(cells_);
  cells_.assign(table_->columns.size(), Cell{});
  return out;
}

int column_index(const Table& table, std::string_view name) {
  for (std::size_t i = 0; i < table.columns.size(); ++i)
    if (table.columns[i].name == name) return static_cast<int>(i);
  return -1;
}

const Cell& cell(const Table& table, const std::vector<Cell>& row, std::string_view name) {
  const int i = column_index(table, name);
  if (i < 0 || static_cast<std::size_t>(i) >= row.size())
    throw std::logic_error("table " + table.id + " has no column '" + std::string(name) + "'");
  return row[static_cast<std::size_t>(i)];
}

nlohmann::ordered_json to_json(const AnalysisSpec& spec) {
  nlohmann::ordered_json j;
  j["key"] = spec.key;
  j["id"] = spec.id;
  j["title"] = spec.title;
  j["meaning"] = spec.meaning;
  j["levels"] = nlohmann::ordered_json::array();
  for (Level l : spec.levels) j["levels"].push_back(std::string(to_string(l)));
  j["per_batch_size"] = spec.per_batch_size;
  const ChartSpec& c = spec.chart;
  j["chart"] = {{"kind", std::string(to_string(c.kind))},
                {"x", c.x},
                {"y", c.y},
                {"color", c.color},
                {"series", c.series},
                {"y2", c.y2},
                {"y_low", c.y_low},
                {"y_high", c.y_high},
                {"log_x", c.log_x},
                {"log_y", c.log_y},
                {"title", c.title}};
  j["bar_column"] = spec.bar_column >= 0 ? nlohmann::ordered_json(spec.columns[spec.bar_column].name) : nullptr;
  j["columns"] = nlohmann::ordered_json::array();
  for (const ColumnSpec& col : spec.columns)
    j["columns"].push_back({{"name", col.name},
                            {"unit", col.unit},
                            {"meaning", col.meaning},
                            {"title", col.title},
                            {"in_text", col.in_text},
                            {"symbol", col.symbol}});
  return j;
}

std::string describe_registry() {
  std::string out;
  for (const AnalysisSpec& s : table_registry()) {
    std::string levels;
    for (Level l : s.levels) levels += (levels.empty() ? "" : ",") + std::string(to_string(l));
    out += s.key + (s.key != s.id ? " (id " + s.id + ")" : "") + ": " + s.title + "\n";
    out += "  " + s.meaning + "\n";
    out += "  levels: " + levels + "; " + (s.per_batch_size ? "one table per batch size" : "one table") +
           "; chart: " + std::string(to_string(s.chart.kind));
    if (s.chart.kind != ChartKind::kNone) {
      const std::string y = s.chart.series.empty() ? s.chart.y : [&] {
        std::string v;
        for (const auto& n : s.chart.series) v += (v.empty() ? "" : "+") + n;
        return v;
      }();
      out += " (" + (s.chart.x.empty() ? s.chart.color : s.chart.x) + " → " + y +
             (s.chart.y2.empty() ? "" : ", " + s.chart.y2) + ")";
    }
    out += "\n";
    std::size_t width = 0;
    for (const ColumnSpec& c : s.columns) width = std::max(width, c.name.size());
    for (const ColumnSpec& c : s.columns) {
      std::string line = "    " + c.name + std::string(width - c.name.size() + 2, ' ');
      const std::string unit = c.unit.empty() ? "-" : c.unit;
      line += unit + std::string(unit.size() < 10 ? 10 - unit.size() : 1, ' ') + c.meaning;
      if (!c.in_text) line += " (CSV/JSON only)";
      out += line + "\n";
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Vega-Lite
// ---------------------------------------------------------------------------------------------------------

namespace {

// A column holding any text is nominal; numbers are quantitative (an index or batch size on a bar's x is
// ordinal: evenly spaced, in order).
bool is_text_column(const Table& t, std::size_t i) {
  for (const auto& row : t.rows)
    if (i < row.size() && std::holds_alternative<std::string>(row[i])) return true;
  return false;
}

std::string axis_title(const ColumnSpec& c) {
  std::string title = c.title.empty() ? c.name : c.title;
  if (!c.unit.empty() && title.find(c.unit) == std::string::npos) title += " (" + c.unit + ")";
  return title;
}

nlohmann::json field(const AnalysisSpec& s, const Table& t, const std::string& name, const char* type = nullptr) {
  const std::size_t i = s.column_index(name);
  nlohmann::json f = {{"field", name}, {"title", axis_title(s.columns[i])}};
  f["type"] =
      type ? type : (is_text_column(t, static_cast<std::size_t>(column_index(t, name))) ? "nominal" : "quantitative");
  return f;
}

double number_or_zero(const Cell& c) {
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&c)) return std::isfinite(*d) ? *d : 0.0;
  return 0.0;
}

// Bars named by ChartSpec::label next to x ("12 layer4.0.conv1"): one per distinct name with the values summed,
// the top_n largest kept and the rest summed into "other (N)". Largest first.
nlohmann::json labelled_bar_values(const AnalysisSpec& s, const Table& t) {
  const ChartSpec& c = s.chart;
  const int xi = column_index(t, c.x), li = c.label.empty() ? -1 : column_index(t, c.label), yi = column_index(t, c.y);
  std::vector<std::pair<std::string, double>> bars;
  std::unordered_map<std::string, std::size_t> at;
  for (const auto& row : t.rows) {
    const Cell& xc = row[static_cast<std::size_t>(xi)];
    std::string name = std::holds_alternative<std::int64_t>(xc)  ? std::to_string(std::get<std::int64_t>(xc))
                       : std::holds_alternative<std::string>(xc) ? std::get<std::string>(xc)
                                                                 : "–";
    if (li >= 0)
      if (const auto* text = std::get_if<std::string>(&row[static_cast<std::size_t>(li)])) name += " " + *text;
    const auto [it, fresh] = at.emplace(name, bars.size());
    if (fresh) bars.emplace_back(name, 0.0);
    bars[it->second].second += number_or_zero(row[static_cast<std::size_t>(yi)]);
  }
  std::stable_sort(bars.begin(), bars.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (c.top_n > 0 && bars.size() > c.top_n + 1) {
    double rest = 0;
    for (std::size_t i = c.top_n; i < bars.size(); ++i) rest += bars[i].second;
    const std::size_t others = bars.size() - c.top_n;
    bars.resize(c.top_n);
    bars.emplace_back("other (" + std::to_string(others) + ")", rest);
  }
  nlohmann::json values = nlohmann::json::array();
  for (const auto& [name, value] : bars) values.push_back({{"bar", name}, {c.y, value}});
  return values;
}

// kBar: vertical bars over an ordinal x (an index, a batch size); horizontal ones, largest on top, when the bars
// are named by text (a nominal x or a label column), so that the names stay readable.
void bar_chart(const AnalysisSpec& s, const Table& table, const nlohmann::json& tooltip, nlohmann::json& spec) {
  const ChartSpec& c = s.chart;
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  const bool labelled = !c.label.empty() && column_index(table, c.label) >= 0;
  const bool named = is_text_column(table, s.column_index(c.x));
  if (labelled || (named && c.top_n > 0 && table.rows.size() > c.top_n + 1)) {
    spec["data"]["values"] = labelled_bar_values(s, table);
    const std::size_t xi = s.column_index(c.x);
    std::string title = s.columns[xi].title.empty() ? c.x : s.columns[xi].title;
    if (labelled) {
      const std::size_t li = s.column_index(c.label);
      title += " " + (s.columns[li].title.empty() ? c.label : s.columns[li].title);
    }
    nlohmann::json value = field(s, table, c.y, "quantitative");
    spec["encoding"] = {
        {"y",
         {{"field", "bar"}, {"type", "nominal"}, {"sort", nullptr}, {"title", title}, {"axis", {{"labelLimit", 320}}}}},
        {"x", value},
        {"tooltip", {{{"field", "bar"}, {"type", "nominal"}, {"title", title}}, value}}};
    spec["height"] = {{"step", 16}};
    return;
  }
  nlohmann::json x = field(s, table, c.x, is_text_column(table, s.column_index(c.x)) ? "nominal" : "ordinal");
  nlohmann::json y = field(s, table, c.y, "quantitative");
  if (x["type"] == "nominal") {
    x["sort"] = "-x";  // names: largest on top
    x["axis"] = {{"labelLimit", 320}};
    spec["encoding"] = {{"y", x}, {"x", y}, {"tooltip", tooltip}};
    spec["height"] = {{"step", 16}};
  } else {
    spec["encoding"] = {{"x", x}, {"y", y}, {"tooltip", tooltip}};
  }
  if (!c.color.empty()) spec["encoding"]["color"] = field(s, table, c.color, "nominal");
}

}  // namespace

nlohmann::json vega_lite_chart(const Table& table) {
  const AnalysisSpec* s = spec_of(table);
  if (s == nullptr || s->chart.kind == ChartKind::kNone || table.rows.empty()) return nullptr;
  const ChartSpec& c = s->chart;
  nlohmann::json values = nlohmann::json::array();
  const nlohmann::ordered_json rendered = to_json(table);  // a local: a temporary would die before the loop
  for (const auto& row : rendered["rows"]) values.push_back(nlohmann::json::parse(row.dump()));

  nlohmann::json tooltip = nlohmann::json::array();
  for (const ColumnSpec& col : s->columns)
    if (col.in_text && column_index(table, col.name) >= 0) tooltip.push_back(field(*s, table, col.name));

  nlohmann::json spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
                         {"title", c.title.empty() ? table.title : c.title + " — " + table.title},
                         {"description", s->meaning},
                         {"data", {{"values", values}}},
                         {"width", 600},
                         {"height", 300}};
  auto x_field = [&](const char* numeric_type) {
    return field(*s, table, c.x, is_text_column(table, s->column_index(c.x)) ? "nominal" : numeric_type);
  };
  switch (c.kind) {
    case ChartKind::kLine:
    case ChartKind::kStackedBar: {
      const bool stacked = c.kind == ChartKind::kStackedBar;
      // A batch size is a category of the run, not a quantity to interpolate: one evenly spaced tick each.
      nlohmann::json enc = {{"x", x_field(stacked || c.x == "batch_size" ? "ordinal" : "quantitative")},
                            {"tooltip", tooltip}};
      if (c.x == "batch_size") {
        enc["x"]["axis"] = {{"labelAngle", 0}};
        enc["x"]["title"] = "batch size";
      }
      spec["mark"] = stacked ? nlohmann::json("bar") : nlohmann::json{{"type", "line"}, {"point", true}};
      if (!c.series.empty()) {
        // One series per value column: fold them into (series, value) pairs; the series title is the column's.
        const ColumnSpec& first = s->columns[s->column_index(c.series.front())];
        spec["transform"] = {{{"fold", c.series}, {"as", {"series", "value"}}}};
        enc["y"] = {{"field", "value"},
                    {"type", "quantitative"},
                    {"title", first.unit.empty() ? std::string("value") : first.unit}};
        if (stacked) enc["y"]["stack"] = "zero";
        // The legend names each series by its column's title, not its machine name.
        std::string label_expr = "{";
        for (const std::string& name : c.series) {
          const ColumnSpec& sc = s->columns[s->column_index(name)];
          std::string title = axis_title(sc);
          std::erase(title, '\'');
          label_expr += (label_expr.size() > 1 ? ", '" : "'") + name + "': '" + title + "'";
        }
        label_expr += "}[datum.label] || datum.label";
        enc["color"] = {{"field", "series"},
                        {"type", "nominal"},
                        {"sort", c.series},
                        {"title", ""},
                        {"legend", {{"labelExpr", label_expr}, {"labelLimit", 300}}}};
      } else {
        enc["y"] = field(*s, table, c.y, "quantitative");
        if (!c.color.empty()) enc["color"] = field(*s, table, c.color, "nominal");
      }
      // The interval, when the table has it: a rule per x from low to high, on the line's own y scale (a nested
      // layer shares its scales, so the rule stays on the latency axis even with an independent y2 axis).
      nlohmann::json interval;
      if (!c.y_low.empty() && column_index(table, c.y_low) >= 0 && column_index(table, c.y_high) >= 0) {
        nlohmann::json low = field(*s, table, c.y_low, "quantitative");
        low["title"] = enc["y"].value("title", "");
        interval = {{"mark", {{"type", "errorbar"}, {"thickness", 2}, {"color", "#333"}}},
                    {"encoding", {{"x", enc["x"]}, {"y", low}, {"y2", {{"field", c.y_high}}}, {"tooltip", tooltip}}}};
      }
      if (!c.y2.empty()) {
        // Two quantities with different units: one line each, on independent y axes, each named in one legend
        // (a constant colour datum per line shares the colour scale).
        const std::string first_name = enc["y"].value("title", c.y);
        nlohmann::json second_y = field(*s, table, c.y2, "quantitative");
        const std::string second_name = second_y.value("title", c.y2);
        enc["color"] = {{"datum", first_name},
                        {"type", "nominal"},
                        {"title", nullptr},
                        {"scale", {{"domain", {first_name, second_name}}}}};
        second_y["axis"] = {{"titleColor", "#f58518"}};
        enc["y"]["axis"] = {{"titleColor", "#4c78a8"}};
        nlohmann::json second = {{"mark", {{"type", "line"}, {"point", true}, {"strokeDash", {4, 4}}}},
                                 {"encoding",
                                  {{"x", enc["x"]},
                                   {"y", second_y},
                                   {"color", {{"datum", second_name}, {"type", "nominal"}}},
                                   {"tooltip", tooltip}}}};
        nlohmann::json first = {{"mark", spec["mark"]}, {"encoding", enc}};
        if (!interval.is_null()) first = {{"layer", {first, interval}}};
        spec.erase("mark");
        spec["layer"] = {first, second};
        spec["resolve"] = {{"scale", {{"y", "independent"}}}};
      } else if (!interval.is_null()) {
        nlohmann::json first = {{"mark", spec["mark"]}, {"encoding", enc}};
        spec.erase("mark");
        spec["layer"] = {first, interval};
      } else {
        spec["encoding"] = enc;
      }
      break;
    }
    case ChartKind::kBar:
      bar_chart(*s, table, tooltip, spec);
      break;
    case ChartKind::kArc:
      spec["mark"] = {{"type", "arc"}, {"tooltip", true}};
      spec["encoding"] = {{"theta", field(*s, table, c.y, "quantitative")},
                          {"color", field(*s, table, c.color, "nominal")},
                          {"tooltip", tooltip}};
      spec["encoding"]["theta"]["stack"] = true;
      break;
    case ChartKind::kScatter:
    case ChartKind::kRoofline: {
      nlohmann::json x = field(*s, table, c.x, "quantitative"), y = field(*s, table, c.y, "quantitative");
      if (c.log_x) x["scale"] = {{"type", "log"}};
      if (c.log_y) y["scale"] = {{"type", "log"}};
      nlohmann::json points = {{"mark", {{"type", "point"}, {"filled", true}}},
                               {"encoding", {{"x", x}, {"y", y}, {"tooltip", tooltip}}}};
      if (!c.color.empty()) points["encoding"]["color"] = field(*s, table, c.color, "nominal");
      // A log axis cannot place 0 or an empty cell: those rows are left out of the picture (the table keeps them).
      std::string keep = "isValid(datum['" + c.x + "']) && isValid(datum['" + c.y + "'])";
      if (c.log_x) keep += " && datum['" + c.x + "'] > 0";
      if (c.log_y) keep += " && datum['" + c.y + "'] > 0";
      points["transform"] = {{{"filter", keep}}};
      if (c.kind == ChartKind::kRoofline && column_index(table, "peak_flops_per_s") >= 0) {
        // The compute ceilings: one dashed rule per precision at its measured peak.
        nlohmann::json peak = field(*s, table, "peak_flops_per_s", "quantitative");
        peak["aggregate"] = "max";
        nlohmann::json rules = {
            {"transform", {{{"filter", "isValid(datum['peak_flops_per_s']) && datum['peak_flops_per_s'] > 0"}}}},
            {"mark", {{"type", "rule"}, {"strokeDash", {6, 4}}}},
            {"encoding", {{"y", peak}}}};
        if (column_index(table, "precision") >= 0)
          rules["encoding"]["detail"] = field(*s, table, "precision", "nominal");
        spec["layer"] = {points, rules};
      } else {
        spec["layer"] = {points};
      }
      break;
    }
    case ChartKind::kNone:
      return nullptr;
  }
  return spec;
}

}  // namespace xsp
