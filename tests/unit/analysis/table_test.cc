// Table renderings: text (alignment, bars), CSV (RFC 4180 quoting), JSON.
#include "xsp/analysis/table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace xsp {
namespace {

Table sample() {
  Table t;
  t.id = "A6";
  t.title = "Layer latency by type";
  t.columns = {{"layer_type", "type"}, {"latency_ms", "latency (ms)"}, {"count", ""}, {"note", ""}};
  t.rows = {{Cell{std::string("aten::conv2d, \"fused\"")}, Cell{2.5}, Cell{std::int64_t{3}}, Cell{}},
            {Cell{std::string("aten::relu")}, Cell{0.1}, Cell{std::int64_t{-1}}, Cell{std::string("a\nb")}},
            {Cell{std::string("aten::add")}, Cell{0.0000123}, Cell{std::int64_t{0}}, Cell{std::string("x")}}};
  t.notes = {"latencies from the M/F run (trace level framework), 10 batches, trimmed mean"};
  t.bar_column = 1;
  return t;
}

TEST(TableFormat, Parse) {
  EXPECT_EQ(parse_table_format("table"), TableFormat::kText);
  EXPECT_EQ(parse_table_format("text"), TableFormat::kText);
  EXPECT_EQ(parse_table_format("CSV"), TableFormat::kCsv);
  EXPECT_EQ(parse_table_format("json"), TableFormat::kJson);
  try {
    parse_table_format("xml");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("xml"), std::string::npos);
  }
}

TEST(RenderText, TitleHeaderBarsNotes) {
  const std::string s = render_text(sample());
  EXPECT_EQ(s.rfind("A6 — Layer latency by type\n", 0), 0u) << s;
  EXPECT_NE(s.find("latency (ms)"), std::string::npos);
  EXPECT_NE(s.find("count"), std::string::npos);  // empty title falls back to the name
  EXPECT_NE(s.find("2.500"), std::string::npos);
  EXPECT_NE(s.find("1.23e-05"), std::string::npos);  // tiny values keep their digits
  // Largest value: a full 30-cell bar.
  std::string full;
  for (int i = 0; i < 30; ++i) full += "█";
  EXPECT_NE(s.find(full), std::string::npos);
  // 0.1 / 2.5 * 30 cells = 1.2 cells = 9.6 eighths -> one full block and "▎" (2 eighths).
  EXPECT_NE(s.find("  █▎\n"), std::string::npos) << s;
  EXPECT_NE(s.find("note: latencies from the M/F run"), std::string::npos);
}

TEST(RenderText, ColumnsAligned) {
  Table t;
  t.id = "A5";
  t.title = "Layer type distribution";
  t.columns = {{"layer_type", ""}, {"count", ""}};
  t.rows = {{Cell{std::string("a")}, Cell{std::int64_t{1}}}, {Cell{std::string("longer")}, Cell{std::int64_t{100}}}};
  const std::string s = render_text(t);
  EXPECT_NE(s.find("layer_type  count\n"), std::string::npos) << s;
  EXPECT_NE(s.find("a               1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("longer        100\n"), std::string::npos) << s;
}

TEST(RenderText, EmptyTable) {
  Table t;
  t.id = "A2";
  t.title = "Layer information";
  t.columns = {{"layer_index", ""}};
  t.notes = {"no FRAMEWORK-level run in this evaluation (use --trace-level framework)"};
  const std::string s = render(t, TableFormat::kText);
  EXPECT_NE(s.find("(no rows)"), std::string::npos);
  EXPECT_NE(s.find("no FRAMEWORK-level run"), std::string::npos);
}

TEST(RenderCsv, QuotingAndFullPrecision) {
  const std::string s = render_csv(sample());
  EXPECT_EQ(s,
            "layer_type,latency_ms,count,note\n"
            "\"aten::conv2d, \"\"fused\"\"\",2.5,3,\n"
            "aten::relu,0.1,-1,\"a\nb\"\n"
            "aten::add,1.23e-05,0,x\n");
  Table t;
  t.columns = {{"v", ""}};
  t.rows = {{Cell{1.0 / 3.0}}};
  const std::string one = render_csv(t);
  EXPECT_EQ(std::stod(one.substr(2)), 1.0 / 3.0);  // reads back exactly
}

TEST(ToJson, RoundTrip) {
  Table t = sample();
  t.rows.push_back({Cell{std::string("nan")}, Cell{std::nan("")}, Cell{}, Cell{}});
  const nlohmann::json j = nlohmann::json::parse(render(t, TableFormat::kJson));
  EXPECT_EQ(j["id"], "A6");
  EXPECT_EQ(j["title"], "Layer latency by type");
  ASSERT_EQ(j["columns"].size(), 4u);
  EXPECT_EQ(j["columns"][1], "latency_ms");
  ASSERT_EQ(j["rows"].size(), 4u);
  // Rows are objects keyed by column name (pandas.DataFrame(rows) reads them), keys in column order.
  EXPECT_EQ(j["rows"][0]["layer_type"].get<std::string>(), "aten::conv2d, \"fused\"");
  EXPECT_EQ(j["rows"][0]["latency_ms"].get<double>(), 2.5);
  EXPECT_TRUE(j["rows"][0]["count"].is_number_integer());
  EXPECT_EQ(j["rows"][0]["count"].get<std::int64_t>(), 3);
  EXPECT_TRUE(j["rows"][0]["note"].is_null());
  EXPECT_EQ(j["rows"][2]["latency_ms"].get<double>(), 0.0000123);
  EXPECT_TRUE(j["rows"][3]["latency_ms"].is_null());  // NaN has no JSON form
  EXPECT_EQ(to_json(t)["rows"][1].dump(), R"({"layer_type":"aten::relu","latency_ms":0.1,"count":-1,"note":"a\nb"})");
  EXPECT_EQ(j["notes"][0], t.notes[0]);
  EXPECT_EQ(j, nlohmann::json(to_json(t)));
}

}  // namespace
}  // namespace xsp
