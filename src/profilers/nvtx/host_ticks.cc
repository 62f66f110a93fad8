#include "xsp/profilers/host_ticks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <utility>

namespace xsp {

namespace {

TickAnchor read_anchor() {
  const std::int64_t before = HostTicks::read_counter();
  const std::int64_t ns = now_ns();
  const std::int64_t after = HostTicks::read_counter();
  return {before + (after - before) / 2, ns};
}

// The counter's ticks per ns as the platform states it; 0 where only anchors can tell.
double stated_ticks_per_ns() {
#if defined(__aarch64__)
  std::uint64_t hz;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return static_cast<double>(hz) / 1e9;
#else
  return 0;
#endif
}

}  // namespace

bool kernel_times_with_counter(const std::string& clocksource_path, std::string* source) {
  std::ifstream in(clocksource_path);
  std::string name;
  if (!(in >> name)) {
    *source = "no " + clocksource_path + ": CLOCK_MONOTONIC";
    return false;
  }
#if defined(__x86_64__)
  const bool counter = name == "tsc";
#elif defined(__aarch64__)
  const bool counter = name == "arch_sys_counter";
#else
  const bool counter = false;
#endif
  *source = "clocksource " + name + (counter ? ": cycle counter" : ": CLOCK_MONOTONIC");
  return counter;
}

TickMapping::TickMapping(std::vector<TickAnchor> anchors, bool identity)
    : anchors_(std::move(anchors)), identity_(identity || anchors_.empty()) {
  std::stable_sort(anchors_.begin(), anchors_.end(),
                   [](const TickAnchor& a, const TickAnchor& b) { return a.ticks < b.ticks; });
  anchors_.erase(std::unique(anchors_.begin(), anchors_.end(),
                             [](const TickAnchor& a, const TickAnchor& b) { return a.ticks == b.ticks; }),
                 anchors_.end());
}

std::int64_t TickMapping::to_ns(std::int64_t ticks) const {
  if (identity_) return ticks;
  if (anchors_.size() == 1) return anchors_[0].ns + (ticks - anchors_[0].ticks);
  // The segment around `ticks`; the first or last one beyond the ends.
  auto hi = std::upper_bound(anchors_.begin(), anchors_.end(), ticks,
                             [](std::int64_t t, const TickAnchor& a) { return t < a.ticks; });
  if (hi == anchors_.begin()) ++hi;
  if (hi == anchors_.end()) --hi;
  const TickAnchor& a = *std::prev(hi);
  const TickAnchor& b = *hi;
  const double ns_per_tick = static_cast<double>(b.ns - a.ns) / static_cast<double>(b.ticks - a.ticks);
  return a.ns + std::llround(static_cast<double>(ticks - a.ticks) * ns_per_tick);
}

HostTicks::HostTicks(std::int64_t interval_ns) : interval_ns_(interval_ns) {
  counter_ = kernel_times_with_counter("/sys/devices/system/clocksource/clocksource0/current_clocksource", &source_);
  if (!counter_) return;
  first_ = read_anchor();
  anchors_.push_back(first_);
  // Until a second anchor gives the rate: the platform's, or 1 tick per ns (x86's counters run at 1-5 GHz, so the
  // second anchor comes early rather than late).
  const double stated = stated_ticks_per_ns();
  interval_ticks_ = static_cast<std::int64_t>(static_cast<double>(interval_ns_) * (stated > 0 ? stated : 1.0));
  next_anchor_.store(anchors_.back().ticks + interval_ticks_, std::memory_order_relaxed);
}

void HostTicks::add_anchor() {
  std::lock_guard lock(mu_);
  add_anchor_locked();
}

void HostTicks::add_anchor_locked() {
  const TickAnchor now = read_anchor();
  if (!anchors_.empty() && now.ticks <= anchors_.back().ticks) return;
  anchors_.push_back(now);
  const TickAnchor& first = anchors_.front();
  if (now.ns > first.ns)
    interval_ticks_ =
        static_cast<std::int64_t>(static_cast<double>(interval_ns_) * static_cast<double>(now.ticks - first.ticks) /
                                  static_cast<double>(now.ns - first.ns));
  next_anchor_.store(now.ticks + interval_ticks_, std::memory_order_relaxed);
  if (anchors_.size() >= kMaxAnchors) {
    // Every other one of the older half goes; the newer half and the last stay.
    std::vector<TickAnchor> kept;
    kept.reserve(anchors_.size() * 3 / 4);
    const std::size_t half = anchors_.size() / 2;
    for (std::size_t i = 0; i < anchors_.size(); ++i)
      if (i >= half || i % 2 == 0) kept.push_back(anchors_[i]);
    anchors_ = std::move(kept);
  }
}

TickMapping HostTicks::mapping() {
  if (!counter_) return TickMapping({}, true);
  std::lock_guard lock(mu_);
  add_anchor_locked();
  return TickMapping(anchors_);
}

TickMapping HostTicks::mapping_within(int wait_ms) {
  if (!counter_) return TickMapping({}, true);
  std::unique_lock lock(mu_, std::chrono::milliseconds(wait_ms));
  if (!lock.owns_lock()) return TickMapping({first_, read_anchor()});
  add_anchor_locked();
  return TickMapping(anchors_);
}

}  // namespace xsp
