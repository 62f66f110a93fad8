#include "xsp/trace/serialize.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <stdexcept>

#include "test_util.h"
#include "xsp/trace/assembler.h"

namespace xsp {
namespace {

using testing::make_span;

Trace rich_trace() {
  Trace t;
  t.clock.host_clock = "CLOCK_MONOTONIC";
  t.clock.unix_offset_ns = -42;  // signed values must survive
  t.clock.device_clock_mapping = "cupti timestamp callback";
  t.counters = {{"cupti.dropped_records", 12}, {"framework.dropped_spans", 0}, {"big", ~std::uint64_t{0}}};
  t.spans = {make_span(1, Level::kApplication, 1'000'000'000'000, 1'000'000'900'000, 1),
             make_span(2, Level::kModel, 1'000'000'000'100, 1'000'000'800'000, 1),
             make_span(3, Level::kFramework, 1'000'000'000'200, 1'000'000'000'900, 1, /*parent=*/2),
             make_span(4, Level::kSystem, 1'000'000'000'300, 1'000'000'000'350, 1, kNoSpan, 77),
             make_span(5, Level::kKernel, 1'000'000'500'000, 1'000'000'600'000, 1ULL << 40, kNoSpan, 77),
             make_span(6, Level::kHardware, 1'000'000'500'000, 1'000'000'600'000, 1ULL << 40, 5)};
  t.spans[2].tags = {{"op", "aten::conv2d"}, {"shape", "[32,3,224,224]"}};
  t.spans[4].tags = {{"grid", {128, 1, 1}},
                     {"op", "aten::conv2d"},
                     {"bytes", std::int64_t{-7}},
                     {"empty", std::vector<std::int64_t>{}}};
  t.spans[4].track = Track::stream(3, 1ULL << 40);
  t.spans[5].tags = {{"flop_count", 123456789.25}, {"dram_bytes", 1000u}, {"dram_bytes", "1000"}, {"tiny", 5e-324}};
  t.spans[1].name = "predict";
  t.spans[2].name = "";  // empty strings are strings too
  assemble(t);
  return t;
}

TEST(Serialize, RoundTripExact) {
  const Trace t = rich_trace();
  ASSERT_EQ(t.assembly.by_correlation, 1u);  // the fixture really carries a report
  const std::vector<std::uint8_t> blob = encode_trace(t);
  ASSERT_GE(blob.size(), 13u);
  EXPECT_EQ(std::memcmp(blob.data(), "XSPT", 4), 0);
  EXPECT_EQ(blob[4], 3);
  const Trace back = decode_trace(blob);
  EXPECT_EQ(back, t);  // types included: Tag::operator== compares them
}

// v3: the processes of a trace recorded across processes (xsp profile) round-trip, thread ids sorted.
TEST(Serialize, ProcessesRoundTrip) {
  Trace t = rich_trace();
  t.processes = {{4242, "python3 infer.py --model bert", {4242, 4250, 1ull << 40}},
                 {-1, "", {}},
                 {77, "worker \xe2\x9c\x93", {80}}};
  const Trace back = decode_trace(encode_trace(t));
  EXPECT_EQ(back, t);
  ASSERT_NE(back.process_of_thread(4250), nullptr);
  EXPECT_EQ(back.process_of_thread(4250)->pid, 4242);
  EXPECT_EQ(back.process_of_thread(80)->name, "worker \xe2\x9c\x93");
  EXPECT_EQ(back.spans[4].track, Track::stream(3, 1ULL << 40));
  EXPECT_EQ(back.spans[5].find_tag("flop_count")->as_real(), 123456789.25);
  EXPECT_EQ(back.spans[5].tags[2].type, TagType::kString);  // the text "1000" stays text
  EXPECT_EQ(back.assembly, t.assembly);
  EXPECT_EQ(back.counters.at("big"), ~std::uint64_t{0});
  EXPECT_EQ(back.clock.unix_offset_ns, -42);
}

TEST(Serialize, RoundTripUnsortedExtremesAndEmpty) {
  Trace empty;
  EXPECT_EQ(decode_trace(encode_trace(empty)), empty);

  Trace t;
  // Unassembled, unsorted, negative duration, extreme values: the format must not assume anything.
  t.spans = {make_span(~SpanId{0}, Level::kKernel, std::numeric_limits<std::int64_t>::max(),
                       std::numeric_limits<std::int64_t>::min(), ~std::uint64_t{0}, 3, ~std::uint64_t{0}),
             make_span(1, Level::kModel, -5, 10), make_span(7, Level::kFramework, 100, 50)};
  t.spans[1].parent_rule = ParentRule::kContainment;
  EXPECT_EQ(decode_trace(encode_trace(t)), t);
}

TEST(Serialize, CompactForManySpans) {
  Trace t;
  for (SpanId i = 1; i <= 10'000; ++i) {
    Span s =
        make_span(i, Level::kKernel, static_cast<std::int64_t>(i) * 1000, static_cast<std::int64_t>(i) * 1000 + 700, 7);
    s.name = "volta_sgemm_128x64_nn";
    s.tags = {{"stream", "7"}};
    t.spans.push_back(std::move(s));
  }
  const auto blob = encode_trace(t);
  EXPECT_LT(blob.size(), 10'000u * 4);  // a few bytes a span at most
  EXPECT_EQ(decode_trace(blob), t);
}

TEST(Serialize, TruncatedBlobsThrow) {
  const auto blob = encode_trace(rich_trace());
  for (std::size_t n = 0; n < blob.size(); ++n) {
    const std::vector<std::uint8_t> cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(decode_trace(cut), std::runtime_error) << "prefix of " << n << " bytes";
  }
  auto longer = blob;
  longer.push_back(0);
  EXPECT_THROW(decode_trace(longer), std::runtime_error);
}

TEST(Serialize, CorruptBlobsThrow) {
  const auto blob = encode_trace(rich_trace());
  auto bad_magic = blob;
  bad_magic[0] = 'Y';
  try {
    decode_trace(bad_magic);
    FAIL() << "bad magic accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
  }
  auto bad_version = blob;
  bad_version[4] = 4;
  try {
    decode_trace(bad_version);
    FAIL() << "version 4 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("version"), std::string::npos) << e.what();
  }
  // No single-byte corruption goes unnoticed (header checks, zstd frame checks, frame checksum). A few bits of
  // an entropy-coded zstd block are padding that does not change the content: those may decode, but only to
  // the very same trace.
  const Trace original = decode_trace(blob);
  std::size_t caught = 0;
  for (std::size_t i = 0; i < blob.size(); ++i) {
    auto flipped = blob;
    flipped[i] ^= 0x5a;
    try {
      EXPECT_EQ(decode_trace(flipped), original) << "byte " << i << " changed the trace silently";
    } catch (const std::runtime_error&) {
      ++caught;
    }
  }
  EXPECT_GE(caught, blob.size() - 2);
}

// A well-formed header and zstd frame around a payload that is not a trace: the payload checks must catch it.
std::vector<std::uint8_t> wrap(const std::vector<std::uint8_t>& payload, std::uint8_t version = 1) {
  return testing::wrap_payload(payload, version);
}

TEST(Serialize, CorruptPayloadThrows) {
  // string table: 1 string "a"; clock "", 0, ""; no counters; report of zeros; one span.
  const std::vector<std::uint8_t> head = {1, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto with_span = [&](std::vector<std::uint8_t> span_bytes) {
    std::vector<std::uint8_t> p = head;
    p.push_back(1);
    p.insert(p.end(), span_bytes.begin(), span_bytes.end());
    return wrap(p);
  };
  //                     id parent level rule name start dur thread corr ntags
  const Trace ok = decode_trace(with_span({2, 0, 2, 0, 0, 4, 6, 9, 0, 0}));
  ASSERT_EQ(ok.spans.size(), 1u);
  EXPECT_EQ(ok.spans[0].id, 1u);
  EXPECT_EQ(ok.spans[0].level, Level::kFramework);
  EXPECT_EQ(ok.spans[0].name, "a");
  EXPECT_EQ(ok.spans[0].start_ns, 2);
  EXPECT_EQ(ok.spans[0].end_ns, 5);
  EXPECT_EQ(ok.spans[0].track, Track::host_thread(9));

  EXPECT_THROW(decode_trace(with_span({2, 0, 7, 0, 0, 4, 6, 9, 0, 0})), std::runtime_error);        // level 7
  EXPECT_THROW(decode_trace(with_span({2, 0, 2, 4, 0, 4, 6, 9, 0, 0})), std::runtime_error);        // rule 4
  EXPECT_THROW(decode_trace(with_span({2, 0, 2, 0, 1, 4, 6, 9, 0, 0})), std::runtime_error);        // name index 1
  EXPECT_THROW(decode_trace(with_span({2, 0, 2, 0, 0, 4, 6, 9, 0, 1, 0, 5})), std::runtime_error);  // tag value 5
  EXPECT_THROW(decode_trace(with_span({2, 0, 2, 0, 0, 4, 6, 9, 0, 0, 0})), std::runtime_error);     // trailing byte
  EXPECT_THROW(decode_trace(with_span({2, 0, 2, 0, 0, 4, 6, 9, 0})), std::runtime_error);           // short span
  // Varint of 11 bytes.
  EXPECT_THROW(decode_trace(with_span(
                   {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 2, 0, 0, 4, 6, 9, 0, 0})),
               std::runtime_error);
  // A span count far beyond the data.
  std::vector<std::uint8_t> p = head;
  p.insert(p.end(), {0xff, 0xff, 0xff, 0xff, 0x0f});
  EXPECT_THROW(decode_trace(wrap(p)), std::runtime_error);
}

// Stores written before tags had types and spans had tracks (format v1) read into the typed model: a v1 device
// stream track (0x5354 << 48 | device << 32 | stream) becomes Track::stream, and numeric text becomes numbers,
// except under keys that name things (a module "0" stays text).
TEST(Serialize, Version1BlobsReadAsTypedTagsAndTracks) {
  // strings: 0 "k", 1 "grid", 2 "4096,1,1", 3 "bytes", 4 "1024", 5 "module", 6 "0", 7 "fp32_flops", 8 "1.5e+09",
  // 9 "name", 10 "007"
  const std::vector<std::string> strings = {"k", "grid",       "4096,1,1", "bytes", "1024", "module",
                                            "0", "fp32_flops", "1.5e+09",  "name",  "007"};
  std::vector<std::uint8_t> p = {static_cast<std::uint8_t>(strings.size())};
  for (const std::string& x : strings) {
    p.push_back(static_cast<std::uint8_t>(x.size()));
    p.insert(p.end(), x.begin(), x.end());
  }
  p.insert(p.end(), {0, 0, 0, 0, 0, 0, 0, 0, 0, 0});  // clock "", 0, ""; no counters; report of zeros
  p.push_back(1);                                     // one span
  p.insert(p.end(), {2, 0, 5, 0, 0, 4, 6});           // id 1, no parent, kernel, rule none, name "k", start, dur
  // thread id 0x5354'0002'0000'0007 as a varint (GPU 2, stream 7)
  std::uint64_t tid = 0x5354000200000007ULL;
  while (tid >= 0x80) {
    p.push_back(static_cast<std::uint8_t>(tid | 0x80));
    tid >>= 7;
  }
  p.push_back(static_cast<std::uint8_t>(tid));
  p.insert(p.end(), {0, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});  // no correlation; 5 tags
  const Trace t = decode_trace(wrap(p, 1));
  ASSERT_EQ(t.spans.size(), 1u);
  const Span& s = t.spans[0];
  EXPECT_EQ(s.track, Track::stream(2, 7));
  EXPECT_EQ(s.find_tag("grid")->as_int_list(), (std::vector<std::int64_t>{4096, 1, 1}));
  EXPECT_EQ(s.find_tag("bytes")->type, TagType::kInt);
  EXPECT_EQ(s.find_tag("module")->type, TagType::kString);
  EXPECT_EQ(s.find_tag("fp32_flops")->type, TagType::kReal);
  EXPECT_EQ(s.find_tag("fp32_flops")->as_real(), 1.5e9);
  EXPECT_EQ(s.find_tag("name")->type, TagType::kString);  // leading zero: an identifier
  // Written back, it is a v2 blob that reads the same.
  EXPECT_EQ(decode_trace(encode_trace(t)), t);
}

TEST(Serialize, Version2UnknownTagTypeThrows) {
  // strings: "a"; clock; counters; report; one span with one tag of type 9.
  std::vector<std::uint8_t> p = {1, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  p.insert(p.end(), {2, 0, 2, 0, 0, 4, 6, 0, 9, 0, 1, 0, 1, 3});  // host thread 9; tag key 0, type 1, value -2
  const Trace ok = decode_trace(wrap(p, 2));
  ASSERT_EQ(ok.spans.size(), 1u);
  EXPECT_EQ(ok.spans[0].track, Track::host_thread(9));
  EXPECT_EQ(ok.spans[0].tags[0], Tag("a", std::int64_t{-2}));
  p[p.size() - 2] = 9;  // tag type 9
  try {
    decode_trace(wrap(p, 2));
    FAIL() << "tag type 9 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tag type"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xsp
