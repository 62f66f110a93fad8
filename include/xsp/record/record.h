// What an evaluation produces (SPEC §1 "evaluation", "run"; §3; §7): the unit stored and analyzed.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xsp/stats/stats.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Pipeline stage names used for MODEL spans (SPEC §1 "pipeline").
inline constexpr const char* kStageInput = "input";
inline constexpr const char* kStagePreprocess = "preprocess";
inline constexpr const char* kStagePredict = "predict";
inline constexpr const char* kStagePostprocess = "postprocess";

/// One input's model output, kept when an evaluation stores predictions (`xsp evaluate --store-predictions`),
/// so that evaluations of the same inputs on different frameworks can be compared (xsp::compare_predictions).
struct InputPrediction {
  std::string input_id;           ///< the input's id (image file name; synthetic inputs: see run_evaluation)
  std::vector<int> top_classes;   ///< class indices of the highest probabilities, best first (ties: lower index)
  /// Per class, the softmax of the first output's row for this input when the manifest's output has a softmax
  /// step, else the raw output values (EvaluationRecord::settings["predictions"]["values"] says which).
  std::vector<float> probabilities;
  bool operator==(const InputPrediction&) const = default;
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
  /// Raw per-batch predict latencies (ns), in issue order, so percentiles can be recomputed later.
  std::vector<double> predict_latency_ns;
  double throughput_samples_per_s = 0;  ///< batch_size / trimmed mean predict latency
  Trace trace;                          ///< assembled
  /// With stored predictions: one per distinct input of the measured batches (first occurrence, in issue
  /// order); empty otherwise.
  std::vector<InputPrediction> predictions;
  bool operator==(const RunRecord&) const = default;
};

/// A whole evaluation: model × framework × device × scenario × batch sizes × trace level (SPEC §1).
struct EvaluationRecord {
  std::int64_t id = 0;  ///< store id (0 until stored)
  std::string status = "complete";  ///< complete | incomplete
  std::string created_at;           ///< ISO 8601 UTC
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
  bool operator==(const EvaluationRecord&) const = default;

  /// The run for (batch size, trace level), or nullptr.
  const RunRecord* find_run(int batch_size, TraceLevel level) const;
  /// SPEC §3: the run from which latencies of span level `level` are taken for `batch_size`: the run whose
  /// deepest enabled level is `level` (M run for MODEL, M/F run for FRAMEWORK...); without leveled runs the
  /// single run that enables `level`. nullptr when none records that level.
  const RunRecord* run_for_level(int batch_size, Level level) const;
};

}  // namespace xsp
