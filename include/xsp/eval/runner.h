// The batch-sweep workload (SPEC §1, §3): for each batch size, one run per trace level (leveled experimentation),
// each a sequence of warm-up and measured batches through the pipeline, every stage a MODEL span.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/eval/plan.h"
#include "xsp/eval/session.h"
#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/record/record.h"

namespace xsp {

/// Distinct synthetic batches an evaluation cycles through (see SweepPlan::store_predictions).
inline constexpr std::uint64_t kSyntheticBatches = 16;

/// The batch-sweep workload (SPEC §3) with `predictor` (already loaded with `manifest`), phase by phase
/// (xsp/eval/measurement.h), for plan.batch_sizes × plan.levels: for every batch size the levels that can be
/// switched in-process (M, M/F) in one interleaved phase; then, for every batch size, the CUPTI levels (M/F/L,
/// M/F/S, M/F/K) in a second phase with M and M/F blocks beside them (leveled) or alone; then the counter runs
/// (hardware). With measurement.order == kSequential each level is measured alone, in that order. Profilers are
/// switched by `session` (its profilers must hold what plan.levels need). The record lists the runs sorted by
/// (batch size, level) and holds the level overheads with their intervals; settings hold the measurement options,
/// and settings["sample_outputs"] the top-k of the last measured batch of each batch size's first run. Image inputs
/// are all read and pre-processed once before the first batch (screen_inputs()). An interruption (the session's
/// flag) drops the run in progress and returns the finished ones with status "incomplete" and
/// settings["interrupted"] = {signal, complete_runs}; counter runs are not cut in the middle. The plan is not
/// checked again (validate() made it); pipeline and predictor errors propagate (std::runtime_error).
EvaluationRecord run_batch_sweep(const Manifest& manifest, Predictor& predictor, const RunPlan& plan,
                                 RunSession& session);

}  // namespace xsp
