// The plan of an evaluation: see include/xsp/eval/plan.h.
#include "xsp/eval/plan.h"

#include <charconv>
#include <stdexcept>

namespace xsp {
namespace {

int parse_count(std::string_view part, std::string_view whole) {
  int v = 0;
  const auto* end = part.data() + part.size();
  const auto r = std::from_chars(part.data(), end, v);
  if (part.empty() || r.ec != std::errc() || r.ptr != end || v < 1)
    throw std::invalid_argument("token count '" + std::string(whole) +
                                "': expected N or MIN:MAX, integers >= 1 (e.g. 32 or 16:64)");
  return v;
}

}  // namespace

std::string_view to_string(Workload workload) {
  switch (workload) {
    case Workload::kBatchSweep:
      return "batch-sweep";
    case Workload::kScenario:
      return "scenario";
    case Workload::kGeneration:
      return "generation";
  }
  return "batch-sweep";
}

std::vector<TraceLevel> run_levels(TraceLevel trace_level, bool leveled, bool have_framework_profiler,
                                   bool have_device_profiler, bool have_counter_profiler) {
  if (trace_level == TraceLevel::kHardware && !have_counter_profiler)
    throw std::invalid_argument(
        "trace level 'hardware' needs the counter profiler (CUPTI Range Profiler): use --device cuda on a CUDA "
        "build");
  if (trace_level != TraceLevel::kModel && !have_framework_profiler)
    throw std::invalid_argument("trace level '" + std::string(to_string(trace_level)) +
                                "' needs a framework profiler; this predictor has none");
  if (trace_level > TraceLevel::kFramework && !have_device_profiler)
    throw std::invalid_argument("trace level '" + std::string(to_string(trace_level)) +
                                "' needs the GPU profiler (CUPTI): use --device cuda on a CUDA build");
  return level_sequence(trace_level, leveled);
}

TokenRange parse_token_range(std::string_view text) {
  TokenRange r;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    r.min = r.max = parse_count(text, text);
  } else {
    r.min = parse_count(text.substr(0, colon), text);
    r.max = parse_count(text.substr(colon + 1), text);
    if (r.min > r.max) throw std::invalid_argument("token count '" + std::string(text) + "': MIN must not exceed MAX");
  }
  return r;
}

std::string to_string(const TokenRange& range) {
  return range.min == range.max ? std::to_string(range.min)
                                : std::to_string(range.min) + ":" + std::to_string(range.max);
}

std::string_view to_string(GenerationScenario scenario) {
  switch (scenario) {
    case GenerationScenario::kBatchSweep:
      return "batch-sweep";
    case GenerationScenario::kSingleStream:
      return "single-stream";
    case GenerationScenario::kServer:
      return "server";
    case GenerationScenario::kOffline:
      return "offline";
  }
  return "batch-sweep";
}

}  // namespace xsp
