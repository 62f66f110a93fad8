#include "scenario_cli.h"

#include <cmath>
#include <iostream>

#include "xsp/system/system_info.h"

namespace xsp::cli {

void ScenarioCommand::add_options(CLI::App* evaluate) {
  auto* scenario = evaluate->add_option("--scenario", scenario_,
                                        "run a load-generator scenario instead of the batch sweep: "
                                        "single-stream|multi-stream|server|offline (measures predict only)");
  evaluate->add_option("--min-duration-ms", min_duration_ms_, "scenario: minimum run duration (ms)")
      ->capture_default_str()->needs(scenario);
  evaluate->add_option("--min-queries", min_queries_, "scenario: minimum measured queries")
      ->capture_default_str()->needs(scenario);
  evaluate->add_option("--target-qps", target_qps_,
                       "scenario: server arrival rate (queries/s; peak search starts here); offline: sizes the "
                       "sample count with --min-duration-ms")
      ->capture_default_str()->needs(scenario);
  evaluate->add_option("--latency-bound-ms", latency_bound_ms_, "scenario (server): bound of the target percentile (ms)")
      ->capture_default_str()->needs(scenario);
  evaluate->add_option("--samples-per-query", samples_per_query_, "scenario (multi-stream): samples per query")
      ->capture_default_str()->needs(scenario);
  evaluate->add_option("--percentile", percentile_,
                       "scenario: target percentile in (0, 100); default 90 for single-stream, 99 otherwise")
      ->needs(scenario);
  evaluate->add_flag("--find-peak-qps", find_peak_qps_,
                     "scenario (server): search the highest QPS whose target percentile meets the bound")
      ->needs(scenario);
  evaluate->add_option("--max-batch", max_batch_, "scenario (multi-stream, offline): largest batch per predict()")
      ->capture_default_str()->needs(scenario);
}

int ScenarioCommand::run(const Manifest& manifest, Predictor& predictor, Store& store, const std::string& store_path,
                         std::uint64_t seed, bool synthetic, const std::string& inputs_dir, const std::string& device,
                         const std::string& trace_level) const {
  auto bad = [](const std::string& option, const std::string& expected, const std::string& got) {
    return CLI::ValidationError(option, "expected " + expected + ", got '" + got + "'");
  };
  ScenarioOptions o;
  try {
    o.settings.scenario = loadgen::parse_scenario(scenario_);
  } catch (const std::invalid_argument&) {
    throw bad("--scenario", "single-stream|multi-stream|server|offline", scenario_);
  }
  if (trace_level != "model") throw bad("--trace-level", "model with --scenario (scenarios are not traced)", trace_level);
  if (min_duration_ms_ < 1) throw bad("--min-duration-ms", "a positive number", std::to_string(min_duration_ms_));
  if (min_queries_ < 1) throw bad("--min-queries", "a positive number", std::to_string(min_queries_));
  if (!(target_qps_ > 0) || !std::isfinite(target_qps_))
    throw bad("--target-qps", "a positive number", std::to_string(target_qps_));
  if (!(latency_bound_ms_ > 0) || !std::isfinite(latency_bound_ms_))
    throw bad("--latency-bound-ms", "a positive number", std::to_string(latency_bound_ms_));
  if (samples_per_query_ < 1) throw bad("--samples-per-query", "a positive number", std::to_string(samples_per_query_));
  if (percentile_ != 0 && !(percentile_ > 0 && percentile_ < 100))
    throw bad("--percentile", "a number in (0, 100)", std::to_string(percentile_));
  if (max_batch_ < 1) throw bad("--max-batch", "a positive number", std::to_string(max_batch_));
  if (find_peak_qps_ && o.settings.scenario != loadgen::Scenario::kServer)
    throw bad("--find-peak-qps", "--scenario server", scenario_);

  o.settings.min_duration_ms = min_duration_ms_;
  o.settings.min_query_count = min_queries_;
  o.settings.seed = seed;
  o.settings.target_qps = target_qps_;
  o.settings.latency_bound_ns = static_cast<std::int64_t>(std::llround(latency_bound_ms_ * 1e6));
  o.settings.samples_per_query = samples_per_query_;
  o.settings.target_percentile = percentile_;
  o.max_batch = static_cast<std::size_t>(max_batch_);
  o.find_peak_qps = find_peak_qps_;
  o.synthetic = synthetic;
  o.inputs_dir = inputs_dir;
  o.device = DeviceSpec{device, 0};

  auto record = run_scenario(manifest, predictor, o);
  predictor.close();
  record.created_at = utc_now_iso8601();
  record.system = describe_system();
  record.system["framework"] = {{"name", record.framework_name}, {"version", record.framework_version}};
  store.save(record);
  std::cout << "evaluation " << record.id << ": " << format_scenario_record(record);
  std::cout << "stored as evaluation " << record.id << " in " << store_path << "\n";
  return 0;
}

}  // namespace xsp::cli
