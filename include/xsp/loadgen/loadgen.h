// Benchmarking scenarios with MLPerf LoadGen semantics (SPEC §6): SingleStream, MultiStream, Server, Offline.
//
// Design (after LoadGen's): the load generator owns the clock and the schedule; the system under test (SUT)
// only receives queries and reports their completion. Everything that can be computed before the timed
// region is (schedules, sample orders, result vectors); the timed region records raw nanosecond timestamps
// into preallocated vectors (deferred logging) and every statistic is computed after the run.
// Every time is in nanoseconds on the trace host clock (now_ns(), CLOCK_MONOTONIC).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "xsp/stats/stats.h"

namespace xsp::loadgen {

/// One query: an id (dense, 0-based in issue order within a run) and the sample indices it covers.
/// `samples` points into the load generator's memory and stays valid until the run returns.
struct Query {
  std::uint64_t id = 0;
  std::span<const std::uint64_t> samples;
  /// The query's latency origin (ns, the run's clock): its scheduled arrival in the Server scenario, its issue time
  /// in the others. A SUT that serves queries inline or in order can attribute a query's wait from it.
  std::int64_t issued_ns = 0;
};

/// Where a SUT reports completions. Thread-safe: may be called from any thread, inline in issue() included.
class QueryCompleter {
 public:
  virtual ~QueryCompleter() = default;
  /// Query `query_id` finished at `timestamp_ns` (the run's clock). Call exactly once per issued query.
  virtual void complete(std::uint64_t query_id, std::int64_t timestamp_ns) noexcept = 0;
  /// Query `query_id` produced its first token at `timestamp_ns` (MLPerf LoadGen's FirstTokenComplete, used with
  /// TestSettings::use_token_latencies): at most once per query, before its complete(). A SUT without tokens never
  /// calls it. The default ignores it.
  virtual void first_token(std::uint64_t query_id, std::int64_t timestamp_ns) noexcept {
    (void)query_id;
    (void)timestamp_ns;
  }
};

/// Where a run reads time and how it waits for a scheduled arrival. The default (Settings::timebase nullptr) is
/// now_ns() (CLOCK_MONOTONIC) and a sleep-then-spin wait; a test drives a fake clock through its own.
class Timebase {
 public:
  virtual ~Timebase() = default;
  /// Nanoseconds on a monotonic clock.
  virtual std::int64_t now_ns() const = 0;
  /// Returns once now_ns() >= `until_ns`.
  virtual void wait_until(std::int64_t until_ns) const = 0;
};

/// The system under test, in LoadGen's style: few methods, each with its contract.
class SystemUnderTest {
 public:
  virtual ~SystemUnderTest() = default;
  /// A short name for reports.
  virtual std::string name() const = 0;
  /// Called once before a run's first issue(); every completion of the run goes to `completer`.
  virtual void start(QueryCompleter& completer) = 0;
  /// Hands over one query. Must return quickly (queue the work) or complete inline; never blocks for long,
  /// since it runs on the load generator's thread and delays the next issue.
  virtual void issue(const Query& query) = 0;
  /// Called after every issued query has completed; the SUT drops its reference to the completer.
  virtual void stop() = 0;
};

using SutFactory = std::function<std::unique_ptr<SystemUnderTest>()>;

enum class Scenario { kSingleStream, kMultiStream, kServer, kOffline };

/// "single-stream", "multi-stream", "server", "offline".
std::string to_string(Scenario s);
/// Parses the names of to_string(); throws std::invalid_argument otherwise.
Scenario parse_scenario(const std::string& name);

/// Settings of one scenario run (SPEC §6). A run lasts until both minimums are met (Server and Offline:
/// their schedule/sample count is sized from both up front).
struct Settings {
  Scenario scenario = Scenario::kSingleStream;
  std::int64_t min_duration_ms = 1000;
  std::uint64_t min_query_count = 100;
  /// Hard cap on measured queries (0 = none); keeps a fast SUT from running for ever in SingleStream.
  std::uint64_t max_query_count = 0;
  /// Seed of the Server arrival schedule and of the sample order; recorded in the result.
  std::uint64_t seed = 0;
  /// Headline tail percentile (0..100): default per scenario when <= 0 (SingleStream 90, others 99).
  double target_percentile = 0;
  /// Server: the bound the target percentile is checked against (ns).
  std::int64_t latency_bound_ns = 10'000'000;
  /// Server: Poisson arrival rate; Offline: used to size the sample count (target_qps * min_duration).
  double target_qps = 100;
  /// MultiStream: samples per query (Offline ignores it: one query holds every sample).
  std::uint64_t samples_per_query = 8;
  /// Size of the sample library indices are drawn from (indices are in [0, sample_count)).
  std::uint64_t sample_count = 1024;
  /// Queries issued one at a time before measuring; never measured.
  std::uint64_t warmup_queries = 0;
  /// Early-stopping confidence (LoadGen uses 0.99).
  double early_stopping_confidence = 0.99;
  /// A front end's signal flag (0 = go on), read before each query is issued. When it is set the run stops
  /// issuing, waits for the queries already issued and returns with Result::interrupted: SingleStream and
  /// MultiStream after the query in flight, Server before the next arrival. Offline's one query is not cut.
  /// find_peak_qps() stops searching too. nullptr = never interrupted.
  const std::atomic<int>* interrupt = nullptr;
  /// The clock every timestamp is read from and the Server scenario waits on; nullptr = now_ns() and a sleep.
  const Timebase* timebase = nullptr;

  /// The effective target percentile (target_percentile, or the scenario's default).
  double percentile() const;
};

/// The outcome of one run. Latencies in ns, rates per second.
struct Result {
  Settings settings;                      ///< as run (seed included: it is the recorded seed)
  double percentile = 0;                  ///< effective target percentile
  std::uint64_t query_count = 0;          ///< measured queries
  std::uint64_t sample_count = 0;         ///< samples over the measured queries
  std::vector<std::int64_t> issue_ns;     ///< per query, issue order
  std::vector<std::int64_t> complete_ns;  ///< per query, issue order
  /// complete - origin, per query, issue order (raw). The origin is the issue time, and in the Server scenario the
  /// scheduled arrival (as MLPerf LoadGen's sample latency): a SUT slow to accept queries cannot hide its queue.
  std::vector<std::int64_t> latency_ns;
  std::vector<std::int64_t> scheduled_ns;  ///< Server: the scheduled arrival offset from the run start
  /// Per query, issue order: first token - origin (ns), when the SUT reported first tokens
  /// (QueryCompleter::first_token); empty when it reported none. -1 for a query without one.
  std::vector<std::int64_t> first_token_latency_ns;
  LatencySummary first_token_summary;  ///< of the queries' first_token_latency_ns (NaN fields when none)
  LatencySummary summary;              ///< p50/p90/p95/p99/p99.9, trimmed mean... of latency_ns
  double target_latency_ns = 0;        ///< the target percentile of latency_ns
  std::int64_t duration_ns = 0;        ///< first issue to last completion
  /// Queries (Offline: samples) per second over duration_ns: what the harness + SUT achieved.
  double qps_with_overhead = 0;
  /// The same rate with the harness's own time taken out: count / (duration - harness_ns_total).
  double qps_without_overhead = 0;
  double samples_per_second = 0;  ///< sample_count / duration
  /// The load generator's own time in the measured loop: loop wall time minus time inside SUT::issue() and
  /// time spent waiting (for completions, or for the next scheduled arrival). Includes timestamping.
  std::int64_t harness_ns_total = 0;
  double harness_ns_per_query = 0;
  /// Server: mean lateness of issue versus the schedule (ns); large values mean the generator fell behind.
  double mean_issue_delay_ns = 0;
  /// Queries over the latency bound (Server) or over target_latency_ns (other scenarios).
  std::uint64_t overlatency_count = 0;
  /// Early stopping (see early_stopping_*): the latency one may claim as the target percentile with the
  /// configured confidence; NaN when too few queries to claim any.
  double early_stopping_latency_ns = 0;
  /// Server: the highest percentile one may claim the latency bound meets, with that confidence (0..100).
  double early_stopping_percentile = 0;
  /// Server: the target percentile meets the bound (target_latency_ns <= latency_bound_ns).
  bool meets_bound = false;
  /// Settings::interrupt stopped the run before its minimums: its figures describe a cut run, not a result.
  bool interrupted = false;
};

/// What run() sizes before it starts (MLPerf LoadGen's deferred logging: capacity for the minimum run, grown only
/// between queries in the stream scenarios): `queries` planned and `samples_per_query`. SingleStream and
/// MultiStream: min_query_count queries (capped at max_query_count when set) of 1 or samples_per_query samples; Server:
/// max(min_query_count, ⌈target_qps · min_duration_ms / 1000⌉) queries of 1 sample (capped likewise); Offline: one
/// query of max(min_query_count, ⌈target_qps · min_duration_ms / 1000⌉, 1) samples. Never 0 queries.
struct PlannedRun {
  std::uint64_t queries = 1;
  std::uint64_t samples_per_query = 1;
};
PlannedRun planned_run(const Settings& settings);

/// Runs `settings.scenario` against `sut` on the calling thread (the SUT does its work on its own threads or
/// inline). Throws std::invalid_argument for bad settings (target_qps <= 0 for Server, samples_per_query 0,
/// sample_count 0, percentile outside (0, 100)). An exception thrown by an inline SUT's issue() leaves run() as
/// it is (the SUT is not stopped: an inline SUT has nothing running).
Result run(SystemUnderTest& sut, const Settings& settings);

/// The Server arrival schedule: `count` offsets from the run start (ns, non-decreasing), the first at 0
/// and then exponential inter-arrival times of mean 1/qps seconds from std::mt19937_64(seed) (a Poisson
/// process). Same (qps, count, seed) -> same schedule. Throws std::invalid_argument for qps <= 0.
std::vector<std::int64_t> poisson_schedule(double qps, std::size_t count, std::uint64_t seed);

/// Arrival offsets from the run start (ns): the first at 0, each next one `gap(rng)` seconds later, the gaps drawn
/// in order from std::mt19937_64(seed). poisson_schedule() is this with exponential gaps; `xsp bench-serve`'s bursty
/// arrivals are it with gamma gaps (docs/serving.md). `gap` is any distribution over seconds (>= 0).
template <class GapDistribution>
std::vector<std::int64_t> schedule_from_gaps(GapDistribution gap, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out(count);
  double t_s = 0;
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = static_cast<std::int64_t>(t_s * 1e9);
    t_s += gap(rng);
  }
  return out;
}

// ---- Early stopping -------------------------------------------------------------------------------------
// Source: MLPerf LoadGen's early-stopping rule (mlcommons/inference, loadgen docs "Early stopping"): treat
// each query as a Bernoulli trial that "exceeds the p-th percentile latency" with probability 1 - p/100 if
// the true p-th percentile were exactly that latency. Having seen k queries exceed a latency L out of n, we
// may claim "p-th percentile <= L" with confidence c when P[Binomial(n, 1 - p/100) <= k] <= 1 - c: had the
// true percentile been above L, seeing this few overlatency queries would be that unlikely. Implemented
// here from the binomial distribution (log-space sums); no LoadGen code is used.

/// P[X <= k] for X ~ Binomial(n, q), computed in log space (exact sum, no normal approximation).
/// 1 for k >= n; throws std::invalid_argument for q outside [0, 1].
double binomial_cdf(std::uint64_t k, std::uint64_t n, double q);

/// The largest number of overlatency queries t that n queries may hold while still claiming the p-th
/// percentile with confidence c: max t with binomial_cdf(t, n, 1 - p/100) <= 1 - c; -1 when even t = 0
/// fails (too few queries). p in (0, 100), c in (0, 1), else std::invalid_argument.
std::int64_t early_stopping_max_overlatency(std::uint64_t n, double p, double confidence);

/// The early-stopping estimate of the p-th percentile latency: with t = early_stopping_max_overlatency(n, p,
/// c), the (t+1)-th largest latency (at most t queries exceed it). NaN when t is -1 or no latencies.
double early_stopping_latency(std::vector<std::int64_t> latencies_ns, double p, double confidence);

/// The highest percentile (0..100) one may claim with confidence c after k of n queries exceeded a bound:
/// 100 * (1 - q*), q* the overlatency probability with binomial_cdf(k, n, q*) = 1 - c (the one-sided
/// Clopper-Pearson upper bound, found by bisection to 1e-12). 0 for n == 0.
double early_stopping_percentile(std::uint64_t n, std::uint64_t k, double confidence);

// ---- Peak-QPS search ------------------------------------------------------------------------------------

struct PeakSearchOptions {
  double initial_qps = 0;            ///< first rate tried; settings.target_qps when <= 0
  double relative_tolerance = 0.05;  ///< stop when (fail - pass) / pass < this
  int max_runs = 20;                 ///< runs at most (bracketing included)
};

struct PeakSearchResult {
  double peak_qps = 0;        ///< highest tried rate whose target percentile met the bound; 0 if none
  std::vector<Result> tried;  ///< every run, in the order tried
};

/// Finds the highest Server target QPS whose target-percentile latency meets settings.latency_bound_ns:
/// brackets (doubling while runs pass, halving while they fail) then bisects between the highest passing
/// and lowest failing rate. Each run gets a fresh SUT from `factory` (no queue carried over) and
/// settings.seed. Throws std::invalid_argument when settings.scenario is not Server-compatible (it is
/// forced to Server) or the initial rate is <= 0.
PeakSearchResult find_peak_qps(const SutFactory& factory, const Settings& settings,
                               const PeakSearchOptions& options = {});

}  // namespace xsp::loadgen
