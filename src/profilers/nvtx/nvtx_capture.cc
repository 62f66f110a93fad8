// Capture control of the injection library: see include/xsp/profilers/nvtx_capture.h.
#include "xsp/profilers/nvtx_capture.h"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

namespace xsp::nvtx {
namespace {

std::int64_t time_variable(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const std::string_view v(text);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size())
    throw std::invalid_argument(std::string(name) + "=" + text + ": expected an integer (ns on CLOCK_MONOTONIC)");
  return out;
}

}  // namespace

int capture_start_signal() { return SIGRTMIN + 5; }
int capture_stop_signal() { return SIGRTMIN + 6; }

CaptureSettings CaptureSettings::from_environment() {
  CaptureSettings s;
  if (const char* range = std::getenv(kCaptureRangeVariable)) s.range = range;
  s.start_ns = time_variable(kCaptureStartVariable, s.start_ns);
  s.end_ns = time_variable(kCaptureEndVariable, s.end_ns);
  if (s.end_ns <= s.start_ns)
    throw std::invalid_argument(std::string(kCaptureEndVariable) + "=" + std::to_string(s.end_ns) +
                                ": the capture window ends before it starts (" + kCaptureStartVariable + "=" +
                                std::to_string(s.start_ns) + ")");
  if (const char* on_demand = std::getenv(kCaptureOnDemandVariable)) s.on_demand = std::string_view(on_demand) == "1";
  if (const char* api = std::getenv(kCaptureProfilerApiVariable)) s.profiler_api = std::string_view(api) == "1";
  return s;
}

bool CaptureSettings::restricts() const {
  return !range.empty() || start_ns != std::numeric_limits<std::int64_t>::min() ||
         end_ns != std::numeric_limits<std::int64_t>::max() || on_demand || profiler_api;
}

namespace {

using Windows = std::vector<CaptureWindow>;

// Sorted, merged: overlapping or touching intervals become one.
Windows normalized(Windows w) {
  std::sort(w.begin(), w.end(), [](const CaptureWindow& a, const CaptureWindow& b) { return a.start_ns < b.start_ns; });
  Windows out;
  for (const CaptureWindow& x : w) {
    if (x.end_ns <= x.start_ns) continue;
    if (!out.empty() && x.start_ns <= out.back().end_ns)
      out.back().end_ns = std::max(out.back().end_ns, x.end_ns);
    else
      out.push_back(x);
  }
  return out;
}

Windows intersect(const Windows& a, const Windows& b) {
  Windows out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
    const std::int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (lo < hi) out.push_back({lo, hi});
    (a[i].end_ns < b[j].end_ns ? i : j)++;
  }
  return out;
}

// Periods between an "on" switch (or event) and the next "off", starting off; an open period ends at `end_ns`.
Windows periods(const std::vector<std::pair<std::int64_t, bool>>& switches, std::int64_t end_ns) {
  Windows out;
  bool on = false;
  std::int64_t since = 0;
  for (const auto& [t, turn_on] : switches) {
    if (turn_on && !on) since = t;
    if (!turn_on && on) out.push_back({since, t});
    on = turn_on;
  }
  if (on) out.push_back({since, end_ns});
  return normalized(std::move(out));
}

bool host_range(const Span& s) { return !s.track.is_device() && s.level != Level::kSystem; }

}  // namespace

std::vector<CaptureWindow> capture_windows(const CaptureSettings& settings, std::int64_t begin_ns, std::int64_t end_ns,
                                           const std::vector<std::pair<std::int64_t, bool>>& switches,
                                           const std::vector<Span>& ranges, const std::vector<Span>& calls) {
  Windows w = normalized({{std::max(begin_ns, settings.start_ns), std::min(end_ns, settings.end_ns)}});
  if (settings.on_demand) w = intersect(w, periods(switches, end_ns));
  if (!settings.range.empty()) {
    Windows named;
    for (const Span& s : ranges)
      if (host_range(s) && s.name == settings.range) named.push_back({s.start_ns, std::max(s.end_ns, s.start_ns + 1)});
    w = intersect(w, normalized(std::move(named)));
  }
  if (settings.profiler_api) {
    std::vector<std::pair<std::int64_t, bool>> edges;
    for (const Span& s : calls) {
      if (s.level != Level::kSystem) continue;
      if (s.name == "cudaProfilerStart" || s.name == "cuProfilerStart") edges.emplace_back(s.end_ns, true);
      if (s.name == "cudaProfilerStop" || s.name == "cuProfilerStop") edges.emplace_back(s.start_ns, false);
    }
    // The runtime call wraps the driver's: a stop's start and a start's end are what bound the period.
    std::stable_sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    w = intersect(w, periods(edges, end_ns));
  }
  return w;
}

std::uint64_t keep_captured(std::vector<Span>& spans, const std::vector<CaptureWindow>& windows, bool cut_ranges) {
  auto inside = [&](std::int64_t t) {
    auto it = std::upper_bound(windows.begin(), windows.end(), t,
                               [](std::int64_t v, const CaptureWindow& w) { return v < w.start_ns; });
    return it != windows.begin() && t < std::prev(it)->end_ns;
  };
  auto overlaps = [&](const Span& s) {
    auto it = std::upper_bound(windows.begin(), windows.end(), s.end_ns,
                               [](std::int64_t v, const CaptureWindow& w) { return v < w.start_ns; });
    // The last window starting at or before the span's end: overlaps when it ends after the span starts.
    return (it != windows.begin() && std::prev(it)->end_ns > s.start_ns) || inside(s.start_ns);
  };
  std::unordered_map<std::uint64_t, bool> api_kept;  // correlation id → its SYSTEM span kept
  for (const Span& s : spans)
    if (s.level == Level::kSystem && s.correlation_id != 0) api_kept[s.correlation_id] = inside(s.start_ns);
  const std::size_t before = spans.size();
  std::erase_if(spans, [&](const Span& s) {
    if (s.level == Level::kSystem) return !inside(s.start_ns);
    if (s.track.is_device()) {
      const auto api = s.correlation_id != 0 ? api_kept.find(s.correlation_id) : api_kept.end();
      return api != api_kept.end() ? !api->second : !inside(s.start_ns);
    }
    return cut_ranges && !overlaps(s);
  });
  return before - spans.size();
}

CaptureGate::CaptureGate(CaptureSettings settings) : settings_(std::move(settings)), on_(!settings_.on_demand) {}

bool CaptureGate::open_at(std::int64_t now_ns) const {
  return on_.load(std::memory_order_relaxed) && now_ns >= settings_.start_ns && now_ns < settings_.end_ns;
}

bool CaptureGate::admit_push(std::string_view message, std::int64_t now_ns, bool* opens_capture) {
  *opens_capture = false;
  if (!open_at(now_ns)) return false;
  if (settings_.range.empty()) return true;
  if (message == settings_.range) {
    *opens_capture = true;
    capture_depth_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return capture_depth_.load(std::memory_order_relaxed) > 0;
}

void CaptureGate::close_capture() { capture_depth_.fetch_sub(1, std::memory_order_relaxed); }

bool CaptureGate::admit_start(std::int64_t now_ns) const {
  return open_at(now_ns) && (settings_.range.empty() || capture_depth_.load(std::memory_order_relaxed) > 0);
}

}  // namespace xsp::nvtx
