// Metrics of LLM token generation and the Server check of token latencies: see
// include/xsp/loadgen/token_latency.h.
#include "xsp/loadgen/token_latency.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "xsp/loadgen/loadgen.h"

namespace xsp::loadgen {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void bad_request(std::size_t index, const std::string& what) {
  throw std::invalid_argument("generated request " + std::to_string(index) + ": " + what);
}

void validate(const std::vector<GeneratedRequest>& requests) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const GeneratedRequest& r = requests[i];
    if (r.input_tokens < 0) bad_request(i, "input_tokens is negative (" + std::to_string(r.input_tokens) + ")");
    if (r.token_ns.empty()) bad_request(i, "token_ns is empty (the request produced no token)");
    if (r.token_ns.front() < r.issued_ns)
      bad_request(i, "token_ns[0] (" + std::to_string(r.token_ns.front()) + ") is before issued_ns (" +
                         std::to_string(r.issued_ns) + ")");
    // Equal times are allowed: a coarse clock, or several tokens emitted in one step (speculative decoding).
    for (std::size_t k = 1; k < r.token_ns.size(); ++k)
      if (r.token_ns[k] < r.token_ns[k - 1])
        bad_request(i, "token_ns[" + std::to_string(k) + "] (" + std::to_string(r.token_ns[k]) +
                           ") is before token_ns[" + std::to_string(k - 1) + "] (" + std::to_string(r.token_ns[k - 1]) +
                           ")");
  }
}

std::int64_t ttft_of(const GeneratedRequest& r) { return r.token_ns.front() - r.issued_ns; }

// Only for requests with at least two tokens. (latency − TTFT) / (tokens − 1) reduces to this difference of token
// times, which needs no issue time.
double tpot_of(const GeneratedRequest& r) {
  return static_cast<double>(r.token_ns.back() - r.token_ns.front()) / static_cast<double>(r.token_ns.size() - 1);
}

double rate(double count, std::int64_t duration_ns) {
  return duration_ns > 0 ? count / (static_cast<double>(duration_ns) * 1e-9) : kNaN;
}

// The smallest n for which early stopping can claim the p-th percentile: max_overlatency(n) >= 0, i.e.
// (p/100)^n <= 1 − c. Start from the closed form and settle the rounding with the rule itself.
std::uint64_t min_samples_for(double p, double confidence) {
  auto claimable = [&](std::uint64_t n) { return early_stopping_max_overlatency(n, p, confidence) >= 0; };
  auto n = static_cast<std::uint64_t>(std::max(1.0, std::ceil(std::log1p(-confidence) / std::log(p / 100.0))));
  while (!claimable(n)) ++n;
  while (n > 1 && claimable(n - 1)) --n;
  return n;
}

TokenMetricCheck check_metric(std::vector<double> values, double bound_ns, double p, double confidence) {
  TokenMetricCheck c;
  c.samples = values.size();
  c.bound_ns = bound_ns;
  c.max_overlatency = early_stopping_max_overlatency(values.size(), p, confidence);
  c.min_samples = min_samples_for(p, confidence);
  c.enough_samples = c.max_overlatency >= 0;
  if (!c.enough_samples) {
    c.estimate_ns = kNaN;
    return c;
  }
  // early_stopping_latency()'s order statistic, on doubles: a TPOT is a fraction of a nanosecond in general and
  // rounding it to early_stopping_latency()'s integers could flip a comparison with a bound.
  const std::size_t idx = values.size() - 1 - static_cast<std::size_t>(c.max_overlatency);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(idx), values.end());
  c.estimate_ns = values[idx];
  c.meets_bound = c.estimate_ns <= bound_ns;
  return c;
}

std::string explain(const char* name, const TokenMetricCheck& c, double p, double confidence) {
  std::ostringstream os;
  if (!c.enough_samples)
    os << name << ": too few samples for early stopping (" << c.samples << "; p" << p << " at " << confidence * 100
       << "% confidence needs at least " << c.min_samples << ")";
  else
    os << name << ": early-stopping p" << p << " " << c.estimate_ns / 1e6 << " ms exceeds the bound "
       << c.bound_ns / 1e6 << " ms";
  return os.str();
}

}  // namespace

GenerationMetrics generation_metrics(const std::vector<GeneratedRequest>& requests, const StabilityRule& rule) {
  validate(requests);
  std::int64_t duration_ns = 0;
  if (!requests.empty()) {
    std::int64_t first = requests.front().issued_ns, last = requests.front().token_ns.back();
    for (const GeneratedRequest& r : requests) {
      first = std::min(first, r.issued_ns);
      last = std::max(last, r.token_ns.back());
    }
    duration_ns = last - first;
  }
  GenerationMetrics m;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const GeneratedRequest& r : requests) {
    m.input_tokens += r.input_tokens;
    m.output_tokens += static_cast<std::int64_t>(r.token_ns.size());
    ttft.push_back(static_cast<double>(ttft_of(r)));
    e2e.push_back(static_cast<double>(r.token_ns.back() - r.issued_ns));
    if (r.token_ns.size() == 1) {
      ++m.single_token_requests;
      continue;
    }
    tpot.push_back(tpot_of(r));
    for (std::size_t k = 1; k < r.token_ns.size(); ++k)
      itl.push_back(static_cast<double>(r.token_ns[k] - r.token_ns[k - 1]));
  }
  m.requests = requests.size();
  m.ttft_ns = summarize(ttft);
  m.tpot_ns = summarize(tpot);
  m.itl_ns = summarize(itl);
  m.e2e_ns = summarize(e2e);
  m.duration_ns = duration_ns;
  m.output_tokens_per_s = rate(static_cast<double>(m.output_tokens), duration_ns);
  m.input_tokens_per_s = rate(static_cast<double>(m.input_tokens), duration_ns);
  m.requests_per_s = rate(static_cast<double>(m.requests), duration_ns);
  m.ttft_stability = assess_series(ttft, rule);
  m.tpot_stability = assess_series(tpot, rule);
  return m;
}

GenerationMetrics generation_metrics(const std::vector<GeneratedRequest>& requests, std::int64_t duration_ns,
                                     const StabilityRule& rule) {
  if (duration_ns <= 0)
    throw std::invalid_argument("generation_metrics: duration_ns must be > 0, got " + std::to_string(duration_ns));
  GenerationMetrics m = generation_metrics(requests, rule);
  m.duration_ns = duration_ns;
  m.output_tokens_per_s = rate(static_cast<double>(m.output_tokens), duration_ns);
  m.input_tokens_per_s = rate(static_cast<double>(m.input_tokens), duration_ns);
  m.requests_per_s = rate(static_cast<double>(m.requests), duration_ns);
  return m;
}

TokenLatencyVerdict check_token_latencies(const std::vector<GeneratedRequest>& requests,
                                          const TokenLatencyBounds& bounds, double confidence) {
  if (!(bounds.ttft_ns > 0) || !(bounds.tpot_ns > 0))
    throw std::invalid_argument("check_token_latencies: the TTFT and TPOT bounds must be > 0");
  if (!(bounds.percentile > 0 && bounds.percentile < 100))
    throw std::invalid_argument("check_token_latencies: percentile must be in (0, 100), got " +
                                std::to_string(bounds.percentile));
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("check_token_latencies: confidence must be in (0, 1), got " +
                                std::to_string(confidence));
  validate(requests);
  std::vector<double> ttft, tpot;
  for (const GeneratedRequest& r : requests) {
    ttft.push_back(static_cast<double>(ttft_of(r)));
    if (r.token_ns.size() >= 2) tpot.push_back(tpot_of(r));
  }
  TokenLatencyVerdict v;
  v.ttft = check_metric(std::move(ttft), bounds.ttft_ns, bounds.percentile, confidence);
  v.tpot = check_metric(std::move(tpot), bounds.tpot_ns, bounds.percentile, confidence);
  v.valid = v.ttft.meets_bound && v.tpot.meets_bound;
  if (!v.ttft.meets_bound) v.reason = explain("TTFT", v.ttft, bounds.percentile, confidence);
  if (!v.tpot.meets_bound)
    v.reason += (v.reason.empty() ? "" : "; ") + explain("TPOT", v.tpot, bounds.percentile, confidence);
  return v;
}

}  // namespace xsp::loadgen
