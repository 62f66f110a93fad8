// TraceBlobReader: the streaming decoder yields exactly what decode_trace() gives, for every format version, in any
// chunking of the input, and fails with a clear error on truncated or corrupt blobs.
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

#include "test_util.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/serialize.h"

namespace xsp {
namespace {

using testing::make_span;

Trace sample_trace(std::size_t extra_spans = 0) {
  Trace t;
  t.clock.unix_offset_ns = -42;
  t.clock.device_clock_mapping = "cupti timestamp callback";
  t.counters = {{"cupti.dropped_records", 12}, {"big", ~std::uint64_t{0}}};
  t.spans = {make_span(1, Level::kApplication, 1'000'000'000'000, 1'000'000'900'000, 1),
             make_span(2, Level::kModel, 1'000'000'000'100, 1'000'000'800'000, 1),
             make_span(3, Level::kFramework, 1'000'000'000'200, 1'000'000'000'900, 1, 2),
             make_span(4, Level::kSystem, 1'000'000'000'300, 1'000'000'000'350, 1, kNoSpan, 77),
             make_span(5, Level::kKernel, 1'000'000'500'000, 1'000'000'600'000, 1, kNoSpan, 77)};
  t.spans[1].tags = {{"batch", std::int64_t{3}}};
  t.spans[2].tags = {{"op", "aten::conv2d"}, {"module", "0"}};
  t.spans[4].tags = {{"grid", {128, 1, 1}}, {"flops", 1.25e9}, {"bytes", std::int64_t{-7}}};
  t.spans[4].track = Track::stream(3, 7);
  for (std::size_t i = 0; i < extra_spans; ++i) {
    Span s = make_span(100 + i, Level::kFramework, 1'000'000'000'400 + static_cast<std::int64_t>(i) * 10,
                       1'000'000'000'405 + static_cast<std::int64_t>(i) * 10, 2 + i % 3);
    s.name = "aten::op" + std::to_string(i % 50);
    s.tags = {{"seq", static_cast<std::int64_t>(i)}, {"shape", "[" + std::to_string(i % 7) + "]"}};
    t.spans.push_back(std::move(s));
  }
  assemble(t);
  return t;
}

// A source giving the blob in pieces of 1 to `max_piece` bytes (random), whatever the reader asks for.
ByteSource ragged_source(const std::vector<std::uint8_t>& blob, std::size_t max_piece, unsigned seed) {
  return [&blob, max_piece, rng = std::mt19937(seed), offset = std::size_t{0}](std::uint8_t* out,
                                                                               std::size_t max_bytes) mutable {
    std::size_t n = std::uniform_int_distribution<std::size_t>(1, max_piece)(rng);
    n = std::min({n, max_bytes, blob.size() - offset});
    std::copy_n(blob.data() + offset, n, out);
    offset += n;
    return n;
  };
}

// The trace TraceBlobReader gives, assembled as decode_trace() would return it.
Trace stream_decode(ByteSource source, std::size_t chunk_bytes = TraceBlobReader::kDefaultChunkBytes) {
  TraceBlobReader reader(std::move(source), chunk_bytes);
  Trace t = reader.header();
  Span s;
  while (reader.next(s)) t.spans.push_back(s);
  EXPECT_EQ(reader.spans_read(), reader.span_count());
  t.processes = reader.processes();
  return t;
}

std::vector<std::uint8_t> compress_blob(const std::vector<std::uint8_t>& payload, std::uint8_t version) {
  return testing::wrap_payload(payload, version);
}

std::vector<std::uint8_t> payload_of(const std::vector<std::uint8_t>& blob) {
  std::vector<std::uint8_t> payload(ZSTD_getFrameContentSize(blob.data() + 13, blob.size() - 13));
  const std::size_t n = ZSTD_decompress(payload.data(), payload.size(), blob.data() + 13, blob.size() - 13);
  EXPECT_EQ(n, payload.size());
  return payload;
}

TEST(SerializeStream, V3EqualsDecodeTraceSpanForSpan) {
  Trace t = sample_trace(20'000);
  t.processes = {{4242, "python3 infer.py", {1, 2, 3}}, {77, "worker", {4}}};
  const std::vector<std::uint8_t> blob = encode_trace(t);
  const Trace expected = decode_trace(blob);
  ASSERT_EQ(expected, t);
  EXPECT_EQ(stream_decode(memory_source(blob.data(), blob.size())), expected);
  // Small input chunks and pieces of any size: the varints and strings that straddle a refill decode the same.
  EXPECT_EQ(stream_decode(ragged_source(blob, 7, 1), 64), expected);
  EXPECT_EQ(stream_decode(ragged_source(blob, 4096, 2), 1000), expected);
}

TEST(SerializeStream, HeaderPartsBeforeTheSpans) {
  const Trace t = sample_trace(3);
  const std::vector<std::uint8_t> blob = encode_trace(t);
  TraceBlobReader reader(memory_source(blob.data(), blob.size()));
  EXPECT_EQ(reader.version(), 3);
  EXPECT_EQ(reader.clock(), t.clock);
  EXPECT_EQ(reader.counters(), t.counters);
  EXPECT_EQ(reader.assembly(), t.assembly);
  EXPECT_EQ(reader.span_count(), t.spans.size());
  EXPECT_EQ(reader.spans_read(), 0u);
  EXPECT_THROW(reader.processes(), std::logic_error);  // v3: they follow the spans
  reader.skip_rest();
  EXPECT_TRUE(reader.processes().empty());
  Span s;
  EXPECT_FALSE(reader.next(s));
}

TEST(SerializeStream, ReadTraceProcessesSkipsTheSpans) {
  Trace t = sample_trace(1000);
  t.processes = {{1, "a", {1}}, {2, "b c", {2, 3}}};
  const std::vector<std::uint8_t> blob = encode_trace(t);
  EXPECT_EQ(read_trace_processes(memory_source(blob.data(), blob.size())), t.processes);
}

TEST(SerializeStream, EmptyTrace) {
  const Trace t;
  const std::vector<std::uint8_t> blob = encode_trace(t);
  TraceBlobReader reader(memory_source(blob.data(), blob.size()));
  EXPECT_EQ(reader.span_count(), 0u);
  Span s;
  EXPECT_FALSE(reader.next(s));
  EXPECT_FALSE(reader.next(s));  // stays at the end
  EXPECT_EQ(stream_decode(memory_source(blob.data(), blob.size())), decode_trace(blob));
}

// v2 is v3 without the processes: a v3 payload of a trace without processes less its last byte (the count 0).
TEST(SerializeStream, V2EqualsDecodeTrace) {
  const Trace t = sample_trace(500);
  std::vector<std::uint8_t> payload = payload_of(encode_trace(t));
  ASSERT_EQ(payload.back(), 0);
  payload.pop_back();
  const std::vector<std::uint8_t> blob = compress_blob(payload, 2);
  const Trace expected = decode_trace(blob);
  EXPECT_EQ(expected.spans, t.spans);
  EXPECT_EQ(stream_decode(ragged_source(blob, 13, 3), 100), expected);
  EXPECT_TRUE(read_trace_processes(memory_source(blob.data(), blob.size())).empty());
}

// v1: one varint thread id per span (device streams tagged 0x5354 << 48) and every tag value as text.
TEST(SerializeStream, V1EqualsDecodeTrace) {
  // strings: "k", "grid", "4096,1,1", "bytes", "1024"
  std::vector<std::uint8_t> p = {5,   1,   'k', 4, 'g', 'r', 'i', 'd', 8,   '4', '0', '9', '6', ',',
                                 '1', ',', '1', 5, 'b', 'y', 't', 'e', 's', 4,   '1', '0', '2', '4'};
  p.insert(p.end(), {0, 0, 0, 0, 0, 0, 0, 0, 0, 0});  // clock "", 0, ""; no counters; report of zeros
  p.push_back(2);                                     // spans
  //           id parent level rule name start dur thread corr ntags
  p.insert(p.end(), {2, 0, 2, 0, 0, 4, 6, 9, 0, 2, 1, 2, 3, 4});
  // A kernel on device 1 stream 5: thread id 0x5354'0001'0000'0005 as a varint.
  p.insert(p.end(), {2, 0, 5, 0, 0, 2, 2});
  std::uint64_t v = 0x5354000100000005ULL;
  while (v >= 0x80) {
    p.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  p.push_back(static_cast<std::uint8_t>(v));
  p.insert(p.end(), {0, 0});
  const std::vector<std::uint8_t> blob = compress_blob(p, 1);
  const Trace expected = decode_trace(blob);
  ASSERT_EQ(expected.spans.size(), 2u);
  EXPECT_EQ(expected.spans[1].track, Track::stream(1, 5));
  EXPECT_EQ(stream_decode(ragged_source(blob, 3, 4), 64), expected);
}

// Every truncation of a blob fails with a decode_trace error, never a crash, a hang or a shorter trace.
TEST(SerializeStream, TruncatedBlobThrowsClearError) {
  const std::vector<std::uint8_t> blob = encode_trace(sample_trace(50));
  for (std::size_t len = 0; len < blob.size(); ++len) {
    const std::vector<std::uint8_t> cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(len));
    try {
      stream_decode(memory_source(cut.data(), cut.size()), 64);
      ADD_FAILURE() << "a blob cut to " << len << " of " << blob.size() << " bytes was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("decode_trace: ", 0), 0u) << e.what();
    }
  }
  try {
    stream_decode(memory_source(blob.data(), blob.size() - 1));
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(SerializeStream, CorruptBlobThrowsOrDecodesAsDecodeTrace) {
  const std::vector<std::uint8_t> blob = encode_trace(sample_trace(20));
  for (std::size_t i = 0; i < blob.size(); ++i) {
    auto flipped = blob;
    flipped[i] ^= 0x5a;
    bool whole_ok = true;
    Trace whole;
    try {
      whole = decode_trace(flipped);
    } catch (const std::runtime_error&) {
      whole_ok = false;
    }
    try {
      const Trace streamed = stream_decode(memory_source(flipped.data(), flipped.size()), 64);
      EXPECT_TRUE(whole_ok) << "byte " << i << ": the streaming reader accepted what decode_trace refuses";
      if (whole_ok) EXPECT_EQ(streamed, whole) << "byte " << i;
    } catch (const std::runtime_error& e) {
      EXPECT_FALSE(whole_ok) << "byte " << i << ": " << e.what();
    }
  }
}

TEST(SerializeStream, TrailingBytesAndBadHeaderThrow) {
  std::vector<std::uint8_t> blob = encode_trace(sample_trace());
  auto message = [](const std::vector<std::uint8_t>& b) -> std::string {
    try {
      stream_decode(memory_source(b.data(), b.size()));
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "accepted";
  };
  auto trailing = blob;
  trailing.push_back(0);
  EXPECT_NE(message(trailing).find("trailing bytes after the zstd frame"), std::string::npos) << message(trailing);
  auto magic = blob;
  magic[0] = 'Y';
  EXPECT_NE(message(magic).find("bad magic"), std::string::npos);
  auto version = blob;
  version[4] = 9;
  EXPECT_NE(message(version).find("unknown format version 9"), std::string::npos);
  auto size = blob;
  size[5] ^= 1;
  EXPECT_NE(message(size).find("does not match the header's payload size"), std::string::npos);
  EXPECT_NE(message({'X', 'S'}).find("shorter than the xsp-trace header"), std::string::npos);
}

TEST(SerializeStream, SourceErrorsPassThrough) {
  const std::vector<std::uint8_t> blob = encode_trace(sample_trace(5000));
  std::size_t calls = 0, offset = 0;
  ByteSource failing = [&](std::uint8_t* out, std::size_t max_bytes) -> std::size_t {
    if (++calls == 4) throw std::out_of_range("store went away");
    const std::size_t n = std::min<std::size_t>(max_bytes, 100);
    std::copy_n(blob.data() + offset, n, out);
    offset += n;
    return n;
  };
  ASSERT_GT(blob.size(), 400u);
  EXPECT_THROW(stream_decode(failing, 100), std::out_of_range);
  EXPECT_EQ(calls, 4u);
}

}  // namespace
}  // namespace xsp
