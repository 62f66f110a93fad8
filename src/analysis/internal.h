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

/// Span id -> position in trace.spans. A flat vector when ids are dense (the recorder hands them out from 1),
/// a hash map otherwise (traces merged from several recorders, or hand-made ones with sparse ids).
class IdIndex {
 public:
  explicit IdIndex(const std::vector<Span>& spans) {
    SpanId max_id = 0;
    for (const Span& s : spans) max_id = std::max(max_id, s.id);
    if (max_id <= 4 * static_cast<SpanId>(spans.size()) + 1024) {
      dense_.assign(static_cast<std::size_t>(max_id) + 1, kNoIndex);
      for (std::uint32_t i = 0; i < spans.size(); ++i) {
        // First occurrence wins for duplicate ids; the assembler guarantees unique ids anyway.
        if (spans[i].id != kNoSpan && dense_[spans[i].id] == kNoIndex) dense_[spans[i].id] = i;
      }
    } else {
      sparse_.reserve(spans.size());
      for (std::uint32_t i = 0; i < spans.size(); ++i)
        if (spans[i].id != kNoSpan) sparse_.emplace(spans[i].id, i);
      use_sparse_ = true;
    }
  }
  /// Position of span `id`, or kNoIndex.
  std::uint32_t find(SpanId id) const {
    if (id == kNoSpan) return kNoIndex;
    if (!use_sparse_) return id < dense_.size() ? dense_[id] : kNoIndex;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? kNoIndex : it->second;
  }

 private:
  std::vector<std::uint32_t> dense_;
  std::unordered_map<SpanId, std::uint32_t> sparse_;
  bool use_sparse_ = false;
};

}  // namespace xsp::detail
