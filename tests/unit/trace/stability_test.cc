// Stability verdicts, intervals of the median, t quantiles and paired overheads on hand-made samples with
// known answers (xsp/stats/stability.h).
#include "xsp/stats/stability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace xsp {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 1.0);
  return v;
}

TEST(Stability, MedianIntervalUsesExactBinomialRanks) {
  // n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, so ranks 2 and 9 (coverage 97.9%).
  EXPECT_EQ(median_ci95(one_to(10)), (Interval{2, 9}));
  // n = 100: P(B <= 39) = 0.0176 <= 0.025 < P(B <= 40) = 0.0284: ranks 40 and 61 (Conover's table).
  EXPECT_EQ(median_ci95(one_to(100)), (Interval{40, 61}));
  // n = 6: only [min, max] (coverage 96.9%); n < 6: still [min, max], which is below 95%.
  EXPECT_EQ(median_ci95(one_to(6)), (Interval{1, 6}));
  EXPECT_EQ(median_ci95({3, 1, 2}), (Interval{1, 3}));
  // Order does not matter.
  EXPECT_EQ(median_ci95({9, 1, 8, 2, 7, 3, 6, 4, 5, 10}), (Interval{2, 9}));
  EXPECT_TRUE(std::isnan(median_ci95({}).low));
}

TEST(Stability, StudentTQuantiles) {
  EXPECT_NEAR(student_t975(1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t975(2), 4.3027, 1e-4);
  EXPECT_NEAR(student_t975(5), 2.5706, 1e-4);
  EXPECT_NEAR(student_t975(30), 2.0423, 1e-4);
  // Above the table: the expansion (scipy.stats.t.ppf(0.975, df)).
  EXPECT_NEAR(student_t975(31), 2.0395, 2e-4);
  EXPECT_NEAR(student_t975(60), 2.0003, 2e-4);
  EXPECT_NEAR(student_t975(120), 1.9799, 2e-4);
  EXPECT_NEAR(student_t975(100000), 1.95997, 1e-4);
  EXPECT_THROW(student_t975(0), std::invalid_argument);
}

TEST(Stability, WindowsWithinTheToleranceAreStable) {
  // Window medians 10, 10.5, 11: (11 - 10) / 10.5 = 9.5% <= 10%.
  const auto a = assess_windows({{9.9, 10, 10.1}, {10.5, 10.4, 10.6}, {11, 11.1, 10.9}}, StabilityRule{3, 0.10});
  EXPECT_EQ(a.verdict, Verdict::kStable);
  EXPECT_EQ(a.window_medians_ns, (std::vector<double>{10, 10.5, 11}));
  EXPECT_NEAR(a.spread_fraction, 1.0 / 10.5, 1e-12);
  EXPECT_NEAR(a.drift_fraction, 0.10, 1e-12);
  EXPECT_EQ(a.samples, 9u);
  EXPECT_DOUBLE_EQ(a.median_ns, 10.5);
  // Batch means: 10.5 ± t(2) · 0.5 / sqrt(3) = 10.5 ± 1.242, wider than the order-statistic [9.9, 11.1].
  EXPECT_NEAR(a.ci95_ns.low, 10.5 - 4.3027 * 0.5 / std::sqrt(3.0), 1e-3);
  EXPECT_NEAR(a.ci95_ns.high, 10.5 + 4.3027 * 0.5 / std::sqrt(3.0), 1e-3);
}

TEST(Stability, SpreadBeyondTheToleranceIsUnstable) {
  const auto a = assess_windows({{10}, {10}, {12}}, StabilityRule{3, 0.10});
  EXPECT_EQ(a.verdict, Verdict::kUnstable);
  EXPECT_NEAR(a.spread_fraction, 2.0 / (32.0 / 3.0), 1e-12);  // 18.75%
  EXPECT_NEAR(a.drift_fraction, 0.2, 1e-12);
  // The same spread passes a looser rule.
  EXPECT_EQ(assess_windows({{10}, {10}, {12}}, StabilityRule{3, 0.20}).verdict, Verdict::kStable);
}

TEST(Stability, TooFewWindowsAreNotAssessed) {
  const auto a = assess_windows({{10, 11}, {10, 11}}, StabilityRule{3, 0.10});
  EXPECT_EQ(a.verdict, Verdict::kNotAssessed);
  EXPECT_DOUBLE_EQ(a.spread_fraction, 0.0);
  const auto one = assess_windows({{10, 11}}, StabilityRule{3, 0.10});
  EXPECT_TRUE(std::isnan(one.drift_fraction));
  EXPECT_THROW(assess_windows({{1}}, StabilityRule{1, 0.1}), std::invalid_argument);
  EXPECT_THROW(assess_windows({{1}}, StabilityRule{3, 0}), std::invalid_argument);
}

TEST(Stability, SeriesSplitsIntoEqualWindows) {
  // 10 samples into 3 windows: 4, 3, 3.
  const auto a = assess_series({1, 1, 1, 1, 2, 2, 2, 3, 3, 3}, StabilityRule{3, 0.5});
  EXPECT_EQ(a.window_medians_ns, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(a.verdict, Verdict::kUnstable);  // (3 - 1) / 2 = 100%
}

TEST(Stability, PairedOverheadIsTheGeometricMeanOfRatios) {
  const auto exact = paired_overhead({11, 22, 33}, {10, 20, 30});
  EXPECT_NEAR(exact.overhead_fraction, 0.10, 1e-12);
  EXPECT_NEAR(exact.ci95_fraction.low, 0.10, 1e-12);  // no spread: a degenerate interval
  EXPECT_TRUE(exact.significant());
  // Ratios 1.2 and 1.0: exp(mean(ln 1.2, 0)) - 1 = sqrt(1.2) - 1; t(1) = 12.706 makes the interval hold 0.
  const auto two = paired_overhead({12, 10}, {10, 10});
  EXPECT_NEAR(two.overhead_fraction, std::sqrt(1.2) - 1, 1e-12);
  const double half = 12.7062 * std::sqrt(0.5 * std::pow(std::log(1.2) / 1.0, 2) / 1.0) / std::sqrt(2.0);
  EXPECT_NEAR(two.ci95_fraction.low, std::exp(std::log(1.2) / 2 - half) - 1, 1e-4);
  EXPECT_FALSE(two.significant());
  EXPECT_EQ(paired_overhead({1}, {1}).rounds, 1u);
  EXPECT_FALSE(paired_overhead({2}, {1}).significant());
  EXPECT_THROW(paired_overhead({1, 2}, {1}), std::invalid_argument);
  EXPECT_THROW(paired_overhead({0}, {1}), std::invalid_argument);
}

TEST(Stability, UnpairedChangeUsesWelch) {
  const auto c = unpaired_change({11, 11, 11, 11}, {10, 10, 10, 10});
  EXPECT_NEAR(c.overhead_fraction, 0.1, 1e-12);
  EXPECT_TRUE(c.significant());
  const auto none = unpaired_change({9, 11, 10, 10}, {10, 9, 11, 10});
  EXPECT_FALSE(none.significant());
  EXPECT_THROW(unpaired_change({}, {1}), std::invalid_argument);
}

TEST(Stability, AnOverheadIsNeverPrintedBareWhenItIsNegativeOrNotSignificant) {
  PairedOverhead o;
  o.rounds = 6;
  o.overhead_fraction = -0.023;
  o.ci95_fraction = {-0.051, 0.004};
  EXPECT_EQ(describe_overhead(o), "-2.3% [-5.1%, +0.4%] not significant");
  o.ci95_fraction = {-0.04, -0.01};
  EXPECT_EQ(describe_overhead(o).rfind("-2.3% [-4.0%, -1.0%] negative: the deeper level ran faster", 0), 0u);
  o.overhead_fraction = 0.102;
  o.ci95_fraction = {0.081, 0.123};
  EXPECT_EQ(describe_overhead(o), "+10.2% [+8.1%, +12.3%]");
  o.rounds = 1;
  EXPECT_EQ(describe_overhead(o), "+10.2% (no interval: one round)");
}

TEST(Stability, VerdictNamesRoundTrip) {
  for (Verdict v : {Verdict::kStable, Verdict::kUnstable, Verdict::kNotAssessed})
    EXPECT_EQ(parse_verdict(to_string(v)), v);
  EXPECT_FALSE(parse_verdict("STABLE"));
}

}  // namespace
}  // namespace xsp
