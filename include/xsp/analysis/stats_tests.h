// Two-sample significance tests for latency comparisons (`xsp compare`, table "compare.A1.significance").
//
// Mann–Whitney U test (Mann & Whitney, "On a test of whether one of two random variables is stochastically
// larger than the other", Ann. Math. Statist. 18(1), 1947): with samples x (size n1) and y (size n2),
// N = n1 + n2, pool and rank them (ties get the mean of the ranks they span), R1 = sum of the ranks of x:
//   U1 = R1 − n1(n1+1)/2,  U2 = n1·n2 − U1
// Two-sided p-value, by one of two methods:
//  * exact (n1 + n2 <= kExactMaxTotal): the permutation distribution of U1. Under H0 every one of the
//    C(N, n1) ways to give n1 of the N pooled (mid)ranks to x is equally likely; counting, for every subset
//    size k and rank sum s, the subsets of the first i pooled values with that size and sum (the recursion
//    c_i(k, s) = c_{i-1}(k, s) + c_{i-1}(k-1, s - r_i), on doubled midranks so that sums stay integers) gives
//    the distribution of R1 and so of U1 = R1 − n1(n1+1)/2. Without ties this is Mann & Whitney's own
//    recursion and equals scipy.stats.mannwhitneyu(method="exact"); with ties it is the exact conditional
//    (permutation) test on midranks, as R's coin::wilcox_test(distribution="exact") computes it (Hollander,
//    Wolfe & Chicken §4.1, "ties: exact conditional distribution"). Two-sided:
//      p = P(|U1 − μ| ≥ |u1_obs − μ|),  μ = n1·n2/2
//    which without ties (U1 symmetric about μ) is SciPy's 2·P(U ≥ max(U1,U2)) capped at 1. The count needs
//    O(N · n1 · N²) work: for N = 40, ~1.3M additions. Examples (no ties, complete separation): n1 = n2 = 3 →
//    p = 2/20 = 0.1; n1 = n2 = 4 → p = 2/70 ≈ 0.0286.
//  * normal approximation (larger samples) with tie and continuity correction, as SciPy's
//    scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True) computes it (SciPy docs; also
//    Hollander, Wolfe & Chicken, Nonparametric Statistical Methods, 3rd ed., §4.1):
//      μ = n1·n2/2
//      σ = sqrt( n1·n2/12 · ( (N+1) − Σ_k (t_k³ − t_k) / (N(N−1)) ) ),  t_k = size of the k-th group of ties
//      z = (max(U1,U2) − μ − ½) / σ,   p = 2·(1 − Φ(z)) = erfc(z/√2), capped at 1
//    The approximation is good from about n1, n2 ≥ 8, so above N = 40 it is well inside its range.
// The exact test is valid at any size, so no size gate is needed for "significant": with n1 = n2 = 2 the
// smallest attainable p is 1/3, so tiny samples simply never reach alpha.
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

#include "xsp/stats/stability.h"

namespace xsp {

/// Up to this many values in total (n1 + n2) the p-value is exact (permutation distribution); above it, the
/// normal approximation. 40 keeps the exact count well under a millisecond.
inline constexpr std::size_t kExactMaxTotal = 40;

/// Result of mann_whitney_u().
struct MannWhitneyResult {
  double u1 = 0;       ///< U of the first sample (number of pairs (x_i, y_j) with x_i > y_j, ties ½)
  double u2 = 0;       ///< n1·n2 − u1
  double z = 0;        ///< standardized statistic of the normal approximation (≥ 0; 0 when σ = 0)
  double p_value = 1;  ///< two-sided, in [0, 1]
  bool exact = false;  ///< p_value from the exact permutation distribution (n1 + n2 ≤ kExactMaxTotal)
  bool ties = false;   ///< the pooled sample holds tied values
};

/// How mann_whitney_u() computes p: kAuto = exact when n1 + n2 ≤ kExactMaxTotal, else normal approximation.
enum class MannWhitneyMethod { kAuto, kExact, kAsymptotic };

/// Mann–Whitney U test of x against y (formulas in the header comment). Throws std::invalid_argument when a
/// sample is empty or holds a NaN, or for kExact with n1 + n2 > 200 (the count would take too long). All
/// values equal: p = 1.
MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y,
                                 MannWhitneyMethod method = MannWhitneyMethod::kAuto);

/// Two-sided exact p-value of the Mann–Whitney test from the pooled midranks: `ranks` are the N pooled
/// (mid)ranks (any order), `n1` of them belong to the first sample and sum to `r1`. P(|R1 − E R1| ≥ |r1 −
/// E R1|) over all C(N, n1) equally likely assignments (header comment). Throws std::invalid_argument when
/// n1 is 0 or ≥ N, or a rank is not a multiple of ½.
double mann_whitney_exact_p(const std::vector<double>& ranks, std::size_t n1, double r1);

// median() is xsp::median of xsp/stats/stability.h (NaN for an empty sample).

/// Bootstrap percentile confidence interval of median(y) − median(x), in the units of the samples.
struct BootstrapInterval {
  double difference = 0;  ///< median(y) − median(x) of the samples themselves
  double low = 0;         ///< lower bound
  double high = 0;        ///< upper bound
};

/// `resamples` ≥ 1 resamples, confidence in (0, 1) (0.95: 95%), seeded generator (see the header comment).
/// Throws std::invalid_argument when a sample is empty or an argument is out of range.
BootstrapInterval bootstrap_median_difference(const std::vector<double>& x, const std::vector<double>& y,
                                              int resamples = 2000, double confidence = 0.95, std::uint64_t seed = 0);

/// Both tests at once, as `xsp compare` reports them.
struct LatencyComparison {
  MannWhitneyResult test;
  BootstrapInterval median_difference;
  bool significant = false;  ///< test.p_value < alpha
};

/// Mann–Whitney U at level alpha (in (0,1)) plus the bootstrap interval of the median difference.
LatencyComparison compare_latencies(const std::vector<double>& x, const std::vector<double>& y, double alpha = 0.05,
                                    int resamples = 2000, std::uint64_t seed = 0);

}  // namespace xsp
