// Two-sample tests; formulas and sources in include/xsp/analysis/stats_tests.h.
#include "xsp/analysis/stats_tests.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace xsp {
namespace {

void check_sample(const std::vector<double>& v, const char* what) {
  if (v.empty()) throw std::invalid_argument(std::string(what) + ": empty sample");
  for (double x : v)
    if (std::isnan(x)) throw std::invalid_argument(std::string(what) + ": sample holds NaN");
}

// Type-7 quantile of sorted values, q in [0,1].
double quantile_sorted(const std::vector<double>& s, double q) {
  const double h = q * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (h - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

}  // namespace

double mann_whitney_exact_p(const std::vector<double>& ranks, std::size_t n1, double r1) {
  const std::size_t n = ranks.size();
  if (n1 == 0 || n1 >= n)
    throw std::invalid_argument("Mann-Whitney exact p: need 0 < n1 < N, got n1 = " + std::to_string(n1) +
                                ", N = " + std::to_string(n));
  // Doubled midranks are integers (a midrank is a whole or half number), so sums compare exactly.
  std::vector<std::int64_t> d(n);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double twice = 2 * ranks[i];
    if (!(twice >= 1) || twice != std::round(twice))
      throw std::invalid_argument("Mann-Whitney exact p: rank " + std::to_string(ranks[i]) + " is not a midrank");
    d[i] = static_cast<std::int64_t>(twice);
    total += d[i];
  }
  const auto sums = static_cast<std::size_t>(total) + 1;
  // count[k][s]: subsets of the values seen so far with k members and doubled rank sum s. Counts reach
  // C(40, 20) ≈ 1.4e11, exact in a double.
  std::vector<std::vector<double>> count(n1 + 1, std::vector<double>(sums, 0.0));
  count[0][0] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const auto di = static_cast<std::size_t>(d[i]);
    for (std::size_t k = std::min(i + 1, n1); k >= 1; --k)
      for (std::size_t s = sums - 1; s >= di; --s) {
        count[k][s] += count[k - 1][s - di];
        if (s == di) break;  // size_t: no s-- past di
      }
  }
  // Two-sided: as far or farther from the mean n1·total/N than observed; compared as N·s − n1·total in
  // integers, so no rounding decides a boundary case.
  const auto dn = static_cast<std::int64_t>(n), dn1 = static_cast<std::int64_t>(n1);
  const std::int64_t observed = std::llabs(dn * static_cast<std::int64_t>(std::llround(2 * r1)) - dn1 * total);
  double extreme = 0, all = 0;
  for (std::size_t s = 0; s < sums; ++s) {
    const double c = count[n1][s];
    if (c == 0) continue;
    all += c;
    if (std::llabs(dn * static_cast<std::int64_t>(s) - dn1 * total) >= observed) extreme += c;
  }
  return std::min(1.0, extreme / all);
}

MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y, MannWhitneyMethod method) {
  check_sample(x, "Mann-Whitney U (first sample)");
  check_sample(y, "Mann-Whitney U (second sample)");
  const std::size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  if (method == MannWhitneyMethod::kExact && n > 200)
    throw std::invalid_argument("Mann-Whitney U: exact p for N = " + std::to_string(n) + " > 200 values is too costly");
  // (value, from x?) pooled and sorted; ranks are 1-based, ties share their mean rank.
  std::vector<std::pair<double, bool>> pooled;
  std::vector<double> ranks;  // pooled midranks, for the exact distribution
  ranks.reserve(n);
  pooled.reserve(n);
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double r1 = 0, tie_term = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double rank = 0.5 * (static_cast<double>(i + 1) + static_cast<double>(j));  // mean of ranks i+1..j
    for (std::size_t k = i; k < j; ++k) {
      if (pooled[k].second) r1 += rank;
      ranks.push_back(rank);
    }
    tie_term += t * t * t - t;
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  MannWhitneyResult r;
  r.u1 = r1 - dn1 * (dn1 + 1) / 2;
  r.u2 = dn1 * dn2 - r.u1;
  r.ties = tie_term > 0;
  const double mu = dn1 * dn2 / 2;
  const double var = n > 1 ? dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))) : 0;
  if (var > 0) r.z = std::max(0.0, (std::max(r.u1, r.u2) - mu - 0.5) / std::sqrt(var));
  if (method == MannWhitneyMethod::kExact || (method == MannWhitneyMethod::kAuto && n <= kExactMaxTotal)) {
    r.exact = true;
    r.p_value = mann_whitney_exact_p(ranks, n1, r1);  // all values equal: every subset ties the mean, p = 1
    return r;
  }
  if (var <= 0) return r;  // every value equal: no evidence of a difference, p = 1
  r.p_value = std::min(1.0, std::erfc(r.z / std::sqrt(2.0)));
  return r;
}

BootstrapInterval bootstrap_median_difference(const std::vector<double>& x, const std::vector<double>& y, int resamples,
                                              double confidence, std::uint64_t seed) {
  check_sample(x, "bootstrap (first sample)");
  check_sample(y, "bootstrap (second sample)");
  if (resamples < 1) throw std::invalid_argument("bootstrap: resamples must be >= 1, got " + std::to_string(resamples));
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("bootstrap: confidence must be in (0,1), got " + std::to_string(confidence));
  BootstrapInterval out;
  out.difference = median(y) - median(x);
  std::mt19937_64 rng(seed);
  // Index draws by modulo: the bias is below n/2^64, far under the bootstrap's own noise, and unlike
  // std::uniform_int_distribution the sequence is the same with every standard library.
  auto resample_median = [&rng](const std::vector<double>& v, std::vector<double>& buf) {
    for (auto& b : buf) b = v[rng() % v.size()];
    return median(buf);
  };
  std::vector<double> bx(x.size()), by(y.size()), diffs;
  diffs.reserve(static_cast<std::size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double mx = resample_median(x, bx);
    diffs.push_back(resample_median(y, by) - mx);
  }
  std::sort(diffs.begin(), diffs.end());
  const double tail = (1 - confidence) / 2;
  out.low = quantile_sorted(diffs, tail);
  out.high = quantile_sorted(diffs, 1 - tail);
  return out;
}

LatencyComparison compare_latencies(const std::vector<double>& x, const std::vector<double>& y, double alpha,
                                    int resamples, std::uint64_t seed) {
  if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument("alpha must be in (0,1), got " + std::to_string(alpha));
  LatencyComparison c;
  c.test = mann_whitney_u(x, y);
  c.median_difference = bootstrap_median_difference(x, y, resamples, 1 - alpha, seed);
  c.significant = c.test.p_value < alpha;
  return c;
}

}  // namespace xsp
