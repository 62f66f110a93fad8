// Analyses A1–A7 of SPEC §4: model information (MODEL level) and layer information (FRAMEWORK level), and
// run_analyses(), the entry point for every analysis (GPU ones in gpu_analyses.h, generation ones in
// generation_analyses.h): it looks each id up in the registry (registry.h) and calls the entry's function with an
// AnalysisContext.
//
// Every analysis takes its numbers from the run that SPEC §3 assigns to the level it reads
// (EvaluationRecord::run_for_level): model latencies from the M run, layer latencies from the M/F run. Each
// returned table says in a note which run that was.
//
// Trace conventions read here (produced by the pipeline and the framework profilers):
//  - each measured batch has MODEL spans "input", "preprocess", "predict", "postprocess" (tag "batch");
//  - FRAMEWORK spans are named by op ("aten::conv2d") with optional tags "module" (TorchScript module path),
//    "shapes" (input shapes text) and "allocated_bytes" (bytes allocated while the op ran);
//  - a *layer* is a FRAMEWORK span whose parent is a MODEL "predict" span; FRAMEWORK spans whose parent is
//    another FRAMEWORK span are nested ops of the layer at the top of their chain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xsp/analysis/op_table.h"
#include "xsp/analysis/table.h"
#include "xsp/record/ceilings.h"
#include "xsp/record/record.h"
#include "xsp/trace/trace.h"

namespace xsp {

// ---------------------------------------------------------------------------------------------------------
// Layers (FRAMEWORK level)
// ---------------------------------------------------------------------------------------------------------

/// One layer execution: a top-level FRAMEWORK span inside one predict span.
struct Layer {
  std::size_t index = 0;        ///< execution order (0-based) within its predict span (by start time, then id)
  std::string name;             ///< "module" tag when present, else the op name
  std::string type;             ///< op name, e.g. "aten::conv2d"
  std::string shapes;           ///< "shapes" tag ("" when absent)
  std::int64_t latency_ns = 0;  ///< span duration (ns, host clock)
  std::optional<std::int64_t> allocated_bytes;  ///< "allocated_bytes" tag; nullopt when absent or not an integer
  SpanId span_id = kNoSpan;                     ///< the layer's own span
  SpanId predict_span_id = kNoSpan;             ///< the MODEL "predict" span it ran in
  std::size_t nested_ops = 0;                   ///< FRAMEWORK spans below it (at any depth)
  bool operator==(const Layer&) const = default;
};

/// Counts from extract_layers() of what was seen besides layers.
struct LayerExtractionReport {
  std::size_t predict_spans = 0;    ///< MODEL "predict" spans in the trace (with or without layers)
  std::size_t framework_spans = 0;  ///< all FRAMEWORK spans
  std::size_t outside_predict = 0;  ///< FRAMEWORK spans not under a predict span (unparented, other stage)
  /// Host ops of predict spans that replayed a CUDA graph (the input and output copies around the replay): left out
  /// of the layers, which are then the replayed ops (their host time overlaps the replay's device time).
  std::size_t host_ops_beside_replays = 0;
};

/// The layers of every predict span of `trace`, grouped by predict span (predict spans ordered by start time,
/// then id) and, within one, in execution order. A predict span with ops replayed from a CUDA graph (tag
/// "replayed_from", docs/cuda-graphs.md) has those as its layers. O(n log n) in the number of spans (the sort of
/// layers); parent chains are resolved once with memoisation. Cycles or dangling parent ids in the trace are tolerated
/// (such spans count as outside_predict). `report`, when given, receives the counts above.
std::vector<Layer> extract_layers(const Trace& trace, LayerExtractionReport* report = nullptr);

/// One layer index summarized over the measured batches of one run.
struct LayerStat {
  std::size_t index = 0;
  std::string name, type, shapes;  ///< from the first batch that has this index
  /// Trimmed mean (xsp::trimmed_mean, SPEC §3: drop 20% at each end; median for n = 3; mean for n < 3) of the
  /// layer's latency over the batches (ns).
  double latency_ns = 0;
  /// Mean allocated bytes over the batches that report it, rounded to whole bytes; nullopt when none does.
  std::optional<std::int64_t> allocated_bytes;
  std::size_t samples = 0;  ///< batches that had this index
  double nested_ops = 0;    ///< mean count of nested ops
};

/// Layers aggregated across the measured batches of one run.
struct LayerStats {
  std::vector<LayerStat> layers;  ///< by index
  std::size_t batches = 0;        ///< predict spans that had at least one layer
  /// True when every batch has the same sequence of layer types; otherwise a note in `notes` names the first
  /// differing batch, and per-index values mix different layers (still reported, never hidden).
  bool consistent = true;
  bool any_allocated_bytes = false;  ///< whether any layer reported allocated bytes
  std::vector<std::string> notes;
};

/// Aggregates layers as returned by extract_layers() (grouped by predict span, in order).
LayerStats aggregate_layers(const std::vector<Layer>& layers);
/// extract_layers() + aggregate_layers().
LayerStats layer_stats(const Trace& trace);

// ---------------------------------------------------------------------------------------------------------
// A1: model information (MODEL level)
// ---------------------------------------------------------------------------------------------------------

/// SPEC §4 A1, optimal batch size: over the measured batch sizes sorted ascending, the smallest b whose next
/// measured size b' raises throughput by at most 5% (thr(b') <= 1.05 * thr(b)); if there is none, the largest
/// measured size. The SPEC phrases the rule as "doubling"; sweeps are not always powers of two, so the next
/// *measured* size stands for the doubling. Pairs are (batch size, throughput in samples/s), in any order;
/// pairs with a non-finite throughput are ignored. nullopt when no pair is left.
std::optional<int> optimal_batch_size(const std::vector<std::pair<int, double>>& throughput_by_batch);

/// One batch size's A1 numbers, for the latency-bound rule.
struct BatchThroughput {
  int batch_size = 0;
  double throughput_samples_per_s = 0;
  double p99_latency_ms = 0;  ///< p99 of the predict latency (ms)
};

/// SPEC §4 A1 with a user latency bound: the batch size with the highest throughput whose p99 predict latency is
/// <= `latency_bound_ms` (ties: the smaller batch size). nullopt when none meets the bound.
std::optional<int> optimal_batch_size_within_bound(const std::vector<BatchThroughput>& points, double latency_bound_ms);

/// A1 "Model information": one row per batch size (ascending) with batch_size, latency_trimmed_mean_ms,
/// p50_ms, p90_ms, p99_ms (of the predict stage, ms) and throughput_samples_per_s (= batch size / trimmed-mean
/// predict latency), each from run_for_level(batch, Level::kModel) (SPEC §3: the M run). Notes name the run and
/// the optimal batch size (see optimal_batch_size(); with `latency_bound_ms`, optimal_batch_size_within_bound()).
/// Batch sizes without a MODEL-level run are left out and named in a note.
Table a1_model_information(const EvaluationRecord& record, std::optional<double> latency_bound_ms = std::nullopt);

// ---------------------------------------------------------------------------------------------------------
// A2–A7: layer analyses (FRAMEWORK level), one batch size each
// ---------------------------------------------------------------------------------------------------------
//
// All read run_for_level(batch_size, Level::kFramework) (SPEC §3: the M/F run) and aggregate its measured
// batches with layer_stats(). Without such a run they return a table with the usual columns, zero rows and the
// note "no FRAMEWORK-level run in this evaluation (use --trace-level framework)". Percentages are of the layer
// totals (sum over layer indexes of the per-index values), in percent (0–100).

/// A2 "Layer information": layer_index, layer_name, layer_type, shapes, latency_ms (trimmed mean over
/// batches), allocated_bytes (mean over batches; empty when not reported).
Table a2_layer_information(const EvaluationRecord& record, int batch_size);
/// A3 "Layer latency by index": layer_index, layer_name, latency_ms; bar on latency_ms.
Table a3_layer_latency(const EvaluationRecord& record, int batch_size);
/// A4 "Layer allocated memory by index": layer_index, layer_name, allocated_bytes; bar on allocated_bytes.
Table a4_layer_memory(const EvaluationRecord& record, int batch_size);
/// A5 "Layer type distribution": layer_type, count (layers of the type), percent (of all layers); sorted by
/// count descending, ties by type name.
Table a5_layer_type_distribution(const EvaluationRecord& record, int batch_size);
/// A6 "Layer latency by type": layer_type, latency_ms (sum of the type's per-index latencies), percent (of the
/// sum over all layers); bar on latency_ms; sorted by latency descending, ties by type name.
Table a6_layer_latency_by_type(const EvaluationRecord& record, int batch_size);
/// A7 "Layer memory by type": layer_type, allocated_bytes (sum; layers without the tag count 0), percent;
/// bar on allocated_bytes; sorted by bytes descending, ties by type name.
Table a7_layer_memory_by_type(const EvaluationRecord& record, int batch_size);

/// The same analyses from already aggregated layer statistics (no record lookup); `run_note` is added as the
/// first note and `batch_size` goes into the title. Used by run_analyses() so that one run is aggregated once
/// (AnalysisContext::layers()); with empty stats and kNoFrameworkRun as the note they give the table of a batch
/// size without an M/F run.
Table a2_layer_information(const LayerStats& stats, int batch_size, const std::string& run_note);
Table a3_layer_latency(const LayerStats& stats, int batch_size, const std::string& run_note);
Table a4_layer_memory(const LayerStats& stats, int batch_size, const std::string& run_note);
Table a5_layer_type_distribution(const LayerStats& stats, int batch_size, const std::string& run_note);
Table a6_layer_latency_by_type(const LayerStats& stats, int batch_size, const std::string& run_note);
Table a7_layer_memory_by_type(const LayerStats& stats, int batch_size, const std::string& run_note);

/// The note naming the run values come from, e.g.
/// "latencies from the M/F run (trace level framework), 10 batches, trimmed mean". `level` is the span level
/// read; when the run also enables deeper levels (no leveled run existed) the note says that its latencies
/// include their profiling overhead.
std::string run_note(const RunRecord& run, Level level, std::size_t batches);

/// Note of A2–A7 on a batch size without a FRAMEWORK-level (M/F) run.
inline constexpr const char* kNoFrameworkRun =
    "no FRAMEWORK-level run in this evaluation (use --trace-level framework)";

/// The run whose FRAMEWORK spans are the layers of one batch size: run_for_level(batch_size, kFramework), except
/// for an evaluation that replayed CUDA graphs (request "cuda_graphs"): there the ops run only as replays on the
/// GPU, which the kernel-level run sees (docs/cuda-graphs.md), so its run is taken when there is one. nullptr when
/// there is none.
const RunRecord* layers_run(const EvaluationRecord& record, int batch_size);

/// The layers run of one batch size (layers_run()), aggregated once for A2–A7.
struct FrameworkLayers {
  const RunRecord* run = nullptr;  ///< layers_run(record, batch_size); nullptr when there is none
  LayerStats stats;                ///< layer_stats() of its trace; empty without a run
  std::string note;                ///< run_note() of the run, or kNoFrameworkRun without one
};
/// Looks up and aggregates the M/F run of `batch_size` (see FrameworkLayers). Never throws for a missing run.
FrameworkLayers framework_layers(const EvaluationRecord& record, int batch_size);

/// The ids of analysis_registry(), in its order: "A1".."A7", "ops" (op_table.h), then the GPU ones of gpu_analyses.h
/// ("A8", "A9", "A10", "A11", "A12", "A13", "A14", "A15", "roofline-hier", "gpu-idle", "launch-stats"), then the
/// generation ones of generation_analyses.h ("G1".."G5"), then the serving one of serving_join.h ("serving-tail").
const std::vector<std::string>& analysis_ids();
/// The analyses `xsp analyze` and the report run when none are named, in analysis_ids() order: those whose
/// AnalysisSpec::default_for matches `record`: A1–A7 and ops on an inference evaluation, A1 and G1–G5 on a generation
/// evaluation (generation_analyses.h is_generation_evaluation()), A1 and serving-tail on a serving evaluation
/// (serving_join.h is_serving_evaluation()).
std::vector<std::string> default_analysis_ids(const EvaluationRecord& record);

/// Runs the analyses `ids` (any of analysis_ids(), case-insensitive; in the order given) on `record`: for each, its
/// registry entry's function (AnalysisSpec::function, run_analysis()) on one AnalysisContext, so each run is
/// aggregated once. A1 is one table over all batch sizes (`latency_bound_ms` as in a1_model_information()); A2–A7
/// give one table per batch size of the evaluation (ascending), or only for `batch_size` when given; the GPU
/// analyses are described in gpu_analyses.h, the generation ones in generation_analyses.h. Throws
/// std::invalid_argument for an unknown id (naming it and listing the valid ids; checked for every id before
/// anything runs) and for a `batch_size` the evaluation did not measure (listing the measured ones).
std::vector<Table> run_analyses(const EvaluationRecord& record, const std::vector<std::string>& ids,
                                std::optional<int> batch_size, std::optional<double> latency_bound_ms = std::nullopt);

/// Options of run_analyses() beyond the ids.
struct AnalysisOptions {
  std::optional<int> batch_size;           ///< as run_analyses()' batch_size
  std::optional<double> latency_bound_ms;  ///< A1's latency bound (ms)
  /// The measured ceilings of the evaluation's machine (select_ceilings() over the stored ones; the caller reads
  /// the store, the analyses never do) for the bound and roofline columns; std::nullopt leaves them empty.
  std::optional<MachineCeilings> ceilings;
  /// Which ceilings these are, or why there are none; "" = no_ceilings_note() of the evaluation's machine.
  std::string ceilings_note;
  /// The op table ("ops", op_table.h): rows per op name (default), per (op name, input shapes) or per module.
  OpGroupBy op_group_by = OpGroupBy::kName;
  /// The op table: 0 = every row; N > 0 = the first N rows, the rest summed into one "(other K ops)" row.
  std::size_t op_top = 0;
  /// The op table's order, largest first: self time (default), total time, calls, average self time, self CUDA.
  OpSort op_sort = OpSort::kSelf;
};
std::vector<Table> run_analyses(const EvaluationRecord& record, const std::vector<std::string>& ids,
                                const AnalysisOptions& options);

class GpuRunsCache;   // gpu_analyses.h
struct AnalysisSpec;  // registry.h

/// What run_analyses() hands each analysis function (AnalysisSpec::function): the record, the options, the batch
/// sizes to cover, and the runs aggregated at most once per context and batch size, shared by the analyses of one
/// invocation. Holds a reference to `record`, which must outlive it. Not thread-safe.
class AnalysisContext {
 public:
  /// Covers `options.batch_size` when given, else every measured batch size. Throws std::invalid_argument for a
  /// batch size the evaluation did not measure (naming it and listing the measured ones).
  AnalysisContext(const EvaluationRecord& record, AnalysisOptions options);
  ~AnalysisContext();
  AnalysisContext(const AnalysisContext&) = delete;
  AnalysisContext& operator=(const AnalysisContext&) = delete;

  const EvaluationRecord& record() const { return record_; }
  const AnalysisOptions& options() const { return options_; }
  /// The batch sizes the analyses cover, ascending: options().batch_size alone, or every measured one.
  const std::vector<int>& batch_sizes() const { return batch_sizes_; }
  /// framework_layers(record(), batch_size), computed on the first call for that batch size.
  const FrameworkLayers& layers(int batch_size);
  /// The GPU runs (gpu_runs()), memoised per batch size, with options().ceilings and ceilings_note.
  GpuRunsCache& gpu();

 private:
  const EvaluationRecord& record_;
  AnalysisOptions options_;
  std::vector<int> batch_sizes_;
  std::map<int, FrameworkLayers> layers_;
  std::unique_ptr<GpuRunsCache> gpu_;
};

/// Runs one analysis through its function on `context`: spec.function.per_batch once per context.batch_sizes()
/// (one table each, in that order), or spec.function.over_batches once. Throws std::invalid_argument when `spec`
/// has no function (a further table of table_registry(), e.g. "launch-top").
std::vector<Table> run_analysis(const AnalysisSpec& spec, AnalysisContext& context);

}  // namespace xsp
