#include "xsp/loadgen/loadgen.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "xsp/trace/trace.h"

namespace xsp::loadgen {

std::string to_string(Scenario s) {
  switch (s) {
    case Scenario::kSingleStream:
      return "single-stream";
    case Scenario::kMultiStream:
      return "multi-stream";
    case Scenario::kServer:
      return "server";
    case Scenario::kOffline:
      return "offline";
  }
  return "?";
}

Scenario parse_scenario(const std::string& name) {
  for (auto s : {Scenario::kSingleStream, Scenario::kMultiStream, Scenario::kServer, Scenario::kOffline})
    if (to_string(s) == name) return s;
  throw std::invalid_argument("unknown scenario '" + name + "' (single-stream|multi-stream|server|offline)");
}

double Settings::percentile() const {
  if (target_percentile > 0) return target_percentile;
  return scenario == Scenario::kSingleStream ? 90.0 : 99.0;
}

std::vector<std::int64_t> poisson_schedule(double qps, std::size_t count, std::uint64_t seed) {
  if (!(qps > 0)) throw std::invalid_argument("poisson_schedule: qps must be > 0");
  // Exponential inter-arrival times of rate qps are what make the arrivals a Poisson process.
  return schedule_from_gaps(std::exponential_distribution<double>(qps), count, seed);
}

// ---- early stopping ----

namespace {

// log of the binomial pmf term C(n,i) q^i (1-q)^(n-i), via lgamma so that n in the millions stays finite.
double log_binom_term(std::uint64_t i, std::uint64_t n, double log_q, double log_1mq) {
  double dn = static_cast<double>(n), di = static_cast<double>(i);
  return std::lgamma(dn + 1) - std::lgamma(di + 1) - std::lgamma(dn - di + 1) + di * log_q + (dn - di) * log_1mq;
}

void check_p_c(double p, double c) {
  if (!(p > 0 && p < 100)) throw std::invalid_argument("early stopping: percentile must be in (0, 100)");
  if (!(c > 0 && c < 1)) throw std::invalid_argument("early stopping: confidence must be in (0, 1)");
}

}  // namespace

double binomial_cdf(std::uint64_t k, std::uint64_t n, double q) {
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument("binomial_cdf: q must be in [0, 1]");
  if (k >= n) return 1.0;
  if (q == 0) return 1.0;
  if (q == 1) return 0.0;
  const double lq = std::log(q), l1q = std::log1p(-q);
  // Sum in log space (log-sum-exp) so that tiny leading terms such as 0.99^1e6 do not underflow to 0.
  double acc = -std::numeric_limits<double>::infinity();
  for (std::uint64_t i = 0; i <= k; ++i) {
    double t = log_binom_term(i, n, lq, l1q);
    double m = std::max(acc, t);
    acc = m + std::log(std::exp(acc - m) + std::exp(t - m));
  }
  return std::min(1.0, std::exp(acc));
}

std::int64_t early_stopping_max_overlatency(std::uint64_t n, double p, double confidence) {
  check_p_c(p, confidence);
  const double q = 1.0 - p / 100.0, alpha = 1.0 - confidence;
  const double lq = std::log(q), l1q = std::log1p(-q);
  // The CDF grows with t: walk t upwards, accumulating the pmf terms, until it passes alpha.
  double acc = -std::numeric_limits<double>::infinity();
  const double log_alpha = std::log(alpha);
  std::int64_t best = -1;
  for (std::uint64_t t = 0; t < n; ++t) {
    double term = log_binom_term(t, n, lq, l1q);
    double m = std::max(acc, term);
    acc = m + std::log(std::exp(acc - m) + std::exp(term - m));
    if (acc > log_alpha) break;
    best = static_cast<std::int64_t>(t);
  }
  return best;
}

double early_stopping_latency(std::vector<std::int64_t> latencies_ns, double p, double confidence) {
  const std::int64_t t = early_stopping_max_overlatency(latencies_ns.size(), p, confidence);
  if (t < 0 || latencies_ns.empty()) return std::numeric_limits<double>::quiet_NaN();
  // The (t+1)-th largest: at most t queries lie above it.
  auto idx = latencies_ns.size() - 1 - static_cast<std::size_t>(t);
  std::nth_element(latencies_ns.begin(), latencies_ns.begin() + idx, latencies_ns.end());
  return static_cast<double>(latencies_ns[idx]);
}

double early_stopping_percentile(std::uint64_t n, std::uint64_t k, double confidence) {
  if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("early stopping: confidence must be in (0, 1)");
  if (n == 0 || k >= n) return 0.0;
  const double alpha = 1.0 - confidence;
  // binomial_cdf(k, n, q) falls as q grows: bisect for the q where it crosses alpha.
  double lo = 0.0, hi = 1.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12; ++i) {
    double mid = 0.5 * (lo + hi);
    if (binomial_cdf(k, n, mid) > alpha)
      lo = mid;
    else
      hi = mid;
  }
  return 100.0 * (1.0 - hi);
}

// ---- the run ----

namespace {

// Records completions: a store into the preallocated slot, then a release increment that the generator's
// acquire load pairs with (so the slot is visible once the count is).
class Recorder final : public QueryCompleter {
 public:
  static constexpr std::int64_t kNoFirstToken = std::numeric_limits<std::int64_t>::min();
  std::vector<std::int64_t> complete_ns;
  std::vector<std::int64_t> first_token_ns;  // kNoFirstToken where none was reported
  std::atomic<std::uint64_t> completed{0};
  std::atomic<bool> any_first_token{false};
  void resize(std::size_t n) {
    complete_ns.resize(n, 0);
    first_token_ns.resize(n, kNoFirstToken);
  }
  void complete(std::uint64_t id, std::int64_t ts) noexcept override {
    if (id < complete_ns.size()) complete_ns[id] = ts;
    completed.fetch_add(1, std::memory_order_release);
    completed.notify_all();
  }
  // Ordered before the query's complete(), whose release publishes it to the generator.
  void first_token(std::uint64_t id, std::int64_t ts) noexcept override {
    if (id < first_token_ns.size()) first_token_ns[id] = ts;
    any_first_token.store(true, std::memory_order_relaxed);
  }
  // Blocks until at least `n` completions; returns immediately (no clock read) when already there.
  void wait_for(std::uint64_t n) {
    for (;;) {
      std::uint64_t c = completed.load(std::memory_order_acquire);
      if (c >= n) return;
      completed.wait(c, std::memory_order_acquire);
    }
  }
};

// Sample order: a seeded shuffle of the library, with its first `extra` entries appended so that any
// window of `extra` consecutive samples starting inside the library is contiguous (no wrap in a query).
std::vector<std::uint64_t> sample_order(std::uint64_t library, std::uint64_t extra, std::uint64_t seed) {
  std::vector<std::uint64_t> order(library);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::uint64_t i = 0; i < extra; ++i) order.push_back(order[i % library]);
  return order;
}

void sleep_until_ns(std::int64_t target) {
  // Sleep to ~100 µs before the deadline (the scheduler's wake-up slack), then spin for accuracy.
  std::int64_t now = now_ns();
  if (target - now > 200'000) std::this_thread::sleep_for(std::chrono::nanoseconds(target - now - 100'000));
  while (now_ns() < target) {
  }
}

// The run's clock: the Timebase when one is given, else now_ns() (one predictable branch in the timed loop).
struct RunClock {
  const Timebase* tb;
  std::int64_t now() const { return tb != nullptr ? tb->now_ns() : now_ns(); }
  void wait_until(std::int64_t target) const {
    if (tb != nullptr)
      tb->wait_until(target);
    else
      sleep_until_ns(target);
  }
};

// What the issue loop measured: its bounds and the time spent inside SUT::issue() and waiting (for completions, for
// the next scheduled arrival), and the server's summed issue delays (ns).
struct LoopTimes {
  std::int64_t loop_start = 0, loop_end = 0, sut_ns = 0, wait_ns = 0, delay_sum = 0;
};

// Everything computed after the run from the stored timestamps (deferred logging): latencies, percentiles, rates
// with and without the harness, over-latency counts and the early-stopping estimates (MLPerf LoadGen's).
void finish_result(Result& r, const Recorder& rec, std::uint64_t n, std::uint64_t per_query, const LoopTimes& t) {
  const std::vector<std::int64_t>& complete_ns = rec.complete_ns;
  const Settings& s = r.settings;
  const double pct = r.percentile;
  const std::int64_t loop_start = t.loop_start;
  r.query_count = n;
  r.sample_count = n * per_query;
  r.issue_ns.resize(n);
  r.complete_ns.assign(complete_ns.begin(), complete_ns.begin() + static_cast<std::ptrdiff_t>(n));
  r.latency_ns.resize(n);
  std::vector<double> lat(n);
  const bool server = s.scenario == Scenario::kServer;
  auto origin = [&](std::uint64_t i) { return server ? loop_start + r.scheduled_ns[i] : r.issue_ns[i]; };
  for (std::uint64_t i = 0; i < n; ++i) {
    r.latency_ns[i] = r.complete_ns[i] - origin(i);
    lat[i] = static_cast<double>(r.latency_ns[i]);
  }
  r.summary = summarize(lat);
  if (rec.any_first_token.load(std::memory_order_relaxed)) {
    r.first_token_latency_ns.assign(n, -1);
    std::vector<double> ttft;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (rec.first_token_ns[i] == Recorder::kNoFirstToken) continue;
      r.first_token_latency_ns[i] = rec.first_token_ns[i] - origin(i);
      ttft.push_back(static_cast<double>(r.first_token_latency_ns[i]));
    }
    r.first_token_summary = summarize(ttft);
  } else {
    r.first_token_summary = summarize(std::vector<double>{});
  }
  r.target_latency_ns = percentile(lat, pct);
  std::int64_t last = n ? *std::max_element(r.complete_ns.begin(), r.complete_ns.end()) : loop_start;
  r.duration_ns = n ? last - r.issue_ns[0] : 0;
  r.harness_ns_total = std::max<std::int64_t>(0, (t.loop_end - loop_start) - t.sut_ns - t.wait_ns);
  r.harness_ns_per_query = n ? static_cast<double>(r.harness_ns_total) / static_cast<double>(n) : 0;
  const double units = static_cast<double>(s.scenario == Scenario::kOffline ? r.sample_count : n);
  if (r.duration_ns > 0) {
    r.qps_with_overhead = units * 1e9 / static_cast<double>(r.duration_ns);
    r.samples_per_second = static_cast<double>(r.sample_count) * 1e9 / static_cast<double>(r.duration_ns);
    std::int64_t net = r.duration_ns - std::min(r.harness_ns_total, r.duration_ns - 1);
    r.qps_without_overhead = units * 1e9 / static_cast<double>(net);
  }
  if (s.scenario == Scenario::kServer && n)
    r.mean_issue_delay_ns = static_cast<double>(t.delay_sum) / static_cast<double>(n);
  const double bound = s.scenario == Scenario::kServer ? static_cast<double>(s.latency_bound_ns) : r.target_latency_ns;
  r.overlatency_count = static_cast<std::uint64_t>(
      std::count_if(r.latency_ns.begin(), r.latency_ns.end(), [&](std::int64_t l) { return (double)l > bound; }));
  r.early_stopping_latency_ns = early_stopping_latency(r.latency_ns, pct, s.early_stopping_confidence);
  r.early_stopping_percentile = early_stopping_percentile(n, r.overlatency_count, s.early_stopping_confidence);
  r.meets_bound = n > 0 && r.target_latency_ns <= static_cast<double>(s.latency_bound_ns);
}

}  // namespace

PlannedRun planned_run(const Settings& s) {
  const auto by_rate =
      static_cast<std::uint64_t>(std::ceil(s.target_qps * static_cast<double>(s.min_duration_ms) / 1000.0));
  PlannedRun p;
  p.samples_per_query = s.scenario == Scenario::kMultiStream ? s.samples_per_query : 1;
  p.queries = s.min_query_count;
  if (s.scenario == Scenario::kServer) p.queries = std::max<std::uint64_t>(p.queries, by_rate);
  if (s.scenario == Scenario::kOffline) {
    p.samples_per_query = std::max<std::uint64_t>({s.min_query_count, by_rate, 1});
    p.queries = 1;
  }
  if (s.max_query_count > 0) p.queries = std::min(p.queries, s.max_query_count);
  p.queries = std::max<std::uint64_t>(p.queries, 1);
  return p;
}

Result run(SystemUnderTest& sut, const Settings& s) {
  const double pct = s.percentile();
  if (!(pct > 0 && pct < 100)) throw std::invalid_argument("loadgen: percentile must be in (0, 100)");
  if (s.sample_count == 0) throw std::invalid_argument("loadgen: sample_count must be > 0");
  if (s.samples_per_query == 0) throw std::invalid_argument("loadgen: samples_per_query must be > 0");
  if ((s.scenario == Scenario::kServer || s.scenario == Scenario::kOffline) && !(s.target_qps > 0))
    throw std::invalid_argument("loadgen: target_qps must be > 0");

  Result r;
  r.settings = s;
  r.percentile = pct;
  const RunClock clock{s.timebase};
  const std::int64_t min_dur_ns = s.min_duration_ms * 1'000'000;
  // Everything sized up front (deferred logging): capacity for the minimum count, grown only between
  // queries in the stream scenarios, where nothing is outstanding then.
  const PlannedRun plan = planned_run(s);
  const std::uint64_t per_query = plan.samples_per_query;
  const std::uint64_t planned = plan.queries;

  const std::vector<std::uint64_t> order = sample_order(s.sample_count, per_query, s.seed);
  auto query_samples = [&](std::uint64_t i) {
    std::uint64_t start = (i * per_query) % s.sample_count;
    return std::span<const std::uint64_t>(order.data() + start, per_query);
  };
  if (s.scenario == Scenario::kServer) r.scheduled_ns = poisson_schedule(s.target_qps, planned, s.seed);

  auto interrupted = [&s] { return s.interrupt != nullptr && s.interrupt->load(std::memory_order_relaxed) != 0; };
  Recorder rec;
  std::size_t cap = std::max<std::uint64_t>(planned, s.warmup_queries);
  if (s.scenario == Scenario::kSingleStream || s.scenario == Scenario::kMultiStream)
    cap = std::max<std::size_t>(cap, 1024);
  rec.resize(cap);
  r.issue_ns.assign(cap, 0);

  sut.start(rec);
  // Warm-up: one query at a time, never measured; the slots are reset afterwards.
  for (std::uint64_t i = 0; i < s.warmup_queries; ++i) {
    sut.issue(Query{i, query_samples(i), clock.now()});
    rec.wait_for(i + 1);
  }
  rec.completed.store(0, std::memory_order_relaxed);
  std::fill(rec.first_token_ns.begin(), rec.first_token_ns.end(), Recorder::kNoFirstToken);
  rec.any_first_token.store(false, std::memory_order_relaxed);

  std::int64_t sut_ns = 0, wait_ns = 0, delay_sum = 0;
  std::uint64_t n = 0;
  const std::int64_t loop_start = clock.now();
  switch (s.scenario) {
    case Scenario::kSingleStream:
    case Scenario::kMultiStream: {
      // Next query when the previous completes, until both minimums are met (or the cap).
      for (;;) {
        std::int64_t t0 = clock.now();
        if (n >= s.min_query_count && t0 - loop_start >= min_dur_ns) break;
        if (interrupted()) {
          r.interrupted = true;
          break;
        }
        if (s.max_query_count > 0 && n >= s.max_query_count) break;
        if (n == r.issue_ns.size()) {  // grow: nothing is outstanding here
          r.issue_ns.resize(n * 2);
          rec.resize(n * 2);
        }
        r.issue_ns[n] = t0;
        sut.issue(Query{n, query_samples(n), t0});
        std::int64_t t1 = clock.now();
        sut_ns += t1 - t0;
        ++n;
        if (rec.completed.load(std::memory_order_acquire) < n) {
          rec.wait_for(n);
          wait_ns += clock.now() - t1;
        }
      }
      break;
    }
    case Scenario::kServer: {
      // Issue at the pre-generated Poisson times, without waiting for completions.
      for (; n < planned; ++n) {
        if (interrupted()) {
          r.interrupted = true;
          break;
        }
        std::int64_t target = loop_start + r.scheduled_ns[n];
        std::int64_t t = clock.now();
        if (t < target) {
          clock.wait_until(target);
          std::int64_t t2 = clock.now();
          wait_ns += t2 - t;
          t = t2;
        }
        delay_sum += t - target;
        r.issue_ns[n] = t;
        sut.issue(Query{n, query_samples(n), target});
        sut_ns += clock.now() - t;
      }
      std::int64_t w0 = clock.now();
      rec.wait_for(n);
      wait_ns += clock.now() - w0;
      break;
    }
    case Scenario::kOffline: {
      std::int64_t t0 = clock.now();
      r.issue_ns[0] = t0;
      sut.issue(Query{0, query_samples(0), t0});
      std::int64_t t1 = clock.now();
      sut_ns += t1 - t0;
      rec.wait_for(1);
      wait_ns += clock.now() - t1;
      n = 1;
      break;
    }
  }
  const std::int64_t loop_end = clock.now();
  sut.stop();

  // ---- deferred computation ----
  const LoopTimes times{loop_start, loop_end, sut_ns, wait_ns, delay_sum};
  finish_result(r, rec, n, per_query, times);
  return r;
}

PeakSearchResult find_peak_qps(const SutFactory& factory, const Settings& settings, const PeakSearchOptions& o) {
  Settings s = settings;
  s.scenario = Scenario::kServer;
  double rate = o.initial_qps > 0 ? o.initial_qps : s.target_qps;
  if (!(rate > 0)) throw std::invalid_argument("find_peak_qps: initial rate must be > 0");
  PeakSearchResult out;
  double pass = 0, fail = std::numeric_limits<double>::infinity();
  auto attempt = [&](double qps) {
    s.target_qps = qps;
    auto sut = factory();
    out.tried.push_back(run(*sut, s));
    if (out.tried.back().interrupted) return false;
    bool ok = out.tried.back().meets_bound;
    if (ok)
      pass = std::max(pass, qps);
    else
      fail = std::min(fail, qps);
    return ok;
  };
  int runs = 0;
  // Bracket: double while passing, halve while failing, until one of each is known.
  auto interrupted = [&s] { return s.interrupt != nullptr && s.interrupt->load(std::memory_order_relaxed) != 0; };
  while (runs < o.max_runs && (pass == 0 || std::isinf(fail)) && !interrupted()) {
    attempt(rate);
    ++runs;
    rate = pass == 0 ? rate / 2 : rate * 2;
    if (pass == 0 && rate < 1e-3) break;  // nothing passes
  }
  // Bisect between the highest pass and the lowest fail.
  while (runs < o.max_runs && pass > 0 && !std::isinf(fail) && (fail - pass) / pass >= o.relative_tolerance &&
         !interrupted()) {
    attempt(0.5 * (pass + fail));
    ++runs;
  }
  out.peak_qps = pass;
  return out;
}

}  // namespace xsp::loadgen
