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
#include <utility>
#include <vector>

#include "xsp/trace/span.h"

namespace xsp::nvtx {

/// The environment variables of capture control, set by `xsp profile` for the injection library.
inline constexpr const char* kCaptureRangeVariable = "XSP_CAPTURE_RANGE";               ///< a range name
inline constexpr const char* kCaptureStartVariable = "XSP_CAPTURE_START_NS";            ///< CLOCK_MONOTONIC ns
inline constexpr const char* kCaptureEndVariable = "XSP_CAPTURE_END_NS";                ///< CLOCK_MONOTONIC ns
inline constexpr const char* kCaptureOnDemandVariable = "XSP_CAPTURE_ON_DEMAND";        ///< "1": starts off
inline constexpr const char* kCaptureProfilerApiVariable = "XSP_CAPTURE_PROFILER_API";  ///< "1"

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
  /// Only between the program's cudaProfilerStart and cudaProfilerStop calls (cuProfilerStart/Stop alike; Nsight
  /// Systems' --capture-range=cudaProfilerApi). The gate admits every range; the part is cut to these periods when it
  /// is written (capture_windows(), keep_captured()), since the calls are seen only by the CUPTI part.
  bool profiler_api = false;

  /// Whether anything is left out: false for the defaults (the whole run).
  bool restricts() const;

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
  /// admit_push() for a NUL-terminated name (a PyTorch op's, per op): its length is taken only when the capture
  /// admits ranges by name (--capture nvtx:NAME).
  bool admit_push(const char* message, std::int64_t now_ns, bool* opens_capture) {
    return admit_push(settings_.range.empty() ? std::string_view() : std::string_view(message), now_ns, opens_capture);
  }
  /// The pop of a range admit_push() said opened the capture.
  void close_capture();
  /// A start/end range begins at `now_ns`: whether it is recorded.
  bool admit_start(std::int64_t now_ns) const;
  /// On-demand capture: turn collection on or off.
  void set_on(bool on) { on_.store(on, std::memory_order_relaxed); }
  /// On-demand capture: whether collection is on now.
  bool on() const { return on_.load(std::memory_order_relaxed); }
  const CaptureSettings& settings() const { return settings_; }
  /// Whether a delay or a duration is set: when not, the `now_ns` given to admit_push(), admit_start() and open_at()
  /// is not read, so a caller may skip reading the clock.
  bool timed() const {
    return settings_.start_ns != std::numeric_limits<std::int64_t>::min() ||
           settings_.end_ns != std::numeric_limits<std::int64_t>::max();
  }

 private:
  bool open_at(std::int64_t now_ns) const;
  CaptureSettings settings_;
  std::atomic<bool> on_;
  std::atomic<int> capture_depth_{0};
};

/// A host-clock interval [start_ns, end_ns) (ns, now_ns()) during which collection was on.
struct CaptureWindow {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool operator==(const CaptureWindow&) const = default;
};

/// When collection was on in one process that lived over [begin_ns, end_ns), for cutting what the CUPTI part recorded
/// throughout the run down to the capture (docs/profile.md "Capture"). The intersection of:
///  - the settings' time window [start_ns, end_ns);
///  - with on_demand, the periods between an "on" and the next "off" of `switches` ((time ns, on) in time order;
///    collection starts off);
///  - with a range name, the spans of that name among `ranges` (the process's recorded NVTX ranges; SYSTEM and device
///    spans among them are ignored);
///  - with profiler_api, the periods from the end of each SYSTEM span named cudaProfilerStart or cuProfilerStart
///    among `calls` (the CUPTI part's spans; others ignored) to the start of the next one named cudaProfilerStop or
///    cuProfilerStop (or end_ns).
/// Sorted and disjoint; empty when nothing was captured; [begin_ns, end_ns) when settings.restricts() is false.
std::vector<CaptureWindow> capture_windows(const CaptureSettings& settings, std::int64_t begin_ns, std::int64_t end_ns,
                                           const std::vector<std::pair<std::int64_t, bool>>& switches,
                                           const std::vector<Span>& ranges, const std::vector<Span>& calls);

/// Removes from `spans` (one process's part) the CUDA activity outside `windows` (sorted, disjoint) and returns how
/// many spans it removed: a SYSTEM span is kept when it starts inside a window; a span on a device track (KERNEL:
/// kernels, copies, sets) goes with the SYSTEM span of its correlation id, or by its own start when no SYSTEM span
/// has that id. With `cut_ranges` (cudaProfilerApi capture, where the NVTX gate admitted everything) every other span
/// is kept only when it overlaps a window; otherwise they are left alone (their gate already decided).
std::uint64_t keep_captured(std::vector<Span>& spans, const std::vector<CaptureWindow>& windows, bool cut_ranges);

}  // namespace xsp::nvtx
