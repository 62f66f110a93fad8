#include "xsp/stats/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace xsp {
namespace {

TEST(Stats, TrimmedMeanSmallSets) {
  EXPECT_TRUE(std::isnan(trimmed_mean({})));
  EXPECT_DOUBLE_EQ(trimmed_mean({5}), 5.0);
  EXPECT_DOUBLE_EQ(trimmed_mean({1, 4}), 2.5);
  EXPECT_DOUBLE_EQ(trimmed_mean({100, 1, 2}), 2.0);        // median
  EXPECT_DOUBLE_EQ(trimmed_mean({100, 4, 1, 3, 2}), 3.0);  // drops 1 and 100: mean of 2,3,4
  // n = 10: drops 2 at each end, mean of 3..8.
  EXPECT_DOUBLE_EQ(trimmed_mean({1000, 9, 8, 7, 6, 5, 4, 3, 2, 1}), 5.5);
  // n = 4: floor(0.8) = 0, plain mean.
  EXPECT_DOUBLE_EQ(trimmed_mean({1, 2, 3, 10}), 4.0);
  // n = 15: floor(3.0) = 3 at each end: mean of 4..12.
  std::vector<double> v;
  for (int i = 1; i <= 15; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(trimmed_mean(v), 8.0);
  // Other fractions.
  EXPECT_DOUBLE_EQ(trimmed_mean({1, 2, 3, 4, 100}, 0.0), 22.0);
  EXPECT_DOUBLE_EQ(trimmed_mean({1, 2, 3, 4, 100, 200}, 0.5), 3.5);  // everything trimmed: median
}

TEST(Stats, PercentileType7) {
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_DOUBLE_EQ(percentile({7}, 0), 7.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7.0);
  EXPECT_DOUBLE_EQ(percentile({3, 1}, 50), 2.0);
  EXPECT_DOUBLE_EQ(percentile({3, 1}, 25), 1.5);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 50), 2.0);
  EXPECT_DOUBLE_EQ(percentile({4, 3, 2, 1}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 3, 2, 1}, 90), 3.7);  // h = 2.7
  EXPECT_DOUBLE_EQ(percentile({4, 3, 2, 1}, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile({4, 3, 2, 1}, 100), 4.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 100}, 90), 61.6);  // h = 3.6: 4 + 0.6 * 96
  std::vector<double> ten;
  for (int i = 10; i >= 1; --i) ten.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(ten, 95), 9.55);  // h = 8.55
  EXPECT_DOUBLE_EQ(percentile(ten, 50), 5.5);
  EXPECT_DOUBLE_EQ(percentile_sorted({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10), 1.9);

  EXPECT_THROW(percentile({1, 2}, 101), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, -0.1), std::invalid_argument);
  EXPECT_THROW(percentile({}, std::nan("")), std::invalid_argument);
}

TEST(Stats, Summarize) {
  const LatencySummary s = summarize({9, 2, 4, 4, 5, 4, 5, 7});
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7.0));
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 29.0 / 6.0);  // drops 2 and 9
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  EXPECT_DOUBLE_EQ(s.p90, 7.6);     // h = 6.3: 7 + 0.3 * 2
  EXPECT_DOUBLE_EQ(s.p95, 8.3);     // h = 6.65
  EXPECT_DOUBLE_EQ(s.p99, 8.86);    // h = 6.93
  EXPECT_DOUBLE_EQ(s.p999, 8.986);  // h = 6.993

  const LatencySummary one = summarize({3});
  EXPECT_EQ(one.n, 1u);
  EXPECT_DOUBLE_EQ(one.mean, 3.0);
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
  EXPECT_DOUBLE_EQ(one.p99, 3.0);

  const LatencySummary none = summarize({});
  EXPECT_EQ(none.n, 0u);
  EXPECT_TRUE(std::isnan(none.mean));
  EXPECT_TRUE(std::isnan(none.trimmed_mean));
  EXPECT_TRUE(std::isnan(none.stddev));
  EXPECT_TRUE(std::isnan(none.min));
  EXPECT_TRUE(std::isnan(none.p999));
}

}  // namespace
}  // namespace xsp
