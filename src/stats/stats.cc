#include "xsp/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace xsp {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double mean_of(std::vector<double>::const_iterator first, std::vector<double>::const_iterator last) {
  const auto n = static_cast<double>(last - first);
  return std::accumulate(first, last, 0.0) / n;
}

double median_sorted(const std::vector<double>& sorted) { return percentile_sorted(sorted, 50.0); }

}  // namespace

double trimmed_mean(std::vector<double> samples, double trim_fraction) {
  const std::size_t n = samples.size();
  if (n == 0) return kNaN;
  if (n < 3) return mean_of(samples.begin(), samples.end());
  std::sort(samples.begin(), samples.end());
  // SPEC §3: with 3 samples a 20% trim drops nothing, yet one outlier of three should not move the result.
  if (n == 3) return samples[1];
  const double fraction = std::clamp(trim_fraction, 0.0, 0.5);
  // The epsilon absorbs products such as 0.2 * 15 landing a hair below the integer they stand for.
  auto drop = static_cast<std::size_t>(std::floor(fraction * static_cast<double>(n) + 1e-9));
  if (2 * drop >= n) return median_sorted(samples);
  return mean_of(samples.begin() + static_cast<std::ptrdiff_t>(drop),
                 samples.end() - static_cast<std::ptrdiff_t>(drop));
}

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (!(p >= 0.0 && p <= 100.0)) {
    throw std::invalid_argument("percentile: p must be in [0, 100], got " + std::to_string(p));
  }
  if (sorted.empty()) return kNaN;
  const double h = static_cast<double>(sorted.size() - 1) * p / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

double percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  return percentile_sorted(samples, p);
}

LatencySummary summarize(const std::vector<double>& samples) {
  LatencySummary s;
  s.n = samples.size();
  if (samples.empty()) {
    s.trimmed_mean = s.mean = s.stddev = s.min = s.max = kNaN;
    s.p50 = s.p90 = s.p95 = s.p99 = s.p999 = kNaN;
    return s;
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  s.mean = mean_of(sorted.begin(), sorted.end());
  double squares = 0;
  for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
  // One sample has no spread to estimate; 0 keeps summaries of single runs printable and comparable.
  s.stddev = sorted.size() > 1 ? std::sqrt(squares / static_cast<double>(sorted.size() - 1)) : 0.0;
  s.min = sorted.front();
  s.max = sorted.back();
  s.trimmed_mean = trimmed_mean(sorted);
  s.p50 = percentile_sorted(sorted, 50);
  s.p90 = percentile_sorted(sorted, 90);
  s.p95 = percentile_sorted(sorted, 95);
  s.p99 = percentile_sorted(sorted, 99);
  s.p999 = percentile_sorted(sorted, 99.9);
  return s;
}

}  // namespace xsp
