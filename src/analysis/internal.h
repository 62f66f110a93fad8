// Helpers shared by the analysis sources; not part of the public API.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "../trace/id_index.h"
#include "xsp/analysis/table.h"
#include "xsp/record/record.h"

namespace xsp::detail {

/// A span that is one sample of the run's work (a batch): the pipeline's MODEL "predict" span, or, in a profiled
/// command's trace (xsp profile), one of the program's outermost ranges, which external_record() tags "sample"
/// (xsp/profile/external.h). Layers, kernels and counters are grouped per sample.
inline bool is_sample_span(const Span& s) {
  if (s.level != Level::kModel) return false;
  if (s.name == kStagePredict) return true;
  const auto t = s.tag("sample");
  return t && *t == "true";
}

/// Measured batch sizes, ascending and unique: the evaluation's list, or the runs' when that list is empty.
std::vector<int> measured_batch_sizes(const EvaluationRecord& record);

/// `v` with `decimals` digits after the point ("%.*f"), for notes and labels.
std::string fixed(double v, int decimals);

/// Per window (the spans `is_window` picks, by start time then id: the window order of extract_kernels(trace,
/// is_window)), how many spans of `level` lie below it, placed as extract_kernels() places KERNEL spans (the
/// parent chain up to the first window). gpu_kernels.cc.
std::vector<std::size_t> spans_per_window(const Trace& trace, Level level,
                                          const std::function<bool(const Span&)>& is_window);

inline constexpr std::uint32_t kNoIndex = std::numeric_limits<std::uint32_t>::max();
/// Marks of a memoised walk up the parent chain (layers.cc, op_table.cc): not visited yet, and on the path being
/// resolved (meeting it again means a parent cycle).
inline constexpr std::uint32_t kUnresolved = kNoIndex - 1;
inline constexpr std::uint32_t kOnPath = kNoIndex - 2;

/// "1 kernel", "3 kernels": `n` and the noun in its number.
inline std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}
/// A duration in ns as a milliseconds cell; no value for NaN or ±inf.
inline Cell ms_cell(double ns) { return std::isfinite(ns) ? Cell{ns / 1e6} : Cell{}; }
/// `part` as a percentage of `total`; no value when either is not finite or `total` is not positive.
inline Cell percent_cell(double part, double total) {
  return std::isfinite(part) && std::isfinite(total) && total > 0 ? Cell{100.0 * part / total} : Cell{};
}

/// Span id -> position in trace.spans: the trace library's index (dense table, sorted fallback for sparse ids).
using IdIndex = trace_internal::IdIndex;
static_assert(trace_internal::kNotFound == kNoIndex, "IdIndex::find() answers kNoIndex for an unknown id");

}  // namespace xsp::detail
