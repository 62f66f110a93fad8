// The registries (issue 13): every analysis table is built from its registry entry (columns in order), every
// column says what it means and in which unit, every default chart names columns the table has and renders as
// Vega-Lite with the rows inlined, and every run statistic a recorded run carries is registered with a severity.
// Issue 30: every analysis entry carries the function run_analyses() calls, once per batch size or once.
// On hand-made CPU records and on copies of the recorded GPU fixtures.
#include "xsp/analysis/registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace_builder.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/compare.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/summary.h"
#include "xsp/stats/stats.h"
#include "xsp/store/store.h"
#include "xsp/trace/run_statistics.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The unit a column name's suffix promises ("" = the name promises none).
std::string unit_of_suffix(const std::string& name) {
  if (name.find("percent") != std::string::npos) return "%";
  if (ends_with(name, "_flops_per_s")) return "FLOP/s";
  if (ends_with(name, "_samples_per_s")) return "samples/s";
  if (ends_with(name, "_ms")) return "ms";
  if (ends_with(name, "_us")) return "us";
  if (ends_with(name, "_ns")) return "ns";
  if (ends_with(name, "_bytes")) return "bytes";
  if (name == "gflops") return "GFLOP";
  if (name.rfind("ai_", 0) == 0 || name == "arithmetic_intensity") return "FLOP/byte";
  return "";
}

// A CPU evaluation: an M run and an M/F run of 5 batches with 3 layers (conv with a module and bytes, relu, fc).
EvaluationRecord cpu_record() {
  testing::TraceBuilder tb;
  const SpanId app = tb.add(Level::kApplication, "evaluation", 0, 1'000'000'000, kNoSpan);
  for (int b = 0; b < 5; ++b) {
    const std::int64_t t0 = 1'000'000 * (b + 1);
    const SpanId pred = tb.add(Level::kModel, "predict", t0, t0 + 1000, app, {{"batch", std::to_string(b)}});
    tb.add(Level::kFramework, "aten::conv2d", t0 + 10, t0 + 410, pred,
           {{"module", "conv"}, {"allocated_bytes", "100"}});
    tb.add(Level::kFramework, "aten::relu", t0 + 420, t0 + 520, pred);
    tb.add(Level::kFramework, "aten::linear", t0 + 530, t0 + 690, pred, {{"module", "fc"}, {"allocated_bytes", "300"}});
  }
  EvaluationRecord e;
  e.batch_sizes = {1, 2};
  e.trace_level = TraceLevel::kFramework;
  e.leveled = true;
  for (int b : {1, 2}) {
    RunRecord m;
    m.batch_size = b;
    m.trace_level = TraceLevel::kModel;
    m.predict_latency_ns = {1e6 * b, 1.1e6 * b, 0.9e6 * b, 1e6 * b, 1e6 * b};
    m.iterations = 5;
    m.stage_latency_ns[kStagePredict] = summarize(m.predict_latency_ns);
    e.runs.push_back(m);
    RunRecord f;
    f.batch_size = b;
    f.trace_level = TraceLevel::kFramework;
    f.iterations = 5;
    f.trace = tb.trace;
    e.runs.push_back(std::move(f));
  }
  return e;
}

EvaluationRecord with_id(EvaluationRecord r, std::int64_t id) {
  r.id = id;
  return r;
}

// Every evaluation of a recorded store, read from a copy (opening a store may migrate it).
std::vector<EvaluationRecord> load_fixture(const std::string& relative) {
  const fs::path copy = fs::temp_directory_path() /
                        ("xsp-registry-" + std::to_string(::getpid()) + "-" + fs::path(relative).filename().string());
  fs::copy_file(fs::path(XSP_TEST_FIXTURES) / relative, copy, fs::copy_options::overwrite_existing);
  std::vector<EvaluationRecord> out;
  {
    auto store = Store::open(copy);
    for (const auto& l : store->list()) out.push_back(*store->load(l.id));
  }
  fs::remove(copy);
  return out;
}

std::vector<std::string> names(const std::vector<Column>& columns) {
  std::vector<std::string> out;
  for (const Column& c : columns) out.push_back(c.name);
  return out;
}
std::vector<std::string> names(const std::vector<ColumnSpec>& columns) {
  std::vector<std::string> out;
  for (const ColumnSpec& c : columns) out.push_back(c.name);
  return out;
}

// Every "field" a Vega-Lite spec reads, apart from the fold's own outputs.
void collect_fields(const nlohmann::json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "field" && it->is_string()) out.insert(it->get<std::string>());
      if (it.key() == "fold" && it->is_array())
        for (const auto& f : *it) out.insert(f.get<std::string>());
      collect_fields(*it, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_fields(v, out);
  }
}

// A table's columns are its registry entry's, in order, with the entry's titles and bar; its chart (when it has
// rows and its analysis a chart) reads only its columns and inlines every row.
void check_table(const Table& t) {
  SCOPED_TRACE(t.id + " " + t.title);
  const AnalysisSpec* spec = spec_of(t);
  ASSERT_NE(spec, nullptr) << "table not built from the registry";
  EXPECT_EQ(t.id, spec->id);
  EXPECT_EQ(t.title.rfind(spec->title, 0), 0u);
  EXPECT_EQ(names(t.columns), names(spec->columns));
  for (std::size_t i = 0; i < t.columns.size() && i < spec->columns.size(); ++i) {
    // compare.A1.significance puts the comparison's confidence level and alpha into three titles.
    if (t.id != "compare.A1.significance") EXPECT_EQ(t.columns[i].title, spec->columns[i].title);
    EXPECT_EQ(t.columns[i].in_text, spec->columns[i].in_text);
    EXPECT_EQ(t.columns[i].symbol, spec->columns[i].symbol);
  }
  EXPECT_EQ(t.bar_column, spec->bar_column);
  EXPECT_EQ(t.batch_size.has_value(), spec->per_batch_size);
  for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.columns.size());

  const nlohmann::json chart = vega_lite_chart(t);
  if (t.rows.empty() || spec->chart.kind == ChartKind::kNone) {
    EXPECT_TRUE(chart.is_null());
    return;
  }
  ASSERT_TRUE(chart.is_object());
  EXPECT_EQ(chart["$schema"], "https://vega.github.io/schema/vega-lite/v5.json");
  // Labelled bars draw one bar per named layer (rows sharing a name summed), at most top_n + 1.
  const bool labelled = !spec->chart.label.empty() || spec->chart.top_n > 0;
  if (labelled)
    EXPECT_LE(chart["data"]["values"].size(), std::min(t.rows.size(), spec->chart.top_n + 1));
  else
    ASSERT_EQ(chart["data"]["values"].size(), t.rows.size());
  for (const auto& [key, value] : chart["data"]["values"][0].items())
    if (key != "bar") EXPECT_GE(column_index(t, key), 0) << "data value " << key;
  std::set<std::string> fields;
  collect_fields(chart, fields);
  fields.erase("series");  // the fold's outputs
  fields.erase("value");
  fields.erase("bar");  // a labelled bar's name
  EXPECT_FALSE(fields.empty());
  for (const std::string& f : fields) EXPECT_GE(column_index(t, f), 0) << "chart field " << f;
}

// ---------------------------------------------------------------------------------------------------------

TEST(AnalysisRegistry, OneEntryPerAnalysisIdInOrder) {
  std::vector<std::string> ids;
  for (const AnalysisSpec& s : analysis_registry()) ids.push_back(s.id);
  EXPECT_EQ(ids, analysis_ids());
  std::set<std::string> keys;
  for (const AnalysisSpec& s : table_registry()) EXPECT_TRUE(keys.insert(s.key).second) << "duplicate key " << s.key;
  EXPECT_EQ(table_spec("launch-top").id, "launch-stats");
  EXPECT_EQ(table_spec("summary.runs").id, "summary.runs");
}

TEST(AnalysisRegistry, EveryColumnHasAMeaningAndTheUnitItsNamePromises) {
  for (const AnalysisSpec& s : table_registry()) {
    SCOPED_TRACE(s.key);
    EXPECT_FALSE(s.title.empty());
    EXPECT_FALSE(s.meaning.empty());
    // Only the comparison tables of stored metadata and predictions read no span level.
    if (s.key.rfind("compare.", 0) != 0) EXPECT_FALSE(s.levels.empty());
    std::set<std::string> seen;
    for (const ColumnSpec& c : s.columns) {
      EXPECT_TRUE(seen.insert(c.name).second) << "duplicate column " << c.name;
      EXPECT_FALSE(c.meaning.empty()) << c.name;
      const std::string promised = unit_of_suffix(c.name);
      if (!promised.empty()) EXPECT_EQ(c.unit, promised) << c.name;
    }
    if (s.bar_column >= 0) {
      ASSERT_LT(static_cast<std::size_t>(s.bar_column), s.columns.size());
      EXPECT_FALSE(s.columns[s.bar_column].unit.empty()) << "bar on a column without a unit";
    }
    const ChartSpec& c = s.chart;
    for (const std::string& f : {c.x, c.y, c.color, c.y2})
      if (!f.empty()) EXPECT_NO_THROW(s.column_index(f)) << f;
    for (const std::string& f : c.series) EXPECT_NO_THROW(s.column_index(f)) << f;
  }
  // The SPEC §4 charts.
  EXPECT_EQ(analysis_spec("A1").chart.kind, ChartKind::kLine);
  EXPECT_EQ(analysis_spec("A1").chart.y2, "throughput_samples_per_s");
  EXPECT_EQ(analysis_spec("A3").chart.kind, ChartKind::kBar);
  EXPECT_EQ(analysis_spec("A5").chart.kind, ChartKind::kBar);   // sorted bars: a pie hides small differences
  EXPECT_EQ(analysis_spec("A2").chart.kind, ChartKind::kNone);  // A3 draws the same latencies
  EXPECT_EQ(analysis_spec("A3").chart.label, "layer_name");
  EXPECT_EQ(analysis_spec("A9").chart.kind, ChartKind::kRoofline);
  EXPECT_TRUE(analysis_spec("A14").chart.log_x && analysis_spec("A14").chart.log_y);
  EXPECT_EQ(analysis_spec("A13").chart.kind, ChartKind::kStackedBar);
  EXPECT_EQ(analysis_spec("gpu-idle").chart.kind, ChartKind::kStackedBar);
}

TEST(AnalysisRegistry, LookupIsCaseInsensitiveAndNamesTheValidIds) {
  EXPECT_EQ(analysis_spec("a9").id, "A9");
  EXPECT_EQ(analysis_spec("GPU-Idle").id, "gpu-idle");
  try {
    analysis_spec("A99");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'A99'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("launch-stats"), std::string::npos) << msg;
  }
  EXPECT_THROW(table_spec("nope"), std::invalid_argument);
}

TEST(AnalysisRegistry, EmptyTableAndRowBuilderWorkByName) {
  Table t = empty_table(analysis_spec("A3"), 4);
  EXPECT_EQ(t.title, "Layer latency by index (batch size 4)");
  EXPECT_EQ(t.batch_size, 4);
  EXPECT_EQ(t.columns[static_cast<std::size_t>(t.bar_column)].name, "latency_ms");
  RowBuilder row(t);
  row.set("latency_ms", 2.5).set("layer_index", std::int64_t{7});
  t.rows.push_back(row.take());
  EXPECT_EQ(std::get<double>(cell(t, t.rows[0], "latency_ms")), 2.5);
  EXPECT_EQ(std::get<std::int64_t>(cell(t, t.rows[0], "layer_index")), 7);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(t, t.rows[0], "layer_name")));
  EXPECT_THROW(row.set("latency_us", 1.0), std::logic_error);
  EXPECT_THROW(cell(t, t.rows[0], "nope"), std::logic_error);
}

TEST(AnalysisRegistry, CpuRecordTablesHaveTheRegistryColumns) {
  const EvaluationRecord record = cpu_record();
  const std::vector<Table> tables = run_analyses(record, analysis_ids(), std::nullopt);
  // A1 once, A2–A7, ops and the per-batch GPU analyses per batch size (2), A15 and gpu-idle once, launch-stats
  // once (no kernel run: no top-delay tables), G1 and G3 once, G2, G4 and G5 per batch size (not a generation
  // evaluation: no rows), serving-tail once (not a serving evaluation: no rows).
  EXPECT_EQ(tables.size(), 1u + 7 * 2 + 8 * 2 + 3 + 2 + 3 * 2 + 1);
  for (const Table& t : tables) check_table(t);
  for (const Table& t : evaluation_summary(record)) check_table(t);

  const Table& a1 = tables.front();
  ASSERT_EQ(a1.id, "A1");
  ASSERT_EQ(a1.rows.size(), 2u);
  const nlohmann::json chart = vega_lite_chart(a1);
  ASSERT_EQ(chart["layer"].size(), 2u);  // latency and throughput, each on its own axis
  EXPECT_EQ(chart["resolve"]["scale"]["y"], "independent");
  EXPECT_EQ(chart["layer"][1]["encoding"]["y"]["field"], "throughput_samples_per_s");
  EXPECT_EQ(chart["layer"][1]["encoding"]["y"]["title"], "throughput (samples/s)");
  // The latency line and, on the same axis, the median's 95% interval as an error bar per batch size; batch
  // sizes on an ordinal axis, and a legend naming both lines.
  const auto& latency = chart["layer"][0];
  ASSERT_EQ(latency["layer"].size(), 2u);
  EXPECT_EQ(latency["layer"][0]["encoding"]["y"]["title"], "latency (ms, trimmed mean)");
  EXPECT_EQ(latency["layer"][0]["encoding"]["x"]["type"], "ordinal");
  EXPECT_EQ(latency["layer"][0]["encoding"]["color"]["datum"], "latency (ms, trimmed mean)");
  EXPECT_EQ(chart["layer"][1]["encoding"]["color"]["datum"], "throughput (samples/s)");
  EXPECT_EQ(latency["layer"][1]["mark"]["type"], "errorbar");
  EXPECT_EQ(latency["layer"][1]["encoding"]["y"]["field"], "ci95_low_ms");
  EXPECT_EQ(latency["layer"][1]["encoding"]["y2"]["field"], "ci95_high_ms");
  EXPECT_EQ(chart["data"]["values"][1]["batch_size"], 2);
  EXPECT_DOUBLE_EQ(chart["data"]["values"][1]["throughput_samples_per_s"].get<double>(),
                   std::get<double>(cell(a1, a1.rows[1], "throughput_samples_per_s")));

  // The comparison tables with fixed columns are registry tables too.
  EvaluationRecord other = record;
  other.id = 2;
  std::size_t compared = 0;
  for (const Table& t : compare_evaluations({with_id(record, 1), other}, CompareOptions{})) {
    const AnalysisSpec* spec = spec_of(t);
    if (spec == nullptr || spec->id != t.id) continue;  // compare.A1 (columns per evaluation), compare.A6.e<id>
    ++compared;
    check_table(t);
  }
  EXPECT_EQ(compared, 4u);  // evaluations, A1 significance, A6 totals, predictions (empty: none stored)

  const Table* a5 = nullptr;
  for (const Table& t : tables)
    if (t.id == "A5") a5 = &t;
  ASSERT_NE(a5, nullptr);
  const nlohmann::json bars = vega_lite_chart(*a5);  // horizontal bars named by type, largest on top
  EXPECT_EQ(bars["mark"]["type"], "bar");
  EXPECT_EQ(bars["encoding"]["x"]["field"], "count");
  EXPECT_EQ(bars["encoding"]["y"]["field"], "layer_type");
  EXPECT_EQ(bars["encoding"]["y"]["sort"], "-x");
  EXPECT_EQ(bars["data"]["values"].size(), 3u);  // conv2d, linear, relu
}

// A3's bars carry the layers' names, largest first, the 20 largest and the rest summed into one.
TEST(AnalysisRegistry, LayerBarsAreNamedSortedAndTheRestGrouped) {
  const AnalysisSpec& spec = analysis_spec("A3");
  Table t = empty_table(spec, 1);
  double total = 0;
  for (int i = 0; i < 25; ++i) {
    RowBuilder row(t);
    const double ms = 1.0 + (i * 7) % 25;  // 25 distinct values 1..25, not in order
    total += ms;
    row.set("layer_index", std::int64_t{i}).set("layer_name", "conv" + std::to_string(i)).set("latency_ms", ms);
    t.rows.push_back(row.take());
  }
  const nlohmann::json chart = vega_lite_chart(t);
  const auto& values = chart["data"]["values"];
  ASSERT_EQ(values.size(), 21u);
  EXPECT_EQ(chart["encoding"]["y"]["field"], "bar");
  EXPECT_EQ(chart["encoding"]["x"]["field"], "latency_ms");
  EXPECT_EQ(values[0]["bar"], "7 conv7");  // 1 + (7 * 7) % 25 = 25 ms, the largest
  EXPECT_DOUBLE_EQ(values[0]["latency_ms"].get<double>(), 25.0);
  EXPECT_EQ(values[20]["bar"], "other (5)");
  EXPECT_DOUBLE_EQ(values[20]["latency_ms"].get<double>(), 1 + 2 + 3 + 4 + 5);
  double sum = 0;
  for (const auto& v : values) sum += v["latency_ms"].get<double>();
  EXPECT_DOUBLE_EQ(sum, total);
  for (std::size_t i = 1; i + 1 < values.size(); ++i)
    EXPECT_GE(values[i - 1]["latency_ms"].get<double>(), values[i]["latency_ms"].get<double>());
}

TEST(AnalysisRegistry, GpuFixtureTablesHaveTheRegistryColumnsAndCharts) {
  const auto records = load_fixture("gpu/resnet18_bs1_kernel_h200.db");
  ASSERT_FALSE(records.empty());
  std::size_t charts = 0, rooflines = 0;
  for (const EvaluationRecord& record : records) {
    const std::vector<Table> tables = run_analyses(record, analysis_ids(), std::nullopt);
    for (const Table& t : tables) {
      check_table(t);
      const nlohmann::json chart = vega_lite_chart(t);
      charts += chart.is_object();
      if (chart.is_object() && (t.id == "A9" || t.id == "A14")) {
        ++rooflines;
        EXPECT_EQ(chart["layer"][0]["encoding"]["x"]["scale"]["type"], "log");
        EXPECT_EQ(chart["layer"][0]["encoding"]["y"]["scale"]["type"], "log");
        EXPECT_EQ(chart["layer"][0]["encoding"]["x"]["title"], "AI DRAM (FLOP/byte)");
      }
    }
    for (const Table& t : evaluation_summary(record)) check_table(t);
  }
  EXPECT_GT(charts, 5u);  // the fixture has a kernel run: A8, A10, A11, A13, gpu-idle... have rows
  (void)rooflines;        // rooflines need a counter run, which this fixture may lack
}

TEST(AnalysisRegistry, ChartIsNullWithoutRowsOrOutsideTheRegistry) {
  EXPECT_TRUE(vega_lite_chart(empty_table(analysis_spec("A1"))).is_null());
  Table foreign;
  foreign.id = "compare.A1";
  foreign.columns = {{"batch_size"}};
  foreign.rows = {{Cell{std::int64_t{1}}}};
  EXPECT_TRUE(vega_lite_chart(foreign).is_null());
}

TEST(AnalysisRegistry, DescribeListsEveryColumnWithUnitAndMeaning) {
  const std::string text = describe_registry();
  for (const AnalysisSpec& s : table_registry()) EXPECT_NE(text.find(s.key), std::string::npos) << s.key;
  EXPECT_NE(text.find("ai_dram"), std::string::npos);
  EXPECT_NE(text.find("FLOP/byte"), std::string::npos);
  const auto j = to_json(analysis_spec("A9"));
  EXPECT_EQ(j["chart"]["kind"], "roofline");
  EXPECT_EQ(j["bar_column"], "percent_of_roofline");
  EXPECT_EQ(j["columns"].size(), analysis_spec("A9").columns.size());
}

// ---------------------------------------------------------------------------------------------------------
// The registry runs the analyses (issue 30): each entry carries its function; run_analyses() only iterates it.

TEST(AnalysisRegistry, EveryAnalysisIsListedOnceWithOneFunctionOfItsKind) {
  std::set<std::string> seen;
  for (const AnalysisSpec& s : analysis_registry()) {
    SCOPED_TRACE(s.id);
    EXPECT_TRUE(seen.insert(s.id).second) << "listed twice";
    EXPECT_EQ(std::count(analysis_ids().begin(), analysis_ids().end(), s.id), 1);
    EXPECT_TRUE(static_cast<bool>(s.function));
    // A per-batch analysis has only the per-batch function, the others only the one over all batch sizes.
    EXPECT_EQ(s.function.per_batch != nullptr, s.per_batch_size);
    EXPECT_EQ(s.function.over_batches != nullptr, !s.per_batch_size);
    EXPECT_NE(s.family, AnalysisFamily::kNone);
    EXPECT_EQ(&analysis_spec(s.id), &s);
  }
  EXPECT_EQ(seen.size(), analysis_ids().size());
  // The further tables are not analyses: nothing to run, no family, never a default.
  for (const AnalysisSpec& s : table_registry()) {
    if (seen.count(s.key) != 0) continue;
    SCOPED_TRACE(s.key);
    EXPECT_FALSE(static_cast<bool>(s.function));
    EXPECT_EQ(s.family, AnalysisFamily::kNone);
    EXPECT_EQ(s.default_for, DefaultFor::kNone);
  }
  // The id lists are views of the registry, by family.
  std::vector<std::string> gpu, generation;
  for (const AnalysisSpec& s : analysis_registry()) {
    if (s.family == AnalysisFamily::kGpu) gpu.push_back(s.id);
    if (s.family == AnalysisFamily::kGeneration) generation.push_back(s.id);
  }
  EXPECT_EQ(gpu_analysis_ids(), gpu);
  EXPECT_EQ(generation_analysis_ids(), generation);
  EXPECT_EQ(generation, (std::vector<std::string>{"G1", "G2", "G3", "G4", "G5"}));
}

// What a test analysis saw: the batch sizes it was called with, in order.
std::vector<int> g_per_batch_calls;
int g_over_batches_calls = 0;

Table per_batch_probe(AnalysisContext& c, int batch_size) {
  g_per_batch_calls.push_back(batch_size);
  return empty_table(analysis_spec("A3"), batch_size);
}
std::vector<Table> over_batches_probe(AnalysisContext& c) {
  ++g_over_batches_calls;
  return {empty_table(analysis_spec("A1")), empty_table(analysis_spec("A1"))};
}

TEST(AnalysisRegistry, RunAnalysisCallsTheSpecsFunction) {
  const EvaluationRecord record = cpu_record();
  AnalysisSpec probe = analysis_spec("A3");
  probe.function = {per_batch_probe, nullptr};
  g_per_batch_calls.clear();
  {
    AnalysisContext context(record, AnalysisOptions{});
    const std::vector<Table> tables = run_analysis(probe, context);
    EXPECT_EQ(g_per_batch_calls, (std::vector<int>{1, 2}));  // once per batch size, ascending
    ASSERT_EQ(tables.size(), 2u);
    EXPECT_EQ(tables[1].batch_size, 2);
  }
  AnalysisOptions only2;
  only2.batch_size = 2;
  {
    g_per_batch_calls.clear();
    AnalysisContext context(record, only2);
    EXPECT_EQ(run_analysis(probe, context).size(), 1u);
    EXPECT_EQ(g_per_batch_calls, (std::vector<int>{2}));
  }
  probe.function = {nullptr, over_batches_probe};
  g_over_batches_calls = 0;
  AnalysisContext context(record, AnalysisOptions{});
  EXPECT_EQ(run_analysis(probe, context).size(), 2u);  // whatever it returns, called once
  EXPECT_EQ(g_over_batches_calls, 1);
  // A further table has nothing to run.
  EXPECT_THROW(run_analysis(table_spec("launch-top"), context), std::invalid_argument);
}

TEST(AnalysisRegistry, RunAnalysesGivesWhatEachSpecsFunctionGives) {
  const EvaluationRecord record = cpu_record();
  for (const std::string& id : analysis_ids()) {
    SCOPED_TRACE(id);
    const AnalysisSpec& spec = analysis_spec(id);
    std::vector<Table> direct;
    AnalysisContext context(record, AnalysisOptions{});
    if (spec.per_batch_size) {
      for (int b : context.batch_sizes()) direct.push_back(spec.function.per_batch(context, b));
    } else {
      direct = spec.function.over_batches(context);
    }
    const std::vector<Table> ran = run_analyses(record, {id}, std::nullopt);
    ASSERT_EQ(ran.size(), direct.size());
    for (std::size_t i = 0; i < ran.size(); ++i) EXPECT_EQ(to_json(ran[i]).dump(), to_json(direct[i]).dump());
  }
}

TEST(AnalysisRegistry, PerBatchAnalysesGiveOneTablePerBatchSize) {
  const EvaluationRecord record = cpu_record();  // batch sizes 1 and 2, no kernel run
  AnalysisOptions only1;
  only1.batch_size = 1;
  for (const AnalysisSpec& spec : analysis_registry()) {
    SCOPED_TRACE(spec.id);
    const std::vector<Table> all = run_analyses(record, {spec.id}, std::nullopt);
    const std::vector<Table> one = run_analyses(record, {spec.id}, only1);
    if (spec.per_batch_size) {
      ASSERT_EQ(all.size(), 2u);
      EXPECT_EQ(all[0].batch_size, 1);
      EXPECT_EQ(all[1].batch_size, 2);
      EXPECT_EQ(all[1].title, spec.title + " (batch size 2)");
      ASSERT_EQ(one.size(), 1u);
      EXPECT_EQ(one[0].batch_size, 1);
    } else {
      ASSERT_EQ(all.size(), 1u);  // launch-stats adds top-10 tables only for batch sizes with a kernel run
      EXPECT_FALSE(all[0].batch_size.has_value());
      EXPECT_EQ(all[0].title, spec.title);
      EXPECT_EQ(one.size(), 1u);
    }
    for (const Table& t : all) EXPECT_EQ(t.spec, spec.key);
  }
}

TEST(AnalysisRegistry, DefaultsFollowEachEntrysDefaultFor) {
  const EvaluationRecord record = cpu_record();
  std::vector<std::string> want;
  for (const AnalysisSpec& s : analysis_registry())
    if (s.default_for == DefaultFor::kEvery || s.default_for == DefaultFor::kInference) want.push_back(s.id);
  EXPECT_EQ(default_analysis_ids(record), want);
  EXPECT_EQ(analysis_spec("A1").default_for, DefaultFor::kEvery);
  EXPECT_EQ(analysis_spec("A8").default_for, DefaultFor::kNone);
  EXPECT_EQ(analysis_spec("G1").default_for, DefaultFor::kGeneration);
}

TEST(AnalysisRegistry, ContextAggregatesEachRunOnceAndChecksTheBatchSize) {
  const EvaluationRecord record = cpu_record();
  AnalysisContext context(record, AnalysisOptions{});
  EXPECT_EQ(context.batch_sizes(), (std::vector<int>{1, 2}));
  const FrameworkLayers& layers = context.layers(1);
  EXPECT_EQ(&context.layers(1), &layers);
  ASSERT_NE(layers.run, nullptr);
  EXPECT_EQ(layers.stats.layers.size(), 3u);
  EXPECT_EQ(&context.gpu(), &context.gpu());
  // A batch size without an M/F run: no run, empty stats, the note A2–A7 show.
  const FrameworkLayers none = framework_layers(record, 7);
  EXPECT_EQ(none.run, nullptr);
  EXPECT_TRUE(none.stats.layers.empty());
  EXPECT_EQ(none.note, kNoFrameworkRun);

  AnalysisOptions unmeasured;
  unmeasured.batch_size = 3;
  try {
    AnalysisContext bad(record, unmeasured);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "batch size 3 was not measured in this evaluation; measured: 1 2");
  }
  // run_analyses() checks every id before the batch size, and runs nothing then.
  try {
    run_analyses(record, {"A2", "nope"}, 3);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown analysis id 'nope'"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------------

TEST(RunStatistics, RegistryHasUniqueKeysAndMeanings) {
  std::set<std::string> keys;
  for (const RunStatisticSpec& s : run_statistics_registry()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_FALSE(s.meaning.empty()) << s.key;
    EXPECT_EQ(s.unit == "ns", ends_with(s.key, "_ns")) << s.key;
  }
  EXPECT_EQ(run_statistic(stat::kCuptiDroppedRecords).severity, Severity::kDataLoss);
  EXPECT_EQ(run_statistic(stat::kTraceUntracedBatches).severity, Severity::kInfo);
  EXPECT_EQ(run_statistic(stat::kAssemblerNegativeDuration).severity, Severity::kError);
  EXPECT_THROW(run_statistic("cupti.no_such_thing"), std::invalid_argument);
}

TEST(RunStatistics, DescribedMostSevereFirstAndNothingHidden) {
  const std::map<std::string, std::uint64_t> counters = {{stat::kCuptiRecords, 10},
                                                         {stat::kCuptiDroppedRecords, 3},
                                                         {stat::kAssemblerNegativeDuration, 1},
                                                         {stat::kFrameworkDroppedSpans, 0},
                                                         {"vendor.unknown", 2}};
  const auto lines = describe_run_statistics(counters);
  ASSERT_EQ(lines.size(), 4u);  // zero values are left out
  EXPECT_EQ(lines[0].rfind("ERROR assembler.negative_duration = 1: ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("DATA LOSS cupti.dropped_records = 3: ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], "unregistered vendor.unknown = 2");
  EXPECT_EQ(lines[3].rfind("info cupti.records = 10: ", 0), 0u) << lines[3];
}

TEST(RunStatistics, EveryStatisticOfTheRecordedFixturesIsRegistered) {
  std::size_t seen = 0;
  for (const char* fixture : {"gpu/resnet18_bs1_kernel_h200.db", "stability/zoo_kernel_leveled_h100.db"}) {
    for (const EvaluationRecord& record : load_fixture(fixture))
      for (const RunRecord& run : record.runs)
        for (const auto& [key, value] : run.trace.counters) {
          ++seen;
          EXPECT_NE(find_run_statistic(key), nullptr) << fixture << ": " << key << " = " << value;
        }
  }
  EXPECT_GT(seen, 0u);
}

// Writers name statistics through the stat:: constants: no string literal may be counted directly, so a new
// statistic cannot bypass the registry. Scans every source that records counters.
TEST(RunStatistics, SourcesWriteNoLiteralStatisticKeys) {
  const std::regex literal_write(R"((count\(\s*"|counters\[\s*"|counters\.try_emplace\(\s*"))");
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(XSP_SOURCE_DIR) / "src")) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h" && ext != ".cu") continue;
    ++files;
    std::ifstream in(entry.path());
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      const auto comment = line.find("//");
      const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
      // serialize.cc's reader counts list lengths with r.count("what", min): not a statistic.
      if (code.find("r.count(") != std::string::npos) continue;
      EXPECT_FALSE(std::regex_search(code, literal_write)) << entry.path() << ":" << n << ": " << line;
    }
  }
  EXPECT_GT(files, 50u);
}

}  // namespace
}  // namespace xsp
