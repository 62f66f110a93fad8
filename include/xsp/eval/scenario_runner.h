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

#include "xsp/loadgen/loadgen.h"
#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/predictor/predictor.h"
#include "xsp/record/record.h"

namespace xsp {

struct ScenarioOptions {
  /// The load generator's settings (scenario, min duration/queries, seed, target QPS, latency bound, samples
  /// per query, percentile). settings.sample_count is overwritten with the size of the prepared library.
  loadgen::Settings settings;
  /// Largest batch handed to predict(): MultiStream and Offline queries are cut into batches of at most this.
  std::size_t max_batch = 1;
  /// Server only: search the highest target QPS whose target percentile meets the latency bound; every tried
  /// rate becomes a run of the record.
  bool find_peak_qps = false;
  /// Feed seeded standard-normal tensors (seeded by settings.seed) instead of images.
  bool synthetic = true;
  /// Folder of images when !synthetic; each image is one sample of the library.
  std::filesystem::path inputs_dir;
  /// Synthetic library size (distinct tensors cycled through by sample index).
  std::size_t synthetic_samples = 64;
  /// Leave out images that cannot be read or pre-processed (listed in settings["inputs_skipped"], counted in
  /// settings["inputs_skipped_count"]) instead of failing; see screen_inputs().
  bool skip_bad_inputs = false;
  /// Limit, in bytes, on the prepared sample library (synthetic or images), checked before it is allocated.
  std::uint64_t max_batch_bytes = kDefaultMaxBatchBytes;
  /// Recorded in the record's device field.
  DeviceSpec device;
  /// Keep the full trace of this many slowest measured queries of each run, plus the median query (tail_traces.h);
  /// 0 = no per-query tracing. Every query is then traced on the predictor's thread (SutTracing) and the rest
  /// dropped at the end; not for Offline (its single query is the whole run).
  std::size_t trace_tail = 0;
  /// Depth of the per-query traces: model (query → predict spans) or framework (+ the predictor's operator
  /// spans; needs a FrameworkProfiler). Deeper levels are not supported in scenarios yet.
  TraceLevel trace_level = TraceLevel::kModel;
  /// Offline only: run the scenario once per entry as max_batch (batch-size sweep) and pick the optimal batch
  /// by SPEC §4 A1 (optimal_batch_size(), or optimal_batch_size_within_bound() with sweep_latency_bound_ms
  /// on the per-batch p99 predict latency). Empty = one run with max_batch.
  std::vector<std::size_t> sweep_batch_sizes;
  std::optional<double> sweep_latency_bound_ms;
  /// The front end's signal flag (EvaluationOptions::interrupt): when set, the run in progress stops issuing
  /// queries (loadgen::Settings::interrupt) and is dropped, no further run starts, and run_scenario() returns the
  /// runs already complete with status "incomplete" and settings["interrupted"] = {signal, complete_runs}.
  const std::atomic<int>* interrupt = nullptr;
};

/// Runs the scenario (or the peak-QPS search, or the Offline batch-size sweep) with `predictor`, already loaded
/// with `manifest`, and returns the record (not yet stored): scenario = the scenario name, one RunRecord per run
/// (trace level model, or options.trace_level with trace_tail; batch_size = largest predict batch;
/// predict_latency_ns = raw per-query latencies in ns, issue order; Offline: stage "predict" summarizes the
/// per-batch predict latencies; trace = the kept tail-query traces, assembled), settings with
/// "scenario_settings" (seed included), "results" (one JSON summary per run, same order as runs, with
/// "batch_latency" {batches, p50_ns, p99_ns, trimmed_mean_ns} of the predict calls and, with trace_tail,
/// "tail_traces" (to_json(TailTraceSelection))), for a peak search "peak_qps", and for a sweep "sweep"
/// {rule, latency_bound_ms, optimal_batch_size (null when no batch meets the bound), rows: [{batch_size,
/// samples_per_second, batch_p99_ms}]}. Throws std::invalid_argument for bad options (max_batch 0,
/// find_peak_qps outside Server, a sweep outside Offline or with a 0 batch size, trace_tail with Offline,
/// trace level above framework or framework without a framework profiler, bad loadgen settings),
/// std::runtime_error when preparing inputs or predict() fails.
EvaluationRecord run_scenario(const Manifest& manifest, Predictor& predictor, const ScenarioOptions& options);

/// True when `record` came from run_scenario() (its scenario is a load-generator scenario name).
bool is_scenario_record(const EvaluationRecord& record);

/// A text table of a scenario record: per run, queries, samples, duration, p50/p90/p95/p99/p99.9 (ms) and
/// trimmed mean recomputed from the raw latencies, QPS with and without harness, harness ns/query, early-stopping
/// estimate; for a peak search the tried rates with pass/fail and the peak; for a sweep the samples/s per batch
/// size and the optimal batch; with tail traces, which queries were kept (query, rank, percentile, latency,
/// spans) and how many query traces were dropped.
std::string format_scenario_record(const EvaluationRecord& record);

}  // namespace xsp
