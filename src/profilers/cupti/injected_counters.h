// Hardware counters of a program XSP does not run (private to xsp_cupti and libxsp_inject.so; docs/profile.md
// "Hardware counters"). Public face of counter runs: xsp/profilers/device_profiler.h, create_counter_profiler().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/profiler_options.h"

namespace xsp::cupti {

/// How the injected counter profiler decides which launches it profiles.
struct InjectedCounterOptions {
  /// max_ranges (the kernels of one session: libxsp_inject.so defaults it to 128, since a larger counter data image
  /// slows every replay pass), timing and dump_dir as for a counter run; replay is always kernel replay (user replay
  /// needs control of the program's batches, which a program XSP does not run does not give).
  CounterOptions counters;
  /// Whether a launch made at `now_ns` (host clock, now_ns()) lies inside the capture; empty = always. Called on the
  /// launching thread, under the profiler's lock; must not call CUDA.
  std::function<bool(std::int64_t now_ns)> collecting;
  /// Profile only between the program's cudaProfilerStart/cuProfilerStart and the next Stop (--capture
  /// cuda-profiler-api).
  bool follow_profiler_api = false;
};

/// The counter profiler of libxsp_inject.so at --trace-level hardware. start() only subscribes to CUPTI's callbacks
/// (it runs inside the program's cuInit, where no CUDA call may be made); the CUPTI Range Profiler (auto ranges,
/// kernel replay: every kernel replayed once per metric pass inside its launch call) is set up on the context of the
/// first launch the capture admits. Sessions hold at most counters.max_ranges kernels: a full one is decoded and its
/// counter data image reused, so memory stays bounded over any number of kernels; a session also ends where the
/// capture closes, and launches outside the capture run unprofiled at full speed. Launches on a second context are not
/// profiled (counters.other_context_launches). stop() harvests the open session and adds one HARDWARE span per
/// profiled kernel (xsp/profilers/hardware_counters.h), parentless: the trace assembler places each in the NVTX range
/// open on its launching thread. A CUPTI failure while the program runs stops collection (said on stderr once);
/// stop() then throws std::runtime_error with that reason after adding what was collected. Throws
/// std::invalid_argument when counters.max_ranges is 0.
std::unique_ptr<DeviceProfiler> make_injected_counter_profiler(const InjectedCounterOptions& options);

}  // namespace xsp::cupti
