// The one library call that runs an evaluation (SPEC §1 "evaluation"): the CLI, the server and the agents map
// their input onto an EvaluationRequest and call evaluate(). It validates once, picks the profilers, loads the
// model, runs the batch sweep or the scenario, measures accuracy when asked, describes the system and saves.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xsp/eval/generation_runner.h"
#include "xsp/eval/measurement.h"
#include "xsp/eval/plan.h"
#include "xsp/eval/runner.h"
#include "xsp/eval/session.h"
#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/profiler_options.h"
#include "xsp/record/record.h"
#include "xsp/store/store.h"

namespace xsp {

/// evaluate() measured an evaluation but could not save it in the store (locked past StoreOptions::save_wait, disk
/// full, ...). what() names the store, the reason, and either the recovery file holding the evaluation with the
/// command that loads it (`xsp import FILE`) or, when that could not be written either, both failures.
class UnsavedEvaluationError : public StoreError {
 public:
  UnsavedEvaluationError(const std::string& message, std::filesystem::path recovery_file)
      : StoreError(message), recovery_file_(std::move(recovery_file)) {}
  /// A one-evaluation XSP store holding the evaluation; empty when it could not be written.
  const std::filesystem::path& recovery_file() const { return recovery_file_; }

 private:
  std::filesystem::path recovery_file_;
};

/// Where the inputs come from.
struct InputOptions {
  std::filesystem::path images_dir;  ///< folder of images (every image of it, cycled); "" = the repo's data/images
  bool synthetic = false;            ///< seeded random tensors instead of images
  std::uint64_t seed = 0;            ///< seed of synthetic inputs and of the load generator
  /// A labeled dataset named by the manifest (e.g. "digits"): timed runs then use synthetic inputs and, with
  /// `accuracy`, every held-out sample is scored at every batch size.
  std::string dataset;
  bool accuracy = false;
  /// Images that cannot be read or pre-processed (empty, truncated, undecodable, too large) are found before the
  /// first batch; with this flag they are left out and counted (record.settings "inputs_skipped_count" and
  /// "inputs_skipped") instead of stopping the evaluation. Only with image inputs.
  bool skip_bad_inputs = false;
  bool operator==(const InputOptions&) const = default;
};

/// A load-generator scenario instead of the batch sweep (SPEC §6). Its minimum duration is
/// EvaluationRequest::measurement.min_duration_ms.
struct ScenarioRequest {
  std::string scenario;                    ///< single-stream | multi-stream | server | offline
  std::uint64_t min_queries = 100;         ///< LoadGen's min_query_count
  double target_qps = 100;                 ///< server arrival rate; offline: sizes the sample count
  std::optional<double> latency_bound_ms;  ///< server: bound of the target percentile (default 10 ms); offline
                                           ///< sweep: pick the best batch whose p99 meets it
  std::uint64_t samples_per_query = 8;     ///< multi-stream
  double percentile = 0;                   ///< (0, 100); 0 = the scenario's default (90 single-stream, else 99)
  bool find_peak_qps = false;              ///< server: search the highest QPS meeting the bound
  std::optional<int> max_batch;            ///< multi-stream, offline: largest batch per predict() (default 1)
  std::optional<int> trace_tail;           ///< keep the N slowest queries' traces (default 0, or 5 at framework)
  std::vector<int> sweep_batch_sizes;      ///< offline: one run per max batch, optimal batch by A1's rule
  bool operator==(const ScenarioRequest&) const = default;
};

/// Options of token generation, for models whose output type is "generation" (docs/generation.md); ignored by
/// other models. Prompts come from a text file, one per line (the manifest's `attributes.prompts`, exported with the
/// model, unless prompts_file is given), tokenized by the manifest's tokenize step; with inputs.synthetic they are
/// random token ids instead.
struct GenerationRequest {
  TokenRange prompt_tokens{32, 32};         ///< per request, uniform in the range; prompts shorter are left out
  std::optional<TokenRange> output_tokens;  ///< per request; unset = the manifest's generate.max_new_tokens
  std::filesystem::path prompts_file;       ///< "" = the manifest's attributes.prompts
  /// Server scenario: bounds of TTFT and TPOT at the scenario's percentile (default 99), checked by early stopping.
  /// The defaults are MLPerf Inference's Llama 2 70B server constraints (TTFT 2 s, TPOT 200 ms).
  double ttft_bound_ms = 2000;
  double tpot_bound_ms = 200;
  /// Runs at framework level or deeper keep the full traces of the requests with the N slowest first tokens and
  /// the N slowest decode steps (GenerationPlan::tail_steps).
  int tail_steps = 5;
  bool operator==(const GenerationRequest&) const = default;
};

/// Everything that defines an evaluation. Field names are the JSON keys of to_json() and the `field()` of a
/// RequestError.
struct EvaluationRequest {
  std::string model;           ///< name in the zoo (`xsp models`)
  std::string framework;       ///< libtorch | opencv-dnn | onnxruntime; "" = the manifest's first
  std::string device = "cpu";  ///< cpu | cuda
  int device_index = 0;        ///< CUDA device ordinal
  std::vector<int> batch_sizes{1};
  TraceLevel trace_level = TraceLevel::kModel;
  bool leveled = false;  ///< SPEC §3: M, M/F, ... each from its own run
  MeasurementOptions measurement;
  InputOptions inputs;
  bool store_predictions = false;  ///< keep every measured input's output (for `xsp compare`)
  int counter_iterations = 1;      ///< measured batches of a counter run (trace level hardware)
  CuptiOptions cupti;              ///< kernel/system/library levels
  CounterOptions counters;         ///< hardware level
  std::optional<ScenarioRequest> scenario;
  /// Limit on the memory of one batch tensor (and of a scenario's sample library), in bytes, from 1 to
  /// kMaxBatchBytesLimit: every batch size is checked against it before the model is loaded.
  std::uint64_t max_batch_bytes = kDefaultMaxBatchBytes;
  /// Precision of the model's weights and activations: fp32 | fp16 | bf16 (DeviceSpec::precision), one of the
  /// manifest's `precisions` and supported by the framework on the device.
  std::string precision = "fp32";
  /// Capture each batch size's forward into a CUDA graph and replay it (DeviceSpec::cuda_graphs; docs/cuda-graphs.md):
  /// device cuda and framework libtorch only.
  bool cuda_graphs = false;
  GenerationRequest generation;  ///< generation models only
  bool operator==(const EvaluationRequest&) const = default;
};

/// The largest EvaluationRequest::max_batch_bytes accepted (1 TiB): beyond it a typo, not a machine.
inline constexpr std::uint64_t kMaxBatchBytesLimit = 1ull << 40;

/// The request as JSON (stored in every record as settings["request"], so that an evaluation can be repeated
/// or re-submitted exactly).
nlohmann::json to_json(const EvaluationRequest& request);
/// Inverse of to_json(EvaluationRequest); missing keys keep their defaults. Throws RequestError naming the key.
EvaluationRequest evaluation_request_from_json(const nlohmann::json& j);

/// Where an evaluation runs: what the front end owns, not what defines the evaluation.
struct EvaluationContext {
  std::filesystem::path zoo;                 ///< folder of manifests
  std::filesystem::path default_images_dir;  ///< used when InputOptions::images_dir is empty
  Store* store = nullptr;                    ///< saved there when not null (one transaction)
  ProgressCallback progress;                 ///< optional
  const Clock* clock = nullptr;              ///< nullptr = system_clock(); tests inject a fake one
  bool record_machine_state = true;          ///< see SessionOptions::record_machine_state
  /// A signal number set by the front end's handler; batch sweeps stop before the next batch and save the runs
  /// already finished as an "incomplete" evaluation; scenarios and generation stop issuing queries and save the runs
  /// already complete the same way (SessionOptions::interrupt). Validation stops hashing files
  /// when it is set and throws xsp::Interrupted.
  const std::atomic<int>* interrupt = nullptr;
  /// Set by the front ends that run requests from other people (the server, agents; docs/server.md "Security"):
  /// the folders a request may read. Every file the request names (inputs.images_dir and each image in it,
  /// generation.prompts_file) and every file its model's manifest names (graph, labels, tokenizer, prompts,
  /// dataset) must lie inside one of them, written without ".." and still inside after its symbolic links are
  /// followed; otherwise validate() throws RequestError on the field ("model" for the manifest's files). Such a
  /// request may not set cupti.dump_dir or counters.dump_dir (files written where the request chooses). Unset:
  /// no confinement (the CLI, which reads its own user's files).
  std::optional<std::vector<std::filesystem::path>> confine_to;
};

/// The most batch sizes (and offline sweep batch sizes) one request may list.
inline constexpr std::size_t kMaxBatchSizes = 64;
/// The most queries one LoadGen run may plan: scenario.min_queries, and target_qps × measurement.min_duration_ms
/// for server (queries) and offline (samples). LoadGen records three 8-byte times per query before it starts.
inline constexpr std::uint64_t kMaxPlannedQueries = 10'000'000;
/// The highest scenario.target_qps accepted.
inline constexpr double kMaxTargetQps = 1e6;
/// The most kernels one counter pass may hold (counters.max_ranges): CUPTI's counter image takes about 0.9 ms to
/// set up per range on an H200 (CounterOptions::max_ranges).
inline constexpr std::size_t kMaxCounterRanges = 1 << 16;

/// The checks of validate() that need neither the zoo nor this build: each field's range (including the upper
/// bounds above and kMaxMeasurementMs) and the combinations of fields that are wrong for any model. For front ends
/// that queue a request for another machine (`xsp submit`, the server on a shared queue), so that a request that
/// can never run is refused before it is queued. validate() calls it first. Throws RequestError naming the field.
void validate_fields(const EvaluationRequest& request);

/// EvaluationContext::confine_to for a front end started with `zoo`, `default_images_dir` (skipped when empty) and
/// extra data folders: the folders, in that order.
std::vector<std::filesystem::path> confinement_roots(const std::filesystem::path& zoo,
                                                     const std::filesystem::path& default_images_dir,
                                                     const std::vector<std::filesystem::path>& data_dirs);

/// What validate() resolved: the manifest, the framework's predictor (created, model not loaded: it told validate()
/// its framework version) and the runs to make.
struct ValidatedRequest {
  EvaluationRequest request;  ///< with framework and images_dir filled in
  Manifest manifest;
  std::unique_ptr<Predictor> predictor;
  std::vector<TraceLevel> run_levels;  ///< batch sweeps and generation; empty for other scenarios
  /// Generation models: the tokenizer of the manifest's tokenize step (unset with synthetic prompts), the prompts
  /// long enough for generation.prompt_tokens (empty with synthetic prompts) and how many were too short.
  std::shared_ptr<const Tokenizer> tokenizer;
  std::vector<std::string> prompts;
  std::size_t prompts_too_short = 0;
  /// The most bytes one batch tensor (or a scenario's sample library) may take: request.max_batch_bytes, lowered to
  /// half of this machine's physical memory when that is less.
  std::uint64_t batch_bytes_limit = kDefaultMaxBatchBytes;
  /// What the workload runs (xsp/eval/plan.h), made from all of the above; its tokenizer pointers point into
  /// `tokenizer`, so the plan lives as long as this.
  RunPlan plan;
};

/// Checks everything that can be checked before loading the model and without running it: every field's range,
/// trace level against device and build (CUPTI for kernel levels), the model in the zoo, a graph for the
/// framework, the framework in this build and its version against the manifest's constraint, the graph's
/// checksum, the dataset, the scenario's options. Throws RequestError naming the field (as in to_json()) and
/// what was expected; lower layers do not check again. The zoo is read with scan_zoo(): a bad manifest of another
/// model is logged as one spdlog warning per file ("model zoo: skipped FILE: ..."); one that may be the model asked
/// for is a RequestError on "model" naming the file (find_model(const Zoo&, ...)).
ValidatedRequest validate(const EvaluationRequest& request, const EvaluationContext& context);

/// validate(), then create the predictor and load the model, create the profilers the levels need, run
/// (the plan's workload: run_batch_sweep(), run_scenario() or run_generation(), each through one RunSession), score
/// accuracy, close, describe the system and save to context.store. Returns the record (with its store id when saved).
/// Throws RequestError for a bad request and std::runtime_error for failures while running (nothing is saved then). A
/// finished evaluation is never thrown away: when saving to context.store fails (StoreError), it is written to a
/// recovery file, itself a one-evaluation XSP store named xsp-recovered-UUID.db next to the store file (or in the
/// system's temporary folder when that folder cannot be written), written under a temporary name and renamed into
/// place, and evaluate() throws UnsavedEvaluationError naming the store, the reason, the file and `xsp import FILE`.
EvaluationRecord evaluate(const EvaluationRequest& request, const EvaluationContext& context);

/// The recovery step of evaluate(), for front ends that save records themselves: writes `record` as the only
/// evaluation of a new store xsp-recovered-UUID.db in `folders`, the first that works, and returns its path.
/// Throws StoreError naming each folder tried and why it failed. No file is left under the final name unless it
/// is complete.
std::filesystem::path write_recovery_file(EvaluationRecord record, const std::vector<std::filesystem::path>& folders);

}  // namespace xsp
