// Traces of any size (docs/exports.md "Streaming export", "Sharding", "A window of batches"): a stored run exported
// to Perfetto span by span from its blob, split into self-contained files by size, or cut to a window of measured
// batches. Spans in the .pftrace files are counted with a small protobuf wire reader (Trace.packet ->
// TracePacket.track_event -> TYPE_SLICE_BEGIN with the debug annotation "xsp.span_id", interned names resolved).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "minimal_record.h"
#include "temp_dir.h"
#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/perfetto.h"
#include "xsp/trace/serialize.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// ---- a protobuf wire reader, just enough for Trace/TracePacket/TrackEvent ----------------------------------------

struct Field {
  std::uint32_t number = 0;
  std::uint64_t varint = 0;  // wire type 0
  std::string_view bytes;    // wire type 2
  bool length_delimited = false;
};

// The fields of one message; fails the test on a malformed one.
std::vector<Field> fields(std::string_view msg) {
  std::vector<Field> out;
  std::size_t i = 0;
  auto varint = [&]() {
    std::uint64_t v = 0;
    for (int shift = 0; i < msg.size() && shift < 64; shift += 7) {
      const auto b = static_cast<std::uint8_t>(msg[i++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ADD_FAILURE() << "bad varint";
    i = msg.size();
    return v;
  };
  while (i < msg.size()) {
    const std::uint64_t key = varint();
    Field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    switch (key & 7) {
      case 0:
        f.varint = varint();
        break;
      case 1:
        i += 8;
        break;
      case 5:
        i += 4;
        break;
      case 2: {
        const std::uint64_t n = varint();
        if (n > msg.size() - i) {
          ADD_FAILURE() << "length beyond the message";
          return out;
        }
        f.bytes = msg.substr(i, n);
        f.length_delimited = true;
        i += n;
        break;
      }
      default:
        ADD_FAILURE() << "wire type " << (key & 7);
        return out;
    }
    out.push_back(f);
  }
  return out;
}

// The xsp.span_id of every slice a .pftrace begins, in file order. A slice that leaves it out continues its category's
// ids on its sequence since the last reset: last + (last - the one before), or last + 1 after one slice
// (include/xsp/trace/perfetto.h).
std::vector<SpanId> slice_span_ids(const std::string& file_bytes) {
  std::vector<SpanId> ids;
  // (sequence, iid) -> name, as interned so far: each packet sequence (one per track) numbers its own names.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> annotation_names, categories;
  // (sequence, category) -> (last id, stride), cleared with the sequence's incremental state.
  std::map<std::pair<std::uint64_t, std::string>, std::pair<SpanId, SpanId>> runs;
  for (const Field& packet : fields(file_bytes)) {
    if (packet.number != 1) continue;  // Trace.packet
    std::uint64_t sequence = 0, flags = 0;
    for (const Field& p : fields(packet.bytes)) {
      if (p.number == 10) sequence = p.varint;  // trusted_packet_sequence_id
      if (p.number == 13) flags = p.varint;     // sequence_flags
    }
    if (flags & 1) {  // SEQ_INCREMENTAL_STATE_CLEARED
      std::erase_if(runs, [&](const auto& r) { return r.first.first == sequence; });
    }
    for (const Field& p : fields(packet.bytes)) {
      if (p.number == 12) {  // interned_data
        for (const Field& d : fields(p.bytes)) {
          if (d.number != 3 && d.number != 1) continue;  // debug_annotation_names, event_categories
          std::uint64_t iid = 0;
          std::string name;
          for (const Field& e : fields(d.bytes)) {
            if (e.number == 1) iid = e.varint;
            if (e.number == 2) name = std::string(e.bytes);
          }
          (d.number == 3 ? annotation_names : categories)[{sequence, iid}] = name;
        }
      }
    }
    for (const Field& p : fields(packet.bytes)) {
      if (p.number != 11) continue;  // track_event
      bool begin = false;
      std::optional<SpanId> id;
      std::string category;
      for (const Field& e : fields(p.bytes)) {
        if (e.number == 9) begin = e.varint == 1;                        // type == TYPE_SLICE_BEGIN
        if (e.number == 3) category = categories[{sequence, e.varint}];  // category_iids
        if (e.number != 4) continue;                                     // debug_annotations
        std::string name;
        std::optional<std::uint64_t> value;
        for (const Field& a : fields(e.bytes)) {
          if (a.number == 1) name = annotation_names[{sequence, a.varint}];
          if (a.number == 4) value = a.varint;
        }
        if (name == "xsp.span_id" && value) id = *value;
      }
      if (!begin || category == "xsp_metadata") continue;
      const auto run = runs.find({sequence, category});
      if (!id && run != runs.end()) id = run->second.first + run->second.second;
      if (!id) {
        ADD_FAILURE() << "a slice without xsp.span_id that no earlier one of its category predicts";
        continue;
      }
      runs[{sequence, category}] = {*id, run == runs.end() ? 1 : *id - run->second.first};
      ids.push_back(*id);
    }
  }
  return ids;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- a hand-made run with known batches -------------------------------------------------------------------------

// Ten measured batches 0..9, batch b on [b*1000, b*1000 + 900] after a base of 10 us (Perfetto times are unsigned)
// (MODEL span "predict" tagged batch=b), each with two FRAMEWORK ops; a warm-up MODEL span before them without a batch
// tag and an APPLICATION root over everything. Batch 4's op 2 runs on past the batch, to 5050 (into batch 5's window).
constexpr std::int64_t kBase = 10'000;
Trace batches_trace() {
  Trace t;
  SpanId id = 1;
  auto at = [](std::int64_t ns) { return kBase + ns; };
  t.spans.push_back(testing::make_span(id++, kNoSpan, Level::kApplication, "run", at(-500), at(10'000)));
  t.spans.push_back(testing::make_span(id++, 1, Level::kModel, "warmup", at(-400), at(-100)));
  for (std::int64_t b = 0; b < 10; ++b) {
    const SpanId model = id++;
    t.spans.push_back(
        testing::make_span(model, 1, Level::kModel, "predict", at(b * 1000), at(b * 1000 + 900), {{"batch", b}}));
    t.spans.push_back(
        testing::make_span(id++, model, Level::kFramework, "aten::conv", at(b * 1000 + 10), at(b * 1000 + 400)));
    t.spans.push_back(testing::make_span(id++, model, Level::kFramework, "aten::relu", at(b * 1000 + 500),
                                         at(b == 4 ? 5050 : b * 1000 + 800)));
  }
  assemble(t);
  return t;
}

// "name@start" relative to kBase, of every span.
std::set<std::string> named(const Trace& t) {
  std::set<std::string> out;
  for (const Span& s : t.spans) out.insert(s.name + "@" + std::to_string(s.start_ns - kBase));
  return out;
}

// Many spans with long names, so that small --max-bytes make many shards.
Trace many_spans(std::size_t n) {
  Trace t;
  for (std::size_t i = 0; i < n; ++i) {
    t.spans.push_back(testing::make_span(i + 1, kNoSpan, Level::kFramework,
                                         "aten::op_" + std::to_string(i % 300) + "_with_a_long_name",
                                         static_cast<std::int64_t>(i) * 100, static_cast<std::int64_t>(i) * 100 + 60,
                                         {{"seq", static_cast<std::int64_t>(i)}}));
  }
  assemble(t);
  return t;
}

struct Stored {
  std::unique_ptr<Store> store;
  EvaluationRecord record;  // as load_without_traces gives it
  Trace trace;              // what was saved
};

Stored store_trace(const TempDir& dir, Trace trace) {
  Stored s;
  s.store = Store::open(dir.path() / "xsp.db");
  EvaluationRecord r = testing::minimal_record("m");
  r.runs[0].trace = trace;
  s.store->save(r);
  s.record = *s.store->load_without_traces(r.id);
  s.trace = std::move(trace);
  return s;
}

std::set<SpanId> ids_of(const std::vector<Span>& spans) {
  std::set<SpanId> out;
  for (const Span& s : spans) out.insert(s.id);
  return out;
}

TEST(StreamExport, PerfettoStreamedEqualsTheWholeSpanSetInOrder) {
  TempDir dir;
  Stored s = store_trace(dir, many_spans(2000));
  const fs::path out = dir.path() / "run.pftrace";
  const TraceExportResult r = export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, out);
  EXPECT_TRUE(r.streamed);
  ASSERT_EQ(r.files, std::vector<fs::path>{out});
  EXPECT_EQ(r.spans, 2000u);
  const std::vector<SpanId> ids = slice_span_ids(read_file(out));
  EXPECT_EQ(std::set<SpanId>(ids.begin(), ids.end()), ids_of(s.trace.spans));
  EXPECT_EQ(ids.size(), 2000u);

  // The in-memory writer gives the same bytes for the same trace.
  std::ostringstream whole;
  write_perfetto_trace(whole, s.trace, trace_resource(s.record, s.record.runs[0]));
  EXPECT_TRUE(whole.str() == read_file(out)) << "streamed and in-memory .pftrace differ";
  // The server's stream (StoredPerfettoStream) writes the very same bytes.
  StoredPerfettoStream stream(*s.store, s.record, s.record.runs[0]);
  std::ostringstream bytes;
  EXPECT_EQ(stream.write(bytes), 2000u);
  EXPECT_TRUE(bytes.str() == read_file(out));
  // No temporary file left beside the output.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2 + 2);  // db, -wal, -shm
}

TEST(StreamExport, ShardsHoldEverySpanOnceEachFileSelfContained) {
  TempDir dir;
  Stored s = store_trace(dir, many_spans(5000));
  const fs::path out = dir.path() / "run.pftrace";
  TraceExportOptions o;
  o.max_bytes = 20'000;
  const TraceExportResult r = export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, out, o);
  ASSERT_GE(r.files.size(), 5u);
  EXPECT_EQ(r.files[0], dir.path() / "run-001.pftrace");
  EXPECT_EQ(r.files[1], dir.path() / "run-002.pftrace");
  EXPECT_FALSE(fs::exists(out));
  std::multiset<SpanId> seen;
  std::int64_t last_start = std::numeric_limits<std::int64_t>::min();
  std::map<SpanId, const Span*> by_id;
  for (const Span& sp : s.trace.spans) by_id[sp.id] = &sp;
  for (std::size_t i = 0; i < r.files.size(); ++i) {
    EXPECT_EQ(r.files[i], shard_path(out, i + 1));
    const std::string bytes = read_file(r.files[i]);
    ASSERT_FALSE(bytes.empty()) << r.files[i];
    // A file starts a new one only after passing max_bytes; one span's packets more may follow.
    if (i + 1 < r.files.size()) EXPECT_GE(bytes.size(), *o.max_bytes) << r.files[i];
    const std::vector<SpanId> ids = slice_span_ids(bytes);
    ASSERT_FALSE(ids.empty()) << r.files[i];
    // Time windows: every span of this file starts at or after every span of the files before.
    EXPECT_GE(by_id.at(ids.front())->start_ns, last_start);
    for (SpanId id : ids) last_start = std::max(last_start, by_id.at(id)->start_ns);
    seen.insert(ids.begin(), ids.end());
    // Self-contained: its own clock snapshot and descriptors come first (a fresh writer per file).
    EXPECT_EQ(static_cast<std::uint8_t>(bytes[0]), 0x0a) << "a Trace.packet first";
  }
  EXPECT_EQ(seen.size(), 5000u);
  EXPECT_EQ(std::set<SpanId>(seen.begin(), seen.end()), ids_of(s.trace.spans));
  EXPECT_EQ(r.spans, 5000u);
}

TEST(StreamExport, ShardPathsNumberFromOne) {
  EXPECT_EQ(shard_path("/x/run.pftrace", 1), fs::path("/x/run-001.pftrace"));
  EXPECT_EQ(shard_path("run.pftrace", 12), fs::path("run-012.pftrace"));
  EXPECT_EQ(shard_path("run", 1234), fs::path("run-1234"));
}

// The window of batches 3..5 is [3000, 5900]: the root and batch 2..6 spans that reach into it are kept, the rest not.
TEST(StreamExport, BatchesWindowKeepsExactlyTheOverlappingSpans) {
  const Trace t = batches_trace();
  BatchWindows w;
  for (const Span& s : t.spans) w.add(s);
  EXPECT_EQ(w.window({3, 5}), (TimeWindow{kBase + 3000, kBase + 5900}));
  EXPECT_EQ(w.window({4, 4}), (TimeWindow{kBase + 4000, kBase + 4900}));  // the batch's MODEL spans, not its ops

  Trace kept = t;
  keep_batches(kept, {3, 5});
  EXPECT_EQ(named(kept), (std::set<std::string>{"run@-500", "predict@3000", "aten::conv@3010", "aten::relu@3500",
                                                "predict@4000", "aten::conv@4010", "aten::relu@4500", "predict@5000",
                                                "aten::conv@5010", "aten::relu@5500"}));

  // Batch 5 alone: batch 4's late op (to 5050) overlaps it, batch 4's MODEL span (to 4900) does not.
  Trace five = t;
  keep_batches(five, {5, 5});
  EXPECT_EQ(named(five), (std::set<std::string>{"run@-500", "aten::relu@4500", "predict@5000", "aten::conv@5010",
                                                "aten::relu@5500"}));
  // Batch 0: the warm-up before it is out, the root in.
  Trace zero = t;
  keep_batches(zero, {0, 0});
  EXPECT_EQ(named(zero), (std::set<std::string>{"run@-500", "predict@0", "aten::conv@10", "aten::relu@500"}));
}

TEST(StreamExport, BatchesInEveryFormatMatchTheWindow) {
  TempDir dir;
  Stored s = store_trace(dir, batches_trace());
  Trace expected = s.trace;
  keep_batches(expected, {5, 5});
  TraceExportOptions o;
  o.batches = BatchRange{5, 5};

  const fs::path pf = dir.path() / "b.pftrace";
  const TraceExportResult r = export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, pf, o);
  EXPECT_TRUE(r.streamed);
  EXPECT_EQ(r.spans, expected.spans.size());
  const std::vector<SpanId> ids = slice_span_ids(read_file(pf));
  EXPECT_EQ(std::set<SpanId>(ids.begin(), ids.end()), ids_of(expected.spans));

  const fs::path db = dir.path() / "b.sqlite";
  export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kSqlite, db, o);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT id FROM spans", -1, &st, nullptr), SQLITE_OK);
  std::set<SpanId> sql_ids;
  while (sqlite3_step(st) == SQLITE_ROW) sql_ids.insert(static_cast<SpanId>(sqlite3_column_int64(st, 0)));
  sqlite3_finalize(st);
  sqlite3_close(h);
  EXPECT_EQ(sql_ids, ids_of(expected.spans));

  const fs::path chrome = dir.path() / "b.json";
  const TraceExportResult c =
      export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kChrome, chrome, o);
  EXPECT_FALSE(c.streamed);
  EXPECT_EQ(c.spans, expected.spans.size());
}

TEST(StreamExport, BadBatchesNameTheOptionAndValue) {
  auto message = [](std::string_view text) -> std::string {
    try {
      parse_batch_range(text);
    } catch (const BatchRangeError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message("5:3"), "--batches '5:3': the first batch 5 comes after the last 3");
  EXPECT_NE(message("a:3").find("--batches 'a:3': the first batch 'a' is not a batch number"), std::string::npos);
  EXPECT_NE(message("3").find("--batches '3': expected A:B"), std::string::npos);
  EXPECT_NE(message("3:").find("the last batch '' is not"), std::string::npos);
  EXPECT_NE(message("-1:2").find("is not a batch number"), std::string::npos);
  EXPECT_NE(message("1:2x").find("'2x'"), std::string::npos);
  EXPECT_EQ(parse_batch_range("2:7").first, 2);
  EXPECT_EQ(parse_batch_range("2:7").last, 7);

  TempDir dir;
  Stored s = store_trace(dir, batches_trace());
  TraceExportOptions o;
  o.batches = BatchRange{8, 12};
  const fs::path out = dir.path() / "x.pftrace";
  try {
    export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, out, o);
    FAIL() << "batch 12 accepted";
  } catch (const BatchRangeError& e) {
    EXPECT_STREQ(e.what(), "--batches '8:12': the trace has no measured batch 12 (its batches: 0 to 9)");
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_THROW(export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kChrome, out, o),
               BatchRangeError);
}

TEST(StreamExport, MaxBytesIsForPerfettoOnly) {
  TempDir dir;
  Stored s = store_trace(dir, many_spans(10));
  TraceExportOptions o;
  o.max_bytes = 1000;
  EXPECT_THROW(export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kChrome, dir.path() / "x", o),
               std::invalid_argument);
  o.max_bytes = 0;
  EXPECT_THROW(export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, dir.path() / "x", o),
               std::invalid_argument);
}

// A stored trace whose spans are not in start order (never written by this build's assembler) is exported whole and
// sorted, to the same spans.
TEST(StreamExport, UnsortedStoredTraceFallsBackToTheWholeTrace) {
  TempDir dir;
  Trace t = many_spans(100);
  std::reverse(t.spans.begin(), t.spans.end());
  Stored s = store_trace(dir, t);
  const fs::path out = dir.path() / "u.pftrace";
  const TraceExportResult r = export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, out);
  EXPECT_FALSE(r.streamed);
  const std::vector<SpanId> ids = slice_span_ids(read_file(out));
  EXPECT_EQ(std::set<SpanId>(ids.begin(), ids.end()), ids_of(t.spans));
}

// A corrupt blob fails the export naming the run, and leaves no file (nor temporary file) behind.
TEST(StreamExport, CorruptBlobLeavesNothingWritten) {
  TempDir dir;
  Stored s = store_trace(dir, many_spans(3000));
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open((dir.path() / "xsp.db").c_str(), &h), SQLITE_OK);
    // Flip a byte in the middle of the zstd frame: the checksum or the payload checks catch it.
    ASSERT_EQ(sqlite3_exec(h,
                           "UPDATE runs SET trace = substr(trace, 1, length(trace) / 2) || x'5a' || "
                           "substr(trace, length(trace) / 2 + 2)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(h);
  }
  const fs::path out = dir.path() / "c.pftrace";
  TraceExportOptions o;
  o.max_bytes = 5000;
  try {
    export_stored_trace(*s.store, s.record, s.record.runs[0], TraceFormat::kPerfetto, out, o);
    FAIL() << "a corrupt trace was exported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("run " + std::to_string(s.record.runs[0].id) + ": stored trace: decode_trace"),
              std::string::npos)
        << e.what();
  }
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find(".pftrace"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace xsp
