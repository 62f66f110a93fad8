// JSON form of RunMeasurement (stored in runs.measurement): numbers stay numbers; a figure that does not exist
// (NaN) is null.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "xsp/record/record.h"

namespace xsp {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& expected, const nlohmann::json& got) {
  throw std::invalid_argument("run measurement: " + key + ": expected " + expected + ", got " + got.dump());
}

// A missing key keeps the field's default (`fallback`); null is a figure that does not exist (NaN).
double read_num(const nlohmann::json& j, const std::string& key, double fallback = 0) {
  if (!j.contains(key)) return fallback;
  if (j[key].is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!j[key].is_number()) bad(key, "a number or null", j[key]);
  return j[key].get<double>();
}

template <typename T>
T read_int(const nlohmann::json& j, const std::string& key, T fallback = 0) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer()) bad(key, "an integer", j[key]);
  return j[key].get<T>();
}

std::vector<double> read_nums(const nlohmann::json& j, const std::string& key) {
  std::vector<double> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) bad(key, "an array of numbers", j[key]);
  for (const auto& v : j[key]) {
    if (v.is_null())
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    else if (v.is_number())
      out.push_back(v.get<double>());
    else
      bad(key, "an array of numbers", j[key]);
  }
  return out;
}

}  // namespace

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json numbers_or_null(const std::vector<double>& v) {
  auto out = nlohmann::json::array();
  for (double x : v) out.push_back(number_or_null(x));
  return out;
}

nlohmann::json to_json(const LatencySummary& s) {
  return {{"n", s.n},
          {"trimmed_mean", number_or_null(s.trimmed_mean)},
          {"mean", number_or_null(s.mean)},
          {"stddev", number_or_null(s.stddev)},
          {"min", number_or_null(s.min)},
          {"max", number_or_null(s.max)},
          {"p50", number_or_null(s.p50)},
          {"p90", number_or_null(s.p90)},
          {"p95", number_or_null(s.p95)},
          {"p99", number_or_null(s.p99)},
          {"p999", number_or_null(s.p999)}};
}

nlohmann::json to_json(const RunMeasurement& m) {
  const auto& s = m.stability;
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : m.blocks)
    blocks.push_back({{"round", b.round},
                      {"start_ns", b.start_ns},
                      {"duration_ns", b.duration_ns},
                      {"batches", b.batches},
                      {"median_ns", number_or_null(b.median_ns)}});
  nlohmann::json baselines = nlohmann::json::object();
  for (const auto& [level, medians] : m.baseline_block_medians_ns) baselines[level] = numbers_or_null(medians);
  return {{"design", m.design},
          {"stability_windows", m.rule.windows},
          {"stability_tolerance", m.rule.tolerance},
          {"verdict", std::string(to_string(s.verdict))},
          {"window_medians_ns", numbers_or_null(s.window_medians_ns)},
          {"spread_fraction", number_or_null(s.spread_fraction)},
          {"cv", number_or_null(s.cv)},
          {"drift_fraction", number_or_null(s.drift_fraction)},
          {"samples", s.samples},
          {"median_ns", number_or_null(s.median_ns)},
          {"ci95_low_ns", number_or_null(s.ci95_ns.low)},
          {"ci95_high_ns", number_or_null(s.ci95_ns.high)},
          {"warmup_batches", m.warmup_batches},
          {"warmup_ns", m.warmup_ns},
          {"warmup_converged", m.warmup_converged},
          {"warmup_block_medians_ns", numbers_or_null(m.warmup_block_medians_ns)},
          {"batches_per_block", m.batches_per_block},
          {"blocks", blocks},
          {"result_first_block", m.result_first_block},
          {"measure_ns", m.measure_ns},
          {"reached_max_duration", m.reached_max_duration},
          {"baseline_block_medians_ns", baselines}};
}

RunMeasurement run_measurement_from_json(const nlohmann::json& j) {
  if (!j.is_object()) bad("(top level)", "an object", j);
  RunMeasurement m;
  if (j.contains("design")) {
    if (!j["design"].is_string()) bad("design", "a string", j["design"]);
    m.design = j["design"].get<std::string>();
  }
  m.rule.windows = read_int<int>(j, "stability_windows", m.rule.windows);
  if (j.contains("stability_tolerance")) m.rule.tolerance = read_num(j, "stability_tolerance");
  auto& s = m.stability;
  if (j.contains("verdict")) {
    const auto v = j["verdict"].is_string() ? parse_verdict(j["verdict"].get<std::string>()) : std::nullopt;
    if (!v) bad("verdict", "stable, unstable or not_assessed", j["verdict"]);
    s.verdict = *v;
  }
  s.window_medians_ns = read_nums(j, "window_medians_ns");
  s.spread_fraction = read_num(j, "spread_fraction");
  s.cv = read_num(j, "cv");
  s.drift_fraction = read_num(j, "drift_fraction");
  s.samples = read_int<std::size_t>(j, "samples");
  s.median_ns = read_num(j, "median_ns");
  s.ci95_ns = {read_num(j, "ci95_low_ns"), read_num(j, "ci95_high_ns")};
  m.warmup_batches = read_int<int>(j, "warmup_batches");
  m.warmup_ns = read_int<std::int64_t>(j, "warmup_ns");
  if (j.contains("warmup_converged")) {
    if (!j["warmup_converged"].is_boolean()) bad("warmup_converged", "true or false", j["warmup_converged"]);
    m.warmup_converged = j["warmup_converged"].get<bool>();
  }
  m.warmup_block_medians_ns = read_nums(j, "warmup_block_medians_ns");
  m.batches_per_block = read_int<int>(j, "batches_per_block");
  if (j.contains("blocks")) {
    if (!j["blocks"].is_array()) bad("blocks", "an array", j["blocks"]);
    for (const auto& b : j["blocks"]) {
      if (!b.is_object()) bad("blocks", "an array of objects", b);
      m.blocks.push_back({read_int<std::size_t>(b, "round"), read_int<std::int64_t>(b, "start_ns"),
                          read_int<std::int64_t>(b, "duration_ns"), read_int<std::size_t>(b, "batches"),
                          read_num(b, "median_ns")});
    }
  }
  m.result_first_block = read_int<std::size_t>(j, "result_first_block");
  m.measure_ns = read_int<std::int64_t>(j, "measure_ns");
  if (j.contains("reached_max_duration")) {
    if (!j["reached_max_duration"].is_boolean())
      bad("reached_max_duration", "true or false", j["reached_max_duration"]);
    m.reached_max_duration = j["reached_max_duration"].get<bool>();
  }
  if (j.contains("baseline_block_medians_ns")) {
    const auto& b = j["baseline_block_medians_ns"];
    if (!b.is_object()) bad("baseline_block_medians_ns", "an object", b);
    for (const auto& [level, _] : b.items()) m.baseline_block_medians_ns[level] = read_nums(b, level);
  }
  return m;
}

}  // namespace xsp
