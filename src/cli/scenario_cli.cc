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
  latency_bound_option_ =
      evaluate->add_option("--latency-bound-ms", latency_bound_ms_,
                           "scenario (server): bound of the target percentile (ms); offline sweep: optimal batch = "
                           "highest samples/s whose per-batch p99 meets it")
          ->capture_default_str()->needs(scenario);
  evaluate->add_option("--samples-per-query", samples_per_query_, "scenario (multi-stream): samples per query")
      ->capture_default_str()->needs(scenario);
  evaluate->add_option("--percentile", percentile_,
                       "scenario: target percentile in (0, 100); default 90 for single-stream, 99 otherwise")
      ->needs(scenario);
  evaluate->add_flag("--find-peak-qps", find_peak_qps_,
                     "scenario (server): search the highest QPS whose target percentile meets the bound")
      ->needs(scenario);
  max_batch_option_ =
      evaluate->add_option("--max-batch", max_batch_, "scenario (multi-stream, offline): largest batch per predict()")
          ->capture_default_str()->needs(scenario);
  trace_tail_option_ = evaluate->add_option("--trace-tail", trace_tail_,
                       "scenario: keep the full trace of the N slowest queries of each run (plus the median query); "
                       "every query is traced at --trace-level (model|framework), the rest dropped and counted. "
                       "Default 0, or 5 with --trace-level framework")
      ->needs(scenario);
}

int ScenarioCommand::run(const Manifest& manifest, Predictor& predictor, Store& store, const std::string& store_path,
                         std::uint64_t seed, bool synthetic, const std::string& inputs_dir, const std::string& device,
                         const std::string& trace_level, const std::vector<int>& batch_sizes) const {
  auto bad = [](const std::string& option, const std::string& expected, const std::string& got) {
    return CLI::ValidationError(option, "expected " + expected + ", got '" + got + "'");
  };
  ScenarioOptions o;
  try {
    o.settings.scenario = loadgen::parse_scenario(scenario_);
  } catch (const std::invalid_argument&) {
    throw bad("--scenario", "single-stream|multi-stream|server|offline", scenario_);
  }
  const auto level = parse_trace_level(trace_level);
  if (!level || *level > TraceLevel::kFramework)
    throw bad("--trace-level", "model or framework with --scenario (tail-query traces)", trace_level);
  const bool tail_given = trace_tail_option_->count() > 0;
  if (tail_given && trace_tail_ < 0) throw bad("--trace-tail", "a number >= 0", std::to_string(trace_tail_));
  const std::int64_t tail = tail_given ? trace_tail_ : (*level == TraceLevel::kFramework ? 5 : 0);
  if (*level == TraceLevel::kFramework && tail == 0)
    throw bad("--trace-tail", ">= 1 with --trace-level framework (the framework level traces the tail queries)", "0");
  if (tail > 0 && o.settings.scenario == loadgen::Scenario::kOffline)
    throw bad("--trace-tail", "single-stream, multi-stream or server (offline has a single query)", std::to_string(tail));
  if (!batch_sizes.empty() && o.settings.scenario != loadgen::Scenario::kOffline)
    throw bad("--batch-sizes", "--scenario offline for a batch-size sweep (other scenarios take --max-batch)", scenario_);
  if (!batch_sizes.empty() && max_batch_option_->count() > 0)
    throw bad("--max-batch", "either --max-batch or a --batch-sizes sweep, not both", std::to_string(max_batch_));
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
  o.trace_tail = static_cast<std::size_t>(tail);
  o.trace_level = *level;
  for (int b : batch_sizes) o.sweep_batch_sizes.push_back(static_cast<std::size_t>(b));
  if (!batch_sizes.empty() && latency_bound_option_->count() > 0) o.sweep_latency_bound_ms = latency_bound_ms_;

  auto record = run_scenario(manifest, predictor, o);
  predictor.close();
  record.created_at = utc_now_iso8601();
  record.system = describe_system();
  record.system["framework"] = {{"name", record.framework_name}, {"version", record.framework_version}};
  store.save(record);
  std::cout << "evaluation " << record.id << ": " << format_scenario_record(record);
  for (const auto& run : record.runs)
    for (const auto& [name, value] : run.trace.counters)
      // scenario.* are the deliberate tail-trace drops, already in the table; the rest are losses.
      if (value > 0 && !name.starts_with("scenario."))
        std::cout << "  note: run " << run.id << ": " << name << " = " << value << "\n";
  std::cout << "stored as evaluation " << record.id << " in " << store_path << "\n";
  return 0;
}

}  // namespace xsp::cli
