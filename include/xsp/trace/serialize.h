// Compact, versioned serialization of a Trace for the results store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp {

/// Encodes a trace (spans, clock, counters, assembly report) as a zstd-compressed binary blob, format
/// "xsp-trace-v1". Round-trips exactly through decode_trace().
std::vector<std::uint8_t> encode_trace(const Trace& trace);

/// Decodes a blob written by encode_trace(). Throws std::runtime_error naming what is wrong (bad magic,
/// unknown version, truncated data, zstd error).
Trace decode_trace(const std::vector<std::uint8_t>& blob);

}  // namespace xsp
