// Profilers of the SYSTEM (CUDA API) and KERNEL (device activity) levels, behind one small interface so the
// runner needs no CUDA header. The CUPTI implementation lives in src/profilers/cupti/.
#pragma once

#include <memory>
#include <string>

#include "xsp/predictor/predictor.h"
#include "xsp/profilers/profiler_options.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// What a device profiler records during one run.
struct DeviceProfilerOptions {
  bool system = true;   ///< SYSTEM spans: CUDA runtime/driver API calls (launch, copy, sync, malloc...)
  bool kernel = true;   ///< KERNEL spans: kernels, memcpy, memset as they ran on the device
  bool library = true;  ///< LIBRARY spans: NVTX ranges emitted by libraries (cuDNN, cuBLAS, PyTorch...)
};

/// A profiler of device work. One run at a time; not thread-safe except where noted.
class DeviceProfiler {
 public:
  virtual ~DeviceProfiler() = default;
  /// "cupti".
  virtual std::string name() const = 0;
  /// Starts recording into `recorder`. Throws std::runtime_error with the profiler's own message when it
  /// cannot start (no GPU, another profiler attached, insufficient permissions).
  virtual void start(TraceRecorder& recorder, const DeviceProfilerOptions& options) = 0;
  /// Waits for outstanding device work, flushes every record, turns them into spans in the recorder and adds
  /// the "nothing is silent" counters (dropped records, buffers, records out of range...). Idempotent.
  virtual void stop() = 0;
  /// The listener a framework profiler must be given so that launches are tied to framework ops (external
  /// correlation). Valid for the profiler's lifetime; thread-safe.
  virtual OpCorrelationListener* correlation_listener() = 0;
  /// How device timestamps are put on the host clock, for Trace::clock.device_clock_mapping.
  virtual std::string clock_mapping() const = 0;
  /// Measured batches this profiler needs after start() (a counter profiler that rotates metric passes over
  /// identical batches needs one per pass); 0 = any number. The runner runs at least that many.
  virtual int batches_needed() const { return 0; }
  /// The runner calls these right before and after each measured batch's predict() once started.
  virtual void begin_batch() {}
  virtual void end_batch() {}
};

/// Whether this build has a device profiler (XSP_WITH_CUPTI).
bool have_device_profiler();
/// The CUPTI profiler, configured by `options` for its whole life (it reads no environment variable; callers that
/// honour XSP_* variables pass options through apply_env_overrides()). Throws std::runtime_error("built without
/// CUPTI ...") when this build has none.
std::unique_ptr<DeviceProfiler> create_device_profiler(const CuptiOptions& options = {});

/// The hardware-counter profiler of counter runs (TraceLevel::kHardware): HARDWARE spans from the CUPTI Profiler
/// Host and Range Profiler APIs (auto ranges: one per kernel, xsp/profilers/hardware_counters.h), configured by
/// `options` for its whole life (it reads no environment variable). With CounterOptions::Replay::kUser (default) it
/// rotates the metric passes over identical batches (batches_needed() = passes, one pass per batch between
/// begin_batch() and end_batch(); each batch must launch the same kernels, which it checks and counts); with
/// kKernel it replays every kernel once per pass inside its launch instead (one batch suffices; slower: CUPTI saves
/// and restores device memory around every replay). It ignores DeviceProfilerOptions. Its correlation_listener()
/// ties launches to framework ops. start() throws std::runtime_error saying why counters are unavailable (no GPU,
/// chip not supported, no permission to profile (NVreg_RestrictProfilingToAdminUsers), another profiler attached).
/// Throws std::invalid_argument when options.max_ranges is 0, std::runtime_error("built without CUPTI ...") when
/// this build has none.
std::unique_ptr<DeviceProfiler> create_counter_profiler(const CounterOptions& options = {});

}  // namespace xsp
