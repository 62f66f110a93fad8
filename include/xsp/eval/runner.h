// Runs an evaluation (SPEC §1, §3): for each batch size, one run per trace level (leveled experimentation),
// each a sequence of warm-up and measured batches through the pipeline, every stage a MODEL span.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/record/record.h"

namespace xsp {

struct EvaluationOptions {
  std::vector<int> batch_sizes{1};
  TraceLevel trace_level = TraceLevel::kModel;
  /// Leveled experimentation (SPEC §3): run M, then M/F, ... down to trace_level, for each batch size.
  bool leveled = false;
  int warmup_iterations = 3;  ///< batches run before measuring; never measured, never traced
  int iterations = 10;        ///< measured batches per run
  std::filesystem::path inputs_dir;  ///< folder of images; ignored when synthetic
  bool synthetic = false;            ///< feed seeded random tensors instead of images (no decode)
  std::uint64_t seed = 0;            ///< seed of synthetic inputs (recorded in settings)
  DeviceSpec device;
  /// Records LIBRARY/SYSTEM/KERNEL spans in runs whose level enables them; required for those levels.
  /// Owned by the caller (see create_device_profiler()).
  DeviceProfiler* device_profiler = nullptr;
  /// Records HARDWARE spans (counters) in the counter run of trace level hardware (create_counter_profiler()).
  /// Owned by the caller.
  DeviceProfiler* counter_profiler = nullptr;
  /// Measured batches of the counter run (its timings are never used; kernel replay makes each batch cost
  /// passes × kernels replays, so one batch is the default).
  int counter_iterations = 1;
  /// Keep, per run, every distinct measured input's output (RunRecord::predictions): softmax over the first
  /// output's row (raw values when the manifest has no softmax step) and its top-k classes (k of the manifest's
  /// top_k step, else 5). Synthetic inputs get ids "synthetic:seed=S:batch=I:K" (I counts warm-up batches,
  /// K the sample in the batch), so two evaluations with the same options feed and name the same tensors.
  bool store_predictions = false;
};

/// Progress of an evaluation: `done` of `total` batches (warm-up included) and what runs now.
struct Progress {
  int done = 0;
  int total = 0;
  std::string what;
};
using ProgressCallback = std::function<void(const Progress&)>;

/// The trace levels a run sequence covers: {trace_level} or, when leveled, M, M/F and then trace_level if it is
/// deeper (library, system and kernel levels come from the device profiler in one run: M/F/K). Hardware adds a
/// counter run (framework ops + HARDWARE spans, no activity tracing) after the kernel run, which it always needs
/// for kernel latencies: leveled M, M/F, M/F/K, M/F/H; not leveled M/F/K, M/F/H (SPEC §3: counter runs never
/// give timings). Throws std::invalid_argument when a level needs a profiler that is missing (framework
/// profiler; device profiler for library/system/kernel/hardware; counter profiler for hardware).
std::vector<TraceLevel> run_levels(TraceLevel trace_level, bool leveled, bool have_framework_profiler,
                                   bool have_device_profiler = false, bool have_counter_profiler = false);

/// Runs the whole evaluation with `predictor` (already loaded with `manifest`). Runs go level by level (all
/// M runs first, then M/F, then M/F/K) so that no shallower run follows a deeper profiler's start; the
/// record lists them sorted by (batch size, level). Returns the record (not yet
/// stored) with assembled traces and per-run summaries; settings["sample_outputs"] holds the top-k of the
/// last measured batch of each batch size's first run (input id, classes, probabilities, labels). Throws std::invalid_argument for bad options
/// (batch size < 1, no iterations) and propagates pipeline/predictor errors (std::runtime_error).
EvaluationRecord run_evaluation(const Manifest& manifest, Predictor& predictor, const EvaluationOptions& options,
                                const ProgressCallback& progress = {});

/// Per-level overhead (SPEC §3): for a batch size, the model latency (trimmed mean predict, ns) of each
/// level's run and the increase over the next shallower run.
struct LevelOverhead {
  int batch_size = 0;
  TraceLevel level = TraceLevel::kModel;
  double model_latency_ns = 0;  ///< trimmed mean predict latency of that run
  double overhead_ns = 0;       ///< minus the shallower run's (0 for the M run)
  double overhead_percent = 0;  ///< overhead_ns / shallower run's latency × 100
};
std::vector<LevelOverhead> level_overheads(const EvaluationRecord& record);

}  // namespace xsp
