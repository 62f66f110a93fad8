// The plan of an evaluation (docs/architecture.md "The run engine"): what validate() makes of an EvaluationRequest,
// and the only thing the workloads read. One struct for every workload: the parts all of them share (batch sizes,
// levels, measurement, device, inputs) and one part per workload. Nothing below validate() checks a plan again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/loadgen/loadgen.h"
#include "xsp/loadgen/token_latency.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/predictor.h"
#include "xsp/record/record.h"

namespace xsp {

/// What an evaluation runs: it decides only what is issued and when.
enum class Workload {
  kBatchSweep,  ///< per batch size, one run per trace level, closed loop, measured until stable (SPEC §3)
  kScenario,    ///< a LoadGen scenario (SPEC §6): SingleStream, MultiStream, Server, Offline
  kGeneration,  ///< token generation: requests of prompts, TTFT/TPOT (docs/generation.md)
};
/// "batch-sweep" | "scenario" | "generation".
std::string_view to_string(Workload workload);

/// Where the inputs come from.
struct InputPlan {
  bool synthetic = false;            ///< seeded random tensors instead of images (no decode)
  std::uint64_t seed = 0;            ///< seed of synthetic inputs and of the load generator
  std::filesystem::path images_dir;  ///< folder of images (every image of it, cycled); with !synthetic
  /// Images that cannot be read or pre-processed are left out and listed (settings "inputs_skipped") instead of
  /// stopping the evaluation (screen_inputs()).
  bool skip_bad_inputs = false;
  /// Limit on one batch tensor and on a scenario's sample library, in bytes, checked before they are allocated.
  std::uint64_t max_batch_bytes = kDefaultMaxBatchBytes;
  /// The texts a model with a text input is fed (text classification: its prompts file's lines), batch k taking
  /// texts k·B .. k·B + B − 1 (mod size), each named "text:<index>", tokenized by `tokenizer` (owned by the caller).
  std::vector<std::string> texts;
  const Tokenizer* tokenizer = nullptr;
};

/// The batch sweep's own part.
struct SweepPlan {
  /// Measured batches of a counter run (trace level hardware): at least the counter profiler's batches_needed().
  int counter_iterations = 1;
  /// Keep, per run, every distinct measured input's output (RunRecord::predictions). Synthetic inputs cycle
  /// through up to kSyntheticBatches seeded batches per batch size (fewer when they would exceed 512 MB), made
  /// before the first batch, named "synthetic:seed=S:batch=J:K".
  bool store_predictions = false;
};

/// A LoadGen scenario's own part. What is measured: predict only (inputs prepared before the run into a sample
/// library; the timed region holds batch assembly and predict()).
struct ScenarioPlan {
  /// The load generator's settings; settings.sample_count is set to the prepared library's size.
  loadgen::Settings settings;
  std::size_t max_batch = 1;           ///< MultiStream and Offline queries are cut into batches of at most this
  bool find_peak_qps = false;          ///< Server: search the highest QPS meeting the bound; every tried rate is a run
  std::size_t synthetic_samples = 64;  ///< synthetic library size
  /// Keep the full trace of this many slowest measured queries of each run, plus the median query (tail_traces.h);
  /// 0 = no per-query tracing. Needs trace level framework or deeper in RunPlan::trace_level.
  std::size_t trace_tail = 0;
  /// Offline: one run per entry as max_batch, the optimal batch picked by SPEC §4 A1's rule (within
  /// sweep_latency_bound_ms on the per-batch p99 when given). Empty = one run with max_batch.
  std::vector<std::size_t> sweep_batch_sizes;
  std::optional<double> sweep_latency_bound_ms;
};

/// An inclusive range of token counts; min == max is a fixed count. Each request draws its count uniformly from
/// it (std::mt19937_64 of the plan's seed), so the distribution is known and recorded.
struct TokenRange {
  int min = 32;
  int max = 32;
  bool operator==(const TokenRange&) const = default;
};
/// "32" or "16:64" (min:max) → TokenRange. Throws std::invalid_argument naming the text and what is expected
/// (integers >= 1, min <= max).
TokenRange parse_token_range(std::string_view text);
/// "32" or "16:64".
std::string to_string(const TokenRange& range);

/// Text to token ids and back: the manifest's tokenize and detokenize steps (a SentencePiece model in XSP's
/// pipeline, a fake in tests). Both run inside the timed "tokenize" and "detokenize" spans.
struct TextCodec {
  std::function<std::vector<std::int64_t>(std::string_view text)> encode;
  std::function<std::string(const std::vector<std::int64_t>& ids)> decode;
};

/// How generation requests arrive (LoadGen scenarios, SPEC §6, with token latencies).
enum class GenerationScenario {
  kBatchSweep,    ///< per batch size, closed loop: the next request when the last one is done
  kSingleStream,  ///< batch 1, closed loop; TTFT/TPOT at the 90th percentile by early stopping (optional bounds)
  kServer,        ///< batch 1, Poisson arrivals at target_qps served in order; TTFT includes the wait; bounds
  kOffline,       ///< every sequence issued at the start, served in batches of the largest batch size; tokens/s
};
/// "batch-sweep" | "single-stream" | "server" | "offline".
std::string_view to_string(GenerationScenario scenario);

/// Token generation's own part.
struct GenerationPlan {
  GenerationScenario scenario = GenerationScenario::kBatchSweep;
  TokenRange prompt_tokens;  ///< per request
  TokenRange output_tokens;  ///< per request: exactly this many tokens are generated (no end-of-sequence stop)
  /// Prompt texts, each at least prompt_tokens.max tokens long once encoded. The prompts are LoadGen's sample
  /// library: each sequence takes the prompt of its sample index, in LoadGen's seeded order. Empty: synthetic
  /// prompts, ids drawn uniformly from the vocabulary (a seed per request).
  std::vector<std::string> prompts;
  TextCodec codec;                 ///< required with prompts; decode is also used with synthetic prompts when set
  std::uint64_t min_queries = 64;  ///< single-stream, server, offline: at least this many requests (sequences)
  double target_qps = 10;          ///< server: arrival rate; offline: with min_duration_ms, sizes the request count
  /// Server (required) and single-stream (optional): bounds on TTFT and TPOT at bounds.percentile, checked by
  /// early stopping (loadgen::check_token_latencies).
  std::optional<loadgen::TokenLatencyBounds> bounds;
  /// Runs at framework level or deeper keep the full traces of the requests holding the tail_steps slowest first
  /// tokens and decode steps, and of the last request; the others keep their MODEL spans. 0 keeps every request's.
  std::size_t tail_steps = 5;
  /// Called in LoadGen's each wait for a server arrival with the clock time to wait for; nullptr = sleep on the
  /// session's clock (a test with a fake clock advances it instead).
  std::function<void(std::int64_t until_ns)> wait_until;
};

/// Everything a workload needs to know, decided by validate().
struct RunPlan {
  Workload workload = Workload::kBatchSweep;
  /// Batch sweep and generation: one run per batch size (and level); offline generation: the largest is the batch.
  /// Scenarios take ScenarioPlan::max_batch / sweep_batch_sizes instead.
  std::vector<int> batch_sizes{1};
  TraceLevel trace_level = TraceLevel::kModel;
  bool leveled = false;  ///< SPEC §3: M, M/F, ... each from its own run
  /// The runs per batch size (run_levels()): the batch sweep and generation; a scenario runs at trace_level.
  std::vector<TraceLevel> levels{TraceLevel::kModel};
  MeasurementOptions measurement;
  DeviceSpec device;
  InputPlan inputs;
  SweepPlan sweep;
  ScenarioPlan scenario;
  GenerationPlan generation;
};

/// The trace levels a run sequence covers: {trace_level} or, when leveled, M, M/F and then trace_level if it is
/// deeper (library, system and kernel levels come from the device profiler in one run: M/F/K). Hardware adds a
/// counter run (framework ops + HARDWARE spans, no activity tracing) after the kernel run, which it always needs
/// for kernel latencies: leveled M, M/F, M/F/K, M/F/H; not leveled M/F/K, M/F/H (SPEC §3: counter runs never
/// give timings). Throws std::invalid_argument when a level needs a profiler that is missing (framework
/// profiler; device profiler for library/system/kernel/hardware; counter profiler for hardware).
std::vector<TraceLevel> run_levels(TraceLevel trace_level, bool leveled, bool have_framework_profiler,
                                   bool have_device_profiler = false, bool have_counter_profiler = false);

}  // namespace xsp
