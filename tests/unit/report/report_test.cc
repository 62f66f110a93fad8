// The HTML report's content, without a browser (tests/browser/report_test.sh renders it in Chromium): the timeline
// of the recorded H200 kernel-level run holds exactly the spans under its last predict span, each chart's expected
// marks follow its data, the page references nothing outside itself, and text from the record is escaped.
#include "xsp/report/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <unordered_map>

#include "../store/temp_dir.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

EvaluationRecord gpu_fixture(const testing::TempDir& dir) {
  const fs::path copy = dir.path() / "gpu.db";  // never open the committed fixture in place: opening may migrate it
  fs::copy_file(fs::path(XSP_TEST_FIXTURES) / "gpu" / "resnet18_bs1_kernel_h200.db", copy);
  auto record = Store::open(copy, StoreAccess::kRead)->load(1);
  EXPECT_TRUE(record.has_value());
  return *record;
}

const RunRecord& deepest_run(const EvaluationRecord& r) {
  const RunRecord* best = &r.runs.front();
  for (const RunRecord& run : r.runs)
    if (run.trace_level > best->trace_level) best = &run;
  return *best;
}

TEST(Report, TimelineHoldsExactlyTheSpansOfTheLastMeasuredBatch) {
  testing::TempDir dir;
  const EvaluationRecord r = gpu_fixture(dir);
  const RunRecord& run = deepest_run(r);
  ASSERT_EQ(run.trace_level, TraceLevel::kKernel);

  // The known answer, computed here independently: the last predict span and everything whose parents reach it.
  const Span* predict = nullptr;
  for (const Span& s : run.trace.spans)
    if (s.level == Level::kModel && s.name == "predict" && (!predict || s.start_ns > predict->start_ns)) predict = &s;
  ASSERT_NE(predict, nullptr);
  std::unordered_map<SpanId, const Span*> by_id;
  for (const Span& s : run.trace.spans) by_id[s.id] = &s;
  std::size_t under = 0;
  std::set<std::string> levels;
  for (const Span& s : run.trace.spans) {
    for (const Span* p = &s; p != nullptr;) {
      if (p->id == predict->id) {
        ++under;
        levels.insert(std::string(to_string(s.level)));
        break;
      }
      auto it = by_id.find(p->parent_id);
      p = it == by_id.end() ? nullptr : it->second;
    }
  }
  ASSERT_GT(under, 10u);
  EXPECT_TRUE(levels.count("kernel")) << "the batch's kernels are in the timeline";
  EXPECT_TRUE(levels.count("framework"));

  const auto chart = timeline_chart(run, "t", 100000);
  ASSERT_TRUE(chart.has_value());
  const auto& values = chart->spec["data"]["values"];
  EXPECT_EQ(values.size(), under);
  EXPECT_EQ(chart->expected_marks, static_cast<long>(under));
  EXPECT_EQ(chart->spec["params"][0]["bind"], "scales");  // zoom and pan
  bool predict_at_zero = false, gpu_row = false;
  for (const auto& v : values) {
    EXPECT_LE(v["start_ms"].get<double>(), v["end_ms"].get<double>());
    if (v["name"] == "predict") predict_at_zero = v["start_ms"].get<double>() == 0.0;
    if (v["row"].get<std::string>().find("kernel · GPU ") == 0) gpu_row = true;
  }
  EXPECT_TRUE(predict_at_zero);
  EXPECT_TRUE(gpu_row) << "kernels sit on their GPU stream's row";

  // A cap keeps the longest spans.
  const auto capped = timeline_chart(run, "t", 5);
  ASSERT_TRUE(capped.has_value());
  EXPECT_EQ(capped->spec["data"]["values"].size(), 5u);
  bool has_predict = false;
  for (const auto& v : capped->spec["data"]["values"]) has_predict = has_predict || v["name"] == "predict";
  EXPECT_TRUE(has_predict) << "the predict span is the longest of its batch";
}

TEST(Report, ChartsExpectOneMarkPerRowTheyCanDraw) {
  testing::TempDir dir;
  ReportEvaluation e{gpu_fixture(dir), {}};
  const auto charts = report_charts({e}, {});
  ASSERT_GE(charts.size(), 5u);
  std::set<std::string> ids;
  for (const ReportChart& c : charts) {
    SCOPED_TRACE(c.title);
    EXPECT_TRUE(ids.insert(c.element_id).second) << "element ids are unique";
    EXPECT_FALSE(c.spec.is_null());
    if (c.expected_marks < 0) continue;
    // The main unit is named, and it has at most as many marks as data rows.
    const nlohmann::json* u = &c.spec;
    while (u->contains("layer")) u = &(*u)["layer"][0];
    const auto& unit = *u;
    EXPECT_EQ(unit["name"], "main");
    const auto& data = unit.contains("data") ? unit["data"] : c.spec["data"];
    EXPECT_LE(c.expected_marks, static_cast<long>(data["values"].size()));
    EXPECT_GT(c.expected_marks, 0);
  }
}

TEST(Report, ThePageIsSelfContainedAndEscapesRecordText) {
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  testing::TempDir dir;
  ReportEvaluation e{gpu_fixture(dir), {}};
  e.record.model_name = "<script>alert('x')</script>";
  std::size_t count = 0;
  const std::string html = render_report({e}, {}, &count);
  EXPECT_GT(count, 5u);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos) << "record text reached the page unescaped";
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  // The licences of the inlined libraries are in the file.
  EXPECT_NE(html.find("vega-embed 7.3.0"), std::string::npos);
  EXPECT_NE(html.find("University of Washington Interactive Data Lab"), std::string::npos);
  EXPECT_NE(html.find("Redistribution and use in source and binary forms"), std::string::npos);
  // The chart data block parses back and names a div for each chart.
  const std::string open = "<script id=\"xsp-charts\" type=\"application/json\">";
  const auto at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  const auto end = html.find("</script>", at);
  const auto charts = nlohmann::json::parse(html.substr(at + open.size(), end - at - open.size()));
  ASSERT_EQ(charts.size(), count);
  for (const auto& c : charts)
    EXPECT_NE(html.find("id=\"" + c["id"].get<std::string>() + "\""), std::string::npos) << c["id"];
  EXPECT_THROW(render_report({}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace xsp
