// What an evaluation produces (SPEC §1 "evaluation", "run"; §3; §7): the unit stored and analyzed.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xsp/record/outcome.h"
#include "xsp/stats/stability.h"
#include "xsp/stats/stats.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Pipeline stage names used for MODEL spans (SPEC §1 "pipeline").
inline constexpr const char* kStageInput = "input";
inline constexpr const char* kStagePreprocess = "preprocess";
inline constexpr const char* kStagePredict = "predict";
inline constexpr const char* kStagePostprocess = "postprocess";

/// MODEL spans of a generation request (docs/generation.md "Spans"): one "request" span per request (a batch of
/// sequences generated together), and under it "tokenize", "prefill" (the prompt through the model, then the first
/// token sampled and copied to the host), one "decode" span per later token (tag "step": 1, 2, ...), "detokenize".
/// A sequence's first token is out at the end of "prefill", its token i at the end of decode step i.
inline constexpr const char* kStageRequest = "request";
inline constexpr const char* kStageTokenize = "tokenize";
inline constexpr const char* kStagePrefill = "prefill";
inline constexpr const char* kStageDecode = "decode";
inline constexpr const char* kStageDetokenize = "detokenize";

/// 32 lower-case hex digits from 16 bytes of std::random_device: an OTLP/W3C trace id (never all zeros).
std::string random_trace_id();
/// A random RFC 4122 version-4 UUID in its 36-character text form.
std::string random_uuid();

/// A run's short name as SPEC §3 writes them: "M", "M/F", "M/F/K" and, for the levels the SPEC does not name,
/// "M/F/L" (library), "M/F/S" (system), "M/F/H" (the counter run of trace level hardware).
const char* run_name(TraceLevel level);

/// One object found by a detection model, after the manifest's nms step (xsp/pipeline/tasks.h).
struct Detection {
  /// Box corners x1, y1, x2, y2 in the model input's pixels (after resize and center_crop), 0 <= x1 <= x2 <= width.
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  float score = 0;  ///< the class's probability for this box
  int label = 0;    ///< class index (0 is the background and never detected)
  bool operator==(const Detection&) const = default;
};

/// Per-pixel classes of one input (output type segmentation), run-length encoded in row-major order.
struct SegmentationMask {
  int height = 0, width = 0;  ///< pixels of the model's output (its input size for the zoo's models)
  /// (class, count) pairs: `count` pixels of class `class` in row-major order; counts sum to height * width.
  std::vector<std::int32_t> runs;
  bool operator==(const SegmentationMask&) const = default;
};

/// One input's model output, kept when an evaluation stores predictions (`xsp evaluate --store-predictions`),
/// so that evaluations of the same inputs on different frameworks can be compared (xsp::compare_predictions).
/// Every task fills top_classes and probabilities, so that comparisons and tables read one shape:
///  - classification, text_classification: as below;
///  - detection: probabilities[c] is the highest score of a detection of class c (0 without one), top_classes the
///    detected classes by that score; `detections` holds the objects, best score first;
///  - segmentation: probabilities[c] is the fraction of pixels of class c, top_classes the classes present by
///    pixel count (ties: lower index); `mask` holds the mask.
struct InputPrediction {
  std::string input_id;          ///< the input's id (image file name; synthetic inputs: see run_evaluation)
  std::vector<int> top_classes;  ///< class indices of the highest probabilities, best first (ties: lower index)
  /// Per class, the softmax of the first output's row for this input when the manifest's output has a softmax
  /// step, else the raw output values (EvaluationRecord::settings["predictions"]["values"] says which).
  std::vector<float> probabilities;
  std::vector<Detection> detections;  ///< detection only
  SegmentationMask mask;              ///< segmentation only (height 0 otherwise)
  bool operator==(const InputPrediction&) const = default;
};

/// One measured block of a run (xsp/eval/measurement.h): its round, when it ran and its median.
struct BlockSummary {
  std::size_t round = 0;
  std::int64_t start_ns = 0;     ///< host clock (CLOCK_MONOTONIC) of the block's start
  std::int64_t duration_ns = 0;  ///< wall time of the block
  std::size_t batches = 0;
  double median_ns = 0;  ///< median predict latency of its batches
  bool operator==(const BlockSummary&) const = default;
};

/// How a run was measured and whether its latency is a result (SPEC §3 "Stability").
struct RunMeasurement {
  /// "interleaved" (rounds with the other levels of its phase), "sequential" (alone), "single" (the only level
  /// of its phase), "fixed" (a counter run: a set number of batches, timings unused), "scenario" (load
  /// generator), "" (stored before XSP measured stability).
  std::string design;
  StabilityRule rule;
  StabilityAssessment stability;  ///< of the result windows (their batches are RunRecord::predict_latency_ns)
  int warmup_batches = 0;         ///< warm-up batches of this level
  std::int64_t warmup_ns = 0;     ///< wall time of the phase's warm-up (all its levels)
  bool warmup_converged = false;  ///< false: the warm-up ended at its maximum time
  std::vector<double> warmup_block_medians_ns;
  int batches_per_block = 0;
  std::vector<BlockSummary> blocks;    ///< every measured block, in time order
  std::size_t result_first_block = 0;  ///< blocks from here on are the result
  std::int64_t measure_ns = 0;         ///< wall time of the phase's measured rounds (all its levels)
  bool reached_max_duration = false;   ///< measuring stopped at max_duration_ms, not because it was stable
  /// Phase-2 runs (kernel tracing): the medians of the shallower levels' blocks that ran in the same rounds,
  /// keyed by trace level name ("model", "framework"), in round order.
  std::map<std::string, std::vector<double>> baseline_block_medians_ns;
  bool operator==(const RunMeasurement&) const = default;
};
nlohmann::json to_json(const RunMeasurement& m);
/// A figure as JSON: the number, or null for NaN or ±inf (a figure that does not exist, e.g. the drift of a single
/// window); JSON has no NaN. Readers turn null back into NaN.
nlohmann::json number_or_null(double v);
/// A JSON array of number_or_null() of each value, in order.
nlohmann::json numbers_or_null(const std::vector<double>& v);
/// A latency summary as the store and the REST API write it: {n, trimmed_mean, mean, stddev, min, max, p50, p90,
/// p95, p99, p999}, values in the summary's unit (ns for the stage latencies), non-finite ones as null.
nlohmann::json to_json(const LatencySummary& s);
/// Inverse of to_json(RunMeasurement); throws std::invalid_argument naming the key on a malformed object.
RunMeasurement run_measurement_from_json(const nlohmann::json& j);

/// The overhead a deeper level adds over a shallower one, for one batch size (SPEC §3), with its interval.
struct LevelOverhead {
  int batch_size = 0;
  TraceLevel level = TraceLevel::kModel;     ///< the deeper run
  TraceLevel baseline = TraceLevel::kModel;  ///< the shallower one
  /// "interleaved": paired blocks of the same rounds; "sequential": the levels ran one after the other (blocks
  /// paired by position: drift between them counts as overhead); "residual": M blocks after kernel tracing began
  /// against M blocks before it (not an overhead: drift and CUPTI's leftover state together).
  std::string design;
  double latency_ns = 0;           ///< median predict latency of the deeper level's paired blocks
  double baseline_latency_ns = 0;  ///< the same for the baseline's blocks
  PairedOverhead overhead;
  std::string note;  ///< where the baseline blocks come from when it is not the baseline run itself
  bool operator==(const LevelOverhead&) const = default;
};

/// One execution at one trace level and batch size (SPEC §1 "run").
struct RunRecord {
  std::int64_t id = 0;  ///< store id (0 until stored)
  int batch_size = 1;
  TraceLevel trace_level = TraceLevel::kModel;
  int warmup_iterations = 0;
  int iterations = 0;  ///< measured batches
  /// Latency summary per pipeline stage name (ns), over the measured batches.
  std::map<std::string, LatencySummary> stage_latency_ns;
  /// Raw per-batch predict latencies (ns) of the result (measurement.stability), in issue order, so
  /// percentiles can be recomputed later.
  std::vector<double> predict_latency_ns;
  double throughput_samples_per_s = 0;  ///< batch_size / trimmed mean predict latency
  Trace trace;                          ///< assembled
  /// With stored predictions: one per distinct input of the measured batches (first occurrence, in issue
  /// order); empty otherwise.
  std::vector<InputPrediction> predictions;
  RunMeasurement measurement;
  /// MachineMonitor::to_json() of the run (xsp/system/machine_state.h): GPU clocks, temperature, power and
  /// throttle reasons, CPU governor and load average at the start and end; {} when not recorded.
  nlohmann::json machine_state = nlohmann::json::object();
  /// Warnings stored with the run: throttling or a clock change during it, an overloaded CPU, a warm-up that
  /// did not converge, an unstable result. One sentence each.
  std::vector<std::string> warnings;
  /// OTLP trace id of the run's trace: 32 lower-case hex digits (16 random bytes, W3C Trace Context). Given by
  /// Store::save() when empty and stored with the run, so that every export of the run carries the same ids
  /// and runs of different stores never share one (span ids derive from it: xsp::otlp_span_id).
  std::string trace_id;
  /// The typed outcome of the workload that made the run (xsp/record/outcome.h): a LoadGen scenario run's result,
  /// a generation run's token latencies; nullopt for the batch sweep, whose result is this record's own fields.
  std::optional<ScenarioOutcome> scenario_result;
  std::optional<GenerationOutcome> generation;
  bool operator==(const RunRecord&) const = default;
};

/// Which workload of the run engine made a record (docs/architecture.md "The run engine").
enum class RecordKind {
  kBatchSweep,  ///< the batch sweep of SPEC §3 (EvaluationRecord::scenario "batch-sweep")
  kScenario,    ///< a LoadGen scenario ("single-stream", "multi-stream", "server", "offline")
  kGeneration,  ///< token generation ("generation", "generation-single-stream", "generation-server", ...)
  /// A program XSP did not load, profiled from outside by `xsp profile -- CMD` (scenario "external",
  /// docs/profile.md): one run, the process tree's trace; settings.command and settings.exit say what ran and how
  /// it ended.
  kExternal,
  /// A serving engine measured from outside by `xsp bench-serve` (scenario "serving", docs/serving.md): no run of
  /// its own (the server's trace window, when collected, is its runs); settings.serving holds the per-request times,
  /// the figures per sweep point and the options.
  kServing,
};
/// "batch-sweep" | "scenario" | "generation" | "external" | "serving".
std::string_view to_string(RecordKind kind);
/// The kind of a stored EvaluationRecord::scenario value ("" — stores before scenarios — is the batch sweep).
/// Throws std::invalid_argument naming the value and the expected ones for any other text.
RecordKind record_kind(std::string_view scenario);

/// What a person wrote on an evaluation to find it again (`xsp label`, PATCH /api/v1/evaluations/{id}): a short
/// name, a set of tags and a note. Never written by a measurement; validated by service::validate_labels() before
/// it is stored (limits there), and kept by save() and imports.
struct EvaluationLabels {
  std::string name;               ///< "" = none; at most 120 characters, one line
  std::vector<std::string> tags;  ///< sorted, each once; each 1..40 of [A-Za-z0-9._:/+=@-]
  std::string note;               ///< "" = none; at most 4000 characters, lines allowed
  bool empty() const { return name.empty() && tags.empty() && note.empty(); }
  bool operator==(const EvaluationLabels&) const = default;
};

/// A whole evaluation: model × framework × device × scenario × batch sizes × trace level (SPEC §1).
struct EvaluationRecord {
  std::int64_t id = 0;              ///< store id (0 until stored)
  std::string status = "complete";  ///< complete | incomplete
  std::string created_at;           ///< ISO 8601 UTC
  /// A random RFC 4122 version-4 UUID, given by Store::save() when empty: the evaluation's identity across
  /// stores (OTLP `service.instance.id`).
  std::string uuid;
  std::string model_name, model_version;
  std::string manifest_yaml;
  std::string framework_name, framework_version;
  std::string device = "cpu";
  std::string scenario = "batch-sweep";
  std::vector<int> batch_sizes;
  TraceLevel trace_level = TraceLevel::kModel;
  bool leveled = false;
  nlohmann::json settings = nlohmann::json::object();  ///< iterations, warm-up, inputs, seeds...
  nlohmann::json system = nlohmann::json::object();    ///< system description (SPEC §7)
  std::vector<RunRecord> runs;
  /// Per batch size, each level's overhead over the next shallower one (and the residual M check).
  std::vector<LevelOverhead> level_overheads;
  EvaluationLabels labels;  ///< name, tags, note (schema 11); empty until someone labels it
  bool operator==(const EvaluationRecord&) const = default;

  /// The run for (batch size, trace level), or nullptr.
  const RunRecord* find_run(int batch_size, TraceLevel level) const;
  /// SPEC §3: the run from which latencies of span level `level` are taken for `batch_size`: the run whose
  /// deepest enabled level is `level` (M run for MODEL, M/F run for FRAMEWORK...); without leveled runs the
  /// single run that enables `level`. nullptr when none records that level.
  const RunRecord* run_for_level(int batch_size, Level level) const;
  /// record_kind(scenario): which workload made this record.
  RecordKind kind() const { return record_kind(scenario); }
};

}  // namespace xsp
