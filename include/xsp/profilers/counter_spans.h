// The CUDA-free half of the counter profiler: kernel launches seen by the CUPTI callback API and counter ranges
// from the CUPTI Range Profiler (auto ranges: one range per kernel, in launch order) → HARDWARE spans
// (conventions in xsp/profilers/hardware_counters.h). Kept apart from CUPTI so CI tests it on recorded values.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp {

/// One kernel launch API call seen on the host (host clock, ns).
struct KernelLaunch {
  std::string kernel_name;  ///< demangled
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint64_t thread_id = 0;
  SpanId op = kNoSpan;  ///< innermost framework op open on the thread at the call; kNoSpan outside ops
};

/// One range of the Range Profiler's counter data: raw metric values by metric name.
struct CounterRange {
  std::size_t index = 0;  ///< range index in the counter data
  std::string name;       ///< CUPTI's range name (auto ranges: a number in execution order)
  std::map<std::string, double> metrics;
};

/// What a counter run collected, before it becomes spans.
struct CounterCollection {
  std::vector<KernelLaunch> launches;  ///< in launch order
  std::vector<CounterRange> ranges;    ///< in range order
  std::string replay;                  ///< "kernel" or "user" (hardware_counters.h)
  std::uint64_t dropped_ranges = 0;    ///< CUPTI's numOfRangeDropped (counter data image full)
  std::size_t passes = 0;              ///< passes the metric set needs (cuptiProfilerHostGetNumOfPasses)
  std::string chip;                    ///< e.g. "GH100"
};

/// Adds one HARDWARE span per range to `recorder`: range i ↔ launch i (both in launch order; kernel replay runs a
/// kernel's passes inside its launch call, so the orders agree). Span: name = the launch's kernel name, interval
/// = the launch call, thread = the launch's thread, parent = the launch's op (ParentRule::kContext) or none (the
/// assembler then places it by containment, under "predict"); tags = xsp::hw::evaluate_counters of the range's
/// metrics (TagType::kReal, exact doubles), "range_index" (kInt), "replay". Counters added: "counters.ranges",
/// "counters.passes", and when non-zero "counters.dropped_ranges", "counters.unmatched_ranges" (ranges without a
/// launch), "counters.unmatched_launches" (launches without a range: e.g. a kernel the profiler did not replay).
void append_counter_spans(const CounterCollection& collection, TraceRecorder& recorder);

/// JSON form of a collection (fixtures recorded on a GPU; XSP_DUMP_COUNTERS=DIR writes them).
nlohmann::json to_json(const CounterCollection& collection);
/// Inverse of to_json; throws std::invalid_argument naming the missing or mistyped field.
CounterCollection counter_collection_from_json(const nlohmann::json& j);

}  // namespace xsp
