// Hand-made traces for the analysis tests: spans with explicit parent ids (no assembler involved).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp::testing {

struct TraceBuilder {
  Trace trace;
  SpanId next = 1;
  /// Adds a span [start, end) ns of `level` under `parent` (kNoSpan: a root) on `track` and returns its id (1, 2,
  /// ...).
  SpanId add(Level level, const std::string& name, std::int64_t start, std::int64_t end, SpanId parent,
             std::vector<Tag> tags = {}, Track track = Track{}) {
    Span s;
    s.id = next++;
    s.parent_id = parent;
    s.level = level;
    s.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
    s.name = name;
    s.start_ns = start;
    s.end_ns = end;
    s.tags = std::move(tags);
    s.track = track;
    trace.spans.push_back(std::move(s));
    return next - 1;
  }
};

}  // namespace xsp::testing
