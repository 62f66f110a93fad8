// `xsp evaluate MODEL --scenario ...`: the options of a load-generator scenario run (SPEC §6), kept out of
// main.cc so the evaluate command only registers them and hands over when --scenario is given.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "xsp/eval/scenario_runner.h"
#include "xsp/store/store.h"

namespace xsp::cli {

class ScenarioCommand {
 public:
  /// Adds --scenario and its options to `evaluate`; every other scenario option needs --scenario.
  void add_options(CLI::App* evaluate);
  /// True when --scenario was given (evaluate then runs the scenario instead of the batch sweep).
  bool active() const { return !scenario_.empty(); }
  /// Validates the options (CLI::ValidationError naming the option and value), runs the scenario with the loaded
  /// `predictor`, stores the record in `store`, prints the results table and returns the exit status.
  /// `seed`, `synthetic`, `inputs_dir`, `device` and `trace_level` are evaluate's own options; `batch_sizes` is
  /// evaluate's --batch-sizes when the user gave it (an Offline batch-size sweep), else empty.
  int run(const Manifest& manifest, Predictor& predictor, Store& store, const std::string& store_path,
          std::uint64_t seed, bool synthetic, const std::string& inputs_dir, const std::string& device,
          const std::string& trace_level, const std::vector<int>& batch_sizes) const;

 private:
  std::string scenario_;
  std::int64_t min_duration_ms_ = 1000;
  std::uint64_t min_queries_ = 100;
  double target_qps_ = 100;
  double latency_bound_ms_ = 10;
  std::uint64_t samples_per_query_ = 8;
  double percentile_ = 0;  // 0: the scenario's default (single-stream 90, others 99)
  bool find_peak_qps_ = false;
  std::int64_t max_batch_ = 1;
  std::int64_t trace_tail_ = 0;  // when not given: 0, or 5 with --trace-level framework
  CLI::Option* trace_tail_option_ = nullptr;
  CLI::Option* latency_bound_option_ = nullptr;
  CLI::Option* max_batch_option_ = nullptr;
};

}  // namespace xsp::cli
