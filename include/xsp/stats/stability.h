// Is a latency a result yet? Stability verdicts over windows, intervals of the median, and drift-proof paired
// overheads (SPEC §3 "Stability"). Pure functions on latency samples; the runner (xsp/eval/measurement.h)
// decides when to call them.
//
// Sources:
//  - stability windows: Triton perf_analyzer (--stability-percentage, 3 measurement windows: the last windows
//    must agree within a fraction of their mean before a measurement counts);
//  - interval of a median from order statistics: Conover, "Practical Nonparametric Statistics" (3rd ed.,
//    1999), §3.2 (binomial(n, 1/2) ranks);
//  - batch means for autocorrelated samples: Law & Kelton, "Simulation Modeling and Analysis" (3rd ed., 2000),
//    §9.5.3 (the means of consecutive batches are nearly independent when batches are long);
//  - paired ratios of interleaved blocks: a randomized-block design in the order ABBA, which cancels a linear
//    drift exactly over each pair of rounds (Box, Hunter & Hunter, "Statistics for Experimenters", ch. 4).
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xsp {

/// Outcome of the stability rule for one run.
enum class Verdict {
  kStable,       ///< the result windows agree within the tolerance
  kUnstable,     ///< they do not (after the maximum duration, or when no extension was allowed)
  kNotAssessed,  ///< too few windows (fewer than StabilityRule::windows) or a run whose timings are never used
};
/// "stable" | "unstable" | "not_assessed".
std::string_view to_string(Verdict verdict);
/// Inverse of to_string(Verdict); std::nullopt for anything else.
std::optional<Verdict> parse_verdict(std::string_view text);

/// The stability rule. A run is stable when the medians of its result windows (at least `windows` of them)
/// all lie within `tolerance` of each other: (max − min) / mean of the window medians <= tolerance.
/// perf_analyzer's default is 3 windows within 10%.
struct StabilityRule {
  int windows = 3;          ///< K, the fewest windows assessed (>= 2)
  double tolerance = 0.10;  ///< fraction (0.10 = 10%)
  bool operator==(const StabilityRule&) const = default;
};

/// Equality of stored figures: NaN (a figure that does not exist, e.g. the drift of one window) equals NaN, so
/// that a record read back from the store compares equal to the one saved.
inline bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

/// A two-sided interval [low, high] in the unit of its samples.
struct Interval {
  double low = 0, high = 0;
  bool contains(double x) const { return low <= x && x <= high; }
  bool operator==(const Interval& o) const { return same_value(low, o.low) && same_value(high, o.high); }
};

/// Everything stored about a run's latency besides its percentiles (all latencies in ns).
struct StabilityAssessment {
  Verdict verdict = Verdict::kNotAssessed;
  std::vector<double> window_medians_ns;  ///< median of each assessed window, in time order
  double spread_fraction = 0;             ///< (max − min) / mean of window_medians_ns; NaN with fewer than 2 windows
  double cv = 0;                          ///< coefficient of variation (sample stddev / mean) of every assessed batch
  double drift_fraction = 0;  ///< last window median / first window median − 1; NaN with fewer than 2 windows
  std::size_t samples = 0;    ///< batches assessed
  double median_ns = 0;       ///< median of every assessed batch
  /// 95% interval of the median: the wider of (a) the order-statistic interval (assumes independent batches)
  /// and (b) median ± t(0.975, K−1) · sd(window medians) / sqrt(K) (batch means: holds under slow drift and
  /// autocorrelation, which (a) ignores). With fewer than 6 samples (a) does not reach 95% and is [min, max].
  Interval ci95_ns;
  bool operator==(const StabilityAssessment& o) const {
    if (window_medians_ns.size() != o.window_medians_ns.size()) return false;
    for (std::size_t i = 0; i < window_medians_ns.size(); ++i)
      if (!same_value(window_medians_ns[i], o.window_medians_ns[i])) return false;
    return verdict == o.verdict && same_value(spread_fraction, o.spread_fraction) && same_value(cv, o.cv) &&
           same_value(drift_fraction, o.drift_fraction) && samples == o.samples && same_value(median_ns, o.median_ns) &&
           ci95_ns == o.ci95_ns;
  }
};

/// Assesses windows of batch latencies (ns), each window one inner vector in time order. Fewer than
/// rule.windows non-empty windows give Verdict::kNotAssessed (the numbers are still filled). Throws
/// std::invalid_argument for rule.windows < 2 or a tolerance outside (0, 1].
StabilityAssessment assess_windows(const std::vector<std::vector<double>>& windows, const StabilityRule& rule);

/// Splits `samples` (time order) into rule.windows consecutive windows of nearly equal size (the first ones get
/// one more when n is not a multiple) and assesses them. For runs whose windows were not planned (scenario
/// queries, stored records of older versions).
StabilityAssessment assess_series(const std::vector<double>& samples, const StabilityRule& rule);

/// Median of `samples` (mean of the two middle values for even n); NaN for none.
double median(std::vector<double> samples);

/// Distribution-free 95% interval of the median of `samples` (order statistics with exact binomial(n, 1/2)
/// ranks, the narrowest symmetric pair whose coverage is >= 95%). For n < 6 no such pair exists and the result
/// is [min, max]. NaN bounds for none.
Interval median_ci95(std::vector<double> samples);

/// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom (the factor of a 95% interval): exact
/// table values for df <= 30, a Cornish–Fisher expansion above (error < 1e-4). Throws std::invalid_argument for
/// df < 1.
double student_t975(int df);

/// The overhead of a deeper level over a shallower one from paired blocks: round j ran one block of each, and
/// deeper[j], shallower[j] are their median latencies. Estimate: exp(mean of ln(deeper/shallower)) − 1, a
/// geometric mean of per-round ratios, so that drift common to both blocks of a round cancels; interval:
/// Student t on the log ratios (df = rounds − 1). With interleaved rounds in the order AB, BA, AB, ... a linear
/// drift cancels exactly over every two rounds.
struct PairedOverhead {
  std::size_t rounds = 0;
  double overhead_fraction = 0;  ///< 0.10 = the deeper level adds 10%
  Interval ci95_fraction;        ///< NaN bounds with fewer than 2 rounds
  /// The interval excludes 0 (false with fewer than 2 rounds).
  bool significant() const { return rounds >= 2 && (ci95_fraction.low > 0 || ci95_fraction.high < 0); }
  bool operator==(const PairedOverhead& o) const {
    return rounds == o.rounds && same_value(overhead_fraction, o.overhead_fraction) && ci95_fraction == o.ci95_fraction;
  }
};
/// Throws std::invalid_argument when the sizes differ or a latency is not positive.
PairedOverhead paired_overhead(const std::vector<double>& deeper, const std::vector<double>& shallower);

/// The same estimator for two groups of block medians that were not paired (e.g. M blocks before and after
/// kernel tracing): exp(mean ln(after) − mean ln(before)) − 1 with a Welch interval on the log medians.
/// Throws std::invalid_argument when either group is empty or a latency is not positive.
PairedOverhead unpaired_change(const std::vector<double>& after, const std::vector<double>& before);

/// How an overhead reads to a person: "+10.2% [+8.1%, +12.3%]", then " not significant" when the interval holds
/// 0, or " negative: the deeper level ran faster (not an overhead; see the run's warnings)" when the whole
/// interval lies below 0. A negative estimate is never printed without one of these. With fewer than 2 rounds:
/// "+10.2% (no interval: one round)".
std::string describe_overhead(const PairedOverhead& overhead);

}  // namespace xsp
