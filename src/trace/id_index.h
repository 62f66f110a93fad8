// Span id → position in Trace::spans, for the trace library's passes (assembler, graph replay) and the analyses
// (src/analysis/internal.h). Internal: not installed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "xsp/trace/span.h"

namespace xsp::trace_internal {

constexpr std::uint32_t kNotFound = std::numeric_limits<std::uint32_t>::max();

/// Maps span ids to indices in trace.spans. Recorder ids are dense from 1, so a direct table is the common
/// case; arbitrary ids (hand-made or imported traces) fall back to a sorted table.
class IdIndex {
 public:
  explicit IdIndex(const std::vector<Span>& spans) {
    SpanId max_id = 0;
    for (const Span& s : spans) max_id = std::max(max_id, s.id);
    if (max_id <= 2 * static_cast<SpanId>(spans.size()) + 1024) {
      dense_.assign(static_cast<std::size_t>(max_id) + 1, kNotFound);
      // Iterate backwards so that, with duplicate ids, the first span holding the id wins.
      for (std::size_t i = spans.size(); i-- > 0;) dense_[spans[i].id] = static_cast<std::uint32_t>(i);
    } else {
      sorted_.reserve(spans.size());
      for (std::size_t i = 0; i < spans.size(); ++i) sorted_.emplace_back(spans[i].id, static_cast<std::uint32_t>(i));
      std::sort(sorted_.begin(), sorted_.end());
    }
  }

  std::uint32_t find(SpanId id) const {
    if (id == kNoSpan) return kNotFound;
    if (!dense_.empty() || sorted_.empty()) return id < dense_.size() ? dense_[id] : kNotFound;
    const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::pair<SpanId, std::uint32_t>(id, 0));
    return it != sorted_.end() && it->first == id ? it->second : kNotFound;
  }

 private:
  std::vector<std::uint32_t> dense_;
  std::vector<std::pair<SpanId, std::uint32_t>> sorted_;
};

}  // namespace xsp::trace_internal
