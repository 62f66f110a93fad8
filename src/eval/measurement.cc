// Warm-up, blocks, rounds and the stopping rule: see include/xsp/eval/measurement.h.
#include "xsp/eval/measurement.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "format.h"
#include "json_fields.h"
#include "xsp/trace/trace.h"

namespace xsp {
namespace {

class SystemClock final : public Clock {
 public:
  std::int64_t now_ns() const override { return xsp::now_ns(); }
};

std::int64_t ms_to_ns(double ms) { return static_cast<std::int64_t>(std::llround(ms * 1e6)); }

// The stability rule on the last `k` values: (max − min) / mean <= tolerance.
bool agree(const std::vector<double>& medians, std::size_t k, double tolerance) {
  if (medians.size() < k || k < 2) return false;
  const auto first = medians.end() - static_cast<std::ptrdiff_t>(k);
  const auto [lo, hi] = std::minmax_element(first, medians.end());
  double sum = 0;
  for (auto it = first; it != medians.end(); ++it) sum += *it;
  const double mean = sum / static_cast<double>(k);
  return mean > 0 && (*hi - *lo) / mean <= tolerance;
}

// Windows (two rounds each) of one level's blocks from round `first_round` on.
std::vector<std::vector<double>> windows_of(const LevelMeasurement& level, std::size_t first_round) {
  std::vector<std::vector<double>> windows;
  for (const MeasuredBlock& b : level.blocks) {
    if (b.round < first_round) continue;
    const std::size_t w = (b.round - first_round) / 2;
    if (windows.size() <= w) windows.resize(w + 1);
    windows[w].insert(windows[w].end(), b.latencies_ns.begin(), b.latencies_ns.end());
  }
  return windows;
}

using detail::number_text;

void check(bool ok, const std::string& field, const std::string& expected, double got) {
  if (!ok) throw RequestError("measurement." + field, "expected " + expected + ", got " + number_text(got));
}

}  // namespace

const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

std::string_view to_string(LevelOrder order) { return order == LevelOrder::kSequential ? "sequential" : "interleaved"; }

LevelOrder parse_level_order(std::string_view text) {
  if (text == "interleaved") return LevelOrder::kInterleaved;
  if (text == "sequential") return LevelOrder::kSequential;
  throw std::invalid_argument("level order: expected interleaved or sequential, got '" + std::string(text) + "'");
}

void validate(const MeasurementOptions& o) {
  // Upper bounds: a day of measuring per level, and counts whose per-batch records stay within memory. Beyond
  // them a value is a typo or an attempt to keep a shared server busy, not a measurement.
  const double day_ms = static_cast<double>(kMaxMeasurementMs);
  const std::string ms_range = "a number of ms from 0 to " + number_text(day_ms) + " (a day)";
  const std::string batch_range = " to " + std::to_string(kMaxMeasurementBatches);
  check(o.warmup_min_batches >= 0 && o.warmup_min_batches <= kMaxMeasurementBatches, "warmup_min_batches",
        "a number from 0" + batch_range, o.warmup_min_batches);
  auto duration = [&](double v) { return v >= 0 && std::isfinite(v) && v <= day_ms; };
  check(duration(o.warmup_min_ms), "warmup_min_ms", ms_range, o.warmup_min_ms);
  check(duration(o.warmup_max_ms), "warmup_max_ms", ms_range, o.warmup_max_ms);
  check(duration(o.warmup_block_ms), "warmup_block_ms", ms_range, o.warmup_block_ms);
  check(o.min_batches >= 1 && o.min_batches <= kMaxMeasurementBatches, "min_batches", "a number from 1" + batch_range,
        o.min_batches);
  check(duration(o.min_duration_ms), "min_duration_ms", ms_range, o.min_duration_ms);
  check(duration(o.max_duration_ms), "max_duration_ms", ms_range, o.max_duration_ms);
  check(o.rule.windows >= 2 && o.rule.windows <= 100, "stability_windows", "a number from 2 to 100", o.rule.windows);
  check(o.rule.tolerance > 0 && o.rule.tolerance <= 1, "stability_tolerance", "a fraction in (0, 1]", o.rule.tolerance);
  check(o.max_traced_batches >= 1 && o.max_traced_batches <= kMaxMeasurementBatches, "max_traced_batches",
        "a number from 1" + batch_range, o.max_traced_batches);
}

nlohmann::json to_json(const MeasurementOptions& o) {
  return {{"warmup_min_batches", o.warmup_min_batches},
          {"warmup_min_ms", o.warmup_min_ms},
          {"warmup_max_ms", o.warmup_max_ms},
          {"warmup_block_ms", o.warmup_block_ms},
          {"min_batches", o.min_batches},
          {"min_duration_ms", o.min_duration_ms},
          {"max_duration_ms", o.max_duration_ms},
          {"stability_windows", o.rule.windows},
          {"stability_tolerance", o.rule.tolerance},
          {"level_order", std::string(to_string(o.order))},
          {"max_traced_batches", o.max_traced_batches}};
}

MeasurementOptions measurement_options_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw RequestError("measurement", "expected a JSON object, got " + j.dump());
  detail::reject_unknown_keys(
      j,
      {"warmup_min_batches", "warmup_min_ms", "warmup_max_ms", "warmup_block_ms", "min_batches", "min_duration_ms",
       "max_duration_ms", "stability_windows", "stability_tolerance", "level_order", "max_traced_batches"},
      "measurement.");
  MeasurementOptions o;
  const std::string prefix = "measurement.";
  detail::read_field(j, "warmup_min_batches", o.warmup_min_batches, prefix, "an integer");
  detail::read_field(j, "warmup_min_ms", o.warmup_min_ms, prefix, "a number");
  detail::read_field(j, "warmup_max_ms", o.warmup_max_ms, prefix, "a number");
  detail::read_field(j, "warmup_block_ms", o.warmup_block_ms, prefix, "a number");
  detail::read_field(j, "min_batches", o.min_batches, prefix, "an integer");
  detail::read_field(j, "min_duration_ms", o.min_duration_ms, prefix, "a number");
  detail::read_field(j, "max_duration_ms", o.max_duration_ms, prefix, "a number");
  detail::read_field(j, "stability_windows", o.rule.windows, prefix, "an integer");
  detail::read_field(j, "stability_tolerance", o.rule.tolerance, prefix, "a number");
  detail::read_field(j, "max_traced_batches", o.max_traced_batches, prefix, "an integer");
  if (j.contains("level_order")) {
    if (!j["level_order"].is_string())
      throw RequestError("measurement.level_order",
                         "expected interleaved or sequential, got " + j["level_order"].dump());
    try {
      o.order = parse_level_order(j["level_order"].get<std::string>());
    } catch (const std::invalid_argument&) {
      throw RequestError("measurement.level_order",
                         "expected interleaved or sequential, got " + j["level_order"].dump());
    }
  }
  return o;
}

std::vector<double> LevelMeasurement::result_latencies_ns() const {
  std::vector<double> out;
  for (std::size_t i = result_first_block; i < blocks.size(); ++i)
    out.insert(out.end(), blocks[i].latencies_ns.begin(), blocks[i].latencies_ns.end());
  return out;
}

std::vector<double> LevelMeasurement::result_block_medians_ns() const {
  std::vector<double> out;
  for (std::size_t i = result_first_block; i < blocks.size(); ++i) out.push_back(blocks[i].median_ns);
  return out;
}

PhaseResult run_phase(std::size_t n, const MeasurementOptions& o, const Clock& clock, BlockExecutor& ex) {
  if (n == 0) throw std::invalid_argument("run_phase: no level to measure");
  validate(o);
  const auto k_windows = static_cast<std::size_t>(o.rule.windows);
  const std::size_t result_rounds = 2 * k_windows;
  PhaseResult res;
  res.levels.resize(n);
  auto level_at = [n](std::size_t round, std::size_t i) { return round % 2 == 0 ? i : n - 1 - i; };

  // Progress in batches: the minimum plan, raised as the phase learns its block size and extends.
  std::size_t done = 0;
  std::size_t total = n * static_cast<std::size_t>(o.warmup_min_batches + o.min_batches);

  // 1. Warm-up.
  const std::int64_t t0 = clock.now_ns();
  const bool exact_warmup = o.warmup_max_ms <= 0;
  std::vector<double> first_level_warmup;
  if (!(exact_warmup && o.warmup_min_batches == 0)) {
    const double block_ms = o.warmup_block_ms > 0
                                ? o.warmup_block_ms
                                : std::max(10.0, o.warmup_min_ms / static_cast<double>(k_windows * n));
    const std::int64_t block_ns = ms_to_ns(block_ms);
    for (std::size_t r = 0;; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t l = level_at(r, i);
        LevelMeasurement& lm = res.levels[l];
        ex.begin_block(l, true);
        const std::int64_t tb = clock.now_ns();
        std::vector<double> lat;
        for (;;) {
          lat.push_back(ex.run_batch(l, true));
          if (exact_warmup ? lm.warmup_batches + static_cast<int>(lat.size()) >= o.warmup_min_batches
                           : clock.now_ns() - tb >= block_ns)
            break;
        }
        ex.end_block(l, true);
        lm.warmup_batches += static_cast<int>(lat.size());
        lm.warmup_block_medians_ns.push_back(median(lat));
        if (l == 0) first_level_warmup.insert(first_level_warmup.end(), lat.begin(), lat.end());
        done += lat.size();
        total = std::max(total, done);
        ex.progress(done, total, "warm-up");
      }
      if (exact_warmup) break;
      const std::int64_t elapsed = clock.now_ns() - t0;
      const bool counts = std::all_of(res.levels.begin(), res.levels.end(), [&](const LevelMeasurement& lm) {
        return lm.warmup_batches >= o.warmup_min_batches;
      });
      if (!counts || elapsed < ms_to_ns(o.warmup_min_ms)) continue;
      res.warmup_converged = std::all_of(res.levels.begin(), res.levels.end(), [&](const LevelMeasurement& lm) {
        return agree(lm.warmup_block_medians_ns, k_windows, o.rule.tolerance);
      });
      if (res.warmup_converged || elapsed >= ms_to_ns(o.warmup_max_ms)) break;
    }
  }
  res.warmup_ns = clock.now_ns() - t0;

  // 2. Block size.
  const double warm_median = first_level_warmup.empty() ? 0.0 : median(first_level_warmup);
  double b = std::ceil(static_cast<double>(o.min_batches) / static_cast<double>(result_rounds));
  if (warm_median > 0 && o.min_duration_ms > 0)
    b = std::max(b, std::round(o.min_duration_ms * 1e6 / (static_cast<double>(result_rounds) * warm_median)));
  res.batches_per_block = static_cast<int>(std::clamp(b, 1.0, 1e6));
  const auto per_block = static_cast<std::size_t>(res.batches_per_block);
  spdlog::debug("phase of {} level(s): warm-up {} ms, {} converged, median {:.3f} ms; {} batches per block", n,
                res.warmup_ns / 1e6, res.warmup_converged ? "" : "NOT", warm_median / 1e6, per_block);
  total = done + std::max<std::size_t>(n * result_rounds * per_block, n * static_cast<std::size_t>(o.min_batches));

  // 3. Measurement.
  const std::int64_t tm0 = clock.now_ns();
  const std::int64_t min_ns = ms_to_ns(o.min_duration_ms), max_ns = ms_to_ns(o.max_duration_ms);
  std::vector<std::size_t> batches(n, 0);
  std::vector<std::int64_t> measured_ns(n, 0);
  std::size_t first_round = 0;
  for (std::size_t r = 0;; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t l = level_at(r, i);
      MeasuredBlock block;
      block.round = r;
      ex.begin_block(l, false);
      block.start_ns = clock.now_ns();
      block.latencies_ns.reserve(per_block);
      for (std::size_t j = 0; j < per_block; ++j) block.latencies_ns.push_back(ex.run_batch(l, false));
      block.duration_ns = clock.now_ns() - block.start_ns;
      ex.end_block(l, false);
      block.median_ns = median(block.latencies_ns);
      batches[l] += per_block;
      // The minimum and maximum durations count measured time (predict), not the harness around it: a slow
      // input pipeline (decoding images, large synthetic batches) must not use up the measurement's time.
      for (double ns : block.latencies_ns) measured_ns[l] += static_cast<std::int64_t>(ns);
      res.levels[l].blocks.push_back(std::move(block));
      done += per_block;
      total = std::max(total, done);
      ex.progress(done, total, "measuring");
    }
    res.rounds = r + 1;
    bool mins = true, maxed = false;
    for (std::size_t l = 0; l < n; ++l) {
      mins = mins && batches[l] >= static_cast<std::size_t>(o.min_batches) && measured_ns[l] >= min_ns;
      maxed = maxed || measured_ns[l] >= max_ns;
    }
    if (!mins) continue;
    if (res.rounds < result_rounds) {
      if (maxed) break;
      continue;
    }
    if (res.rounds % 2 != 0) continue;  // judge whole windows only
    first_round = res.rounds - result_rounds;
    bool stable = true;
    for (std::size_t l = 0; l < n; ++l) {
      std::vector<double> medians;
      for (const auto& w : windows_of(res.levels[l], first_round)) medians.push_back(median(w));
      stable = stable && agree(medians, k_windows, o.rule.tolerance);
    }
    spdlog::debug("round {}: last {} windows {}", res.rounds, k_windows, stable ? "stable" : "not stable yet");
    if (stable) break;
    if (maxed) {
      res.reached_max_duration = true;
      break;
    }
    total = std::max(total, done + 2 * n * per_block);
  }
  res.measure_ns = clock.now_ns() - tm0;
  first_round = res.rounds > result_rounds ? res.rounds - result_rounds : 0;
  for (LevelMeasurement& lm : res.levels) {
    lm.result_first_block = 0;
    while (lm.result_first_block < lm.blocks.size() && lm.blocks[lm.result_first_block].round < first_round)
      ++lm.result_first_block;
    lm.stability = assess_windows(windows_of(lm, first_round), o.rule);
  }
  return res;
}

}  // namespace xsp
