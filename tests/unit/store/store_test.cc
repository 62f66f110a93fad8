// Results store (SPEC §7): exact round trip, listing, persistence, schema versioning, failures, transactions.
#include "xsp/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "minimal_record.h"
#include "store_backends.h"
#include "temp_dir.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

// The tests that hold for both backends (TEST_P); the others are about SQLite files.
class StoreOnBoth : public testing::StoreBackends {};
XSP_STORE_BACKENDS_INSTANTIATE(StoreOnBoth);

LatencySummary make_summary(double base) {
  LatencySummary s;
  s.n = 5;
  s.trimmed_mean = base + 0.1;
  s.mean = base + 0.123456789012345;  // needs all 17 significant digits to round-trip
  s.stddev = 1.0 / 3.0;
  s.min = base - 10;
  s.max = base + 10;
  s.p50 = base;
  s.p90 = base + 7.5;
  s.p95 = base + 8.25;
  s.p99 = base + 9.9;
  s.p999 = base + 9.99;
  return s;
}

RunRecord make_run(int batch, TraceLevel level, std::int64_t t0) {
  RunRecord run;
  run.batch_size = batch;
  run.trace_level = level;
  run.warmup_iterations = 2;
  run.iterations = 5;
  run.stage_latency_ns[kStagePredict] = make_summary(1.5e6 * batch);
  run.stage_latency_ns[kStagePreprocess] = make_summary(2.5e5);
  run.predict_latency_ns = {1.5e6, 1.6e6, 1.499999e6, 0.1 + 0.2, 1.7e6 / 3.0};
  run.throughput_samples_per_s = batch / 1.5e-3;
  Trace& trace = run.trace;
  trace.clock.unix_offset_ns = 1'700'000'000'000'000'000;
  trace.spans.push_back(testing::make_span(1, kNoSpan, Level::kApplication, "evaluation", t0, t0 + 10'000));
  trace.spans.push_back(testing::make_span(2, 1, Level::kModel, kStagePredict, t0 + 100, t0 + 9'000,
                                           {{"batch_size", std::to_string(batch)}, {"iteration", "0"}}));
  if (level != TraceLevel::kModel) {
    trace.spans.push_back(testing::make_span(3, 2, Level::kFramework, "aten::conv2d", t0 + 200, t0 + 4'000,
                                             {{"module", "layer1.0.conv1"}, {"shape", "[1, 3, 224, 224]"}}));
    trace.spans.push_back(testing::make_span(4, 2, Level::kFramework, "aten::relu", t0 + 4'100, t0 + 4'500));
    trace.assembly.by_context = 3;
    // Values chosen to catch a lossy float encoding: a subnormal, a value with all mantissa bits set, 0, 1.
    run.predictions.push_back({"a.jpg", {2, 0}, {0.25f, 1e-40f, 0.75f - 1e-7f, 0.0f}});
    run.predictions.push_back({"b \u00b5.jpg", {1}, {0.1f, 0.9f, 0.0f, 1.0f / 3.0f}});
    run.predictions.push_back({"c.jpg", {}, {}});
    // Task outputs (schema 7): a detection's box and score as float32 with all mantissa bits, a mask's runs.
    run.predictions[0].detections = {{0.f, 1.5f, 319.99998f, 320.f, 0.75f - 1e-7f, 17},
                                     {2.f, 3.f, 4.f, 5.f, 1e-40f, 1}};
    run.predictions[1].mask = SegmentationMask{2, 3, {0, 4, 20, 2}};
  } else {
    trace.assembly.by_context = 1;
  }
  trace.assembly.roots = 1;
  trace.counters["framework.dropped_spans"] = 3;
  trace.counters["model.lost"] = 1;
  return run;
}

EvaluationRecord make_record(const std::string& created_at = "2026-11-21T22:08:00Z") {
  EvaluationRecord r;
  r.status = "complete";
  r.created_at = created_at;
  r.model_name = "resnet50";
  r.model_version = "1.5.0";
  r.manifest_yaml = "name: resnet50\nversion: 1.5.0\n# unicode: µs ✓\n";
  r.framework_name = "libtorch";
  r.framework_version = "2.1.0";
  r.device = "cpu";
  r.scenario = "batch-sweep";
  r.batch_sizes = {1};
  r.trace_level = TraceLevel::kFramework;
  r.leveled = true;
  r.settings = {{"iterations", 5}, {"warmup", 2}, {"seed", 12345}, {"ratio", 0.1}, {"inputs", {"a.jpg", "b.jpg"}}};
  r.system = {{"cpu", {{"model", "Test CPU"}, {"logical_cores", 2}}}, {"memory", {{"total_bytes", 1ull << 33}}}};
  r.runs.push_back(make_run(1, TraceLevel::kModel, 1'000'000));
  r.runs.push_back(make_run(1, TraceLevel::kFramework, 2'000'000));
  return r;
}

// What schema versions 6 to 11 added (the runs' generation figures, the predictions' task outputs, the evaluations'
// kind, the runs' typed outcome columns, the evaluations' labels), removed again; a macro so that the older versions'
// texts below can start with it as one literal.
#define XSP_DROP_VERSION6                                                                                         \
  "ALTER TABLE evaluations DROP COLUMN name; ALTER TABLE evaluations DROP COLUMN tags; ALTER TABLE evaluations "  \
  "DROP COLUMN note; "                                                                                            \
  "ALTER TABLE runs DROP COLUMN scenario_result; ALTER TABLE runs DROP COLUMN qps; ALTER TABLE runs DROP COLUMN " \
  "latency_p99_ns; ALTER TABLE runs DROP COLUMN meets_bound; ALTER TABLE runs DROP COLUMN ttft_p50_ns; ALTER "    \
  "TABLE runs DROP COLUMN ttft_p99_ns; ALTER TABLE runs DROP COLUMN tpot_p50_ns; ALTER TABLE runs DROP COLUMN "   \
  "tpot_p99_ns; ALTER TABLE runs DROP COLUMN output_tokens_per_s; "                                               \
  "ALTER TABLE evaluations DROP COLUMN kind; ALTER TABLE predictions DROP COLUMN outputs; ALTER TABLE runs DROP " \
  "COLUMN generation; "
// What schema versions 5 and 6 added, removed again: turns a current file into what version 4 wrote.
constexpr const char* kDropVersion5 = XSP_DROP_VERSION6
    "DROP INDEX runs_trace_id; ALTER TABLE runs DROP COLUMN trace_id; ALTER TABLE evaluations DROP COLUMN uuid; ";
// What schema versions 4 to 6 added, removed again: turns a current file into what versions 1-3 wrote.
constexpr const char* kDropVersion4 = XSP_DROP_VERSION6
    "DROP INDEX runs_trace_id; ALTER TABLE runs DROP COLUMN trace_id; ALTER TABLE evaluations DROP COLUMN uuid; "
    "DROP TABLE level_overheads; ALTER TABLE runs DROP COLUMN stability; ALTER TABLE runs DROP COLUMN "
    "latency_median_ns; "
    "ALTER TABLE runs DROP COLUMN latency_ci95_low_ns; ALTER TABLE runs DROP COLUMN latency_ci95_high_ns; "
    "ALTER TABLE runs DROP COLUMN latency_cv; ALTER TABLE runs DROP COLUMN drift_fraction; "
    "ALTER TABLE runs DROP COLUMN warmup_ns; ALTER TABLE runs DROP COLUMN measurement; "
    "ALTER TABLE runs DROP COLUMN machine_state; ALTER TABLE runs DROP COLUMN warnings; ";

/// Clears the detections and masks (schema 7) of a record's predictions: what a store of an older version holds.
void strip_task_outputs(EvaluationRecord& record) {
  for (RunRecord& run : record.runs)
    for (InputPrediction& p : run.predictions) {
      p.detections.clear();
      p.mask = SegmentationMask{};
    }
}

/// Number of rows in `table` of the SQLite file, read through a separate connection.
int count_rows(const fs::path& file, const std::string& table) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  const std::string sql = "SELECT COUNT(*) FROM " + table;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  int n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

void exec_sql(const fs::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

TEST(Store, CreatesFileAndParentFoldersAtCurrentSchema) {
  TempDir dir;
  const fs::path file = dir.path() / "nested" / "deeper" / "xsp.db";
  auto store = Store::open(file);
  EXPECT_TRUE(fs::is_regular_file(file));
  EXPECT_EQ(Store::current_schema_version(), 12);
  EXPECT_EQ(store->schema_version(), 12);
  EXPECT_TRUE(store->list().empty());
  EXPECT_EQ(store->load(1), std::nullopt);
}

TEST(Store, StoreIsOneFileWithoutWal) {
  TempDir dir;
  const fs::path file = dir.path() / "xsp.db";
  {
    auto store = Store::open(file);
    auto record = make_record();
    store->save(record);
  }
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
  EXPECT_FALSE(fs::exists(dir.path() / "xsp.db-wal"));
}

TEST_P(StoreOnBoth, SaveAssignsIdsAndLoadRoundTripsExactly) {
  auto store = open("xsp.db");
  EvaluationRecord record = make_record();
  const std::int64_t id = store->save(record);
  EXPECT_GT(id, 0);
  EXPECT_EQ(record.id, id);
  ASSERT_EQ(record.runs.size(), 2u);
  EXPECT_GT(record.runs[0].id, 0);
  EXPECT_GT(record.runs[1].id, record.runs[0].id);

  const auto loaded = store->load(id);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->runs[0].trace, record.runs[0].trace);
  EXPECT_EQ(loaded->runs[1].trace, record.runs[1].trace);
  EXPECT_EQ(loaded->runs[0].predict_latency_ns, record.runs[0].predict_latency_ns);
  EXPECT_EQ(loaded->runs[0].stage_latency_ns, record.runs[0].stage_latency_ns);
  EXPECT_EQ(loaded->settings, record.settings);
  EXPECT_EQ(loaded->system, record.system);
  EXPECT_EQ(*loaded, record);
}

TEST_P(StoreOnBoth, EmptyRecordRoundTrips) {
  auto store = open("xsp.db");
  EvaluationRecord record;  // defaults: no runs, empty strings, empty JSON objects
  record.created_at = "2026-01-01T00:00:00Z";
  RunRecord run;  // no spans, no latencies
  record.runs.push_back(run);
  store->save(record);
  const auto loaded = store->load(record.id);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, record);
}

TEST_P(StoreOnBoth, NaNSummaryFieldsAndThroughputSurvive) {
  auto store = open("xsp.db");
  EvaluationRecord record = make_record();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LatencySummary empty;  // what summarize() gives for no samples: NaN everywhere but n
  empty.n = 0;
  empty.trimmed_mean = empty.mean = empty.stddev = empty.min = empty.max = nan;
  empty.p50 = empty.p90 = empty.p95 = empty.p99 = empty.p999 = nan;
  record.runs[0].stage_latency_ns[kStagePostprocess] = empty;
  record.runs[0].throughput_samples_per_s = nan;
  record.runs[0].predict_latency_ns.push_back(nan);  // raw blob keeps NaN bit patterns
  store->save(record);
  const auto loaded = store->load(record.id);
  ASSERT_TRUE(loaded.has_value());
  const LatencySummary& s = loaded->runs[0].stage_latency_ns.at(kStagePostprocess);
  EXPECT_EQ(s.n, 0u);
  for (double v : {s.trimmed_mean, s.mean, s.stddev, s.min, s.max, s.p50, s.p90, s.p95, s.p99, s.p999}) {
    EXPECT_TRUE(std::isnan(v));
  }
  EXPECT_TRUE(std::isnan(loaded->runs[0].throughput_samples_per_s));
  EXPECT_TRUE(std::isnan(loaded->runs[0].predict_latency_ns.back()));
  // Everything else still equal: NaN != NaN, so blank the NaN fields on both sides and compare the rest.
  EvaluationRecord a = record, b = *loaded;
  for (EvaluationRecord* r : {&a, &b}) {
    r->runs[0].stage_latency_ns.erase(kStagePostprocess);
    r->runs[0].throughput_samples_per_s = 0;
    r->runs[0].predict_latency_ns.pop_back();
  }
  EXPECT_EQ(a, b);
}

// A scenario run and a generation run with every part of their outcomes, figures that do not exist among them.
EvaluationRecord outcome_record() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EvaluationRecord r;
  r.created_at = "2026-11-27T00:00:00Z";
  r.model_name = "m";
  r.scenario = "server";
  r.batch_sizes = {1, 2};
  RunRecord scenario;
  ScenarioOutcome o;
  o.scenario = "server";
  o.percentile = 99;
  o.query_count = 600;
  o.sample_count = 600;
  o.duration_ns = 3'000'000'000;
  o.target_latency_ns = 4.5e6;
  o.qps_with_overhead = 199.5;
  o.qps_without_overhead = 200.25;
  o.samples_per_second = 199.5;
  o.mean_issue_delay_ns = 1234.5;
  o.early_stopping_latency_ns = nan;  // too few queries
  o.target_qps = 200;
  o.latency_bound_ns = 5'000'000;
  o.meets_bound = true;
  o.p50_ns = 1.25e6;
  o.p99_ns = 4.75e6;
  o.batches = 600;
  o.batch_p50_ns = 1e6;
  o.tail_traces = TailTraceSelection{
      {{7, 5'000'000, 1, 100.0, "tail", 12}, {3, 1'000'000, 300, 50.1, "median", 4}}, 600, 598, 2000, "kernel"};
  scenario.scenario_result = o;
  r.runs.push_back(scenario);
  RunRecord gen;
  gen.batch_size = 2;
  GenerationOutcome g;
  g.requests = 2;
  g.sequences = 4;
  g.sequences_per_request = 2;
  g.prompt_tokens = {16, 12};
  g.output_tokens = {8, 1};
  g.ttft_ns = summarize({2e6, 3e6, 2.5e6, 3.5e6});
  g.tpot_ns = summarize({1e6, 1.5e6});
  g.itl_ns = summarize({});
  g.output_tokens_per_s = 321.5;
  g.ttft_stability = Verdict::kStable;
  g.ttft_values_ns = {2e6, 3e6, 2.5e6, 3.5e6};
  g.ttft_check = TokenLatencyCheck{4, 99, nan, false, 459, 5e6, false};
  g.tpot_check = TokenLatencyCheck{2, 99, 1.5e6, true, 1, std::nullopt, std::nullopt};
  g.valid = false;
  g.invalid_reason = "TTFT: too few samples";
  g.loadgen = GenerationLoadgenView{"server", 2, 2.5e6, 9e6, 10, 20};
  g.tail = {{"decode", 1, 1, 3, 1.5e6, 100, 42, true}};
  gen.generation = g;
  r.runs.push_back(gen);
  return r;
}

// Schema 9: each workload's typed outcome reads back equal, and its queried figures are columns of their own.
TEST_P(StoreOnBoth, TypedOutcomesRoundTripAndFillTheirColumns) {
  auto store = open("xsp.db");
  EvaluationRecord record = outcome_record();
  store->save(record);
  const auto loaded = store->load(record.id);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, record);
  ASSERT_TRUE(loaded->runs[0].scenario_result.has_value());
  EXPECT_FALSE(loaded->runs[0].generation.has_value());
  EXPECT_TRUE(std::isnan(loaded->runs[0].scenario_result->early_stopping_latency_ns));
  EXPECT_EQ(loaded->runs[0].scenario_result->tail_traces->kept.at(1).kind, "median");
  ASSERT_TRUE(loaded->runs[1].generation.has_value());
  EXPECT_FALSE(loaded->runs[1].scenario_result.has_value());
  EXPECT_FALSE(loaded->runs[1].generation->tpot_check->meets_bound.has_value());
  const std::string run0 = " FROM runs WHERE id = " + std::to_string(record.runs[0].id);
  const std::string run1 = " FROM runs WHERE id = " + std::to_string(record.runs[1].id);
  EXPECT_EQ(std::stod(value("xsp.db", "SELECT qps" + run0).value()), 199.5);
  EXPECT_EQ(std::stod(value("xsp.db", "SELECT latency_p99_ns" + run0).value()), 4.75e6);
  EXPECT_EQ(value("xsp.db", "SELECT meets_bound" + run0), "1");
  EXPECT_EQ(value("xsp.db", "SELECT ttft_p50_ns" + run0), std::nullopt);
  EXPECT_EQ(std::stod(value("xsp.db", "SELECT ttft_p50_ns" + run1).value()), record.runs[1].generation->ttft_ns.p50);
  EXPECT_EQ(std::stod(value("xsp.db", "SELECT tpot_p99_ns" + run1).value()), record.runs[1].generation->tpot_ns.p99);
  EXPECT_EQ(std::stod(value("xsp.db", "SELECT output_tokens_per_s" + run1).value()), 321.5);
  EXPECT_EQ(value("xsp.db", "SELECT meets_bound" + run1), "0");
  EXPECT_EQ(value("xsp.db", "SELECT scenario_result" + run1), std::nullopt);
  EXPECT_EQ(value("xsp.db", "SELECT qps" + run1), std::nullopt);
}

// An outcome column a writer never produces is refused by name on load, not read as a default.
TEST_P(StoreOnBoth, MalformedOutcomeColumnNamesTheKey) {
  auto store = open("xsp.db");
  EvaluationRecord record = outcome_record();
  store->save(record);
  exec("xsp.db",
       "UPDATE runs SET scenario_result = '{\"scenario\": \"server\", \"query_count\": \"many\"}' "
       "WHERE id = " +
           std::to_string(record.runs[0].id));
  try {
    store->load(record.id);
    FAIL() << "a malformed scenario_result loaded";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("scenario_result"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("query_count"), std::string::npos) << e.what();
  }
  // Text that is not JSON names its column once ("generation: not JSON: ...", not "generation: generation: ...").
  exec("xsp.db", "UPDATE runs SET scenario_result = NULL, generation = '{broken' WHERE id = " +
                     std::to_string(record.runs[0].id));
  try {
    store->load(record.id);
    FAIL() << "a generation column that is not JSON loaded";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("generation: not JSON"), std::string::npos) << what;
    EXPECT_EQ(what.find("generation: generation"), std::string::npos) << what;
  }
}

TEST_P(StoreOnBoth, ListIsNewestFirstWithFields) {
  auto store = open("xsp.db");
  EvaluationRecord older = make_record("2026-11-20T10:00:00Z");
  EvaluationRecord newer = make_record("2026-11-21T10:00:00Z");
  newer.model_name = "mobilenet_v2";
  newer.status = "incomplete";
  newer.batch_sizes = {1, 2, 4};
  newer.trace_level = TraceLevel::kModel;
  newer.runs.pop_back();
  store->save(newer);  // saved first but created later: listing follows created_at
  store->save(older);

  const auto listing = store->list();
  ASSERT_EQ(listing.size(), 2u);
  EXPECT_EQ(listing[0].id, newer.id);
  EXPECT_EQ(listing[0].model_name, "mobilenet_v2");
  EXPECT_EQ(listing[0].status, "incomplete");
  EXPECT_EQ(listing[0].created_at, "2026-11-21T10:00:00Z");
  EXPECT_EQ(listing[0].batch_sizes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(listing[0].trace_level, "model");
  EXPECT_EQ(listing[0].run_count, 1u);
  EXPECT_EQ(listing[1].id, older.id);
  EXPECT_EQ(listing[1].model_name, "resnet50");
  EXPECT_EQ(listing[1].model_version, "1.5.0");
  EXPECT_EQ(listing[1].framework_name, "libtorch");
  EXPECT_EQ(listing[1].device, "cpu");
  EXPECT_EQ(listing[1].scenario, "batch-sweep");
  EXPECT_EQ(listing[1].status, "complete");
  EXPECT_EQ(listing[1].trace_level, "framework");
  EXPECT_EQ(listing[1].run_count, 2u);
}

TEST_P(StoreOnBoth, SaveFillsMissingCreatedAt) {
  auto store = open("xsp.db");
  EvaluationRecord record = make_record("");
  store->save(record);
  EXPECT_EQ(record.created_at.size(), std::string("2026-11-21T22:08:00Z").size());
  EXPECT_EQ(store->load(record.id)->created_at, record.created_at);
}

TEST_P(StoreOnBoth, PersistsAcrossConnections) {
  EvaluationRecord record = make_record();
  {
    auto store = open("xsp.db");
    store->save(record);
  }
  auto reopened = open("xsp.db");
  EXPECT_EQ(reopened->schema_version(), 12);
  const auto loaded = reopened->load(record.id);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, record);
  ASSERT_EQ(reopened->list().size(), 1u);

  // Two stores open on the same file at once see each other's writes.
  auto other = open("xsp.db");
  EvaluationRecord second = make_record("2026-12-01T00:00:00Z");
  other->save(second);
  EXPECT_EQ(reopened->list().size(), 2u);
  EXPECT_EQ(reopened->load(second.id), second);
}

TEST_P(StoreOnBoth, PredictionsRoundTripInOrder) {
  auto store = open("xsp.db");
  EvaluationRecord record = make_record();
  ASSERT_EQ(record.runs[1].predictions.size(), 3u);
  store->save(record);
  EXPECT_EQ(rows("xsp.db", "predictions"), 3);
  const auto loaded = store->load(record.id);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(loaded->runs[0].predictions.empty());
  ASSERT_EQ(loaded->runs[1].predictions, record.runs[1].predictions);
  // Bit-exact, including the subnormal.
  EXPECT_EQ(loaded->runs[1].predictions[0].probabilities[1], 1e-40f);
  EXPECT_EQ(loaded->runs[1].predictions[1].input_id, "b \u00b5.jpg");

  // An input id twice in one run violates UNIQUE (run_id, input_id): the whole save is rolled back.
  EvaluationRecord dup = make_record("2026-12-03T00:00:00Z");
  dup.runs[1].predictions.push_back(dup.runs[1].predictions[0]);
  EXPECT_THROW(store->save(dup), StoreError);
  EXPECT_EQ(dup.id, 0);
  EXPECT_EQ(rows("xsp.db", "evaluations"), 1);
  EXPECT_EQ(rows("xsp.db", "predictions"), 3);
}

TEST_P(StoreOnBoth, StabilityMachineStateWarningsAndOverheadsRoundTrip) {
  EvaluationRecord r = make_record();
  RunMeasurement& m = r.runs[0].measurement;
  m.design = "interleaved";
  m.rule = StabilityRule{4, 0.05};
  m.stability = assess_windows({{1.5e6, 1.6e6}, {1.55e6}, {1.7e6, 1.45e6}, {1.52e6}}, m.rule);
  m.warmup_batches = 37;
  m.warmup_ns = 1'234'567'890;
  m.warmup_converged = true;
  m.warmup_block_medians_ns = {3e6, 2e6, 1.6e6};
  m.batches_per_block = 2;
  m.blocks = {{0, 100, 3'000'000, 2, 1.55e6}, {1, 3'100'100, 3'000'000, 2, 1.52e6}};
  m.result_first_block = 1;
  m.measure_ns = 6'000'000;
  m.reached_max_duration = true;
  m.baseline_block_medians_ns["model"] = {1.0e6, 1.1e6};
  // A run with one window: drift and spread do not exist (NaN) and must read back as such.
  r.runs[1].measurement.design = "single";
  r.runs[1].measurement.stability = assess_windows({{2e6, 2.1e6}}, StabilityRule{});
  ASSERT_TRUE(std::isnan(r.runs[1].measurement.stability.drift_fraction));
  r.runs[0].machine_state = {{"start", {{"nvml_status", "loaded"}}}, {"samples", 3}};
  r.runs[0].warnings = {"gpu 0: SM clock changed during the run: 1980 -> 1755 MHz (-11.4%)", "w \u00b5"};
  LevelOverhead o;
  o.batch_size = 1;
  o.level = TraceLevel::kFramework;
  o.baseline = TraceLevel::kModel;
  o.design = "interleaved";
  o.latency_ns = 1.6e6;
  o.baseline_latency_ns = 1.5e6;
  o.overhead = paired_overhead({1.6, 1.7, 1.58}, {1.5, 1.55, 1.5});
  o.note = "note";
  r.level_overheads.push_back(o);
  o.design = "residual";
  o.overhead = paired_overhead({1.6}, {1.5});  // one round: NaN interval
  r.level_overheads.push_back(o);
  auto store = open("v4.db");
  store->save(r);
  EXPECT_EQ(store->load(r.id), r);
  // The figures users query are typed columns (checked here on the SQLite file; PostgreSQL's are declared so).
  if (!postgres()) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(location("v4.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT stability, latency_median_ns, latency_ci95_low_ns, warmup_ns FROM runs "
                                 "ORDER BY id LIMIT 1",
                                 -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                 std::string(to_string(m.stability.verdict)).c_str());
    EXPECT_EQ(sqlite3_column_type(st, 1), SQLITE_FLOAT);
    EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 1), m.stability.median_ns);
    EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 2), m.stability.ci95_ns.low);
    EXPECT_EQ(sqlite3_column_int64(st, 3), 1'234'567'890);
    sqlite3_finalize(st);
    ASSERT_EQ(
        sqlite3_prepare_v2(db, "SELECT significant, design FROM level_overheads ORDER BY position", -1, &st, nullptr),
        SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 1);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  // The database refuses a design no writer should produce, and the save leaves nothing behind.
  EvaluationRecord bad = make_record();
  bad.level_overheads.push_back(o);
  bad.level_overheads.back().design = "guessed";
  EXPECT_THROW(store->save(bad), StoreError);
  EXPECT_EQ(rows("v4.db", "evaluations"), 1);
}

bool is_trace_id(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos && id != std::string(32, '0');
}

// A migrated file gives each old run a fresh random trace id and each evaluation a UUID. Checks them, then copies
// them into `expected` (which was saved before the ids were dropped) so the rest can compare whole records.
void expect_fresh_ids_then_adopt(const EvaluationRecord& loaded, EvaluationRecord& expected) {
  EXPECT_EQ(loaded.uuid.size(), 36u);
  EXPECT_NE(loaded.uuid, expected.uuid);
  ASSERT_EQ(loaded.runs.size(), expected.runs.size());
  std::set<std::string> ids;
  for (std::size_t i = 0; i < loaded.runs.size(); ++i) {
    EXPECT_TRUE(is_trace_id(loaded.runs[i].trace_id)) << loaded.runs[i].trace_id;
    EXPECT_NE(loaded.runs[i].trace_id, expected.runs[i].trace_id);
    ids.insert(loaded.runs[i].trace_id);
    expected.runs[i].trace_id = loaded.runs[i].trace_id;
  }
  EXPECT_EQ(ids.size(), loaded.runs.size());
  expected.uuid = loaded.uuid;
}

// Issue 11: OTLP trace ids must not collide across stores. Every saved run gets a random trace id, every
// evaluation a UUID; two stores' "evaluation 1, run 1" differ; reloading (re-exporting) gives the same ids.
TEST_P(StoreOnBoth, RunsGetRandomTraceIdsThatSurviveReopening) {
  EvaluationRecord a = make_record(), b = make_record();
  std::string first_a;
  {
    auto sa = open("a.db");
    auto sb = open("b.db");
    EXPECT_EQ(sa->save(a), 1);
    EXPECT_EQ(sb->save(b), 1);
  }
  ASSERT_EQ(a.runs.size(), 2u);
  EXPECT_TRUE(is_trace_id(a.runs[0].trace_id));
  EXPECT_NE(a.runs[0].trace_id, a.runs[1].trace_id);
  EXPECT_NE(a.runs[0].trace_id, b.runs[0].trace_id);  // same ids 1/1 in two stores, different traces
  EXPECT_NE(a.uuid, b.uuid);
  EXPECT_EQ(a.uuid[14], '4');  // RFC 4122 version 4
  auto sa = open("a.db");
  const auto back = sa->load(1);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->runs[0].trace_id, a.runs[0].trace_id);
  EXPECT_EQ(back->uuid, a.uuid);
  // A trace id is unique in a store: the database refuses a copy.
  EvaluationRecord copy = make_record();
  copy.runs[0].trace_id = a.runs[0].trace_id;
  EXPECT_THROW(sa->save(copy), StoreError);
  copy.runs[0].trace_id = "not hex";
  EXPECT_THROW(sa->save(copy), StoreError);
}

TEST(Store, MigratesVersion4StoreGivingTraceIds) {
  TempDir dir;
  const fs::path file = dir.path() / "v4.db";
  EvaluationRecord record = make_record();
  strip_task_outputs(record);  // stores before schema 7 had no detections or masks
  {
    auto store = Store::open(file);
    store->save(record);
  }
  exec_sql(file, std::string(kDropVersion5) + "UPDATE schema_version SET version = 4;");
  std::string first;
  {
    auto store = Store::open(file);
    EXPECT_EQ(store->schema_version(), 12);
    const auto loaded = store->load(record.id);
    ASSERT_TRUE(loaded);
    expect_fresh_ids_then_adopt(*loaded, record);
    EXPECT_EQ(*loaded, record);
  }
  auto again = Store::open(file);
  EXPECT_EQ(again->load(record.id), record);  // migrated once: the ids stay
}

TEST(Store, MigratesVersion1StoreToCurrent) {
  TempDir dir;
  const fs::path file = dir.path() / "old.db";
  EvaluationRecord old = make_record();
  for (auto& run : old.runs) run.predictions.clear();  // a version-1 store has no predictions
  {
    auto store = Store::open(file);
    store->save(old);
  }
  // Turn the file back into what version 1 wrote: no predictions or ceilings tables, schema_version 1.
  exec_sql(file, std::string(kDropVersion4) +
                     "DROP TABLE predictions; DROP TABLE ceilings; DROP TABLE machine_ceilings; "
                     "UPDATE schema_version SET version = 1;");
  auto store = Store::open(file);
  EXPECT_EQ(store->schema_version(), 12);
  EXPECT_TRUE(store->list_ceilings().empty());
  EXPECT_EQ(count_rows(file, "predictions"), 0);
  expect_fresh_ids_then_adopt(*store->load(old.id), old);
  EXPECT_EQ(store->load(old.id), old);  // old evaluations read back unchanged, with ids given by the migration
  EvaluationRecord fresh = make_record("2026-12-02T00:00:00Z");
  store->save(fresh);
  EXPECT_EQ(store->load(fresh.id), fresh);
}

TEST(Store, NewerSchemaIsRefused) {
  TempDir dir;
  const fs::path file = dir.path() / "future.db";
  exec_sql(file, "CREATE TABLE schema_version (version INTEGER); INSERT INTO schema_version VALUES (99);");
  try {
    Store::open(file);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("99"), std::string::npos) << what;
    EXPECT_NE(what.find("newer"), std::string::npos) << what;
  }
  // And the file was left alone.
  EXPECT_EQ(count_rows(file, "schema_version"), 1);
}

TEST(Store, UncreatableLocationNamesThePath) {
  TempDir dir;
  const fs::path blocker = dir.path() / "file.txt";
  std::ofstream(blocker) << "not a folder";
  const fs::path file = blocker / "store.db";
  try {
    Store::open(file);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

TEST(Store, NotADatabaseIsAStoreError) {
  TempDir dir;
  const fs::path file = dir.path() / "garbage.db";
  std::ofstream(file) << std::string(4096, 'x');
  try {
    Store::open(file);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("not a database"), std::string::npos) << what;
  }
}

TEST(Store, LockedStoreFailsWithStoreError) {
  TempDir dir;
  const fs::path file = dir.path() / "xsp.db";
  StoreOptions options;
  options.save_wait.max_wait_ms = std::chrono::milliseconds(1000);
  auto store = Store::open(file, StoreAccess::kReadWrite, options);
  // Another connection holds the write lock past the save's maximum wait: save() must fail cleanly (this test
  // therefore takes about 1 s), leave the record unstored, and work once the lock is released.
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &locker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  EvaluationRecord record = make_record();
  try {
    store->save(record);
    ADD_FAILURE() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("save"), std::string::npos) << what;
  }
  sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(locker);
  EXPECT_EQ(record.id, 0);
  store->save(record);  // works again once the lock is gone
  EXPECT_GT(record.id, 0);
}

TEST_P(StoreOnBoth, FailedSaveLeavesNothing) {
  auto store = open("xsp.db");
  EvaluationRecord good = make_record();
  store->save(good);
  ASSERT_EQ(rows("xsp.db", "evaluations"), 1);
  ASSERT_EQ(rows("xsp.db", "runs"), 2);

  // Fails midway: the evaluation row and the first run are written, the second run violates a CHECK.
  EvaluationRecord bad = make_record();
  bad.runs[1].batch_size = 0;
  try {
    store->save(bad);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(shown("xsp.db")), std::string::npos) << what;
    EXPECT_NE(what.find("run 1"), std::string::npos) << what;
    // SQLite says "CHECK constraint failed", PostgreSQL "violates check constraint".
    EXPECT_TRUE(what.find("CHECK") != std::string::npos || what.find("check constraint") != std::string::npos) << what;
  }
  EXPECT_EQ(bad.id, 0);
  EXPECT_EQ(bad.runs[0].id, 0);
  EXPECT_EQ(rows("xsp.db", "evaluations"), 1);
  EXPECT_EQ(rows("xsp.db", "runs"), 2);

  // Fails at the first row: invalid status.
  EvaluationRecord bogus = make_record();
  bogus.status = "bogus";
  EXPECT_THROW(store->save(bogus), StoreError);
  EXPECT_EQ(rows("xsp.db", "evaluations"), 1);
  EXPECT_EQ(rows("xsp.db", "runs"), 2);

  // The connection is still usable after a rolled-back save.
  EvaluationRecord next = make_record();
  store->save(next);
  EXPECT_EQ(rows("xsp.db", "evaluations"), 2);
  EXPECT_EQ(store->load(next.id), next);
}

TEST_P(StoreOnBoth, DeletingAnEvaluationCascadesToRuns) {
  auto store = open("xsp.db");
  EvaluationRecord record = make_record();
  store->save(record);
  exec("xsp.db", std::string(postgres() ? "" : "PRAGMA foreign_keys = ON; ") +
                     "DELETE FROM evaluations WHERE id = " + std::to_string(record.id));
  EXPECT_EQ(rows("xsp.db", "runs"), 0);
}

// ---------------------------------------------------------------------------------------------------------
// Machine ceilings (schema version 3)
// ---------------------------------------------------------------------------------------------------------

MachineCeilings make_ceilings(const std::string& gpu, const std::string& at) {
  MachineCeilings m;
  m.hostname = "node7";
  m.gpu_name = gpu;
  m.gpu_uuid = gpu == "NVIDIA H200" ? "GPU-aaaa" : "";
  m.measured_at = at;
  m.clocks_note = "application clocks 1980/3201 MHz, not changed";
  m.ceilings = {{"fp32", 6.1e13, "flop/s", "ffma, best of 10"},
                {"tensor_fp16", 7.9e14, "flop/s", "cublasGemmEx 8192^3 fp16->fp32"},
                {"tensor_int8", 1.6e15, "op/s", "cublasGemmEx int8"},
                {"dram", 4.3e12, "bytes/s", "d2d copy 4 GiB"},
                {"l1", 3.0000000000000004e13, "bytes/s", "loads"}};
  return m;
}

TEST_P(StoreOnBoth, CeilingsRoundTripAndLatest) {
  auto store = open("xsp.db");
  const MachineCeilings old = make_ceilings("NVIDIA H200", "2026-11-01T00:00:00Z");
  const MachineCeilings recent = make_ceilings("NVIDIA H200", "2026-11-20T00:00:00Z");
  const MachineCeilings h100 = make_ceilings("NVIDIA H100", "2026-12-01T00:00:00Z");
  const std::int64_t id1 = store->save_ceilings(recent);
  const std::int64_t id2 = store->save_ceilings(old);  // inserted later, measured earlier
  store->save_ceilings(h100);
  EXPECT_LT(id1, id2);
  EXPECT_EQ(rows("xsp.db", "machine_ceilings"), 3);
  EXPECT_EQ(rows("xsp.db", "ceilings"), 15);

  const auto all = store->list_ceilings();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], h100);  // newest measured first, values bit-exact, ceilings in order
  EXPECT_EQ(all[1], recent);
  EXPECT_EQ(all[2], old);

  EXPECT_EQ(store->latest_ceilings("node7", "NVIDIA H200"), recent);
  EXPECT_EQ(store->latest_ceilings("node7", "NVIDIA H100"), h100);
  EXPECT_EQ(store->latest_ceilings("other", "NVIDIA H200"), std::nullopt);
  EXPECT_EQ(store->latest_ceilings("renamed-host", "?", "GPU-aaaa"), recent);  // the UUID wins

  // Survives reopening.
  store.reset();
  EXPECT_EQ(open("xsp.db")->list_ceilings().size(), 3u);
}

TEST_P(StoreOnBoth, InvalidCeilingsAreRefusedWhole) {
  auto store = open("xsp.db");
  MachineCeilings bad = make_ceilings("NVIDIA H200", "2026-11-01T00:00:00Z");
  bad.ceilings[2].value = -1;  // CHECK (value > 0)
  try {
    store->save_ceilings(bad);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("ceiling 'tensor_int8'"), std::string::npos) << e.what();
  }
  MachineCeilings twice = make_ceilings("NVIDIA H200", "2026-11-01T00:00:00Z");
  twice.ceilings.push_back(twice.ceilings[0]);  // UNIQUE (machine_ceilings_id, name)
  EXPECT_THROW(store->save_ceilings(twice), StoreError);
  MachineCeilings unit = make_ceilings("NVIDIA H200", "2026-11-01T00:00:00Z");
  unit.ceilings[0].unit = "GFLOPS";
  EXPECT_THROW(store->save_ceilings(unit), StoreError);
  MachineCeilings nameless = make_ceilings("", "2026-11-01T00:00:00Z");
  EXPECT_THROW(store->save_ceilings(nameless), StoreError);
  // Nothing of the failed measurements was kept.
  EXPECT_EQ(rows("xsp.db", "machine_ceilings"), 0);
  EXPECT_EQ(rows("xsp.db", "ceilings"), 0);
  EXPECT_TRUE(store->list_ceilings().empty());
}

TEST(Store, MigratesVersion2StoreToVersion3) {
  TempDir dir;
  const fs::path file = dir.path() / "v2.db";
  EvaluationRecord record = make_record();
  strip_task_outputs(record);  // stores before schema 7 had no detections or masks
  {
    auto store = Store::open(file);
    store->save(record);
  }
  exec_sql(file, std::string(kDropVersion4) +
                     "DROP TABLE ceilings; DROP TABLE machine_ceilings; UPDATE schema_version SET version = 2;");
  auto store = Store::open(file);
  EXPECT_EQ(store->schema_version(), 12);
  expect_fresh_ids_then_adopt(*store->load(record.id), record);
  EXPECT_EQ(store->load(record.id), record);
  const MachineCeilings m = make_ceilings("NVIDIA H200", "2026-11-01T00:00:00Z");
  store->save_ceilings(m);
  EXPECT_EQ(store->list_ceilings(), std::vector<MachineCeilings>{m});
}

TEST(Store, RecordedGpuFixtureMigratesCleanly) {
  // A store written by an older XSP on an H200 (schema version 1): opening migrates it in one transaction and
  // every evaluation still reads back. Work on a copy: opening writes.
  TempDir dir;
  const fs::path file = dir.path() / "fixture.db";
  fs::copy_file(fs::path(XSP_TEST_FIXTURES) / "gpu" / "resnet18_bs1_kernel_h200.db", file);
  auto store = Store::open(file);
  EXPECT_EQ(store->schema_version(), 12);
  const auto e = store->load(1);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->runs.size(), 3u);
  EXPECT_EQ(e->system["host"]["hostname"], "vm");
  // Its v1 traces read into the typed model: kernels on GPU stream tracks, numbers as numbers.
  std::size_t kernels = 0;
  for (const Span& s : e->runs.back().trace.spans) {
    if (s.level != Level::kKernel) continue;
    ++kernels;
    EXPECT_TRUE(s.track.is_device()) << s.name;
    EXPECT_LT(s.track.id, 1ULL << 32) << s.name;
    if (s.tag("kind") == std::optional<std::string_view>("kernel")) {
      EXPECT_EQ(s.find_tag("grid")->as_int_list().size(), 3u) << s.name;
      EXPECT_EQ(s.find_tag("registers_per_thread")->type, TagType::kInt) << s.name;
    }
  }
  EXPECT_EQ(kernels, 222u);
  for (const auto& run : e->runs) EXPECT_TRUE(is_trace_id(run.trace_id));
  // Runs measured before stability was assessed read back as such.
  for (const auto& run : e->runs) {
    EXPECT_EQ(run.measurement.design, "");
    EXPECT_EQ(run.measurement.stability.verdict, Verdict::kNotAssessed);
    EXPECT_TRUE(run.warnings.empty());
  }
  EXPECT_TRUE(e->level_overheads.empty());
  EXPECT_TRUE(store->list_ceilings().empty());
  store->save_ceilings(make_ceilings("NVIDIA H200", "2026-11-21T00:00:00Z"));
  EXPECT_EQ(count_rows(file, "machine_ceilings"), 1);
}
}  // namespace
}  // namespace xsp
