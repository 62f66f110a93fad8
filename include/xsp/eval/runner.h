// Runs an evaluation (SPEC §1, §3): for each batch size, one run per trace level (leveled experimentation),
// each a sequence of warm-up and measured batches through the pipeline, every stage a MODEL span.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/record/record.h"

namespace xsp {

struct EvaluationOptions {
  std::vector<int> batch_sizes{1};
  TraceLevel trace_level = TraceLevel::kModel;
  /// Leveled experimentation (SPEC §3): run M, M/F, ... down to trace_level, for each batch size.
  bool leveled = false;
  /// Warm-up, minimum/maximum measurement, stability rule and level order (xsp/eval/measurement.h).
  MeasurementOptions measurement;
  std::filesystem::path inputs_dir;  ///< folder of images; ignored when synthetic and for text models
  /// The texts a model with a text input is fed (e.g. text_classification: lines of its prompts file), batch k
  /// taking texts k·B .. k·B + B − 1 (mod size), each named "text:<index>"; tokenized by `tokenizer` (owned by the
  /// caller) through xsp::TextBatcher. Both required for such a model, which takes no synthetic inputs.
  std::vector<std::string> texts;
  const Tokenizer* tokenizer = nullptr;
  bool synthetic = false;            ///< feed seeded random tensors instead of images (no decode)
  std::uint64_t seed = 0;            ///< seed of synthetic inputs (recorded in settings)
  /// Image inputs are all read and pre-processed once before the first batch (screen_inputs()); a bad one stops
  /// the evaluation then, or with this flag is left out and listed in settings["inputs_skipped"] ([{file,
  /// reason}]) with its count in settings["inputs_skipped_count"].
  bool skip_bad_inputs = false;
  /// Limit on one batch tensor, in bytes, checked before it is allocated (synthetic or pre-processed).
  std::uint64_t max_batch_bytes = kDefaultMaxBatchBytes;
  DeviceSpec device;
  /// Records LIBRARY/SYSTEM/KERNEL spans in runs whose level enables them; required for those levels.
  /// Owned by the caller (see create_device_profiler()).
  DeviceProfiler* device_profiler = nullptr;
  /// Records HARDWARE spans (counters) in the counter run of trace level hardware (create_counter_profiler()).
  /// Owned by the caller.
  DeviceProfiler* counter_profiler = nullptr;
  /// Measured batches of the counter run (at least the profiler's batches_needed(); its timings are never
  /// used, so it is not measured for stability).
  int counter_iterations = 1;
  /// Keep, per run, every distinct measured input's output (RunRecord::predictions): softmax over the first
  /// output's row (raw values when the manifest has no softmax step) and its top-k classes (k of the manifest's
  /// top_k step, else 5). Synthetic inputs cycle through up to kSyntheticBatches seeded batches per batch size
  /// (fewer when they would exceed 256 MB), made before the first batch, named "synthetic:seed=S:batch=J:K" (J
  /// the batch of the cycle, K the sample in the batch), so two evaluations with the same seed and batch size feed
  /// and name the same tensors however long each one measured.
  bool store_predictions = false;
  /// Time source of every span and duration; nullptr = system_clock(). Tests inject a fake one.
  const Clock* clock = nullptr;
  /// Sample the machine's state (GPU clocks, temperature, power, throttling through NVML; CPU governor, load)
  /// around every phase and between its blocks, and store it with warnings in each run.
  bool record_machine_state = true;
  /// Set by the front end's signal handler to the signal's number (SIGINT, SIGTERM, SIGHUP); 0 = go on. Read
  /// before every batch: when non-zero, the batch in progress is the last one, its block's profilers are switched
  /// off, the run it belonged to is dropped (it is not complete), and run_evaluation() returns the runs already
  /// finished in a record with status "incomplete" and settings["interrupted"] = {signal, complete_runs}. Counter
  /// runs (a fixed, small number of batches) are not cut in the middle. nullptr = never interrupted.
  const std::atomic<int>* interrupt = nullptr;
};

/// Distinct synthetic batches an evaluation cycles through (see EvaluationOptions::store_predictions).
inline constexpr std::uint64_t kSyntheticBatches = 16;

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

/// Runs the whole evaluation with `predictor` (already loaded with `manifest`), phase by phase
/// (xsp/eval/measurement.h): for every batch size the levels that can be switched in-process (M, M/F) in one
/// interleaved phase; then, for every batch size, the CUPTI levels (M/F/L, M/F/S, M/F/K) in a second phase with
/// M and M/F blocks beside them (leveled) or alone; then the counter runs (hardware). With
/// options.measurement.order == kSequential each level is measured alone, in that order. The record lists the
/// runs sorted by (batch size, level) and holds the level overheads with their intervals; settings hold the
/// measurement options, and settings["sample_outputs"] the top-k of the last measured batch of each batch
/// size's first run. Throws std::invalid_argument for bad options (batch size < 1, measurement options out of
/// range) and propagates pipeline/predictor errors (std::runtime_error).
EvaluationRecord run_evaluation(const Manifest& manifest, Predictor& predictor, const EvaluationOptions& options,
                                const ProgressCallback& progress = {});


}  // namespace xsp
