// Runs a workload the way evaluate() does once validate() made the plan, for tests that drive a runner directly on
// a fake or real predictor: the plan's levels from its trace level and the profilers at hand, the predictor's
// framework profiler in the session.
#pragma once

#include <utility>

#include "xsp/eval/evaluate.h"
#include "xsp/eval/generation_runner.h"
#include "xsp/eval/plan.h"
#include "xsp/eval/runner.h"
#include "xsp/eval/scenario_runner.h"
#include "xsp/eval/session.h"

namespace xsp::testing {

/// A session on `clock` (nullptr = the system clock) without machine-state sampling, as the tests' runs want it.
inline SessionOptions quiet_session(const Clock* clock = nullptr) {
  SessionOptions s;
  s.clock = clock;
  s.record_machine_state = false;
  return s;
}

/// `plan` with its levels (run_levels()) for `predictor` and the session's profilers, and the session with the
/// predictor's framework profiler: what evaluate() hands a workload.
inline std::pair<RunPlan, SessionOptions> as_validated(RunPlan plan, Predictor& predictor, SessionOptions session) {
  session.profilers.framework = predictor.framework_profiler();
  plan.levels = run_levels(plan.trace_level, plan.leveled, session.profilers.framework != nullptr,
                           session.profilers.device != nullptr, session.profilers.counters != nullptr);
  return {std::move(plan), std::move(session)};
}

inline EvaluationRecord sweep(const Manifest& manifest, Predictor& predictor, RunPlan plan, SessionOptions options) {
  plan.workload = Workload::kBatchSweep;
  auto [p, s] = as_validated(std::move(plan), predictor, std::move(options));
  RunSession session(std::move(s));
  return run_batch_sweep(manifest, predictor, p, session);
}

inline EvaluationRecord scenario(const Manifest& manifest, Predictor& predictor, RunPlan plan, SessionOptions options) {
  plan.workload = Workload::kScenario;
  auto [p, s] = as_validated(std::move(plan), predictor, std::move(options));
  RunSession session(std::move(s));
  return run_scenario(manifest, predictor, p, session);
}

inline EvaluationRecord generation(const Manifest& manifest, Predictor& predictor, RunPlan plan,
                                   SessionOptions options) {
  plan.workload = Workload::kGeneration;
  auto [p, s] = as_validated(std::move(plan), predictor, std::move(options));
  RunSession session(std::move(s));
  return run_generation(manifest, predictor, p, session);
}

/// The request field validate_fields() refuses for a request of scenario `s` (model "fake", synthetic inputs), or
/// "(accepted)".
inline std::string scenario_field_refused(ScenarioRequest s) {
  EvaluationRequest r;
  r.model = "fake";
  r.inputs.synthetic = true;
  r.scenario = std::move(s);
  try {
    validate_fields(r);
  } catch (const RequestError& e) {
    return e.field();
  }
  return "(accepted)";
}

}  // namespace xsp::testing
