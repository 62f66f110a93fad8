// Capture control of the injection library: see include/xsp/profilers/nvtx_capture.h.
#include "xsp/profilers/nvtx_capture.h"

#include <charconv>
#include <csignal>
#include <cstdlib>
#include <stdexcept>

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
  return s;
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
