// Token generation as a workload (issue 15, docs/generation.md): requests of prompts through a Generator
// (Predictor::generator()), one MODEL span per step, token latencies (TTFT, TPOT, ITL, E2E) per run, LoadGen's
// token-latency checks, and the traces of the slowest first tokens and decode steps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/eval/runner.h"
#include "xsp/loadgen/token_latency.h"
#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/record/record.h"

namespace xsp {

/// An inclusive range of token counts; min == max is a fixed count. Each request draws its count uniformly from
/// it (std::mt19937_64 of GenerationOptions::seed), so the distribution is known and recorded.
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

/// How the requests arrive (LoadGen scenarios, SPEC §6, with token latencies).
enum class GenerationScenario {
  kBatchSweep,    ///< per batch size, closed loop: the next request when the last one is done
  kSingleStream,  ///< batch 1, closed loop; TTFT/TPOT at the 90th percentile by early stopping (optional bounds)
  kServer,        ///< batch 1, Poisson arrivals at target_qps served in order; TTFT includes the wait; bounds
  kOffline,       ///< every sequence issued at the start, served in batches of the largest batch size; tokens/s
};
/// "batch-sweep" | "single-stream" | "server" | "offline".
std::string_view to_string(GenerationScenario scenario);

struct GenerationOptions {
  GenerationScenario scenario = GenerationScenario::kBatchSweep;
  std::vector<int> batch_sizes{1};  ///< batch sweep: one run each; offline: the largest is the batch; else unused
  TraceLevel trace_level = TraceLevel::kModel;
  bool leveled = false;  ///< one run per level (M, M/F, ...) as run_levels() says, each with the same requests
  /// warmup_min_batches: warm-up requests before each run's measured ones (not timed into the metrics);
  /// min_batches, min_duration_ms: a closed-loop run measures until it has at least min_batches requests and
  /// min_duration_ms of wall time (max_duration_ms is not used: nothing is measured on until stable);
  /// rule: the stability verdict of TTFT, TPOT and the request latencies.
  MeasurementOptions measurement;
  TokenRange prompt_tokens;  ///< per request
  TokenRange output_tokens;  ///< per request: exactly this many tokens are generated (no end-of-sequence stop)
  /// Prompt texts, each at least prompt_tokens.max tokens long once encoded (the caller filters); request k takes
  /// prompts k·B .. k·B + B − 1 (mod size). Empty: synthetic prompts, ids drawn uniformly from the vocabulary.
  std::vector<std::string> prompts;
  TextCodec codec;  ///< required with prompts; decode is also used with synthetic prompts when set
  std::uint64_t seed = 0;  ///< lengths, synthetic ids and the server's arrivals
  std::uint64_t min_queries = 64;  ///< single-stream, server, offline: at least this many requests (sequences)
  double target_qps = 10;          ///< server: arrival rate; offline: with min_duration_ms, sizes the request count
  /// Server (required) and single-stream (optional): bounds on TTFT and TPOT at bounds.percentile, checked by
  /// early stopping (loadgen::check_token_latencies); single-stream reports the 90th percentile without them.
  std::optional<loadgen::TokenLatencyBounds> bounds;
  /// Runs at framework level or deeper keep the full traces (framework ops, kernels) of the requests holding the
  /// `tail_steps` slowest first tokens and the `tail_steps` slowest decode steps, and of the last request; every
  /// other request keeps its MODEL spans only. 0 keeps every request's full trace.
  std::size_t tail_steps = 5;
  DeviceSpec device;
  DeviceProfiler* device_profiler = nullptr;  ///< library/system/kernel levels (see EvaluationOptions)
  const Clock* clock = nullptr;               ///< nullptr = system_clock()
  /// A signal number from the front end: the run in progress is dropped before its next request and the record
  /// holds the runs already finished, status "incomplete" (see EvaluationOptions::interrupt).
  const std::atomic<int>* interrupt = nullptr;
  /// Called in each wait for a server arrival with the clock time to wait for; nullptr = sleep on the system
  /// clock. A test with a fake clock advances it instead.
  std::function<void(std::int64_t until_ns)> wait_until;
};

/// Runs the generation workload with `predictor` (loaded with `manifest`, whose generator() is not null) and
/// returns its record: per (batch size, level) a RunRecord whose trace holds, per measured request, a MODEL span
/// "request" (tags request, batch_size, prompt_tokens, output_tokens, arrival_delay_ns for server/offline) over
/// "tokenize", "prefill" (step 0), "decode" (step 1..n−1) and "detokenize", and framework ops / kernels under the
/// steps at deeper levels (see tail_steps). Token i of a sequence is out at the end of its step i, so a request's
/// GeneratedRequest (one per sequence of the batch) has those ends as token_ns and its issue time as issued_ns: the
/// start of its "request" span (closed loop) or its arrival (server, offline). RunRecord::generation holds the
/// metrics (loadgen::generation_metrics over the measured requests, rates over the run's wall time) and, where a
/// scenario checks bounds, the verdict; predict_latency_ns holds each request's service time (its "request" span)
/// and stage_latency_ns the summaries of every step name (decode: per step). Settings record the options, the
/// drawn length distributions and sample outputs. Throws std::invalid_argument for bad options (no generator,
/// lengths beyond the model's max_positions, prompts without codec, server without bounds) and propagates the
/// predictor's errors.
EvaluationRecord run_generation(const Manifest& manifest, Predictor& predictor, const GenerationOptions& options,
                                const ProgressCallback& progress = {});

}  // namespace xsp
