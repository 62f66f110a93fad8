// GPU-level analyses of SPEC §4: A8, A10, A11, A13, A15, and (beyond the paper) the GPU idle-time breakdown and
// kernel launch statistics that Holistic Trace Analysis (HTA) computes.
//
// Runs read (SPEC §3, through EvaluationRecord::run_for_level): kernel latencies from the M/F/K run
// (Level::kKernel), layer latencies from the M/F run (Level::kFramework), model latency from the M run
// (Level::kModel). Without leveled runs run_for_level() returns the one run that has the level, and the run note
// says its latencies carry the overhead of deeper profilers.
//
// Trace conventions read here (docs/spans.md):
//  - a KERNEL span (kernel, memcpy or memset as it ran on the device) hangs under the SYSTEM span of the API call
//    that launched it (same correlation id), which hangs under the innermost FRAMEWORK op open at the call, whose
//    chain of enclosing ops ends at a *layer* (top-level op, parent = MODEL "predict"); API calls made outside any
//    op hang directly under "predict";
//  - a KERNEL span's track is its GPU stream (Track::stream); its "kind" tag says kernel|memcpy|memset.
// All KERNEL-level spans count as GPU work ("kernels" below): memcpy and memset occupy the device as kernels do,
// and SPEC §2 puts them on the same level.
//
// Layers of the M/F and the M/F/K run are matched by layer index within the predict span: the same model runs the
// same op sequence, so index i is the same layer in both runs. The layer types of the two runs are compared and a
// note says where they differ.
//
// Hardware counters (HARDWARE level, SPEC §3) come from the counter run, run_for_level(b, Level::kHardware), whose
// timings are never used: each HARDWARE span (xsp/profilers/hardware_counters.h) is placed like a kernel (batch,
// layer index, index among the layer's counted kernels) and joined to the M/F/K run's kernel of kind "kernel" at
// the same position when the names agree; memcpy and memset have no counters. Latencies, and therefore achieved
// FLOP/s and the weights of occupancy means, come from the M/F/K run. Rooflines (A9, A14, "roofline-hier") and
// the bound columns need the machine's measured ceilings (roofline.h), which the caller passes in
// (GpuRunsCache::set_ceilings); without them those columns stay empty with a note naming the machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/roofline.h"
#include "xsp/analysis/table.h"
#include "xsp/record/ceilings.h"
#include "xsp/record/record.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Note of every GPU analysis table on an evaluation (or batch size) without a KERNEL-level run.
inline constexpr const char* kNoKernelRun =
    "no KERNEL-level run in this evaluation (use --device cuda --trace-level kernel)";

/// Layer index of GPU work launched inside a predict span but outside every layer (API call placed directly under
/// "predict").
inline constexpr std::size_t kNoLayer = std::numeric_limits<std::size_t>::max();

/// "No index": GpuKernel::compute_index of memcpy and memset.
inline constexpr std::size_t kNoKernelIndex = std::numeric_limits<std::size_t>::max();

/// Note of the counter columns of every table on a batch size without a HARDWARE-level counter run.
inline constexpr const char* kNoCounterRun =
    "hardware counters were not collected (no HARDWARE-level counter run): the counter columns are empty";

// ---------------------------------------------------------------------------------------------------------
// Kernel extraction (one M/F/K trace)
// ---------------------------------------------------------------------------------------------------------

/// One KERNEL-level span placed in a measured batch. Views point into the trace it was extracted from and are
/// valid while that trace lives.
struct GpuKernel {
  std::size_t batch = 0;                  ///< ordinal of its predict span (predict spans by start time, then id)
  std::size_t layer_index = kNoLayer;     ///< index of its layer within the predict span, kNoLayer outside layers
  std::size_t kernel_index = 0;           ///< order within (batch, layer) by start time, then span id
  std::string_view name;                  ///< kernel name, or "Memcpy HtoD" / "Memset" ...
  std::int64_t start_ns = 0, end_ns = 0;  ///< on the device, mapped onto the host clock (ns)
  std::uint64_t stream = 0;               ///< CUDA stream id (Span::track.id of a device track)
  SpanId span_id = kNoSpan;
  /// The launching SYSTEM span (the KERNEL span's parent, docs/spans.md); kNoSpan when the parent is not SYSTEM.
  SpanId launch_span_id = kNoSpan;
  std::string_view launch_api;                          ///< its name ("cudaLaunchKernel"), "" without one
  std::int64_t launch_start_ns = 0, launch_end_ns = 0;  ///< host clock (ns); meaningful with a launch span
  /// Replayed from a CUDA graph (tag "attribution" = "graph-launch" or "graph-node"; docs/cuda-graphs.md)
  bool graph_launch = false;
  /// Kind "kernel" (tag "kind"; without the tag, a name not starting with "Memcpy"/"Memset"): the work that has
  /// hardware counters.
  bool compute = true;
  /// Among the compute kernels of (batch, layer), the order of their launch calls (launch API start, or the
  /// kernel's start without a launch span): the position of its HARDWARE span in a counter run. kNoKernelIndex
  /// for memcpy and memset.
  std::size_t compute_index = kNoKernelIndex;

  bool has_launch() const { return launch_span_id != kNoSpan; }
  std::int64_t duration_ns() const { return end_ns - start_ns; }
  /// Launch delay (ns): kernel start − launch API call start (HTA's "kernel launch delay"); needs has_launch().
  std::int64_t launch_delay_ns() const { return start_ns - launch_start_ns; }
};

/// A measured batch's MODEL "predict" span.
struct PredictWindow {
  SpanId span_id = kNoSpan;
  std::int64_t start_ns = 0, end_ns = 0;
};

/// The GPU work of one trace, placed in predict spans and layers.
struct KernelTimeline {
  std::vector<PredictWindow> predicts;  ///< every predict span, by start time then id (index = GpuKernel::batch)
  /// Kernels inside a predict span, sorted by (batch, layer_index with kNoLayer last, start, span id).
  std::vector<GpuKernel> kernels;
  LayerStats layers;  ///< the trace's own layers (names and types per index; latencies carry kernel overhead)
  std::size_t kernel_spans = 0;     ///< all KERNEL-level spans of the trace
  std::size_t outside_predict = 0;  ///< KERNEL spans whose ancestry reaches no predict span (not counted)
  std::size_t without_launch = 0;   ///< kernels (inside predict) whose parent is not a SYSTEM span
  std::size_t graph_launched = 0;   ///< kernels (inside predict) replayed from CUDA graphs

  std::size_t batches() const { return predicts.size(); }
};

/// What the name of a kernel that PyTorch Inductor generated says. Inductor names its kernels
/// `triton_<kind>_fused_<ops>_<n>` (Triton, GPU) and `cpp_fused_<ops>_<n>` (C++, CPU), <kind> being poi (pointwise),
/// red (reduction), per (persistent reduction) or tem (template), <ops> the ATen ops of the nodes fused into it joined
/// by '_' (torch._inductor.config.triton.descriptive_names = "original_aten", its default) and <n> a counter.
struct InductorKernelName {
  std::string kind;       ///< "pointwise", "reduction", "persistent reduction", "template", or "C++" for cpp_fused
  std::string fused_ops;  ///< <ops> as written, e.g. "_native_batch_norm_legit_no_training_add_relu"
};
/// Parses `name` as above (a kernel signature's "void " prefix and argument list are ignored); nullopt for any
/// other kernel name (cuDNN, cuBLAS, ATen's own kernels) or a name without ops. Never throws (but std::bad_alloc).
std::optional<InductorKernelName> parse_inductor_kernel_name(std::string_view name);

/// Places every KERNEL span of `trace` by walking its parent chain (memoised: each span is visited once; parent
/// cycles and dangling ids end the walk). O(n) plus sorting the kernels and layers. The returned views point into
/// `trace`.
KernelTimeline extract_kernels(const Trace& trace);
/// extract_kernels() with other MODEL spans as the windows: every span `is_window` picks (e.g. the "prefill" and
/// "decode" steps of a generation request, generation_analyses.h) stands for a batch, in start-time order (then
/// id): KernelTimeline::predicts lists them and GpuKernel::batch indexes them. Layers are placed only in predict
/// windows; in other windows every kernel has layer_index kNoLayer.
KernelTimeline extract_kernels(const Trace& trace, const std::function<bool(const Span&)>& is_window);

// ---------------------------------------------------------------------------------------------------------
// Counter extraction (one counter run, HARDWARE spans)
// ---------------------------------------------------------------------------------------------------------

/// One HARDWARE span (one profiled kernel of a counter run) placed in a measured batch.
struct HardwareRange {
  std::size_t batch = 0;               ///< ordinal of its predict span
  std::size_t layer_index = kNoLayer;  ///< layer within the predict span, kNoLayer directly under predict
  /// Order within (batch, layer) by start time (the launch call, host clock), then tag "range_index", then span
  /// id: the compute_index of the same kernel in the M/F/K run.
  std::size_t kernel_index = 0;
  std::string_view name;  ///< the kernel's demangled name (view into the trace)
  std::int64_t start_ns = 0;
  std::optional<std::int64_t> range_index;
  SpanId span_id = kNoSpan;
  CounterValues counters;  ///< the span's counter tags (hw::counter_defs() names) parsed as numbers
};

/// The HARDWARE spans of one counter-run trace.
struct CounterTimeline {
  std::vector<PredictWindow> predicts;  ///< every predict span (index = HardwareRange::batch)
  std::vector<HardwareRange> ranges;    ///< sorted by (batch, layer_index with kNoLayer last, kernel_index)
  LayerStats layers;                    ///< the counter run's layers (names and types; latencies meaningless)
  std::size_t hardware_spans = 0;       ///< all HARDWARE spans of the trace
  std::size_t outside_predict = 0;      ///< HARDWARE spans not under a predict span (not counted)
  std::size_t unparsed_values = 0;      ///< counter tags whose value is not a finite decimal number (left out)
  std::string first_unparsed;           ///< the first of them: span, tag, value
  std::size_t partial = 0;              ///< spans with a "collection_note" tag (a value is partial)
  std::string first_collection_note;    ///< the first of them: span and note
  std::size_t batches() const { return predicts.size(); }
};

/// Places every HARDWARE span of `trace` as extract_kernels() places KERNEL spans (docs/spans.md: the parent is
/// the innermost framework op or the predict span) and parses its counter values from its tags. Tags that are
/// not counters (range_index, replay) are skipped. Views point into `trace`.
CounterTimeline extract_counters(const Trace& trace);

/// The counters of one kernel position (layer index, kernel index) of a counter run, averaged over its batches.
struct KernelCounters {
  std::size_t layer_index = kNoLayer, kernel_index = 0;
  std::string_view name;    ///< the first batch's kernel name at that position
  CounterValues counters;   ///< per counter, the mean over the batches that have it
  std::size_t samples = 0;  ///< batches that have this position
};

/// Groups the ranges of `timeline` by (layer_index, kernel_index) and averages each counter over the batches
/// (counter runs usually measure one batch). Sorted by (layer_index, kernel_index). `renamed`, when given,
/// receives how many ranges have a different name than the first batch's at the same position.
std::vector<KernelCounters> counters_by_occurrence(const CounterTimeline& timeline, std::size_t* renamed = nullptr);

// ---------------------------------------------------------------------------------------------------------
// Timeline arithmetic
// ---------------------------------------------------------------------------------------------------------

/// Length (ns) of the union of [start, end) intervals: time during which at least one of them is running, so
/// overlapping kernels on different streams count once. Empty or inverted intervals add nothing.
std::int64_t union_length_ns(std::vector<std::pair<std::int64_t, std::int64_t>> intervals);

/// One piece of GPU work for idle_breakdown(): its device interval and, when known, when its launch API call
/// started on the host.
struct GpuInterval {
  std::int64_t start_ns = 0, end_ns = 0;
  std::optional<std::int64_t> launch_start_ns;
};

/// GPU idle-time breakdown of one window (HTA's idle-time analysis, adapted to a predict span; all ns).
/// busy_ns + idle_ns = window_ns, and idle_ns = host_wait_ns + launch_latency_ns + before_first_ns +
/// after_last_ns + unattributed_ns.
struct IdleBreakdown {
  std::int64_t window_ns = 0;  ///< window length
  std::int64_t busy_ns = 0;    ///< union of the intervals clipped to the window (all streams)
  std::int64_t idle_ns = 0;    ///< window − busy
  /// Gaps between kernels whose next kernel's launch call started at or after the GPU went idle (the end of
  /// all earlier work): the GPU waited for the host to issue work ("host-bound: waiting for launches").
  std::int64_t host_wait_ns = 0;
  /// Gaps whose next kernel had been launched before the GPU went idle but started only after it: launch latency.
  std::int64_t launch_latency_ns = 0;
  std::int64_t before_first_ns = 0;  ///< window start to the first kernel's start
  std::int64_t after_last_ns = 0;    ///< the last kernel's end to the window end
  /// Gaps whose next kernel has no known launch call; the whole window when it holds no kernel.
  std::int64_t unattributed_ns = 0;
  std::size_t gaps = 0;  ///< interior gaps (between kernels)
};

/// Splits [window_start_ns, window_end_ns) into GPU busy and idle time: the union of `kernels` (clipped to the
/// window) is busy; every gap of the union is idle and attributed by the rules of IdleBreakdown. The "next kernel"
/// of an interior gap is the one starting where the gap ends (of several, the earliest-launched). Each gap is
/// attributed whole to one category.
IdleBreakdown idle_breakdown(std::int64_t window_start_ns, std::int64_t window_end_ns,
                             std::vector<GpuInterval> kernels);

// ---------------------------------------------------------------------------------------------------------
// The runs of one batch size
// ---------------------------------------------------------------------------------------------------------

/// Everything the GPU analyses read for one batch size, looked up and aggregated once. Pointers refer into the
/// EvaluationRecord it was made from.
/// One kernel position (layer index, kernel index in the layer) of the M/F/K run over its batches: an A8 row.
struct KernelOccurrence {
  std::size_t layer_index = kNoLayer, kernel_index = 0;
  std::size_t compute_index = kNoKernelIndex;  ///< the first batch's GpuKernel::compute_index
  std::string_view name;                       ///< the first batch's kernel name
  double latency_ns = 0;                       ///< trimmed mean over the batches that have this position (M/F/K run)
  std::size_t samples = 0;                     ///< batches that have it
  const KernelCounters* counters = nullptr;    ///< joined counters (GpuRuns::counters), nullptr when none
};

struct GpuRuns {
  int batch_size = 0;
  const RunRecord* model_run = nullptr;      ///< run_for_level(b, kModel): the M run
  const RunRecord* framework_run = nullptr;  ///< run_for_level(b, kFramework): the M/F run
  const RunRecord* kernel_run = nullptr;     ///< run_for_level(b, kKernel): the M/F/K run; null = no GPU analyses
  /// Model latency (ns): trimmed mean of the M run's predict latency (SPEC §3); NaN when unknown.
  double model_latency_ns = 0;
  LayerStats layers;                                ///< the M/F run's layers (layer latencies)
  KernelTimeline kernels;                           ///< the M/F/K run's kernels
  std::string model_note, layer_note, kernel_note;  ///< run notes ("model latency from the M run ...")
  std::vector<std::string> notes;                   ///< layer matching between the M/F and M/F/K runs, placement counts
  /// The M/F/K run's kernel positions, by (layer index, kernel index), outside-layer work last.
  std::vector<KernelOccurrence> occurrences;
  std::size_t renamed = 0;  ///< kernels named differently than the first batch's at the same position

  // Hardware counters (empty without a counter run).
  const RunRecord* counter_run = nullptr;  ///< run_for_level(b, kHardware): the counter run
  CounterTimeline counter_timeline;        ///< its HARDWARE spans
  std::vector<KernelCounters> counters;    ///< per kernel position of the counter run
  std::string counter_note;                ///< "counters from the counter run (...)", or kNoCounterRun
  /// Joining the counter run to the M/F/K run: name mismatches, positions without a partner, parse problems.
  std::vector<std::string> counter_notes;
  std::size_t joined = 0;           ///< M/F/K compute-kernel positions with counters
  std::size_t name_mismatches = 0;  ///< positions whose names differ (left without counters)

  // Measured ceilings of the evaluation's machine (GpuRunsCache::set_ceilings).
  const MachineCeilings* ceilings = nullptr;
  std::string ceilings_note;  ///< which ceilings were used, or no_ceilings_note()

  bool has_counters() const { return counter_run != nullptr; }
  /// Per layer slot (layer index; kNoLayer last as slot `layers`): trimmed mean over batches of the per-batch sum
  /// of compute-kernel (kind "kernel") latencies of the M/F/K run (ns); the time the layer's counters were spent in.
  std::vector<double> compute_latency_by_layer;
  /// Trimmed mean over batches of the per-batch sum of all compute-kernel latencies (ns, M/F/K run).
  double compute_latency_ns = 0;
};

/// Looks up and aggregates the runs of `batch_size` (see GpuRuns). Without a KERNEL-level run only batch_size,
/// kernel_run (null) and the ceilings are set. `ceilings` may be nullptr; `ceilings_note` then says why (empty:
/// no_ceilings_note() of the record's machine).
GpuRuns gpu_runs(const EvaluationRecord& record, int batch_size, const MachineCeilings* ceilings = nullptr,
                 const std::string& ceilings_note = "");

/// gpu_runs() memoised per batch size, so several analyses of one invocation aggregate each run once. Holds a
/// reference to `record`, which must outlive it.
class GpuRunsCache {
 public:
  explicit GpuRunsCache(const EvaluationRecord& record) : record_(record) {}
  /// The measured ceilings of the evaluation's machine (copied), with the note saying which they are; or none,
  /// with the note saying why. Call before the first get(); the default is none with no_ceilings_note().
  void set_ceilings(std::optional<MachineCeilings> ceilings, std::string note);
  const GpuRuns& get(int batch_size);
  const EvaluationRecord& record() const { return record_; }
  const MachineCeilings* ceilings() const { return ceilings_ ? &*ceilings_ : nullptr; }

 private:
  const EvaluationRecord& record_;
  std::optional<MachineCeilings> ceilings_;
  std::string ceilings_note_;
  std::map<int, std::unique_ptr<GpuRuns>> runs_;
};

// ---------------------------------------------------------------------------------------------------------
// Per batch size analyses (one table per batch size)
// ---------------------------------------------------------------------------------------------------------
//
// "Per batch" values are over the measured batches (predict spans) of the M/F/K run: latencies are the trimmed
// mean (SPEC §3) of the per-batch sums (a batch without such a kernel contributes 0); counts are occurrences /
// batches. Without a KERNEL-level run for the batch size the table has its columns, no rows and the note
// kNoKernelRun.

/// A8 "Kernel information": one row per kernel occurrence (layer index, kernel index within the layer), in that
/// order (kernels outside layers last, layer_index empty): layer_index, kernel_index, layer_name, kernel_name,
/// latency_ms (trimmed mean over batches of that occurrence's duration, M/F/K run), then the hardware counters of
/// the joined counter-run kernel: gflops (hw::total_flops / 1e9), dram_read_bytes, dram_write_bytes,
/// achieved_occupancy (percent), arithmetic_intensity (FLOPs / DRAM read+write bytes), achieved_flops_per_s
/// (FLOPs / latency_ms of the M/F/K run, never the replayed duration), bound (memory|compute by the hierarchical
/// rule of roofline.h hierarchical_bound() against the measured ceilings: the tightest of L1, L2, DRAM, compute),
/// l2_bytes, l1_bytes, sm_throughput_percent, precision (roofline.h's precision rule). Counter cells stay empty for
/// memcpy/memset, for positions the join left out, and (all) without a counter run.
Table a8_kernel_information(const EvaluationRecord& record, int batch_size);
Table a8_kernel_information(const GpuRuns& runs);

/// A9 "Kernel roofline": one row per compute-kernel occurrence with joined counters, in A8's order:
/// layer_index, kernel_index, layer_name, kernel_name, latency_ms, gflops, precision, ai_dram, ai_l2, ai_l1
/// (FLOP/byte), achieved_flops_per_s, peak_flops_per_s (the precision's measured ceiling),
/// attainable_flops_per_s (FLOP/s, the tightest roof: min(peak, ai_l1 × L1, ai_l2 × L2, ai_dram × DRAM
/// bandwidth)), percent_of_roofline (100 × achieved / attainable), bound (memory|compute), binding_level
/// (l1|l2|dram|compute): both from roofline.h hierarchical_bound() (Yang, Kurth, Williams 2020), the rule
/// roofline_hierarchical()'s "limiting" column uses too. Notes give the ceilings used and the ridge point of each
/// precision present. roofline_chart() draws it.
Table a9_kernel_roofline(const GpuRuns& runs);

/// A12 "Counters by layer": per layer index of the counter run (outside-layer kernels in a last row with empty
/// index): layer_index, layer_name, layer_type, kernels (counted kernels per batch), gflops, dram_read_bytes,
/// dram_write_bytes, l2_bytes, l1_bytes (sums, SPEC §4), achieved_occupancy (mean weighted by each kernel's
/// M/F/K latency), arithmetic_intensity (summed FLOPs / summed DRAM bytes), precision, bound (hierarchical rule,
/// roofline.h hierarchical_bound()). Bar on gflops.
Table a12_counters_by_layer(const GpuRuns& runs);

/// A14 "Layer roofline": A9 per layer, from A12's sums: layer_index, layer_name, layer_type,
/// kernel_latency_ms (trimmed mean of the per-batch sum of the layer's compute-kernel latencies, M/F/K run: the
/// time its FLOPs took), gflops, precision, ai_dram, ai_l2, ai_l1, achieved_flops_per_s (FLOPs /
/// kernel_latency_ms), peak_flops_per_s, attainable_flops_per_s, percent_of_roofline, bound, binding_level (as A9).
Table a14_layer_roofline(const GpuRuns& runs);

/// "Hierarchical roofline" (id "roofline-hier", after Yang et al. 2020): one row per A9 kernel, then one per A14
/// layer: scope (kernel|layer), layer_index, kernel_index (empty for layers), name, precision, ai_l1, ai_l2,
/// ai_dram, bound_l1, bound_l2, bound_dram (each against that level's measured bandwidth and the precision's
/// peak), limiting (l1|l2|dram|compute: roofline.h hierarchical_bound(), the same verdict as A9/A14's
/// binding_level), attainable_flops_per_s (the lowest roof), achieved_flops_per_s.
Table roofline_hierarchical(const GpuRuns& runs);

/// A10 "Kernels by name": kernel_name, count (occurrences / batches), total_latency_ms (trimmed mean of the
/// per-batch sum of its durations), mean_latency_us (sum of durations / occurrences), percent_of_model_latency
/// (100 × total / model latency of the M run), percent_of_kernel_time (100 × total / sum of the totals of all
/// names); sorted by total descending, ties by name; bar on total_latency_ms.
Table a10_kernels_by_name(const EvaluationRecord& record, int batch_size);
Table a10_kernels_by_name(const GpuRuns& runs);

/// A11 "Kernels by layer": layer_index, layer_name, layer_type, kernel_count (per batch), kernel_latency_ms
/// (trimmed mean of the per-batch sum of the layer's kernels, M/F/K run), layer_latency_ms (trimmed mean, M/F
/// run), gpu_percent (100 × kernel latency / layer latency; SPEC §3 derived quantity, may exceed 100 when
/// kernels run after the layer returned). A last row with empty index covers kernels launched outside layers.
Table a11_kernels_by_layer(const EvaluationRecord& record, int batch_size);
Table a11_kernels_by_layer(const GpuRuns& runs);

/// A13 "GPU vs non-GPU latency per layer": layer_index, layer_name, layer_latency_ms (M/F run), gpu_latency_ms
/// (as A11's kernel_latency_ms, M/F/K run), non_gpu_latency_ms = layer − gpu (SPEC §3). Negative values are
/// kept (kernels overlapping on several streams, or running after the layer returned asynchronously) and
/// explained in a note. Bar on non_gpu_latency_ms.
Table a13_gpu_vs_non_gpu(const EvaluationRecord& record, int batch_size);
Table a13_gpu_vs_non_gpu(const GpuRuns& runs);

/// "Kernels with the largest launch delay" (id "launch-stats"): the `top` kernel occurrences of the M/F/K run
/// with the largest launch delay (kernel start − launch API start), descending: batch, layer_index, layer_name,
/// kernel_name, launch_api, launch_delay_us, duration_us.
Table kernel_launch_delay_top(const EvaluationRecord& record, int batch_size, std::size_t top = 10);
Table kernel_launch_delay_top(const GpuRuns& runs, std::size_t top = 10);

// ---------------------------------------------------------------------------------------------------------
// Across batch sizes (one table, one row per batch size with a KERNEL-level run, ascending)
// ---------------------------------------------------------------------------------------------------------

/// A15 "Kernels by model": batch_size, model_latency_ms (trimmed mean, M run), kernel_latency_ms (trimmed mean
/// of the per-batch sum of kernel durations, M/F/K run), kernel_count (per batch), gpu_busy_ms (trimmed mean of
/// the per-batch union of kernel intervals, all streams: overlapping kernels count once), then the counters of
/// all kernels of the counter run aggregated (SPEC §4): gflops, dram_read_bytes, dram_write_bytes,
/// achieved_occupancy (latency-weighted), bound (hierarchical rule), l2_bytes, l1_bytes, arithmetic_intensity (from the
/// sums), achieved_flops_per_s (FLOPs / per-batch compute-kernel latency), precision; empty without a counter run.
Table a15_kernels_by_model(const EvaluationRecord& record);
Table a15_kernels_by_model(GpuRunsCache& cache, const std::vector<int>& batch_sizes);

/// "GPU idle time" (id "gpu-idle", HTA's idle-time breakdown): per batch size, idle_breakdown() of each predict
/// span of the M/F/K run over its own kernels, averaged (plain mean, so the parts add up) over the batches:
/// batch_size, predict_ms, gpu_busy_ms, idle_ms, idle_percent (100 × idle / predict), host_wait_ms,
/// launch_latency_ms, before_first_kernel_ms, after_last_kernel_ms, unattributed_ms.
Table gpu_idle_time(const EvaluationRecord& record);
Table gpu_idle_time(GpuRunsCache& cache, const std::vector<int>& batch_sizes);

/// "Kernel launch statistics" (id "launch-stats", after HTA's kernel launch statistics), M/F/K run:
/// batch_size, launches_per_batch, launch_delay_p50_us / _p90_us / _p99_us (kernel start − its launch API call
/// start, over all kernels with a SYSTEM parent; percentiles of type 7, xsp::percentile), launch_api_p50_us /
/// _p99_us (duration of the distinct launching API calls), kernels_under_10us (per batch),
/// kernels_under_10us_percent, kernels_under_2us (per batch), kernels_under_2us_percent (of all kernels).
Table kernel_launch_statistics(const EvaluationRecord& record);
Table kernel_launch_statistics(GpuRunsCache& cache, const std::vector<int>& batch_sizes);

/// The GPU analysis ids: the analysis_registry() entries of family AnalysisFamily::kGpu, in analysis_ids() order:
/// "A8", "A9", "A10", "A11", "A12", "A13", "A14", "A15", "roofline-hier", "gpu-idle", "launch-stats". run_analyses()
/// runs them through their registry functions: A8–A14 and roofline-hier give one table per batch size; A15 and
/// gpu-idle one table over them; launch-stats the statistics table followed by one top-10 launch-delay table
/// ("launch-top") per batch size with a kernel run.
const std::vector<std::string>& gpu_analysis_ids();

}  // namespace xsp
