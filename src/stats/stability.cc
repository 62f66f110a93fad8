// Stability verdicts, intervals of the median and paired overheads: see include/xsp/stats/stability.h.
#include "xsp/stats/stability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace xsp {
namespace {

constexpr double kNoFigure = std::numeric_limits<double>::quiet_NaN();

double mean_of(const std::vector<double>& v) {
  return v.empty() ? kNoFigure : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Sample standard deviation (n − 1); NaN below two values.
double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return kNoFigure;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double median_of_sorted(const std::vector<double>& s) {
  const std::size_t n = s.size();
  if (n == 0) return kNoFigure;
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// Lower 1-based rank k of the order-statistic interval [x(k), x(n−k+1)]: the largest k with
// P(Binomial(n, 1/2) <= k − 1) <= 0.025; 0 when none (n < 6).
std::size_t lower_rank(std::size_t n) {
  if (n > 20000) {
    // Normal approximation to the binomial; the exact sum would cost n/2 lgamma calls for no visible change.
    const double k = std::floor(0.5 * static_cast<double>(n) - 0.5 * 1.959964 * std::sqrt(static_cast<double>(n)));
    return k < 1 ? 0 : static_cast<std::size_t>(k);
  }
  const double log_norm = std::lgamma(static_cast<double>(n) + 1) - static_cast<double>(n) * std::log(2.0);
  double cdf = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cdf += std::exp(log_norm - std::lgamma(static_cast<double>(i) + 1) - std::lgamma(static_cast<double>(n - i) + 1));
    if (cdf > 0.025) break;
    k = i + 1;  // P(B <= i) <= 0.025, so rank i + 1 is a valid lower bound
  }
  return k;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * fraction);
  return buf;
}

void check_positive(const std::vector<double>& v, const char* what) {
  for (double x : v)
    if (!(x > 0) || !std::isfinite(x))
      throw std::invalid_argument(std::string(what) + ": latencies must be positive and finite, got " +
                                  std::to_string(x));
}

}  // namespace

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kStable:
      return "stable";
    case Verdict::kUnstable:
      return "unstable";
    case Verdict::kNotAssessed:
      return "not_assessed";
  }
  return "not_assessed";
}

std::optional<Verdict> parse_verdict(std::string_view text) {
  for (Verdict v : {Verdict::kStable, Verdict::kUnstable, Verdict::kNotAssessed})
    if (to_string(v) == text) return v;
  return std::nullopt;
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return median_of_sorted(samples);
}

Interval median_ci95(std::vector<double> samples) {
  if (samples.empty()) return {kNoFigure, kNoFigure};
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const std::size_t k = lower_rank(n);
  if (k == 0) return {samples.front(), samples.back()};
  return {samples[k - 1], samples[n - k]};
}

double student_t975(int df) {
  if (df < 1) throw std::invalid_argument("student_t975: degrees of freedom must be >= 1, got " + std::to_string(df));
  static constexpr double kTable[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                      2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                      2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df <= 30) return kTable[df - 1];
  // Cornish–Fisher expansion of t around the normal quantile (Abramowitz & Stegun 26.7.5).
  const double z = 1.959963985, v = df, z2 = z * z;
  return z + (z2 * z + z) / (4 * v) + (5 * std::pow(z, 5) + 16 * z2 * z + 3 * z) / (96 * v * v) +
         (3 * std::pow(z, 7) + 19 * std::pow(z, 5) + 17 * z2 * z - 15 * z) / (384 * v * v * v) +
         (79 * std::pow(z, 9) + 776 * std::pow(z, 7) + 1482 * std::pow(z, 5) - 1920 * z2 * z - 945 * z) /
             (92160 * v * v * v * v);
}

StabilityAssessment assess_windows(const std::vector<std::vector<double>>& windows, const StabilityRule& rule) {
  if (rule.windows < 2)
    throw std::invalid_argument("stability rule: at least 2 windows, got " + std::to_string(rule.windows));
  if (!(rule.tolerance > 0 && rule.tolerance <= 1))
    throw std::invalid_argument("stability rule: tolerance must be in (0, 1], got " + std::to_string(rule.tolerance));
  StabilityAssessment a;
  std::vector<double> all;
  for (const auto& w : windows) {
    if (w.empty()) continue;
    a.window_medians_ns.push_back(median(w));
    all.insert(all.end(), w.begin(), w.end());
  }
  a.samples = all.size();
  a.cv = all.size() >= 2 ? sd_of(all) / mean_of(all) : kNoFigure;
  a.median_ns = median(all);
  a.ci95_ns = median_ci95(all);
  const auto& m = a.window_medians_ns;
  const std::size_t k = m.size();
  if (k >= 2) {
    const auto [lo, hi] = std::minmax_element(m.begin(), m.end());
    a.spread_fraction = (*hi - *lo) / mean_of(m);
    a.drift_fraction = m.back() / m.front() - 1.0;
    // Batch means: the window medians are close to independent even when consecutive batches are not.
    const double half = student_t975(static_cast<int>(k) - 1) * sd_of(m) / std::sqrt(static_cast<double>(k));
    if (std::isfinite(half)) {
      a.ci95_ns.low = std::min(a.ci95_ns.low, a.median_ns - half);
      a.ci95_ns.high = std::max(a.ci95_ns.high, a.median_ns + half);
    }
  } else {
    a.spread_fraction = a.drift_fraction = kNoFigure;
  }
  if (static_cast<int>(k) < rule.windows)
    a.verdict = Verdict::kNotAssessed;
  else
    a.verdict = a.spread_fraction <= rule.tolerance ? Verdict::kStable : Verdict::kUnstable;
  return a;
}

StabilityAssessment assess_series(const std::vector<double>& samples, const StabilityRule& rule) {
  const std::size_t k = static_cast<std::size_t>(std::max(rule.windows, 2));
  std::vector<std::vector<double>> windows;
  const std::size_t n = samples.size();
  std::size_t begin = 0;
  for (std::size_t w = 0; w < k && begin < n; ++w) {
    const std::size_t size = n / k + (w < n % k ? 1 : 0);
    if (size == 0) continue;
    windows.emplace_back(samples.begin() + static_cast<std::ptrdiff_t>(begin),
                         samples.begin() + static_cast<std::ptrdiff_t>(begin + size));
    begin += size;
  }
  return assess_windows(windows, rule);
}

PairedOverhead paired_overhead(const std::vector<double>& deeper, const std::vector<double>& shallower) {
  if (deeper.size() != shallower.size())
    throw std::invalid_argument("paired_overhead: " + std::to_string(deeper.size()) + " deeper blocks but " +
                                std::to_string(shallower.size()) + " shallower ones");
  check_positive(deeper, "paired_overhead");
  check_positive(shallower, "paired_overhead");
  PairedOverhead o;
  o.rounds = deeper.size();
  if (o.rounds == 0) {
    o.overhead_fraction = kNoFigure;
    o.ci95_fraction = {kNoFigure, kNoFigure};
    return o;
  }
  std::vector<double> logs;
  for (std::size_t j = 0; j < deeper.size(); ++j) logs.push_back(std::log(deeper[j] / shallower[j]));
  const double m = mean_of(logs);
  o.overhead_fraction = std::exp(m) - 1.0;
  if (o.rounds < 2) {
    o.ci95_fraction = {kNoFigure, kNoFigure};
    return o;
  }
  const double half = student_t975(static_cast<int>(o.rounds) - 1) * sd_of(logs) / std::sqrt(double(o.rounds));
  o.ci95_fraction = {std::exp(m - half) - 1.0, std::exp(m + half) - 1.0};
  return o;
}

PairedOverhead unpaired_change(const std::vector<double>& after, const std::vector<double>& before) {
  if (after.empty() || before.empty()) throw std::invalid_argument("unpaired_change: a group has no blocks");
  check_positive(after, "unpaired_change");
  check_positive(before, "unpaired_change");
  std::vector<double> la, lb;
  for (double x : after) la.push_back(std::log(x));
  for (double x : before) lb.push_back(std::log(x));
  PairedOverhead o;
  o.rounds = std::min(la.size(), lb.size());
  const double d = mean_of(la) - mean_of(lb);
  o.overhead_fraction = std::exp(d) - 1.0;
  if (la.size() < 2 || lb.size() < 2) {
    o.rounds = std::min<std::size_t>(o.rounds, 1);
    o.ci95_fraction = {kNoFigure, kNoFigure};
    return o;
  }
  const double va = std::pow(sd_of(la), 2) / static_cast<double>(la.size());
  const double vb = std::pow(sd_of(lb), 2) / static_cast<double>(lb.size());
  const double se = std::sqrt(va + vb);
  // Welch–Satterthwaite degrees of freedom, rounded down (conservative).
  double df = se > 0 ? std::pow(va + vb, 2) / (va * va / double(la.size() - 1) + vb * vb / double(lb.size() - 1)) : 1;
  if (!std::isfinite(df) || df < 1) df = 1;
  const double half = student_t975(static_cast<int>(std::floor(df))) * se;
  o.ci95_fraction = {std::exp(d - half) - 1.0, std::exp(d + half) - 1.0};
  return o;
}

std::string describe_overhead(const PairedOverhead& o) {
  if (o.rounds == 0 || !std::isfinite(o.overhead_fraction)) return "n/a (no paired blocks)";
  std::string s = percent(o.overhead_fraction);
  if (o.rounds < 2 || !std::isfinite(o.ci95_fraction.low)) return s + " (no interval: one round)";
  s += " [" + percent(o.ci95_fraction.low) + ", " + percent(o.ci95_fraction.high) + "]";
  if (!o.significant()) return s + " not significant";
  if (o.ci95_fraction.high < 0)
    return s + " negative: the deeper level ran faster (not an overhead; see the run's warnings)";
  return s;
}

}  // namespace xsp
