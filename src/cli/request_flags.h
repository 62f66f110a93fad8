// The flags that define an EvaluationRequest, shared by `xsp evaluate` (runs it here) and `xsp submit` (queues it for
// an agent): one definition, so that both commands take the same flags with the same meaning and checks.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xsp/eval/evaluate.h"
#include "xsp/eval/measurement.h"
#include "xsp/profilers/profiler_options.h"

namespace xsp::cli {

/// The request and the flags that need parsing before they become part of it (to_request()).
struct RequestFlags {
  EvaluationRequest request;
  std::string device = "cpu", batch_sizes = "1", trace_level = "model", level_order = "interleaved";
  // Scenario flags (only with --scenario).
  std::string scenario;
  ScenarioRequest s;
  double latency_bound_ms = 10;
  int max_batch = 1, trace_tail = 0;
  // Generation flags: token counts "N" or "MIN:MAX" (parse_token_range()).
  std::string prompt_tokens = "32", output_tokens;
  CLI::Option *batch_sizes_opt = nullptr, *latency_opt = nullptr, *max_batch_opt = nullptr, *tail_opt = nullptr;
  // Profiler flags by option key, in env_overrides() order.
  std::vector<std::pair<const EnvOverride*, CLI::Option*>> profiler_flags;
  std::map<std::string, std::string> profiler_values;
  std::map<std::string, bool> profiler_switches;
};

/// Adds MODEL and every request flag (framework, device, batch sizes, trace level, measurement, inputs, scenarios,
/// profilers) to `sub`, bound to `a` (which must outlive the parse).
void add_request_flags(CLI::App* sub, RequestFlags& a);
/// Completes a.request from the parsed flags. Throws CLI::ValidationError naming the flag (--device, --trace-level,
/// --level-order, --batch-sizes, a profiler flag).
void to_request(RequestFlags& a);
/// A RequestError from validate()/evaluate() as the CLI usage error on the flag that set its field.
CLI::ValidationError flag_error(const RequestError& e);

}  // namespace xsp::cli
