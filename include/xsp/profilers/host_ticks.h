// The host's cycle counter as the clock of ranges recorded on a profiled program's hot path (docs/profile.md "What an
// op costs: the ranges' clock"). Reading CLOCK_MONOTONIC through the vDSO was a third of what recording a PyTorch op
// cost the program (bench_torch_ops, perf); the counter is read in a few cycles, and its ticks become CLOCK_MONOTONIC
// ns later, off the program's path, by interpolating between anchors: (ticks, ns) pairs read together now and then.
// PyTorch's profiler does the same (c10::getApproximateTime() and ApproximateClockToUnixTimeConverter,
// c10/util/ApproximateClock.h).
//
// The counter is used only where the kernel itself keeps time with it (clocksource "tsc" on x86-64; the generic timer
// on AArch64), so that it runs at one rate on every core and through idle states; elsewhere a tick is a
// CLOCK_MONOTONIC ns and the mapping is the identity.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "xsp/trace/trace.h"

namespace xsp {

/// One reading of both clocks: the counter's `ticks` and CLOCK_MONOTONIC's `ns` at the same instant (the counter read
/// on both sides of the clock and averaged).
struct TickAnchor {
  std::int64_t ticks = 0;
  std::int64_t ns = 0;
  bool operator==(const TickAnchor&) const = default;
};

/// Maps counter ticks to CLOCK_MONOTONIC ns through anchors: linear between the two anchors around a tick, and beyond
/// the first or last one along the line through the outermost two. Between anchors a few tens of milliseconds apart the
/// error is what the clocks drift apart in that time (parts per million: tens of ns) plus the anchors' own reading
/// error (the time one clock_gettime takes, halved).
class TickMapping {
 public:
  /// `anchors` in any order; duplicates of ticks keep the first. No anchors, or `identity`: ticks are ns already.
  explicit TickMapping(std::vector<TickAnchor> anchors, bool identity = false);
  /// `ticks` as CLOCK_MONOTONIC ns (rounded to the nearest). With one anchor only, a tick is taken as a ns from it.
  std::int64_t to_ns(std::int64_t ticks) const;
  const std::vector<TickAnchor>& anchors() const { return anchors_; }

 private:
  std::vector<TickAnchor> anchors_;  // by ticks
  bool identity_;
};

/// The process's counter and its anchors. Thread-safe: ticks() and anchor_if_due() are called by every thread of the
/// profiled program; anchors are added under a lock at most once per interval (by whichever thread sees the interval
/// pass) and at every mapping(). Past kMaxAnchors (an hour at the default interval) every other older anchor is let
/// go, so a process that runs for days keeps a bounded list, with the older ticks mapped from sparser anchors.
class HostTicks {
 public:
  /// `interval_ns`: how far apart anchors are taken (a longer interval lets the clocks drift further between them).
  /// Decides once whether the counter may be used (uses_counter()) and takes the first anchor.
  explicit HostTicks(std::int64_t interval_ns = 50'000'000);

  /// Now, in ticks (ns when the counter is not used).
  std::int64_t ticks() const {
    if (!counter_) return now_ns();
    return read_counter();
  }
  /// Takes an anchor when `now_ticks` (from ticks()) is an interval past the last: one relaxed load otherwise.
  void anchor_if_due(std::int64_t now_ticks) {
    if (counter_ && now_ticks >= next_anchor_.load(std::memory_order_relaxed)) add_anchor();
  }
  /// Takes an anchor now, and returns the mapping of every tick so far (and, extrapolated, a little beyond).
  TickMapping mapping();
  /// Whether ticks are the cycle counter's (else CLOCK_MONOTONIC ns).
  bool uses_counter() const { return counter_; }
  /// Why the counter is or is not used ("clocksource tsc: cycle counter", "clocksource kvm-clock: CLOCK_MONOTONIC").
  const std::string& source() const { return source_; }
  /// mapping() for a fatal-signal handler: when the lock stays held past `wait_ms` (by the thread the signal
  /// interrupted, say), the mapping of the first anchor and one read now, instead of waiting for ever.
  TickMapping mapping_within(int wait_ms);

  static std::int64_t read_counter() {
#if defined(__x86_64__)
    return static_cast<std::int64_t>(__rdtsc());
#elif defined(__aarch64__)
    std::uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return static_cast<std::int64_t>(v);
#else
    return now_ns();
#endif
  }

 private:
  static constexpr std::size_t kMaxAnchors = 1 << 16;
  void add_anchor();
  // Under mu_: appends an anchor read now (thinning past kMaxAnchors) and sets when the next one is due.
  void add_anchor_locked();
  bool counter_ = false;
  std::string source_;
  std::int64_t interval_ns_;
  std::int64_t interval_ticks_ = 0;  // interval_ns_ in ticks, once two anchors give the rate
  std::atomic<std::int64_t> next_anchor_{0};
  TickAnchor first_;  // anchors_'s first, readable without the lock
  std::timed_mutex mu_;
  std::vector<TickAnchor> anchors_;
};

/// Whether the kernel keeps time with the cycle counter, read from `clocksource_path` (the sysfs file naming the
/// current clocksource): x86-64 "tsc", AArch64 "arch_sys_counter". Sets `*source` to what was read or why not.
bool kernel_times_with_counter(const std::string& clocksource_path, std::string* source);

}  // namespace xsp
