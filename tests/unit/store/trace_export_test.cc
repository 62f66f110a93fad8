// Exports users' own tools read (docs/exports.md), on real GPU traces: the H200 ResNet-18 kernel-level store and
// the two-stream H100 self-test trace. What HTA, Perfetto/DevTools and SQL rely on is asserted here; the tools
// themselves run in tests/exports (DevTools' trace engine, the OTLP protobuf definitions) and scripts/hta_check.py.
#include "xsp/store/trace_export.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "temp_dir.h"
#include "xsp/store/store.h"
#include "xsp/trace/export.h"
#include "xsp/trace/serialize.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::TempDir;

/// Evaluation 1 of a copy of the kernel-level fixture (a copy: opening a store migrates it).
EvaluationRecord kernel_fixture(const TempDir& dir) {
  const fs::path file = dir.path() / "K.db";
  fs::copy_file(fs::path(XSP_TEST_FIXTURES) / "gpu" / "resnet18_bs1_kernel_h200.db", file);
  auto store = Store::open(file);
  auto e = store->load(1);
  if (!e) throw std::runtime_error("fixture has no evaluation 1");
  return *e;
}

Trace two_stream_trace() {
  std::ifstream in(fs::path(XSP_TEST_FIXTURES) / "gpu" / "two_streams_h100.xspt", std::ios::binary);
  const std::vector<std::uint8_t> blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_trace(blob);
}

bool is_device_category(const json& e) {
  const std::string cat = e.value("cat", "");
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// HTA joins a kernel to its launch by "correlation" and expects exactly one CPU event per id (Kineto writes the
/// runtime call only). CUPTI reports the driver calls under the runtime call's id too; before the fix every launch
/// was counted up to three times (219,114 rows of launch statistics instead of 222).
TEST(TraceExport, ChromeGivesEachLaunchOneCorrelatedHostCall) {
  TempDir dir;
  const EvaluationRecord e = kernel_fixture(dir);
  const RunRecord& run = choose_run(e, {});
  ASSERT_EQ(run.trace_level, TraceLevel::kKernel);
  const json trace = to_chrome_trace(run.trace, trace_resource(e, run));

  std::map<std::int64_t, int> device_by_correlation, host_by_correlation;
  std::map<std::string, int> device_categories;
  std::map<std::int64_t, std::int64_t> external_of_kernel, external_of_call;
  std::set<std::pair<std::int64_t, std::int64_t>> gpu_tracks;
  for (const json& ev : trace["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    ASSERT_LT(ev["tid"].get<std::uint64_t>(), 1ULL << 32) << ev.dump();  // JSON importers drop larger tids
    const json& args = ev["args"];
    if (is_device_category(ev)) {
      ASSERT_NE(ev["pid"], kChromeHostPid) << ev.dump();
      gpu_tracks.insert({ev["pid"].get<std::int64_t>(), ev["tid"].get<std::int64_t>()});
      ++device_categories[ev["cat"].get<std::string>()];
      ASSERT_TRUE(args.contains("correlation")) << ev.dump();
      ASSERT_TRUE(args["correlation"].is_number_integer()) << ev.dump();
      ++device_by_correlation[args["correlation"].get<std::int64_t>()];
      if (args.contains("External id"))
        external_of_kernel[args["correlation"].get<std::int64_t>()] = args["External id"].get<std::int64_t>();
    } else if (args.contains("correlation")) {
      EXPECT_EQ(ev["pid"], kChromeHostPid) << ev.dump();
      const std::string cat = ev["cat"];
      EXPECT_TRUE(cat == "cuda_runtime" || cat == "cuda_driver") << ev.dump();
      ++host_by_correlation[args["correlation"].get<std::int64_t>()];
      if (args.contains("External id"))
        external_of_call[args["correlation"].get<std::int64_t>()] = args["External id"].get<std::int64_t>();
    }
  }
  EXPECT_EQ(device_categories, (std::map<std::string, int>{{"gpu_memcpy", 4}, {"gpu_memset", 14}, {"kernel", 204}}));
  EXPECT_EQ(gpu_tracks.size(), 1u);  // ResNet-18 on one stream
  EXPECT_EQ(device_by_correlation.size(), 222u);
  // Calls that launched nothing (synchronize, malloc) keep their own ids, as in Kineto: one host event per id.
  EXPECT_GE(host_by_correlation.size(), 222u);
  for (const auto& [id, n] : host_by_correlation) EXPECT_EQ(n, 1) << "correlation " << id << " on the host";
  for (const auto& [id, n] : device_by_correlation) {
    EXPECT_EQ(n, 1) << "correlation " << id;
    EXPECT_EQ(host_by_correlation[id], 1) << "correlation " << id << ": host calls carrying it";
  }
  // HTA attributes kernels to ops through the launch's "External id": it must be the kernel's own.
  EXPECT_EQ(external_of_kernel.size(), 222u);
  for (const auto& [id, op] : external_of_kernel) EXPECT_EQ(external_of_call[id], op) << "correlation " << id;
}

/// Each measured batch becomes a "ProfilerStep#N" over its MODEL spans; HTA's iteration detection reads it.
TEST(TraceExport, ChromeMarksEachMeasuredBatchAsAProfilerStep) {
  TempDir dir;
  const EvaluationRecord e = kernel_fixture(dir);
  const RunRecord& run = choose_run(e, {});
  const json trace = to_chrome_trace(run.trace, trace_resource(e, run));
  std::set<int> batches;
  for (const Span& s : run.trace.spans) {
    if (s.level != Level::kModel) continue;
    if (const Tag* b = s.find_tag("batch")) batches.insert(static_cast<int>(b->as_int().value()));
  }
  ASSERT_FALSE(batches.empty());
  std::set<int> steps;
  const std::regex step(R"(ProfilerStep#(\d+))");
  for (const json& ev : trace["traceEvents"]) {
    std::smatch m;
    const std::string name = ev.value("name", "");
    if (ev["ph"] == "X" && std::regex_match(name, m, step)) {
      steps.insert(std::stoi(m[1]));
      EXPECT_EQ(ev["cat"], "user_annotation");
      EXPECT_EQ(ev["args"]["xsp.derived"], true);
    }
  }
  EXPECT_EQ(steps, batches);
}

/// The two-stream trace recorded on an H100 (tools/cupti_selftest: vector_add on streams A and B, overlapping):
/// one GPU process, one named thread per stream, and nothing overlapping within a stream's thread.
TEST(TraceExport, TwoStreamTraceGivesOneNamedTrackPerStream) {
  const Trace trace = two_stream_trace();
  std::set<Track> streams;
  for (const Span& s : trace.spans) {
    if (s.level == Level::kKernel) streams.insert(s.track);
  }
  ASSERT_EQ(streams.size(), 2u);
  const json chrome = to_chrome_trace(trace, TraceResource{});
  std::map<std::int64_t, std::string> thread_names;
  std::map<std::int64_t, std::vector<std::pair<double, double>>> on_tid;
  std::set<std::int64_t> gpu_pids;
  for (const json& ev : chrome["traceEvents"]) {
    if (ev["pid"] == kChromeHostPid) continue;
    gpu_pids.insert(ev["pid"].get<std::int64_t>());
    if (ev["ph"] == "M" && ev["name"] == "thread_name") thread_names[ev["tid"]] = ev["args"]["name"];
    if (ev["ph"] == "X")
      on_tid[ev["tid"]].push_back({ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>()});
  }
  EXPECT_EQ(gpu_pids, (std::set<std::int64_t>{0}));
  ASSERT_EQ(on_tid.size(), 2u);
  for (auto& [tid, intervals] : on_tid) {
    EXPECT_EQ(thread_names[tid], "stream " + std::to_string(tid));
    std::sort(intervals.begin(), intervals.end());
    for (std::size_t i = 1; i < intervals.size(); ++i) {
      EXPECT_GE(intervals[i].first + 1e-3, intervals[i - 1].second) << "tid " << tid << ": overlapping work";
    }
  }
  // The two streams' work overlaps in time (else the fixture would not tell merged tracks apart).
  const auto& a = on_tid.begin()->second;
  const auto& b = std::next(on_tid.begin())->second;
  bool overlap = false;
  for (const auto& x : a)
    for (const auto& y : b) overlap |= x.first < y.second && y.first < x.second;
  EXPECT_TRUE(overlap);
}

/// Rows of an SQL query, as text.
std::vector<std::vector<std::string>> query(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    throw std::runtime_error(sql + ": " + sqlite3_errmsg(db));
  }
  std::vector<std::vector<std::string>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const auto* t = sqlite3_column_text(st, i);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  return rows;
}

std::int64_t scalar(sqlite3* db, const std::string& sql) { return std::stoll(query(db, sql).at(0).at(0)); }

TEST(TraceExport, SqliteLinksKernelsToLaunchesAndOps) {
  TempDir dir;
  const EvaluationRecord e = kernel_fixture(dir);
  const RunRecord& run = choose_run(e, {});
  const fs::path out = dir.path() / "spans.sqlite";
  export_run_sqlite(e, run, out);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);

  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").empty());
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM spans"), static_cast<std::int64_t>(run.trace.spans.size()));
  EXPECT_EQ(query(db, "SELECT kind, COUNT(*) FROM kernels GROUP BY kind ORDER BY kind"),
            (std::vector<std::vector<std::string>>{{"kernel", "204"}, {"memcpy", "4"}, {"memset", "14"}}));
  std::int64_t device_ns = 0;
  for (const Span& s : run.trace.spans) {
    if (s.level == Level::kKernel) device_ns += s.end_ns - s.start_ns;
  }
  EXPECT_EQ(scalar(db, "SELECT SUM(duration_ns) FROM kernels"), device_ns);
  // Every kernel hangs under its launch, with the same correlation id, issued before it started.
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM kernels WHERE launch_id IS NULL"), 0);
  EXPECT_EQ(scalar(db,
                   "SELECT COUNT(*) FROM kernels k JOIN launches l ON k.launch_id = l.span_id "
                   "WHERE k.correlation_id <> l.correlation_id OR k.start_ns < l.start_ns"),
            0);
  // A kernel's op is its launch's op, and every compute kernel of ResNet-18 runs under an op.
  EXPECT_EQ(scalar(db,
                   "SELECT COUNT(*) FROM kernels k JOIN launches l ON k.launch_id = l.span_id "
                   "WHERE k.op_id IS NOT l.op_id"),
            0);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM kernels WHERE kind = 'kernel' AND op_id IS NULL"), 0);
  EXPECT_GT(scalar(db, "SELECT COUNT(DISTINCT op_id) FROM kernels"), 40);
  // Numbers are numbers: grid sizes, registers and bytes are INTEGER columns and INTEGER tag values.
  EXPECT_EQ(scalar(db,
                   "SELECT COUNT(*) FROM kernels WHERE kind = 'kernel' AND (typeof(grid_x) <> 'integer' "
                   "OR grid_x < 1 OR typeof(registers_per_thread) <> 'integer')"),
            0);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM kernels WHERE kind <> 'kernel' AND (bytes IS NULL OR bytes <= 0)"), 0);
  EXPECT_EQ(query(db, "SELECT DISTINCT typeof(value) FROM tags WHERE key = 'registers_per_thread'"),
            (std::vector<std::vector<std::string>>{{"integer"}}));
  EXPECT_EQ(query(db, "SELECT value FROM meta WHERE key = 'trace_id'").at(0).at(0), run.trace_id);
  // The queries docs/exports.md shows run and return rows.
  const std::string doc = read_text(fs::path(XSP_SOURCE_DIR) / "docs" / "exports.md");
  const std::regex block("```sql\\n([\\s\\S]*?)```");
  int queries = 0;
  for (std::sregex_iterator it(doc.begin(), doc.end(), block), end; it != end; ++it) {
    ++queries;
    const std::string sql = (*it)[1];
    EXPECT_FALSE(query(db, sql).empty()) << sql;
  }
  EXPECT_GE(queries, 3);
  sqlite3_close(db);
}

// ops.self_ns, top_op_id and layer_op_id, launches/kernels' op links and spans.batch on a trace whose answers are
// known by construction (ids in the comments).
TEST(TraceExport, SqliteHasSelfTimesOpLinksAndBatches) {
  Trace trace;
  auto add = [&](SpanId id, SpanId parent, Level level, const char* name, std::int64_t start, std::int64_t end,
                 std::vector<Tag> tags = {}) -> Span& {
    Span& s = trace.spans.emplace_back();
    s.id = id;
    s.parent_id = parent;
    s.level = level;
    s.name = name;
    s.start_ns = start;
    s.end_ns = end;
    s.tags = std::move(tags);
    return s;
  };
  add(1, kNoSpan, Level::kApplication, "evaluation", 0, 10'000);
  add(2, 1, Level::kModel, "predict", 0, 1000, {Tag("batch", std::int64_t{0})});
  add(3, 2, Level::kFramework, "aten::conv2d", 10, 410);       // self 400 - 380 = 20
  add(4, 3, Level::kFramework, "aten::convolution", 20, 400);  // self 380: a launch is no child op
  add(5, 4, Level::kSystem, "cudaLaunchKernel", 30, 40).correlation_id = 7;
  Span& k = add(6, 5, Level::kKernel, "gemm", 100, 300);
  k.correlation_id = 7;
  k.track = Track::stream(0, 7);
  add(7, 2, Level::kFramework, "aten::relu", 420, 520);
  add(8, 1, Level::kModel, "predict", 2000, 3000, {Tag("batch", std::int64_t{1})});
  add(9, 8, Level::kFramework, "aten::linear", 2010, 2100);  // self 90 - 30 - 10 = 50
  add(10, 9, Level::kFramework, "aten::t", 2020, 2050);
  add(11, 9, Level::kFramework, "aten::addmm", 2060, 2070);
  add(12, 1, Level::kModel, "predict", 5000, 6000);  // a warm-up batch: no batch tag
  add(13, 12, Level::kFramework, "aten::relu", 5010, 5020);
  add(14, 1, Level::kFramework, "aten::resize", 10, 20);  // outside any predict span: no layer
  add(15, 1, Level::kModel, "preprocess", 1900, 1990, {Tag("batch", std::int64_t{1})});
  EvaluationRecord e;
  RunRecord run;
  run.trace = trace;
  TempDir dir;
  const fs::path out = dir.path() / "links.sqlite";
  export_run_sqlite(e, run, out);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").empty());
  using Rows = std::vector<std::vector<std::string>>;
  EXPECT_EQ(query(db, "SELECT span_id, self_ns, top_op_id, COALESCE(layer_op_id, 'NULL') FROM ops ORDER BY span_id"),
            (Rows{{"3", "20", "3", "3"},
                  {"4", "380", "3", "3"},
                  {"7", "100", "7", "7"},
                  {"9", "50", "9", "9"},
                  {"10", "30", "9", "9"},
                  {"11", "10", "9", "9"},
                  {"13", "10", "13", "13"},
                  {"14", "10", "14", "NULL"}}));
  EXPECT_EQ(query(db, "SELECT span_id, op_id, top_op_id, layer_op_id FROM launches"), (Rows{{"5", "4", "3", "3"}}));
  EXPECT_EQ(query(db, "SELECT span_id, op_id, top_op_id, layer_op_id FROM kernels"), (Rows{{"6", "4", "3", "3"}}));
  EXPECT_EQ(query(db, "SELECT id, COALESCE(batch, 'NULL') FROM spans ORDER BY id"), (Rows{{"1", "NULL"},
                                                                                          {"2", "0"},
                                                                                          {"3", "0"},
                                                                                          {"4", "0"},
                                                                                          {"5", "0"},
                                                                                          {"6", "0"},
                                                                                          {"7", "0"},
                                                                                          {"8", "1"},
                                                                                          {"9", "1"},
                                                                                          {"10", "1"},
                                                                                          {"11", "1"},
                                                                                          {"12", "NULL"},
                                                                                          {"13", "NULL"},
                                                                                          {"14", "NULL"},
                                                                                          {"15", "1"}}));
  // The self times of a batch's ops sum to the time its layers cover (batch 0: conv2d 400 + relu 100).
  EXPECT_EQ(scalar(db, "SELECT SUM(o.self_ns) FROM ops o JOIN spans s ON s.id = o.span_id WHERE s.batch = 0"), 500);
  sqlite3_close(db);
}

TEST(TraceExport, FailuresNameThePathAndLeaveNoFile) {
  TempDir dir;
  const EvaluationRecord e = kernel_fixture(dir);
  const RunRecord& run = choose_run(e, {});
  const fs::path missing_dir = dir.path() / "no-such-dir" / "t.json";
  for (TraceFormat f : {TraceFormat::kChrome, TraceFormat::kOtlp, TraceFormat::kSqlite}) {
    try {
      export_run_trace(e, run, f, missing_dir);
      ADD_FAILURE() << "no error for " << to_string(f);
    } catch (const std::exception& ex) {
      EXPECT_NE(std::string(ex.what()).find(missing_dir.string()), std::string::npos) << ex.what();
    }
  }
  EXPECT_FALSE(fs::exists(missing_dir.parent_path()));
  // An existing file is replaced only by a complete one.
  const fs::path kept = dir.path() / "kept.json";
  std::ofstream(kept) << "old";
  RunRecord unsaved = run;
  unsaved.trace_id.clear();
  EXPECT_THROW(export_run_trace(e, unsaved, TraceFormat::kOtlp, kept), std::invalid_argument);
  EXPECT_EQ(read_text(kept), "old");
  // A file that is not an xsp trace is named.
  const fs::path junk = dir.path() / "junk.xspt";
  std::ofstream(junk) << "not a trace";
  try {
    export_trace_file(junk, TraceFormat::kChrome, dir.path() / "out.json");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& ex) {
    EXPECT_NE(std::string(ex.what()).find("junk.xspt"), std::string::npos) << ex.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out.json"));
  std::size_t left = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++left;
  EXPECT_EQ(left, 3u);  // K.db, kept.json, junk.xspt: no temporary files
}

TEST(TraceExport, TraceFileConvertsWithItsTracks) {
  TempDir dir;
  const fs::path out = dir.path() / "two.json";
  export_trace_file(fs::path(XSP_TEST_FIXTURES) / "gpu" / "two_streams_h100.xspt", TraceFormat::kChrome, out);
  const json chrome = json::parse(read_text(out));
  std::set<std::int64_t> tids;
  for (const json& ev : chrome["traceEvents"]) {
    if (ev["ph"] == "X" && ev["cat"] == "kernel") tids.insert(ev["tid"].get<std::int64_t>());
  }
  EXPECT_EQ(tids.size(), 2u);
  const fs::path otlp = dir.path() / "two.otlp.json";
  export_trace_file(fs::path(XSP_TEST_FIXTURES) / "gpu" / "two_streams_h100.xspt", TraceFormat::kOtlp, otlp);
  const json o = json::parse(read_text(otlp));
  const std::string trace_id = o["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"];
  EXPECT_EQ(trace_id.size(), 32u);
  EXPECT_EQ(trace_id.find_first_not_of("0123456789abcdef"), std::string::npos) << trace_id;
  EXPECT_NE(trace_id, std::string(32, '0'));
}

// Issue 12, defect 9: export_run_trace streams its JSON event by event. What it writes must be what the in-memory
// documents (to_chrome_trace, to_otlp_json) dump, byte for byte, so every consumer (Perfetto, HTA, Jaeger, the
// checks under tests/exports) reads the same trace as before.

/// A stored-looking run around `trace`, with a resource that has every field set.
std::pair<EvaluationRecord, RunRecord> run_of(Trace trace) {
  EvaluationRecord e;
  e.id = 3;
  e.uuid = "0b6e1a4c-8f1d-4c2e-9a57-3d2f0c1e5b7a";
  e.model_name = "resnet18";
  e.model_version = "1.0";
  e.framework_name = "libtorch";
  e.framework_version = "2.1";
  e.device = "gpu";
  e.system = {{"software", {{"xsp_version", "0.9.0"}}},
              {"host", {{"hostname", "node7"}}},
              {"gpu", json::array({{{"index", 0}, {"name", "NVIDIA H100 \"SXM\""}}})}};
  RunRecord run;
  run.id = 4;
  run.batch_size = 1;
  run.trace_level = TraceLevel::kHardware;
  run.trace_id = "0123456789abcdef0123456789abcdef";
  run.trace = std::move(trace);
  return {e, run};
}

/// Exports `run` in both JSON formats and checks each file equals the in-memory document's dump, byte for byte
/// and as parsed JSON.
void expect_streamed_equals_in_memory(const TempDir& dir, const EvaluationRecord& e, const RunRecord& run) {
  const TraceResource res = trace_resource(e, run);
  const json chrome = to_chrome_trace(run.trace, res);
  const json otlp = to_otlp_json(run.trace, res, run.trace_id);
  const fs::path chrome_file = dir.path() / "streamed.json", otlp_file = dir.path() / "streamed.otlp.json";
  export_run_trace(e, run, TraceFormat::kChrome, chrome_file);
  export_run_trace(e, run, TraceFormat::kOtlp, otlp_file);
  const std::string chrome_text = read_text(chrome_file), otlp_text = read_text(otlp_file);
  EXPECT_EQ(json::parse(chrome_text), chrome);
  EXPECT_EQ(json::parse(otlp_text), otlp);
  EXPECT_EQ(chrome_text, chrome.dump());
  EXPECT_EQ(otlp_text, otlp.dump());
  // Not vacuous: one X event per span (plus the ProfilerStep annotations), one OTLP span per span.
  std::size_t spans = 0;
  for (const json& ev : chrome.at("traceEvents")) spans += ev.at("ph") == "X" && !ev.at("args").contains("xsp.derived");
  EXPECT_EQ(spans, run.trace.spans.size());
  EXPECT_EQ(otlp.at("resourceSpans")[0].at("scopeSpans")[0].at("spans").size(), run.trace.spans.size());
}

TEST(TraceExport, StreamedJsonEqualsTheInMemoryDocumentOnTheKernelFixture) {
  TempDir dir;
  const EvaluationRecord e = kernel_fixture(dir);
  const RunRecord& run = choose_run(e, {});
  ASSERT_EQ(run.trace.spans.size(), 1209u);
  expect_streamed_equals_in_memory(dir, e, run);
}

TEST(TraceExport, StreamedJsonEqualsTheInMemoryDocumentOnTheTwoStreamFixture) {
  TempDir dir;
  const auto [e, run] = run_of(two_stream_trace());
  ASSERT_FALSE(run.trace.spans.empty());
  expect_streamed_equals_in_memory(dir, e, run);
}

TEST(TraceExport, StreamedJsonEqualsTheInMemoryDocumentOnAHandMadeTrace) {
  TempDir dir;
  Trace t;
  t.clock.unix_offset_ns = 1'700'000'000'000'000'000;
  t.clock.host_clock = "CLOCK_MONOTONIC";
  t.counters["cupti.dropped_records"] = 2;
  Span model;
  model.id = 1;
  model.level = Level::kModel;
  model.name = "predict \"batch\" \\ \u00e9\u4e2d\n\t\x01";  // quotes, backslash, UTF-8, control characters
  model.start_ns = 1'000;
  model.end_ns = 90'001;
  model.track = Track::host_thread(11);
  model.tags = {{"batch", 0}, {"note", "a\"b\\c\u00ff"}};
  Span op = model;
  op.id = 2;
  op.parent_id = 1;
  op.parent_rule = ParentRule::kContext;
  op.level = Level::kFramework;
  op.name = "aten::conv2d";
  op.start_ns = 1'500;
  op.end_ns = 3'000;
  op.tags = {{"module", "layer1.0"}};
  Span call = op;
  call.id = 3;
  call.parent_id = 2;
  call.level = Level::kSystem;
  call.name = "cudaLaunchKernel";
  call.correlation_id = 9;
  call.tags = {{"cbid", 211}, {"domain", "runtime"}};
  Span kernel;
  kernel.id = 4;
  kernel.parent_id = 3;
  kernel.parent_rule = ParentRule::kCorrelation;
  kernel.level = Level::kKernel;
  kernel.name = "void implicit_gemm<float>(int)";
  kernel.start_ns = 40'000;
  kernel.end_ns = 40'333;
  kernel.track = Track::stream(0, 7);
  kernel.correlation_id = 9;
  kernel.tags = {{"kind", "kernel"},
                 {"grid", {8, 1, 1}},
                 {"registers_per_thread", 40},
                 {"bandwidth_bytes_per_s", 1.5e11},
                 {"achieved_occupancy", 0.25}};
  t.spans = {model, op, call, kernel};
  const auto [e, run] = run_of(std::move(t));
  expect_streamed_equals_in_memory(dir, e, run);
  // And an empty trace: only metadata events, an empty span array.
  const auto [e0, run0] = run_of(Trace{});
  expect_streamed_equals_in_memory(dir, e0, run0);
}

}  // namespace
}  // namespace xsp
