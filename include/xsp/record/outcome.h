// The typed results of the run engine's workloads (docs/architecture.md "The run engine"): what a LoadGen scenario
// run and a generation run measured beyond a RunRecord's own latencies. The batch sweep's result is the RunRecord
// itself (stage latencies, throughput, RunMeasurement). The store keeps each outcome in its own columns (schema 9,
// docs/store.md); readers (summary, analyses, report, server) use these types, never JSON keys.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xsp/stats/stability.h"
#include "xsp/stats/stats.h"

namespace xsp {

/// One query of a scenario run whose trace was kept (keep_tail_query_traces(), xsp/eval/tail_traces.h).
struct KeptQuery {
  std::uint64_t query = 0;      ///< query id (0-based, issue order of the measured queries)
  std::int64_t latency_ns = 0;  ///< issue to completion, as the load generator measured it
  std::uint64_t rank = 0;       ///< 1 = slowest of the run
  /// Nearest-rank percentile of its latency within the run: 100·(n − rank + 1)/n for n measured queries (the
  /// slowest query is the 100th percentile, the 10th slowest of 1000 the 99.1th).
  double percentile = 0;
  std::string kind;       ///< "tail" (one of the n slowest) or "median" (the reference query)
  std::size_t spans = 0;  ///< spans kept under it (its query span included)
  bool operator==(const KeptQuery&) const = default;
};

/// What keep_tail_query_traces() kept and dropped.
struct TailTraceSelection {
  std::vector<KeptQuery> kept;             ///< slowest first, then the median query when it is not among them
  std::uint64_t traced_queries = 0;        ///< measured queries the run traced
  std::uint64_t dropped_query_traces = 0;  ///< measured queries whose spans were dropped
  std::uint64_t dropped_spans = 0;         ///< spans removed (warm-up queries' spans included)
  std::string trace_level;                 ///< the level the queries were traced at ("framework", "kernel"...)
  bool operator==(const TailTraceSelection&) const = default;
};

/// One LoadGen scenario run (RecordKind::kScenario), as MLPerf LoadGen's summary reports it (loadgen::Result,
/// xsp/loadgen/loadgen.h, has the definitions). Figures that do not exist (e.g. the target latency of too few
/// queries) are NaN.
struct ScenarioOutcome {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string scenario;           ///< "single-stream" | "multi-stream" | "server" | "offline"
  double percentile = 90;         ///< the target percentile (%) of target_latency_ns and the early-stopping estimate
  std::int64_t query_count = 0;   ///< measured queries
  std::int64_t sample_count = 0;  ///< samples of the measured queries
  std::int64_t duration_ns = 0;   ///< first issue to last completion
  double target_latency_ns = kNaN;
  double qps_with_overhead = kNaN;     ///< queries/s over the run's wall time (LoadGen's "QPS w/ loadgen overhead")
  double qps_without_overhead = kNaN;  ///< queries/s over the SUT's time alone
  double samples_per_second = kNaN;
  std::int64_t harness_ns_total = 0;  ///< time the load generator itself spent
  double harness_ns_per_query = kNaN;
  double mean_issue_delay_ns = kNaN;        ///< scheduled arrival to issue, mean (Server)
  std::int64_t overlatency_count = 0;       ///< queries over latency_bound_ns
  double early_stopping_latency_ns = kNaN;  ///< LoadGen's early-stopping estimate of the percentile
  double early_stopping_percentile = kNaN;
  double target_qps = 0;                ///< Server's arrival rate (queries/s); 0 in the other scenarios
  std::int64_t latency_bound_ns = 0;    ///< Server's bound on the percentile; 0 without one
  bool meets_bound = false;             ///< Server: the early-stopping estimate is within latency_bound_ns
  double p50_ns = kNaN, p99_ns = kNaN;  ///< query latency percentiles
  /// The predictor's batches during the measured queries (a query may be split into several, or several merged):
  /// how many, and their latency p50, p99 and 5%-trimmed mean (ns).
  std::int64_t batches = 0;
  double batch_p50_ns = kNaN, batch_p99_ns = kNaN, batch_trimmed_mean_ns = kNaN;
  /// Which queries' traces were kept (`xsp scenario --trace-tail N`); nullopt when none were traced.
  std::optional<TailTraceSelection> tail_traces;
  bool operator==(const ScenarioOutcome&) const;
};

/// One of a generation run's slowest steps (`--tail-steps`), tagged in the trace (docs/generation.md "Tails").
struct GenerationTailStep {
  std::string kind;          ///< "first_token" (a prefill) or "decode"
  std::int64_t rank = 0;     ///< 1 = slowest of its kind
  std::int64_t request = 0;  ///< measured request (0-based, issue order)
  std::int64_t step = 0;     ///< 0 = prefill, i = decode step i
  double latency_ns = 0;
  double percentile = 0;      ///< nearest-rank percentile within its kind, as KeptQuery::percentile
  std::uint64_t span_id = 0;  ///< its span in the run's trace
  bool full_trace = false;    ///< the request's deeper spans (framework, kernels) were kept
  bool operator==(const GenerationTailStep&) const = default;
};

/// LoadGen's early-stopping check of one token metric (loadgen::TokenMetricCheck, MLPerf LoadGen's token latencies).
struct TokenLatencyCheck {
  std::int64_t samples = 0;  ///< requests with the metric (TPOT: those with >= 2 tokens)
  double percentile = 90;    ///< %
  double estimate_ns = std::numeric_limits<double>::quiet_NaN();  ///< NaN when too few samples
  bool enough_samples = false;
  std::int64_t min_samples = 0;     ///< the fewest samples with which early stopping can claim the percentile
  std::optional<double> bound_ns;   ///< with bounds (`--ttft-bound-ms`, `--tpot-bound-ms`) only
  std::optional<bool> meets_bound;  ///< idem
  bool operator==(const TokenLatencyCheck&) const;
};

/// LoadGen's own view of a generation run (its loadgen::Result): how it scheduled the requests.
struct GenerationLoadgenView {
  std::string scenario;  ///< the LoadGen scenario that issued the requests ("multi-stream" for a batch sweep)
  std::int64_t queries = 0;
  double ttft_p50_ns = std::numeric_limits<double>::quiet_NaN();     ///< FirstTokenComplete latency p50
  double latency_p50_ns = std::numeric_limits<double>::quiet_NaN();  ///< query latency p50
  double mean_issue_delay_ns = 0;
  double harness_ns_per_query = 0;
  bool operator==(const GenerationLoadgenView&) const;
};

/// One generation run (RecordKind::kGeneration, docs/generation.md): token latencies per sequence over the run's
/// measured requests. TTFT = issue to the first token, TPOT = (last − first token) / (tokens − 1), ITL = every gap
/// between tokens, e2e = issue to the last token (vLLM benchmark_serving, MLPerf LoadGen's token latencies).
struct GenerationOutcome {
  std::int64_t requests = 0;                ///< measured requests
  std::int64_t sequences = 0;               ///< sequences they generated (what the distributions count)
  std::int64_t sequences_per_request = 1;   ///< the run's batch size
  std::vector<std::int64_t> prompt_tokens;  ///< per request, issue order
  std::vector<std::int64_t> output_tokens;  ///< per request, issue order
  std::int64_t input_tokens = 0;            ///< over all sequences
  std::int64_t output_tokens_total = 0;     ///< over all sequences
  LatencySummary ttft_ns, tpot_ns, itl_ns, e2e_ns;
  std::int64_t duration_ns = 0;  ///< first issue to last token
  double input_tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  double output_tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  double requests_per_s = std::numeric_limits<double>::quiet_NaN();
  std::int64_t single_token_requests = 0;  ///< sequences of one token (no TPOT)
  Verdict ttft_stability = Verdict::kNotAssessed, tpot_stability = Verdict::kNotAssessed;
  std::int64_t kv_cache_bytes = 0;                     ///< the largest KV cache a request allocated
  std::vector<double> ttft_values_ns, tpot_values_ns;  ///< per sequence, issue order
  /// LoadGen's early-stopping checks (single-stream and server scenarios of timed runs); nullopt otherwise.
  std::optional<TokenLatencyCheck> ttft_check, tpot_check;
  /// With bounds: whether both metrics met them, and why not (one sentence per failed metric).
  std::optional<bool> valid;
  std::string invalid_reason;
  std::optional<GenerationLoadgenView> loadgen;  ///< nullopt in stores of before LoadGen issued generation
  std::vector<GenerationTailStep> tail;
  /// false for the counter run of `--trace-level hardware`: kernels were replayed, its timings are not the model's.
  bool timings_used = true;
  std::string counter_replay;        ///< "kernel" in a counter run, else empty
  std::string counters_unavailable;  ///< why a counter run has no counters, else empty
  bool operator==(const GenerationOutcome&) const;
};

/// JSON of the outcomes, as the store's columns and the REST API hold them (keys = the member names; NaN as null;
/// absent optionals left out).
nlohmann::json to_json(const TailTraceSelection& s);
nlohmann::json to_json(const ScenarioOutcome& o);
nlohmann::json to_json(const GenerationOutcome& o);
/// Inverses of to_json. Keys a later XSP added may be absent (they take their defaults); a key of the wrong type or
/// a missing required one ("scenario", "query_count" / "requests", "ttft_ns", "tpot_ns") throws
/// std::invalid_argument naming the key.
TailTraceSelection tail_trace_selection_from_json(const nlohmann::json& j);
ScenarioOutcome scenario_outcome_from_json(const nlohmann::json& j);
GenerationOutcome generation_outcome_from_json(const nlohmann::json& j);
/// Inverse of to_json(LatencySummary) (xsp/record/record.h): null reads back as NaN; throws std::invalid_argument
/// when "n" is missing.
LatencySummary latency_summary_from_json(const nlohmann::json& j);

}  // namespace xsp
