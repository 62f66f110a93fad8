// Two-sample significance tests for latency comparisons (`xsp compare`, table "compare.A1.significance").
//
// Mann–Whitney U test (Mann & Whitney, "On a test of whether one of two random variables is stochastically
// larger than the other", Ann. Math. Statist. 18(1), 1947): with samples x (size n1) and y (size n2),
// N = n1 + n2, pool and rank them (ties get the mean of the ranks they span), R1 = sum of the ranks of x:
//   U1 = R1 − n1(n1+1)/2,  U2 = n1·n2 − U1
// Two-sided p-value by the normal approximation with tie correction and continuity correction, as SciPy's
// scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True) computes it (SciPy docs; also Hollander,
// Wolfe & Chicken, Nonparametric Statistical Methods, 3rd ed., §4.1):
//   μ = n1·n2/2
//   σ = sqrt( n1·n2/12 · ( (N+1) − Σ_k (t_k³ − t_k) / (N(N−1)) ) ),  t_k = size of the k-th group of ties
//   z = (max(U1,U2) − μ − ½) / σ,   p = 2·(1 − Φ(z)) = erfc(z/√2), capped at 1
// The approximation is good from about n1, n2 ≥ 8; latency runs have tens to thousands of batches. No exact
// distribution is computed: with fewer than kMinSamplesPerSide values on a side the result says so
// (enough_samples = false) and is never marked significant.
//
// Bootstrap 95% confidence interval of median(y) − median(x) (Efron & Tibshirani, An Introduction to the
// Bootstrap, 1993, ch. 13, percentile interval): B resamples of each sample with replacement, each giving
// median(y*) − median(x*); the interval is the 2.5th and 97.5th percentiles of those B differences (linear
// interpolation between order statistics, "type 7" of Hyndman & Fan 1996). The generator is std::mt19937_64
// with a fixed seed, so the interval is reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xsp {

/// Below this many values on either side the normal approximation is not trusted.
inline constexpr std::size_t kMinSamplesPerSide = 8;

/// Result of mann_whitney_u().
struct MannWhitneyResult {
  double u1 = 0;             ///< U of the first sample (number of pairs (x_i, y_j) with x_i > y_j, ties ½)
  double u2 = 0;             ///< n1·n2 − u1
  double z = 0;              ///< standardized statistic (≥ 0; 0 when σ = 0)
  double p_value = 1;        ///< two-sided, in [0, 1]
  bool enough_samples = false;  ///< both sizes ≥ kMinSamplesPerSide
};

/// Mann–Whitney U test of x against y (formulas in the header comment). Throws std::invalid_argument when a
/// sample is empty or holds a NaN. All values equal (σ = 0): p = 1.
MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

/// Median (mean of the two middle values for even sizes). Throws std::invalid_argument when v is empty.
double median(std::vector<double> v);

/// Bootstrap percentile confidence interval of median(y) − median(x), in the units of the samples.
struct BootstrapInterval {
  double difference = 0;  ///< median(y) − median(x) of the samples themselves
  double low = 0;         ///< lower bound
  double high = 0;        ///< upper bound
};

/// `resamples` ≥ 1 resamples, confidence in (0, 1) (0.95: 95%), seeded generator (see the header comment).
/// Throws std::invalid_argument when a sample is empty or an argument is out of range.
BootstrapInterval bootstrap_median_difference(const std::vector<double>& x, const std::vector<double>& y,
                                              int resamples = 2000, double confidence = 0.95,
                                              std::uint64_t seed = 0);

/// Both tests at once, as `xsp compare` reports them.
struct LatencyComparison {
  MannWhitneyResult test;
  BootstrapInterval median_difference;
  bool significant = false;  ///< test.enough_samples and test.p_value < alpha
};

/// Mann–Whitney U at level alpha (in (0,1)) plus the bootstrap interval of the median difference.
LatencyComparison compare_latencies(const std::vector<double>& x, const std::vector<double>& y, double alpha = 0.05,
                                    int resamples = 2000, std::uint64_t seed = 0);

}  // namespace xsp
