// The smallest evaluation record the store accepts: one run of batch size 1 at the model level with three latencies
// and no trace. For tests and benchmarks of what surrounds a record (saving, the job queue), not of its content.
#pragma once

#include <string>

#include "xsp/record/record.h"

namespace xsp::testing {

inline EvaluationRecord minimal_record(const std::string& model, const std::string& status = "complete") {
  EvaluationRecord r;
  r.status = status;
  r.created_at = "2026-11-24T09:00:00Z";
  r.model_name = model;
  r.model_version = "1.0.0";
  r.framework_name = "fake";
  r.framework_version = "1.0.0";
  r.device = "cpu";
  r.scenario = "batch-sweep";
  r.batch_sizes = {1};
  r.trace_level = TraceLevel::kModel;
  r.settings = nlohmann::json::object();
  r.system = nlohmann::json::object();
  RunRecord run;
  run.batch_size = 1;
  run.trace_level = TraceLevel::kModel;
  run.iterations = 3;
  run.predict_latency_ns = {1e6, 1.1e6, 0.9e6};
  r.runs.push_back(run);
  return r;
}

}  // namespace xsp::testing
