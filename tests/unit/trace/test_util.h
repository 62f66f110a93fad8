// Helpers shared by the trace unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "xsp/trace/trace.h"

namespace xsp::testing {

inline Span make_span(SpanId id, Level level, std::int64_t start_ns, std::int64_t end_ns, std::uint64_t thread_id = 1,
                      SpanId parent_id = kNoSpan, std::uint64_t correlation_id = 0) {
  Span s;
  s.id = id;
  s.level = level;
  s.start_ns = start_ns;
  s.end_ns = end_ns;
  s.track = Track::host_thread(thread_id);
  s.parent_id = parent_id;
  s.correlation_id = correlation_id;
  s.name = std::string(to_string(level)) + "#" + std::to_string(id);
  return s;
}

/// The span with `id`; fails the test (returns a dummy) when absent.
inline const Span& by_id(const Trace& trace, SpanId id) {
  for (const Span& s : trace.spans) {
    if (s.id == id) return s;
  }
  static const Span missing{};
  ADD_FAILURE() << "no span with id " << id;
  return missing;
}

}  // namespace xsp::testing
