// Look-ups on an evaluation's runs (SPEC §3: which run each level's latencies come from).
#include "xsp/record/record.h"

namespace xsp {

const char* run_name(TraceLevel level) {
  switch (level) {
    case TraceLevel::kModel: return "M";
    case TraceLevel::kFramework: return "M/F";
    case TraceLevel::kLibrary: return "M/F/L";
    case TraceLevel::kSystem: return "M/F/S";
    case TraceLevel::kKernel: return "M/F/K";
    case TraceLevel::kHardware: return "M/F/H";
  }
  return "?";
}

const RunRecord* EvaluationRecord::find_run(int batch_size, TraceLevel level) const {
  for (const RunRecord& run : runs) {
    if (run.batch_size == batch_size && run.trace_level == level) return &run;
  }
  return nullptr;
}

const RunRecord* EvaluationRecord::run_for_level(int batch_size, Level level) const {
  // Leveled experimentation: a level's latencies are trustworthy only in the run that adds no profiler
  // deeper than that level, because deeper profilers inflate every enclosing span. Among the runs that
  // record `level`, the one with the shallowest deepest level is therefore the least perturbed one; when
  // it is exactly `level` that is the M / M/F / M/F/K run of SPEC §3, otherwise (non-leveled evaluation)
  // it is the only run that has the level at all.
  const RunRecord* best = nullptr;
  for (const RunRecord& run : runs) {
    if (run.batch_size != batch_size || !enables(run.trace_level, level)) continue;
    if (best == nullptr ||
        static_cast<int>(deepest_level(run.trace_level)) < static_cast<int>(deepest_level(best->trace_level))) {
      best = &run;
    }
  }
  return best;
}

}  // namespace xsp
