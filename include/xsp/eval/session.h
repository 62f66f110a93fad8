// One profiled run (SPEC §3, docs/architecture.md "The run engine"): the profilers a trace level switches on, in the
// one order that ties framework ops, launches and kernels together, and the pieces every workload's run ends with
// (its APPLICATION span, assembly, interruption). Every workload (the batch sweep, LoadGen scenarios, generation)
// gets its runs from a RunSession; none of them starts or stops a profiler itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/record/record.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Thrown before a batch, query or request when the front end's interrupt flag (EvaluationContext::interrupt) holds
/// a signal number: the workload drops the run in progress and keeps the finished ones.
struct RunInterrupted {
  int signal = 0;
};

/// The profilers a session may switch on; each owned by the caller, any may be null.
struct SessionProfilers {
  FrameworkProfiler* framework = nullptr;  ///< the predictor's (Predictor::framework_profiler())
  DeviceProfiler* device = nullptr;        ///< LIBRARY/SYSTEM/KERNEL spans (create_device_profiler())
  DeviceProfiler* counters = nullptr;      ///< HARDWARE spans of counter runs (create_counter_profiler())
};

/// Progress of an evaluation: `done` of `total` batches (warm-up included; 0 = unknown) and what runs now.
struct Progress {
  int done = 0;
  int total = 0;
  std::string what;
};
using ProgressCallback = std::function<void(const Progress&)>;

/// Where a session's runs happen: what the front end owns, not what the plan decides.
struct SessionOptions {
  SessionProfilers profilers;
  const Clock* clock = nullptr;  ///< every span's and duration's clock; nullptr = system_clock() (tests: a fake one)
  /// The front end's signal flag (0 = go on): workloads stop before the next batch, query or request, drop the run
  /// in progress and keep the finished ones (status "incomplete", settings "interrupted"). nullptr = never.
  const std::atomic<int>* interrupt = nullptr;
  /// Sample the machine's state (GPU clocks, temperature, power, throttling through NVML; CPU governor, load)
  /// around every phase and store it with warnings in each run.
  bool record_machine_state = true;
  ProgressCallback progress;  ///< optional
};

/// Switches profilers on and off for traced blocks of runs. Not thread-safe: start() and stop() run on the thread
/// that calls predict() (FrameworkProfiler::start's contract), one block at a time.
class RunSession {
 public:
  explicit RunSession(SessionOptions options);

  /// Starts what `level` enables, recording into `recorder`, in this order: the device profiler's correlation
  /// listener into the framework profiler, the device profiler (library/system/kernel as the level enables them;
  /// for kHardware the counter profiler instead), then the framework profiler (top-level ops parented to kNoSpan
  /// until set_parent()). `uniform_batches` is FrameworkProfiler::set_uniform_batches (false for token generation).
  /// A counter profiler that cannot start (no permission, another profiler attached) is not an error: the block runs
  /// without counters, counters_unavailable() says why and the recorder counts stat::kCountersUnavailable. Other
  /// profilers' errors propagate (std::runtime_error). Throws std::logic_error when a block is already started or a
  /// profiler the level needs is missing.
  void start(TraceRecorder& recorder, TraceLevel level, bool uniform_batches = true);
  /// Stops the block's profilers in the reverse order: the device (or counter) profiler first, which synchronizes
  /// and flushes while the ops its records point to are still open in the framework profiler's books, then the
  /// framework profiler; remembers the device clock mapping. Does nothing when no block is started.
  void stop();

  /// Parents the next top-level framework ops to `span` (the batch's predict span, or a generation step's span)
  /// when the framework profiler is on in this block.
  void set_parent(SpanId span);
  /// The started block's device or counter profiler, for DeviceProfiler::begin_batch()/end_batch() and
  /// batches_needed(); null when the block has none (or counters were unavailable).
  DeviceProfiler* batch_profiler() const { return running_device_; }

  /// The device clock mapping of the last started block ("" when it had no device or counter profiler).
  const std::string& clock_mapping() const { return clock_mapping_; }
  /// Why the counter profiler could not start in the last counter block ("" when it did, or none ran).
  const std::string& counters_unavailable() const { return counters_unavailable_; }

  /// The front end's signal number, 0 when none.
  int interrupt_signal() const { return interrupt_ ? interrupt_->load() : 0; }
  /// Throws RunInterrupted when the front end asked to stop (after stop() of a started block).
  void check_interrupt();

  const Clock& clock() const { return clock_; }
  bool record_machine_state() const { return record_machine_state_; }
  /// Reports progress when the front end asked for it.
  void progress(const Progress& p) const {
    if (progress_) progress_(p);
  }
  const std::atomic<int>* interrupt_flag() const { return interrupt_; }

 private:
  SessionProfilers profilers_;
  const Clock& clock_;
  const std::atomic<int>* interrupt_;
  bool record_machine_state_;
  ProgressCallback progress_;
  bool started_ = false;
  FrameworkProfiler* running_framework_ = nullptr;
  DeviceProfiler* running_device_ = nullptr;
  bool uniform_batches_ = true;
  std::string clock_mapping_;
  std::string counters_unavailable_;
};

/// Closes a run's trace the way every workload does: `spans` (the kept blocks', queries' or requests' spans, in
/// any order) under `app`, made the APPLICATION span on the calling thread's track and widened to cover them all
/// (an `app` whose start_ns > end_ns covers the spans alone; with no spans either, it is an instant at now); the
/// counters added; the host clock's Unix offset and the device clock mapping set; then assembled (assemble()).
Trace close_run_trace(std::vector<Span> spans, Span app, const std::map<std::string, std::uint64_t>& counters,
                      const std::string& clock_mapping, const Clock& clock);

}  // namespace xsp
