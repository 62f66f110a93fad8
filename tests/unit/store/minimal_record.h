// Records and spans for the store's tests and benchmarks: the smallest evaluation record the store accepts, and a
// span on one host thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "xsp/record/record.h"

namespace xsp::testing {

/// A span on host thread 4242; context-parented unless it is a root.
inline Span make_span(SpanId id, SpanId parent, Level level, std::string name, std::int64_t start_ns,
                      std::int64_t end_ns, std::vector<Tag> tags = {}) {
  Span s;
  s.id = id;
  s.parent_id = parent;
  s.level = level;
  s.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
  s.name = std::move(name);
  s.start_ns = start_ns;
  s.end_ns = end_ns;
  s.track = Track::host_thread(4242);
  s.tags = std::move(tags);
  return s;
}

/// One run of batch size 1 at the model level with three latencies and no trace: for what surrounds a record
/// (saving, the job queue), not its content.
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
