// Summaries of repeated measurements (SPEC §3): trimmed mean and percentiles.
#pragma once

#include <cstddef>
#include <vector>

namespace xsp {

/// Trimmed mean: drop floor(20% of n) samples at each end and average the rest; for n == 3 the median,
/// for n < 3 the plain mean, NaN for n == 0 (SPEC §3). `samples` in any unit; order does not matter.
double trimmed_mean(std::vector<double> samples, double trim_fraction = 0.2);

/// The p-th percentile (0 <= p <= 100) of `samples` by linear interpolation between closest ranks
/// (Hyndman & Fan type 7, the default of NumPy and R). NaN for an empty set. Throws std::invalid_argument
/// for p outside [0, 100].
double percentile(std::vector<double> samples, double p);

/// Same as percentile() on samples already sorted ascending (no copy).
double percentile_sorted(const std::vector<double>& sorted, double p);

/// Summary of a latency sample set; every field in the unit of the samples (XSP uses ns).
struct LatencySummary {
  std::size_t n = 0;
  double trimmed_mean = 0, mean = 0, stddev = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
  bool operator==(const LatencySummary&) const = default;
};

/// Summarizes `samples` (sample standard deviation, n-1). All fields NaN except n when empty.
LatencySummary summarize(const std::vector<double>& samples);

}  // namespace xsp
