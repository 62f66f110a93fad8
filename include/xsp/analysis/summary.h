// What `xsp evaluate` and `xsp show` print about an evaluation's runs: each latency with its 95% interval and
// stability verdict in the same row, and each level's overhead with its interval (SPEC §3 "Stability").
#pragma once

#include <string>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/record/record.h"
#include "xsp/stats/stability.h"

namespace xsp {

/// The run's stability: the stored assessment, or, for a run stored before XSP assessed stability
/// (RunMeasurement::design empty), the default rule applied afterwards to its raw latencies (assess_series()).
StabilityAssessment run_stability(const RunRecord& run);

/// How a verdict reads next to its number: "stable", "UNSTABLE (spread 23.4%)", "not assessed".
std::string stability_label(const StabilityAssessment& stability);

/// Level overheads: record.level_overheads; for records stored before XSP interleaved levels, estimates from the
/// runs' raw latencies (design "sequential", each batch a block, unpaired_change(): an interval that ignores
/// drift, said in the note).
std::vector<LevelOverhead> level_overheads(const EvaluationRecord& record);

/// "summary.runs": one row per run: batch_size, trace_level, run ("M", "M/F"...), median_ms, ci95_low_ms,
/// ci95_high_ms, stability (stability_label()), spread_percent, cv_percent, drift_percent, trimmed_mean_ms,
/// p50_ms, p90_ms, p99_ms, throughput_samples_per_s, batches (of the result), warmup_batches, warmup_ms,
/// spans, unparented, warnings (count). Percentiles and trimmed mean of the predict stage.
/// "summary.overheads" (leveled evaluations): batch_size, trace_level, baseline, design, overhead (the reading
/// of describe_overhead(): the interval and "not significant" / "negative ..." with the number), and for CSV/JSON
/// only overhead_percent, ci95_low_percent, ci95_high_percent, significant; rounds, note.
/// Each run's warnings and "nothing is silent" counters go into the runs table's notes.
std::vector<Table> evaluation_summary(const EvaluationRecord& record);

/// One line per run about how it was measured, for `xsp show`: design, blocks and batches per block, result
/// window medians, warm-up (batches, ms, converged), measuring time, machine state at start/end.
std::vector<std::string> describe_measurements(const EvaluationRecord& record);

}  // namespace xsp
