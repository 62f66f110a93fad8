// Mann-Whitney U and the bootstrap median-difference interval on samples with known outcomes.
#include "xsp/analysis/stats_tests.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "xsp/analysis/compare.h"

namespace xsp {
namespace {

std::vector<double> normal_sample(std::size_t n, double mean, double sd, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(MannWhitney, WorkedExampleWithTies) {
  // Ties within x (2.3, 5.5) and across samples (3.0, 5.5). By hand: pooled ranks of x are
  // 1, 2.5, 2.5, 4.5, 6, 9, 9, 11, 13, 16 (ties share their mean rank) -> R1 = 74.5,
  // U1 = 74.5 - 10*11/2 = 19.5, U2 = 100 - 19.5 = 80.5. Tie groups {2.3 x2}, {3.0 x2}, {5.5 x3}:
  // sum(t^3 - t) = 6 + 6 + 24 = 36; sigma^2 = 100/12 * (21 - 36/380) = 174.2105, sigma = 13.19888,
  // z = (80.5 - 50 - 0.5) / 13.19888 = 2.27292, p = erfc(z / sqrt 2) = 0.0230310.
  // SciPy 1.10: mannwhitneyu(x, y, method="asymptotic") -> statistic=19.5, pvalue=0.023031030289727986.
  const std::vector<double> x = {1.1, 2.3, 2.3, 3.0, 4.2, 5.5, 5.5, 6.1, 7.0, 8.4};
  const std::vector<double> y = {3.0, 4.8, 5.5, 6.9, 7.7, 8.0, 9.1, 9.9, 10.5, 12.0};
  const MannWhitneyResult r = mann_whitney_u(x, y, MannWhitneyMethod::kAsymptotic);
  EXPECT_DOUBLE_EQ(r.u1, 19.5);
  EXPECT_DOUBLE_EQ(r.u2, 80.5);
  EXPECT_NEAR(r.p_value, 0.023031030289727986, 1e-12);  // scipy.stats.mannwhitneyu(x, y, method="asymptotic")
  EXPECT_FALSE(r.exact);
  EXPECT_TRUE(r.ties);
  // Swapping the samples swaps U1/U2 and keeps p.
  const MannWhitneyResult s = mann_whitney_u(y, x, MannWhitneyMethod::kAsymptotic);
  EXPECT_DOUBLE_EQ(s.u1, 80.5);
  EXPECT_NEAR(s.p_value, r.p_value, 1e-15);
}

TEST(MannWhitney, IdenticalDistributionsNotSignificant) {
  const auto a = normal_sample(200, 10.0, 1.0, 1);
  const auto b = normal_sample(200, 10.0, 1.0, 2);
  const LatencyComparison c = compare_latencies(a, b);
  EXPECT_GT(c.test.p_value, 0.05);
  EXPECT_FALSE(c.significant);
  EXPECT_LT(c.median_difference.low, 0.0);  // the interval holds 0
  EXPECT_GT(c.median_difference.high, 0.0);
  // Same values exactly: sigma > 0 (not all tied) and U1 = U2 = n^2/2, so z = 0 after continuity -> p = 1.
  const MannWhitneyResult same = mann_whitney_u(a, a);
  EXPECT_DOUBLE_EQ(same.u1, same.u2);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
  // All values equal: no variance, p = 1.
  EXPECT_DOUBLE_EQ(mann_whitney_u({5, 5, 5}, {5, 5}).p_value, 1.0);
}

TEST(MannWhitney, ShiftedByFiveSigmaSignificant) {
  const auto a = normal_sample(50, 10.0, 1.0, 3);
  const auto b = normal_sample(50, 15.0, 1.0, 4);
  const LatencyComparison c = compare_latencies(a, b);
  EXPECT_LT(c.test.p_value, 1e-10);
  EXPECT_TRUE(c.significant);
  EXPECT_NEAR(c.median_difference.difference, 5.0, 0.6);
  EXPECT_GT(c.median_difference.low, 3.5);
  EXPECT_LT(c.median_difference.high, 6.5);
  EXPECT_LE(c.median_difference.low, c.median_difference.difference);
  EXPECT_GE(c.median_difference.high, c.median_difference.difference);
  // Complete separation: U1 = 0.
  EXPECT_DOUBLE_EQ(c.test.u1, 0.0);
}

// p by brute force: every one of the C(N, n1) ways to give n1 of the pooled midranks to x, counted when its
// U is as far from n1*n2/2 as the observed one (two-sided). Independent of the recursion under test.
double brute_force_p(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> pooled = x;
  pooled.insert(pooled.end(), y.begin(), y.end());
  const std::size_t n = pooled.size(), n1 = x.size();
  auto u_of = [&](const std::vector<bool>& in_x) {  // pairs (a in x, b in y) with a > b, ties 1/2
    double u = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (in_x[i] && !in_x[j]) u += pooled[i] > pooled[j] ? 1.0 : pooled[i] == pooled[j] ? 0.5 : 0.0;
    return u;
  };
  std::vector<bool> observed(n, false);
  for (std::size_t i = 0; i < n1; ++i) observed[i] = true;
  const double mu = static_cast<double>(n1 * (n - n1)) / 2, dev = std::abs(u_of(observed) - mu);
  double extreme = 0, all = 0;
  std::vector<bool> mask(n, false);
  std::fill(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(n1), true);
  std::sort(mask.begin(), mask.end());
  do {
    all += 1;
    if (std::abs(u_of(mask) - mu) >= dev - 1e-9) extreme += 1;
  } while (std::next_permutation(mask.begin(), mask.end()));
  return extreme / all;
}

TEST(MannWhitneyExact, CompleteSeparationTableValues) {
  // Mann & Whitney (1947) table / SciPy method="exact": P(U = 0) = 1 / C(N, n1), two-sided twice that.
  auto r = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 0);
  EXPECT_NEAR(r.p_value, 2.0 / 20, 1e-15);                                           // 0.1
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4}, {5, 6, 7, 8}).p_value, 2.0 / 70, 1e-15);  // 0.0286
  EXPECT_NEAR(mann_whitney_u({10, 9, 8, 7, 6}, {1, 2, 3, 4, 5}).p_value, 2.0 / 252, 1e-15);
  // n1 = n2 = 2: the smallest attainable p is 1/3, never significant.
  const auto tiny = compare_latencies({1, 2}, {100, 200});
  EXPECT_NEAR(tiny.test.p_value, 1.0 / 3, 1e-15);
  EXPECT_FALSE(tiny.significant);
  EXPECT_TRUE(compare_latencies({1, 2, 3, 4}, {100, 200, 300, 400}).significant);  // p = 0.0286 < 0.05
}

TEST(MannWhitneyExact, MatchesScipyExactWithoutTies) {
  // scipy 1.10.1: mannwhitneyu([1,3,5], [2,4,6,8], method="exact") -> statistic=3.0, pvalue=0.4
  auto r = mann_whitney_u({1, 3, 5}, {2, 4, 6, 8});
  EXPECT_DOUBLE_EQ(r.u1, 3);
  EXPECT_NEAR(r.p_value, 0.4, 1e-14);
  // mannwhitneyu([1.1,2.3,4.0,5.2,6.6], [3.3,7.1,8.2,9.0,9.9,10.4], method="exact") -> 3.0, 0.030303030303030304
  r = mann_whitney_u({1.1, 2.3, 4.0, 5.2, 6.6}, {3.3, 7.1, 8.2, 9.0, 9.9, 10.4});
  EXPECT_DOUBLE_EQ(r.u1, 3);
  EXPECT_NEAR(r.p_value, 0.030303030303030304, 1e-14);
  EXPECT_FALSE(r.ties);
}

TEST(MannWhitneyExact, TiesAgreeWithBruteForceEnumeration) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{1, 2, 2, 3}, {2, 3, 3, 4, 5}},
      {{5, 5, 5}, {5, 6, 6}},
      {{1.1, 2.3, 2.3, 3.0, 4.2, 5.5}, {3.0, 4.8, 5.5, 6.9, 7.7, 5.5}},
      {{1, 1, 1, 2, 2, 2, 3}, {2, 3, 3, 3, 4, 4}},  // asymmetric tie structure: U not symmetric about mu
  };
  for (const auto& [x, y] : cases) {
    const auto r = mann_whitney_u(x, y);
    EXPECT_TRUE(r.exact);
    EXPECT_TRUE(r.ties);
    EXPECT_NEAR(r.p_value, brute_force_p(x, y), 1e-12);
    EXPECT_NEAR(mann_whitney_u(y, x).p_value, r.p_value, 1e-12);  // two-sided: symmetric in the samples
  }
  // Random samples without ties too, both sides of the mean.
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto a = normal_sample(6, 0, 1, seed), b = normal_sample(7, 0.5 * static_cast<double>(seed), 1, seed + 10);
    EXPECT_NEAR(mann_whitney_u(a, b).p_value, brute_force_p(a, b), 1e-12);
  }
  EXPECT_DOUBLE_EQ(mann_whitney_u({5, 5, 5}, {5, 5}).p_value, 1.0);  // all tied
}

TEST(MannWhitneyExact, ThresholdAndLargeSamplesAgreeWithApproximation) {
  // Above kExactMaxTotal values the normal approximation is used; near the threshold both agree closely.
  const auto a = normal_sample(20, 0, 1, 21), b = normal_sample(20, 0.8, 1, 22);
  const auto exact = mann_whitney_u(a, b);
  const auto approx = mann_whitney_u(a, b, MannWhitneyMethod::kAsymptotic);
  EXPECT_TRUE(exact.exact);
  EXPECT_FALSE(approx.exact);
  EXPECT_NEAR(exact.p_value, approx.p_value, 0.01);
  auto big_b = b;
  big_b.push_back(3.0);
  EXPECT_FALSE(mann_whitney_u(a, big_b).exact);
  EXPECT_THROW(mann_whitney_u(normal_sample(150, 0, 1, 1), normal_sample(60, 0, 1, 2), MannWhitneyMethod::kExact),
               std::invalid_argument);
  EXPECT_THROW(mann_whitney_exact_p({1, 2, 3}, 0, 0), std::invalid_argument);
  EXPECT_THROW(mann_whitney_exact_p({1, 2.25, 3}, 1, 1), std::invalid_argument);
}

TEST(MannWhitney, BadInput) {
  EXPECT_THROW(mann_whitney_u({}, {1}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1}, {NAN}), std::invalid_argument);
  EXPECT_THROW(compare_latencies({1}, {2}, 1.5), std::invalid_argument);
  EXPECT_THROW(bootstrap_median_difference({1}, {2}, 0), std::invalid_argument);
}

TEST(Bootstrap, DeterministicAndMedian) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  const auto a = normal_sample(30, 0, 1, 5), b = normal_sample(30, 1, 1, 6);
  const auto i1 = bootstrap_median_difference(a, b, 500, 0.95, 42);
  const auto i2 = bootstrap_median_difference(a, b, 500, 0.95, 42);
  EXPECT_EQ(i1.low, i2.low);
  EXPECT_EQ(i1.high, i2.high);
  const auto narrow = bootstrap_median_difference(a, b, 500, 0.5, 42);
  EXPECT_GE(narrow.low, i1.low);
  EXPECT_LE(narrow.high, i1.high);
}

TEST(CompareSignificance, TableFromRawLatencies) {
  auto eval = [](std::int64_t id, double mean_ns) {
    EvaluationRecord e;
    e.id = id;
    e.framework_name = "f" + std::to_string(id);
    e.batch_sizes = {1};
    RunRecord r;
    r.batch_size = 1;
    r.trace_level = TraceLevel::kModel;
    r.predict_latency_ns = normal_sample(40, mean_ns, 1e4, static_cast<std::uint64_t>(id));
    e.runs = {r};
    return e;
  };
  const auto a = eval(1, 1e6), same = eval(2, 1e6), slower = eval(3, 1.1e6);
  const Table t = a1_significance({a, same, slower});
  ASSERT_EQ(t.id, "compare.A1.significance");
  ASSERT_EQ(t.rows.size(), 2u);
  ASSERT_EQ(t.columns.size(), 15u);
  EXPECT_EQ(t.columns[13].title, "significant (alpha=0.05)");
  EXPECT_EQ(std::get<std::string>(t.rows[0][13]), "no");
  EXPECT_EQ(std::get<std::string>(t.rows[1][13]), "yes");
  EXPECT_EQ(std::get<std::string>(t.rows[1][14]), "normal");  // 40 + 40 batches: above the exact threshold
  EXPECT_NEAR(std::get<double>(t.rows[1][7]), 0.1, 0.02);     // median difference, ms
}

}  // namespace
}  // namespace xsp
