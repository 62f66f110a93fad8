// Helpers shared by the trace unit tests.
#pragma once

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

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

/// A stored-trace blob (src/trace/serialize.cc's layout: "XSPT", `version`, the payload's size as 8 bytes little
/// endian, then one zstd frame) around any `payload`, for tests of what the decoders make of a payload by hand.
inline std::vector<std::uint8_t> wrap_payload(const std::vector<std::uint8_t>& payload, std::uint8_t version) {
  std::vector<std::uint8_t> blob = {'X', 'S', 'P', 'T', version};
  for (int i = 0; i < 8; ++i)
    blob.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(payload.size()) >> (8 * i)));
  std::vector<std::uint8_t> frame(ZSTD_compressBound(payload.size()));
  const std::size_t n = ZSTD_compress(frame.data(), frame.size(), payload.data(), payload.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  blob.insert(blob.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n));
  return blob;
}

}  // namespace xsp::testing
