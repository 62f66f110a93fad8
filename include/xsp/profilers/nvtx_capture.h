// When the injection library records NVTX ranges (docs/profile.md "Capture"): the whole run, only inside the ranges of
// one name, inside a window of the host clock, or between start and stop requests from another process. `xsp profile`
// sets the environment variables below; libxsp_inject.so reads them once and asks CaptureGate on every range. No CUDA,
// no NVTX: tested without a GPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace xsp::nvtx {

/// The environment variables of capture control, set by `xsp profile` for the injection library.
inline constexpr const char* kCaptureRangeVariable = "XSP_CAPTURE_RANGE";         ///< a range name
inline constexpr const char* kCaptureStartVariable = "XSP_CAPTURE_START_NS";      ///< CLOCK_MONOTONIC ns
inline constexpr const char* kCaptureEndVariable = "XSP_CAPTURE_END_NS";          ///< CLOCK_MONOTONIC ns
inline constexpr const char* kCaptureOnDemandVariable = "XSP_CAPTURE_ON_DEMAND";  ///< "1": starts off

/// The signals that turn on-demand collection on and off in a process running with the injection library
/// (SIGRTMIN + 5 and SIGRTMIN + 6: real-time signals, which programs rarely use; glibc keeps the first ones).
int capture_start_signal();
int capture_stop_signal();

/// What is captured. The defaults capture everything.
struct CaptureSettings {
  /// Non-empty: ranges are recorded only while a push/pop range of this name (any domain, any thread of the process)
  /// is open, the range itself included (Nsight Systems' --capture-range=nvtx). Start/end ranges of that name do not
  /// open a capture.
  std::string range;
  /// Ranges that begin in [start_ns, end_ns) on the host clock (now_ns()) are recorded (xsp profile --delay-s,
  /// --duration-s); one that began inside and ends after is kept whole.
  std::int64_t start_ns = std::numeric_limits<std::int64_t>::min();
  std::int64_t end_ns = std::numeric_limits<std::int64_t>::max();
  /// Collection starts off and is turned on and off from another process (xsp profile --signal, --start, --stop).
  bool on_demand = false;

  /// From the variables above (unset: the default). Throws std::invalid_argument naming the variable and its value
  /// when a time is no integer or the window ends before it starts.
  static CaptureSettings from_environment();
};

/// Decides, range by range, whether a range is recorded. Thread-safe: the program's threads ask it concurrently, and
/// set_on() may be called from a signal handler (it only stores an atomic).
class CaptureGate {
 public:
  explicit CaptureGate(CaptureSettings settings);

  /// A push/pop range named `message` begins at `now_ns`: whether it is recorded. `*opens_capture` is set when it is
  /// a range of the capture's name (its pop must call close_capture()).
  bool admit_push(std::string_view message, std::int64_t now_ns, bool* opens_capture);
  /// The pop of a range admit_push() said opened the capture.
  void close_capture();
  /// A start/end range begins at `now_ns`: whether it is recorded.
  bool admit_start(std::int64_t now_ns) const;
  /// On-demand capture: turn collection on or off.
  void set_on(bool on) { on_.store(on, std::memory_order_relaxed); }
  const CaptureSettings& settings() const { return settings_; }

 private:
  bool open_at(std::int64_t now_ns) const;
  CaptureSettings settings_;
  std::atomic<bool> on_;
  std::atomic<int> capture_depth_{0};
};

}  // namespace xsp::nvtx
