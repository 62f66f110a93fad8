// The summary every benchmark here prints for repeated measurements: the median and the range over the repeats.
#pragma once

#include <algorithm>
#include <vector>

namespace xsp::bench {

/// Median and range (min, max) of repeated measurements, in the measurements' unit.
struct Stats {
  double median, low, high;
};

/// Stats of `v` (non-empty; the median of an even count is the mean of the middle two).
inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front(), v.back()};
}

}  // namespace xsp::bench
