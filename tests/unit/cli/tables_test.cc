// What `xsp analyze` and `xsp show` print (issue 11): per-batch-size tables as one table with a batch_size column
// in CSV and JSON; terminal tables with short kernel names (full ones in CSV); `show`'s settings readable and its
// span counts adding up; `--help` with "Needs:" and "Excludes:" on lines of their own. In-process, on a fake
// framework (its own name, so that it does not meet cli_test.cc's) and on copies of the recorded GPU fixtures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cli_harness.h"
#include "xsp/analysis/table.h"
#include "xsp/manifest/manifest.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  // The values checked here hold no quotes; a quoted field would need a real CSV reader.
  EXPECT_EQ(line.find('"'), std::string::npos) << line;
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Terminal columns of a UTF-8 line (one per code point, as the table renderer counts).
std::size_t width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

class Tables : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("tables-fake", "tables_model"); }

  // A copy of a recorded fixture (opening a store migrates it: never the committed file).
  std::string fixture_copy(const std::string& relative) {
    const fs::path copy = dir_ / fs::path(relative).filename();
    fs::copy_file(fs::path(XSP_TEST_FIXTURES) / relative, copy, fs::copy_options::overwrite_existing);
    return copy.string();
  }
};

constexpr const char* kKernelFixture = "gpu/resnet18_bs1_kernel_h200.db";

TEST_F(Tables, PerBatchTablesAreOneTableWithABatchSizeColumnInCsvAndJson) {
  const std::string db = (dir_ / "b.db").string();
  ASSERT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "--store", db, "evaluate", "tables_model", "--framework",
                 "tables-fake", "--batch-sizes", "1,2,4", "--trace-level", "framework", "--leveled", "--synthetic",
                 "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"}),
            0)
      << err_;

  ASSERT_EQ(xsp({"--store", db, "analyze", "1", "--analysis", "A6", "--format", "csv"}), 0) << err_;
  const auto lines = lines_of(out_);
  ASSERT_FALSE(lines.empty());
  const std::string header = "batch_size,layer_type,latency_ms,percent";
  EXPECT_EQ(lines[0], header);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), header), 1) << out_;
  std::multiset<std::string> batch_sizes;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = split_csv_line(lines[i]);
    ASSERT_EQ(fields.size(), 4u) << lines[i];
    batch_sizes.insert(fields[0]);
    EXPECT_EQ(fields[1], "fake::op") << lines[i];
    EXPECT_EQ(fields[2], "0") << lines[i];  // the fake op is a point in time
    EXPECT_EQ(fields[3], "") << lines[i];   // no percentage of a zero total
  }
  // The fake framework records one op per batch: one row per batch size.
  EXPECT_EQ(batch_sizes, (std::multiset<std::string>{"1", "2", "4"})) << out_;

  ASSERT_EQ(xsp({"--store", db, "analyze", "1", "--analysis", "A2,A6", "--format", "json"}), 0) << err_;
  const auto tables = nlohmann::json::parse(out_);
  ASSERT_EQ(tables.size(), 2u) << out_;  // one table per analysis, not one per batch size
  for (const auto& t : tables) {
    EXPECT_EQ(t["columns"][0], "batch_size") << t["id"];
    EXPECT_EQ(t["title"].get<std::string>().find("batch size"), std::string::npos) << t["title"];
    std::multiset<int> seen;
    for (const auto& row : t["rows"]) {
      ASSERT_TRUE(row.is_object()) << row;
      seen.insert(row.at("batch_size").get<int>());
    }
    EXPECT_EQ(seen, (std::multiset<int>{1, 2, 4})) << t;
  }
  EXPECT_EQ(tables[1]["id"], "A6");
  EXPECT_EQ(tables[1]["rows"][2]["layer_type"], "fake::op");
  EXPECT_EQ(tables[1]["rows"][2]["latency_ms"], 0.0);
  EXPECT_TRUE(tables[1]["rows"][2]["percent"].is_null());

  // The terminal keeps a section per batch size.
  ASSERT_EQ(xsp({"--store", db, "analyze", "1", "--analysis", "A6"}), 0) << err_;
  for (const char* title : {"A6 — Layer latency by type (batch size 1)", "A6 — Layer latency by type (batch size 2)",
                            "A6 — Layer latency by type (batch size 4)"})
    EXPECT_NE(out_.find(title), std::string::npos) << title << "\n" << out_;
}

TEST_F(Tables, MergingKeepsCommonNotesOnceAndNamesTheBatchOfTheOthers) {
  Table a;
  a.id = "A8";
  a.title = "Kernel information (batch size 1)";
  a.batch_size = 1;
  a.columns = {{"kernel_name", "kernel"}, {"latency_ms", "ms"}};
  a.bar_column = 1;
  a.rows = {{Cell{std::string("k1")}, Cell{1.5}}};
  a.notes = {"from the M/F/K run", "2 kernels without launch"};
  Table b = a;
  b.title = "Kernel information (batch size 8)";
  b.batch_size = 8;
  b.rows = {{Cell{std::string("k2")}, Cell{2.5}}, {Cell{std::string("k3")}, Cell{}}};
  b.notes = {"from the M/F/K run"};
  Table across;
  across.id = "A15";
  across.title = "Kernels by model";
  const auto merged = merge_batch_tables({a, across, b});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].title, "Kernel information");
  EXPECT_EQ(merged[1].id, "A15");
  ASSERT_EQ(merged[0].columns.size(), 3u);
  EXPECT_EQ(merged[0].columns[0].name, "batch_size");
  EXPECT_EQ(merged[0].bar_column, 2);
  ASSERT_EQ(merged[0].rows.size(), 3u);
  EXPECT_EQ(merged[0].rows[2][0], Cell{std::int64_t{8}});
  EXPECT_EQ(merged[0].rows[2][1], Cell{std::string("k3")});
  EXPECT_EQ(merged[0].notes,
            (std::vector<std::string>{"from the M/F/K run", "batch size 1: 2 kernels without launch"}));
  EXPECT_EQ(render_csv(merged[0]), "batch_size,kernel_name,latency_ms\n1,k1,1.5\n8,k2,2.5\n8,k3,\n");
  const auto j = to_json(merged[0]);
  EXPECT_EQ(j["rows"][2].dump(), R"({"batch_size":8,"kernel_name":"k3","latency_ms":null})");
}

TEST_F(Tables, ShortSymbolDropsTemplateArgumentsParametersAndReturnType) {
  EXPECT_EQ(short_symbol("void at::native::foo<float, 4>(int, float*)"), "at::native::foo<…>(…)");
  EXPECT_EQ(short_symbol("void at::native::(anonymous namespace)::k<std::array<char*, 2>>(int)"),
            "at::native::(anonymous namespace)::k<…>(…)");
  EXPECT_EQ(short_symbol("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"),
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32");
  EXPECT_EQ(short_symbol("Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(short_symbol("cutlass::Kernel<>()"), "cutlass::Kernel<…>()");
  const std::string cut = short_symbol(std::string(100, 'x'), 20);
  EXPECT_EQ(cut, "…" + std::string(19, 'x'));
  EXPECT_EQ(width(cut), 20u);
}

TEST_F(Tables, TerminalLeavesOutEmptyColumnsAndWrapsNotes) {
  Table t;
  t.id = "A8";
  t.title = "Kernel information";
  t.columns = {{"kernel_name", "kernel name", true, true}, {"gflops", "GFLOPs"}, {"latency_ms", "latency (ms)"}};
  const std::string name = "void at::native::k<float, 4>(int, float*)";
  t.rows = {{Cell{name}, Cell{}, Cell{1.5}}};
  std::string note;
  for (int i = 0; i < 40; ++i) note += "word" + std::to_string(i) + " ";
  note += "end";
  t.notes = {note};
  const std::string text = render_text(t);
  EXPECT_EQ(text.find("GFLOPs"), std::string::npos) << text;  // no row has a value
  EXPECT_NE(text.find("latency (ms)"), std::string::npos) << text;
  EXPECT_NE(text.find("at::native::k<…>(…)"), std::string::npos) << text;
  EXPECT_EQ(text.find(name), std::string::npos) << text;
  EXPECT_EQ(render_csv(t), "kernel_name,gflops,latency_ms\n\"" + name + "\",,1.5\n");
  // The note: lines of at most 120 columns, continuation lines indented, every word kept in order.
  std::string joined;
  std::size_t note_lines = 0;
  for (const auto& line : lines_of(text)) {
    if (line.rfind("note: ", 0) != 0 && line.rfind("      ", 0) != 0) continue;
    ++note_lines;
    EXPECT_LE(width(line), 120u) << line;
    joined += (joined.empty() ? "" : " ") + line.substr(6);
  }
  EXPECT_EQ(note_lines, 3u) << text;
  EXPECT_EQ(joined, note);
  // Without rows the header still names every column.
  t.rows.clear();
  EXPECT_NE(render_text(t).find("GFLOPs"), std::string::npos);
}

TEST_F(Tables, TerminalTablesShortenKernelNamesAndCsvKeepsThem) {
  const std::string db = fixture_copy(kKernelFixture);
  const std::string analyses = "A1,A2,A3,A4,A5,A6,A7,A8,A10,A11,A13,A15,gpu-idle,launch-stats";
  ASSERT_EQ(xsp({"--store", db, "analyze", "1", "--analysis", analyses}), 0) << err_;
  std::size_t longest = 0;
  std::string longest_line;
  for (const auto& line : lines_of(out_)) {
    if (width(line) > longest) longest = width(line), longest_line = line;
  }
  EXPECT_LE(longest, 200u) << longest_line;
  EXPECT_NE(out_.find("<…>"), std::string::npos);  // a template kernel, shortened

  ASSERT_EQ(xsp({"--store", db, "analyze", "1", "--analysis", "A8", "--format", "csv"}), 0) << err_;
  // A full template kernel name with its arguments and parameter list.
  const std::regex full_name(R"(void [A-Za-z_:]+[A-Za-z_]+<[^\n]*>\([^\n]*\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out_, m, full_name)) << out_.substr(0, 2000);
  EXPECT_GT(m.str().size(), 100u) << m.str();
}

TEST_F(Tables, ShowPrintsReadableSettingsAndSpanCountsThatAddUp) {
  const std::string db = fixture_copy(kKernelFixture);
  ASSERT_EQ(xsp({"--store", db, "show", "1"}), 0) << err_;
  const auto lines = lines_of(out_);
  auto settings = std::find(lines.begin(), lines.end(), "settings:");
  ASSERT_NE(settings, lines.end()) << out_;
  std::size_t settings_lines = 0;
  for (auto it = settings + 1; it != lines.end() && it->rfind("  ", 0) == 0; ++it, ++settings_lines)
    EXPECT_LE(width(*it), 120u) << *it;
  EXPECT_GE(settings_lines, 8u) << out_;
  EXPECT_NE(out_.find("\n  iterations: 2\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("\n  run_levels: [\"model\", \"framework\", \"kernel\"]\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("\n        classes: [238, 58, 381, 590, 76]\n"), std::string::npos) << out_;

  const std::regex run_line(
      R"(run (\d+): batch 1, (\w+), \d+ batches, (\d+) spans \((\d+) roots, (\d+) by context, (\d+) by correlation, )"
      R"((\d+) by containment, (\d+) unparented\))");
  std::size_t runs = 0, correlated = 0;
  for (const auto& line : lines) {
    std::smatch m;
    if (!std::regex_search(line, m, run_line)) continue;
    ++runs;
    const long total = std::stol(m[3]);
    long sum = 0;
    for (int i = 4; i <= 8; ++i) sum += std::stol(m[i]);
    EXPECT_EQ(sum, total) << line;
    EXPECT_GT(total, 0) << line;
    if (m[2] == "kernel") correlated += std::stoul(m[6]);
  }
  EXPECT_EQ(runs, 3u) << out_;
  EXPECT_GT(correlated, 0u) << "the kernel run's kernels are placed by correlation id\n" << out_;
}

TEST_F(Tables, HelpPutsNeedsAndExcludesOnLinesOfTheirOwn) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"evaluate", "--help"}, std::vector<std::string>{"machine", "ceilings", "--help"}}) {
    ASSERT_EQ(xsp(args), 0) << err_;
    std::size_t found = 0;
    for (const auto& line : lines_of(out_)) {
      for (const char* label : {"Needs:", "Excludes:"}) {
        const auto at = line.find(label);
        if (at == std::string::npos) continue;
        ++found;
        EXPECT_EQ(line.find_first_not_of(' '), at) << "'" << label << "' follows other text: " << line;
      }
    }
    EXPECT_GT(found, 0u) << args[0] << "\n" << out_;
  }
  // And the description is still there, on the option's own line.
  ASSERT_EQ(xsp({"evaluate", "--help"}), 0);
  EXPECT_NE(out_.find("minimum measured queries"), std::string::npos) << out_;
}

// `xsp analyze --list` prints the registries (issue 13): every analysis with its levels and chart, every column with
// its unit and meaning, every run statistic with its severity; --format json the same for machines. No store needed.
TEST_F(Tables, AnalyzeListPrintsTheRegistries) {
  ASSERT_EQ(xsp({"analyze", "--list"}), 0) << err_;
  for (const char* part :
       {"A9: Kernel roofline", "levels: framework,kernel,hardware; one table per batch size; chart: roofline",
        "ai_dram", "FLOP/byte", "launch-top (id launch-stats)", "cupti.dropped_records [data loss]",
        "counters.setup_ns [info, ns]"})
    EXPECT_NE(out_.find(part), std::string::npos) << part << "\n" << out_;
  ASSERT_EQ(xsp({"analyze", "--list", "--format", "json"}), 0) << err_;
  const auto j = nlohmann::json::parse(out_);
  EXPECT_EQ(j["analyses"][0]["id"], "A1");
  EXPECT_EQ(j["analyses"][0]["columns"][0]["name"], "batch_size");
  EXPECT_FALSE(j["analyses"][0]["columns"][1]["meaning"].get<std::string>().empty());
  EXPECT_GT(j["run_statistics"].size(), 30u);
  // Without --list the evaluation id is still required.
  EXPECT_NE(xsp({"analyze"}), 0);
}

// --chart on a non-roofline analysis writes the registry's default chart of the one table asked for.
TEST_F(Tables, ChartWritesTheDefaultChartOfOneTable) {
  const std::string db = (dir_ / "c.db").string();
  ASSERT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "--store", db, "evaluate", "tables_model", "--framework",
                 "tables-fake", "--batch-sizes", "1,2", "--trace-level", "framework", "--leveled", "--synthetic",
                 "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"}),
            0)
      << err_;
  const std::string file = (dir_ / "a3.vl.json").string();
  ASSERT_EQ(xsp({"--store", db, "analyze", "1", "--analysis", "A3", "--batch-size", "2", "--format", "json", "--chart",
                 file}),
            0)
      << err_;
  const auto tables = nlohmann::json::parse(out_);
  std::ifstream in(file);
  const auto chart = nlohmann::json::parse(in);
  // Horizontal bars named "index name", largest on top (at most 20 and "other (N)").
  EXPECT_EQ(chart["mark"]["type"], "bar");
  EXPECT_EQ(chart["encoding"]["y"]["field"], "bar");
  EXPECT_EQ(chart["encoding"]["x"]["title"], "latency (ms)");
  const auto& rows = tables[0]["rows"];
  ASSERT_FALSE(rows.empty());
  ASSERT_LE(rows.size(), 21u);
  EXPECT_EQ(chart["data"]["values"].size(), rows.size());
  const nlohmann::json* slowest = &rows[0];
  for (const auto& r : rows)
    if (r["latency_ms"].get<double>() > (*slowest)["latency_ms"].get<double>()) slowest = &r;
  EXPECT_EQ(chart["data"]["values"][0]["latency_ms"], (*slowest)["latency_ms"]);
  EXPECT_EQ(chart["data"]["values"][0]["bar"],
            std::to_string((*slowest)["layer_index"].get<int>()) + " " + (*slowest)["layer_name"].get<std::string>());
  // Two batch sizes are two tables: one chart cannot hold both.
  EXPECT_NE(xsp({"--store", db, "analyze", "1", "--analysis", "A3", "--chart", file}), 0);
  EXPECT_NE(err_.find("--batch-size"), std::string::npos) << err_;
}

}  // namespace
}  // namespace xsp
