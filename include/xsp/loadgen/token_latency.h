// Metrics of LLM token generation (issue 15): time to first token, time per output token, inter-token latency,
// end-to-end latency and token rates, plus MLPerf LoadGen's Server-scenario check of token latencies.
// Pure functions on timestamps recorded by the caller; every time is in nanoseconds on one clock (XSP: now_ns(),
// CLOCK_MONOTONIC) and every rate is per second.
//
// Definitions and their sources:
//  - vLLM benchmarks/benchmark_serving.py (`vllm bench serve`):
//      TTFT  = first token time − request send time;
//      TPOT  = (e2e latency − TTFT) / (output tokens − 1), "time per output token, excluding the first token";
//              requests with a single output token have no TPOT (vLLM skips them);
//      ITL   = every gap between two consecutive tokens of a request, pooled over all requests;
//      E2EL  = last token time − request send time;
//      output (input) token throughput = total output (input) tokens / benchmark duration.
//  - MLPerf LoadGen token latencies (TestSettings::use_token_latencies, LLM benchmarks): the SUT reports the first
//    token of each query (FirstTokenComplete) and the number of tokens at completion;
//      TTFT = first token time − issue time;  TPOT = (latency − TTFT) / (tokens − 1);
//    in the Server scenario both are checked against their own bound (server_ttft_latency, server_tpot_latency)
//    at the target percentile, each with its own early-stopping estimate.
// With these definitions TPOT = (last token − first token) / (output tokens − 1): the same number in both.
// Other tools use the names differently (some call this per-request mean gap "ITL", some divide the whole e2e
// latency by the output tokens and call that TPOT): compare definitions, not names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xsp/stats/stability.h"
#include "xsp/stats/stats.h"

namespace xsp::loadgen {

/// One generation request as it ran.
struct GeneratedRequest {
  std::int64_t issued_ns = 0;          ///< when the request was issued (ns)
  std::int64_t input_tokens = 0;       ///< prompt length in tokens (>= 0)
  std::vector<std::int64_t> token_ns;  ///< when each output token was emitted (ns, same clock), first = first token
};

/// The metrics of a set of requests. Distributions are LatencySummary in ns (NaN fields when empty).
struct GenerationMetrics {
  std::size_t requests = 0;
  std::int64_t input_tokens = 0;   ///< total over the requests
  std::int64_t output_tokens = 0;  ///< total over the requests
  /// Requests with exactly one output token: they count in TTFT, E2E and the token totals but have no TPOT.
  std::size_t single_token_requests = 0;
  LatencySummary ttft_ns;  ///< per request: token_ns.front() − issued_ns
  LatencySummary tpot_ns;  ///< per request with >= 2 tokens: (token_ns.back() − token_ns.front()) / (tokens − 1)
  LatencySummary itl_ns;   ///< every token_ns[i] − token_ns[i−1], all requests pooled
  LatencySummary e2e_ns;   ///< per request: token_ns.back() − issued_ns
  std::int64_t duration_ns = 0;    ///< the wall time the rates are over (see generation_metrics())
  double output_tokens_per_s = 0;  ///< output_tokens / duration; NaN when duration_ns is 0
  double input_tokens_per_s = 0;   ///< input_tokens / duration; NaN when duration_ns is 0
  double requests_per_s = 0;       ///< requests / duration; NaN when duration_ns is 0
  /// Stability verdicts (assess_series) of the per-request TTFT and TPOT series, in the order of the requests
  /// given (their issue order): is the run's TTFT, and its decode speed, one steady figure or drifting?
  StabilityAssessment ttft_stability;
  StabilityAssessment tpot_stability;
};

/// Computes the metrics of `requests` (in issue order); the rates are over the run's wall time, from the
/// earliest issued_ns to the latest last token. No requests: counts 0, NaN summaries and rates, verdicts
/// not_assessed. Throws std::invalid_argument naming the request index and the field for: an empty token_ns
/// (a request that produced nothing), a token time before the one before it, a first token before issued_ns,
/// negative input_tokens; and for an invalid `rule` (see assess_windows()).
GenerationMetrics generation_metrics(const std::vector<GeneratedRequest>& requests, const StabilityRule& rule);

/// The same with the rates over `duration_ns` (e.g. the scenario's own measured duration). Throws
/// std::invalid_argument for duration_ns <= 0, besides the errors above.
GenerationMetrics generation_metrics(const std::vector<GeneratedRequest>& requests, std::int64_t duration_ns,
                                     const StabilityRule& rule);

// ---- MLPerf LoadGen Server scenario with token latencies -----------------------------------------------------

/// The Server constraints of an LLM benchmark (MLPerf: server_ttft_latency, server_tpot_latency, and the target
/// latency percentile, 99 for the LLM benchmarks).
struct TokenLatencyBounds {
  double ttft_ns = 0;      ///< bound on TTFT (ns, > 0)
  double tpot_ns = 0;      ///< bound on TPOT (ns, > 0)
  double percentile = 99;  ///< in (0, 100)
};

/// The check of one metric (TTFT or TPOT).
struct TokenMetricCheck {
  std::size_t samples = 0;  ///< requests that have this metric (TPOT: those with >= 2 tokens)
  double bound_ns = 0;
  /// early_stopping_max_overlatency(samples, percentile, confidence): how many samples may exceed the estimate;
  /// -1 when too few samples to claim the percentile at all.
  std::int64_t max_overlatency = -1;
  /// The fewest samples with which early stopping can claim the percentile (max_overlatency >= 0).
  std::uint64_t min_samples = 0;
  /// The early-stopping estimate of the percentile: the (max_overlatency + 1)-th largest sample, as
  /// early_stopping_latency() computes it; NaN when too few samples.
  double estimate_ns = 0;
  bool enough_samples = false;  ///< max_overlatency >= 0
  bool meets_bound = false;     ///< enough_samples and estimate_ns <= bound_ns
};

/// The Server-scenario verdict: valid only when both TTFT and TPOT meet their bounds.
struct TokenLatencyVerdict {
  TokenMetricCheck ttft, tpot;
  bool valid = false;
  /// Empty when valid; otherwise one sentence per failed metric, each starting with "TTFT" or "TPOT", saying
  /// whether its estimate exceeded the bound or it had too few samples for early stopping.
  std::string reason;
};

/// Checks `requests` against `bounds` as LoadGen's Server scenario does with token latencies: for TTFT and TPOT
/// separately, the early-stopping estimate of bounds.percentile over that metric's per-request values (see
/// early_stopping_latency() in loadgen.h) must not exceed its bound. Throws std::invalid_argument for the request
/// errors of generation_metrics(), bounds that are not > 0, a percentile outside (0, 100) or a confidence outside
/// (0, 1).
TokenLatencyVerdict check_token_latencies(const std::vector<GeneratedRequest>& requests,
                                          const TokenLatencyBounds& bounds, double confidence = 0.99);

}  // namespace xsp::loadgen
