// Runs a LoadGen-style scenario (SPEC §6: SingleStream, MultiStream, Server, Offline) against a loaded
// Predictor and turns the result into an EvaluationRecord that the store keeps and `xsp show` reprints.
//
// What is measured: predict only. Inputs (synthetic tensors, or images decoded and pre-processed through the
// manifest's Preprocessor) are prepared once before the run into a sample library, so the timed region holds
// batch assembly (a copy of the prepared samples) and Predictor::predict(); no decode, no post-processing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "xsp/eval/plan.h"
#include "xsp/eval/session.h"
#include "xsp/loadgen/loadgen.h"
#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/predictor/predictor.h"
#include "xsp/record/record.h"

namespace xsp {

/// Runs the scenario (or the peak-QPS search, or the Offline batch-size sweep) with `predictor`, already loaded
/// with `manifest`, and returns the record (not yet stored): scenario = the scenario name, one RunRecord per run
/// (trace level model, or options.trace_level with trace_tail; batch_size = largest predict batch;
/// predict_latency_ns = raw per-query latencies in ns, issue order; Offline: stage "predict" summarizes the
/// per-batch predict latencies; trace = the kept tail-query traces, assembled; scenario_result = LoadGen's result
/// with the predict calls' batch latencies and, with trace_tail, the TailTraceSelection), settings with
/// "scenario_settings" (seed included), for a peak search "peak_qps", and for a sweep "sweep"
/// {rule, latency_bound_ms, optimal_batch_size (null when no batch meets the bound), rows: [{batch_size,
/// samples_per_second, batch_p99_ms}]}. With plan.scenario.trace_tail every query is traced on the SUT's worker
/// thread at plan.trace_level, its profilers switched there by `session` (framework ops; kernels too at kernel
/// level). The plan is validate()'s; the session's interrupt flag stops the run in progress (dropped) and the
/// record holds the runs already complete with status "incomplete". Throws std::runtime_error when preparing
/// inputs or predict() fails.
EvaluationRecord run_scenario(const Manifest& manifest, Predictor& predictor, const RunPlan& plan, RunSession& session);

/// A text table of a scenario record: per run, queries, samples, duration, p50/p90/p95/p99/p99.9 (ms) and
/// trimmed mean recomputed from the raw latencies, QPS with and without harness, harness ns/query, early-stopping
/// estimate; for a peak search the tried rates with pass/fail and the peak; for a sweep the samples/s per batch
/// size and the optimal batch; with tail traces, which queries were kept (query, rank, percentile, latency,
/// spans) and how many query traces were dropped.
std::string format_scenario_record(const EvaluationRecord& record);

}  // namespace xsp
