// The figures of a serving benchmark and the evaluation that stores them (issue 27, docs/serving.md).
//
// Definitions (vLLM benchmarks/benchmark_serving.py, `vllm bench serve`; docs/generation.md), per successful request,
// all times CLOCK_MONOTONIC ns:
//   queue  = sent − arrival (the wait for the schedule's lateness and for a free concurrency slot; LoadGen counts it
//            in its latencies, vLLM does not: reported on its own, TTFT and E2E start at the send as vLLM's do)
//   TTFT   = token_ns[0] − sent
//   E2E    = token_ns.back() − sent
//   TPOT   = (E2E − TTFT) / (output_tokens − 1), output_tokens from the server's usage; requests with one output token
//            have none (vLLM skips them)
//   ITL    = every token_ns[i] − token_ns[i−1] (chunks with output text), all requests pooled
// Rates are over the run's duration (its start to the end of its last request): requests/s counts the successful
// requests, input tokens/s their usage.prompt_tokens, output tokens/s their output tokens. Goodput (vLLM's
// --goodput, DistServe's definition) = successful requests with TTFT ≤ the TTFT bound and TPOT ≤ the TPOT bound (a
// request without a TPOT meets that bound, as in vLLM, whose TPOT of such a request is 0), per second of the same
// duration; only the bounds given count.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/loadgen/token_latency.h"
#include "xsp/record/record.h"
#include "xsp/serve/client.h"
#include "xsp/stats/stability.h"
#include "xsp/stats/stats.h"

namespace xsp::serve {

/// Service-level objectives of the run; a bound that is not set is not checked.
struct ServingBounds {
  std::optional<double> ttft_ns, tpot_ns;  ///< > 0 when set
  double percentile = 99;                  ///< of LoadGen's check, in (0, 100)
  double confidence = 0.99;                ///< of LoadGen's early stopping, in (0, 1)
  bool any() const { return ttft_ns.has_value() || tpot_ns.has_value(); }
};

/// The figures of one run (one sweep point). Distributions in ns (LatencySummary: p50 is the median).
struct ServingSummary {
  std::uint64_t requests = 0;                     ///< released by the schedule
  std::uint64_t completed = 0;                    ///< ok
  std::uint64_t failed = 0;                       ///< not ok (cancelled included)
  std::map<std::string, std::uint64_t> failures;  ///< failed requests by reason (client.h's reasons)
  /// The first error message of each reason, to say what it was.
  std::map<std::string, std::string> failure_examples;
  std::int64_t duration_ns = 0;
  std::int64_t input_tokens = 0;   ///< Σ usage.prompt_tokens of the successful requests that reported it
  std::int64_t output_tokens = 0;  ///< Σ output tokens of the successful requests
  /// Successful requests without usage: their output tokens are counted chunks, an estimate (a server may put several
  /// tokens in one chunk), and their prompt tokens are unknown.
  std::uint64_t requests_without_usage = 0;
  /// Requests the schedule released per second of its issue window (ClientRun::issue_window_ns): the offered load as
  /// it happened (a Poisson schedule's count varies around rate × duration); NaN for rate inf.
  double offered_requests_per_s = 0;
  double requests_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
  LatencySummary queue_ns, ttft_ns, tpot_ns, itl_ns, e2e_ns;
  std::uint64_t good_requests = 0;  ///< meeting every bound given
  double goodput_per_s = 0;         ///< good_requests / duration; NaN without bounds
  /// LoadGen's Server-scenario check of the bounds (loadgen::check_token_latencies: early-stopping estimate of
  /// bounds.percentile), when both bounds are given.
  std::optional<loadgen::TokenLatencyVerdict> verdict;
  /// Stability (assess_series, docs/measurement.md) of the per-request TTFT and TPOT in arrival order.
  StabilityAssessment ttft_stability, tpot_stability;
  std::int64_t max_in_flight = 0;  ///< most requests sent and not yet done at one time, as the client saw it
  /// ClientRun::read_delay_ns: the client's own queueing, from a socket's sighting to the read of its bytes.
  LatencySummary client_read_delay_ns;
};

/// Computes the figures of `run` (definitions above). Throws std::invalid_argument for bounds that are set and
/// not > 0, or a percentile/confidence out of range.
ServingSummary summarize(const ClientRun& run, const ServingBounds& bounds, const StabilityRule& rule = {});

/// The summary as stored (settings.serving.summary[i]): the fields above under their names, each distribution as
/// {n, mean, median, std, min, p90, p95, p99, p999, max, trimmed_mean} in ns, NaN as null, the verdict as null or
/// {valid, reason, ttft, tpot}, stability as {verdict, samples, spread_fraction, drift_fraction}.
nlohmann::json to_json(const ServingSummary& summary);
/// Reads what to_json() wrote (NaN figures are stored as null); std::invalid_argument naming the key otherwise.
ServingSummary summary_from_json(const nlohmann::json& j);

/// A sweep over one load parameter: `--sweep request-rate=1,2,4` or `--sweep max-concurrency=1,8,64`.
struct Sweep {
  std::string parameter;       ///< "request-rate" or "max-concurrency"
  std::vector<double> values;  ///< in the order given (rates may be "inf"; concurrencies whole numbers >= 1)
};
/// Parses "PARAM=V1,V2,...". Throws std::invalid_argument naming the text and what was expected.
Sweep parse_sweep(const std::string& text);

/// Whether a sweep stops after point `current` (the one before it `previous`, nullptr for the first): for request-rate
/// sweeps when the achieved request rate (requests_per_s) is below 90% of the offered one (offered_requests_per_s, the
/// schedule's realized rate, so that a Poisson count below its mean is not read as saturation; the drain of the last
/// requests after the issue window costs a run much longer than its E2E latency little): the server no longer keeps
/// up; for
/// max-concurrency sweeps when output tokens/s rose by 5% or less over the previous point (more streams buy nothing).
/// Returns the sentence that says why, or nullopt to go on. An offered rate of inf has no achieved fraction: never
/// stops.
std::optional<std::string> saturation(const Sweep& sweep, double value, const ServingSummary& current,
                                      const ServingSummary* previous);

/// One sweep point (or the only run).
struct ServingPoint {
  std::string parameter;  ///< "request-rate", "max-concurrency", or "" (no sweep)
  double value = 0;
  ClientOptions options;  ///< as run (prompts and api_key not stored)
  ClientRun run;
  ServingSummary summary;
};

/// What the evaluation describes besides its points.
struct ServingStudy {
  std::vector<ServingPoint> points;
  std::optional<Sweep> sweep;
  std::string stopped_by;  ///< the saturation sentence that ended a sweep early, "" when it ran every value
  ServingBounds bounds;
  nlohmann::json prompts = nlohmann::json::object();  ///< {"source": "file"|"synthetic", ...}
  std::optional<std::int64_t> server_pid;
};

/// The evaluation (RecordKind::kServing, scenario "serving"): model_name = the served model, framework_name
/// "openai-api", device "remote", no runs (a caller adds the server's window). settings["serving"] holds
/// "requests" (one row per request of every point, ClientRequestTimes's field names plus point, prompt_index,
/// prompt_tokens, usage_reported, requested_output_tokens, reason, http_status, trace_id, done_ns,
/// scheduled_offset_ns), "summary" (to_json() of each point with "point", "parameter", "value",
/// "offered_request_rate", "max_concurrency", "burstiness"), "sweep", "options", "bounds", "prompts" and
/// "output_tokens_estimated" (true when any successful request lacked usage).
EvaluationRecord serving_record(const ServingStudy& study);

/// The figures of one successful request, as summarize() defines them, in ns.
struct RequestFigures {
  int point = 0;  ///< the sweep point's index (0 without a sweep)
  double ttft_ns = 0, e2e_ns = 0;
  double tpot_ns = 0;          ///< NaN for a request with one output token
  std::vector<double> itl_ns;  ///< the gaps between its chunks with output text
};
/// The successful requests of a serving evaluation (settings.serving.requests, read by client_requests_from_json()),
/// in stored order. Throws std::invalid_argument when settings["serving"]["requests"] is missing, when
/// client_requests_from_json() refuses it, or naming the row when a successful request has no token_ns.
std::vector<RequestFigures> request_figures(const EvaluationRecord& record);

/// The tables `xsp show` prints for a serving evaluation, read from its settings: S1 summary per point, S2 latency
/// distributions (mean, median, std, p90, p95, p99, max in ms) per point and figure, S3 failed requests by reason.
/// Throws std::invalid_argument when settings["serving"] is missing or unreadable.
std::vector<Table> serving_tables(const EvaluationRecord& record);

/// vLLM's `bench serve` result block for one point ("============ Serving Benchmark Result ============" ...), as
/// `xsp bench-serve` prints it after each run.
std::string format_result(const ServingPoint& point, const ServingBounds& bounds);

}  // namespace xsp::serve
