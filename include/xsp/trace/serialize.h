// Compact, versioned serialization of a Trace for the results store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp {

/// Encodes a trace (spans, clock, counters, assembly report, processes) as a zstd-compressed binary blob, format
/// "xsp-trace-v3" (docs/store.md). Round-trips exactly through decode_trace() and TraceBlobReader.
std::vector<std::uint8_t> encode_trace(const Trace& trace);

/// Decodes a blob written by encode_trace() (versions 1 to 3). Throws std::runtime_error naming what is wrong (bad
/// magic, unknown version, truncated data, zstd error).
Trace decode_trace(const std::vector<std::uint8_t>& blob);

/// A chunked byte source: copies the next at most `max_bytes` bytes of a blob into `out` and returns how many it
/// copied, 0 only at the end. Exceptions it throws pass through the reader unchanged.
using ByteSource = std::function<std::size_t(std::uint8_t* out, std::size_t max_bytes)>;

/// A ByteSource over bytes in memory (`data` must outlive it).
ByteSource memory_source(const std::uint8_t* data, std::size_t size);

/// Reads an xsp-trace blob (versions 1 to 3) from a ByteSource without holding it or its spans in memory: the
/// constructor reads the header parts (clock, counters, assembly report, span count), then next() yields the spans
/// one at a time in stored order (the assembler's: start_ns ascending). Memory is the string table plus two fixed
/// buffers (`chunk_bytes` of compressed input, zstd's streaming output block), never O(spans).
///
/// Yields exactly what decode_trace() gives for the same blob. Every failure throws std::runtime_error starting
/// "decode_trace: " and naming what is wrong: a blob shorter than its header, bad magic, unknown version, a zstd
/// frame that is corrupt, truncated, fails its checksum or disagrees with the header's payload size, a corrupt field
/// (named), trailing bytes. A truncated or corrupt blob may fail only at the span where the damage is, after earlier
/// spans were yielded: a consumer that must not publish a partial result checks that next() returned false.
///
/// In v3 the processes follow the spans, so processes() is known only once every span has been read; a consumer
/// that needs them first (a Perfetto writer) reads the blob twice, the first time with read_trace_processes().
class TraceBlobReader {
 public:
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{1} << 20;

  /// Reads the header and everything before the spans. Throws as the class comment says.
  explicit TraceBlobReader(ByteSource source, std::size_t chunk_bytes = kDefaultChunkBytes);
  ~TraceBlobReader();
  TraceBlobReader(const TraceBlobReader&) = delete;
  TraceBlobReader& operator=(const TraceBlobReader&) = delete;

  /// The blob's format version (1, 2 or 3).
  std::uint8_t version() const;
  const ClockInfo& clock() const;
  const std::map<std::string, std::uint64_t>& counters() const;
  const AssemblyReport& assembly() const;
  /// How many spans the blob holds, and how many next() has yielded so far.
  std::uint64_t span_count() const;
  std::uint64_t spans_read() const;
  /// Distinct strings (span names, tag keys and text values) the reader holds: its memory beyond the buffers.
  std::size_t string_count() const;

  /// Replaces `span` with the next span and returns true; returns false after the last one, once the rest of the
  /// blob (v3's processes) is read and the zstd frame, its checksum and the blob's end are verified. Throws as the
  /// class comment says.
  bool next(Span& span);
  /// Reads the remaining spans without yielding them and verifies the blob's end, as next() until false.
  void skip_rest();
  /// Trace::processes (empty before v3). Throws std::logic_error while spans remain unread.
  const std::vector<TraceProcess>& processes() const;
  /// A Trace with everything but the spans (clock, counters, assembly report; processes once every span is read).
  Trace header() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Trace::processes of the blob `source` gives, read through the whole blob once (spans are skipped, not kept; for
/// v1 and v2 nothing past the header is read, as they have none). Throws as TraceBlobReader.
std::vector<TraceProcess> read_trace_processes(ByteSource source);

}  // namespace xsp
