// The report's "Outputs" charts of task models (settings["sample_outputs"]), on hand-made records: detection boxes
// keep their coordinates in the model input's pixels, a segmentation mask is decoded from its runs and downsampled
// by its cells' centre pixels, text classification draws one bar per class, classification samples draw nothing,
// and a mask without runs gives a note instead of a chart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "xsp/report/report.h"

namespace xsp {
namespace {

using nlohmann::json;

EvaluationRecord task_record(const json& sample_outputs) {
  EvaluationRecord r;
  r.id = 7;
  r.model_name = "m";
  r.framework_name = "libtorch";
  r.settings["sample_outputs"] = sample_outputs;
  return r;
}

std::vector<ReportChart> output_charts(const EvaluationRecord& r) {
  std::vector<ReportChart> out;
  for (ReportChart& c : report_charts({ReportEvaluation{r, {}}}, {}))
    if (c.title.find(": ") != std::string::npos && c.element_id.rfind("e0-", 0) == 0) out.push_back(std::move(c));
  return out;
}

const json& main_unit(const json& spec) {
  const json* u = &spec;
  while (u->contains("layer")) u = &(*u)["layer"][0];
  return *u;
}

TEST(ReportOutputs, DetectionBoxesKeepTheirCoordinatesInTheInputsPixels) {
  const json sample = {{"input", "coffee.jpg"},
                       {"task", "detection"},
                       {"classes", {{{"class", 1}, {"label", "person"}, {"value", 0.9}}}},
                       {"detections",
                        {{{"class", 1}, {"label", "person"}, {"score", 0.9}, {"box", {10.5, 20, 110, 220.25}}},
                         {{"class", 18}, {"label", "dog"}, {"score", 0.4}, {"box", {0, 0, 400, 300}}}}},
                       {"detection_count", 100},
                       {"input_size", {300, 400}}};
  // Batch size 2 is drawn (the smallest), not 4; at most 4 inputs.
  json outputs = {{"4", json::array({sample})}, {"2", json::array()}};
  for (int i = 0; i < 6; ++i) {
    json s = sample;
    s["input"] = "photo" + std::to_string(i) + ".jpg";
    outputs["2"].push_back(s);
  }
  const auto charts = output_charts(task_record(outputs));
  ASSERT_EQ(charts.size(), 4u);
  EXPECT_EQ(charts[0].title.rfind("photo0.jpg: 100 detections (2 drawn)", 0), 0u) << charts[0].title;
  EXPECT_EQ(charts[3].title.rfind("photo3.jpg: ", 0), 0u);
  const ReportChart& c = charts[0];
  EXPECT_EQ(c.expected_marks, 2);
  const json& unit = main_unit(c.spec);
  EXPECT_EQ(unit["name"], "main");
  EXPECT_EQ(unit["mark"]["type"], "rect");
  EXPECT_EQ(unit["mark"]["filled"], false);
  EXPECT_EQ(unit["encoding"]["color"]["field"], "label");
  // x runs 0..W, y 0..H top-down: the sample's input_size [300, 400] (H, W).
  EXPECT_EQ(unit["encoding"]["x"]["scale"]["domain"], json({0.0, 400.0}));
  EXPECT_EQ(unit["encoding"]["y"]["scale"]["domain"], json({0.0, 300.0}));
  EXPECT_EQ(unit["encoding"]["y"]["scale"]["reverse"], true);
  EXPECT_EQ(c.spec["width"], 320);
  EXPECT_EQ(c.spec["height"], 240);
  const json& rows = c.spec["data"]["values"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["label"], "person");
  EXPECT_DOUBLE_EQ(rows[0]["score"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(rows[0]["x1"].get<double>(), 10.5);
  EXPECT_DOUBLE_EQ(rows[0]["y1"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(rows[0]["x2"].get<double>(), 110);
  EXPECT_DOUBLE_EQ(rows[0]["y2"].get<double>(), 220.25);
  EXPECT_EQ(rows[1]["label"], "dog");
  // Labels at each box's top-left corner.
  const json& text = c.spec["layer"][1];
  EXPECT_EQ(text["mark"]["type"], "text");
  EXPECT_EQ(text["encoding"]["x"]["field"], "x1");
  EXPECT_EQ(text["encoding"]["y"]["field"], "y1");
  EXPECT_EQ(text["encoding"]["text"]["field"], "label");
  EXPECT_EQ(unit["encoding"]["tooltip"].size(), 3u);

  // Without an input_size: the smallest square holding the boxes, at least 320.
  json no_size = sample;
  no_size.erase("input_size");
  const auto bare = output_charts(task_record({{"1", json::array({no_size})}}));
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(main_unit(bare[0].spec)["encoding"]["x"]["scale"]["domain"], json({0.0, 400.0}));
  EXPECT_EQ(main_unit(bare[0].spec)["encoding"]["y"]["scale"]["domain"], json({0.0, 400.0}));
}

TEST(ReportOutputs, AMaskIsDecodedFromItsRunsAndDownsampledByCellCentres) {
  // 4 x 6, runs [0 x10, 3 x14]: row 0 all 0, row 1 0 0 0 0 3 3, rows 2-3 all 3.
  const json small = {{"input", "rocket.jpg"},
                      {"task", "segmentation"},
                      {"classes",
                       {{{"class", 3}, {"label", "bird"}, {"value", 14.0 / 24}},
                        {{"class", 0}, {"label", "background"}, {"value", 10.0 / 24}}}},
                      {"mask", {{"height", 4}, {"width", 6}, {"run_count", 2}, {"runs", {0, 10, 3, 14}}}}};
  const auto charts = output_charts(task_record({{"1", json::array({small})}}));
  ASSERT_EQ(charts.size(), 1u);
  const ReportChart& c = charts[0];
  EXPECT_EQ(c.expected_marks, 24);
  EXPECT_NE(c.title.find("rocket.jpg: segmentation mask 4x6"), std::string::npos) << c.title;
  const json& rows = c.spec["data"]["values"];
  ASSERT_EQ(rows.size(), 24u);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) {
      const json& v = rows[static_cast<std::size_t>(y * 6 + x)];
      SCOPED_TRACE(std::to_string(y) + "," + std::to_string(x));
      EXPECT_EQ(v["x"], x);
      EXPECT_EQ(v["x2"], x + 1);
      EXPECT_EQ(v["y"], y);
      EXPECT_EQ(v["y2"], y + 1);
      const int want = y * 6 + x < 10 ? 0 : 3;
      EXPECT_EQ(v["class"], want);
      EXPECT_EQ(v["label"], want == 0 ? "background" : "bird");
    }
  EXPECT_EQ(main_unit(c.spec)["name"], "main");
  EXPECT_EQ(main_unit(c.spec)["encoding"]["color"]["field"], "label");
  EXPECT_EQ(main_unit(c.spec)["encoding"]["y"]["scale"]["reverse"], true);

  // 130 x 200: cells of ceil(130/64) = 3 by ceil(200/64) = 4 pixels, 44 x 50 of them (the last row 1 pixel high);
  // the left half (x < 100) class 1, the right half class 2, except row 129 all class 5 (the last cell row's centre).
  json runs = json::array();
  for (int y = 0; y < 129; ++y) runs.insert(runs.end(), {1, 100, 2, 100});
  runs.insert(runs.end(), {5, 200});
  const json big = {{"input", "big.jpg"},
                    {"task", "segmentation"},
                    {"classes", json::array()},
                    {"mask", {{"height", 130}, {"width", 200}, {"run_count", runs.size() / 2}, {"runs", runs}}}};
  const auto bc = output_charts(task_record({{"1", json::array({big})}}));
  ASSERT_EQ(bc.size(), 1u);
  EXPECT_EQ(bc[0].expected_marks, 44 * 50);
  const json& br = bc[0].spec["data"]["values"];
  ASSERT_EQ(br.size(), 44u * 50u);
  EXPECT_EQ(br[0]["x2"], 4);
  EXPECT_EQ(br[0]["y2"], 3);
  EXPECT_EQ(br[0]["class"], 1);
  EXPECT_EQ(br[0]["label"], "class 1");  // no label known
  EXPECT_EQ(br[24]["x"], 96);            // centre x 98: left half
  EXPECT_EQ(br[24]["class"], 1);
  EXPECT_EQ(br[25]["x"], 100);  // centre x 102: right half
  EXPECT_EQ(br[25]["class"], 2);
  const json& last = br[43 * 50];
  EXPECT_EQ(last["y"], 129);
  EXPECT_EQ(last["y2"], 130);
  EXPECT_EQ(last["class"], 5);
}

TEST(ReportOutputs, AMaskWithoutRunsGivesANoteAndNoChart) {
  const json no_runs = {{"input", "huge.jpg"},
                        {"task", "segmentation"},
                        {"classes", json::array()},
                        {"mask", {{"height", 224}, {"width", 224}, {"run_count", 25000}}}};
  const json bad_runs = {{"input", "bad.jpg"},
                         {"task", "segmentation"},
                         {"mask", {{"height", 4}, {"width", 6}, {"run_count", 1}, {"runs", {0, 23}}}}};
  const EvaluationRecord r = task_record({{"1", json::array({no_runs, bad_runs})}});
  EXPECT_TRUE(output_charts(r).empty());
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  const std::string html = render_report({ReportEvaluation{r, {}}});
  EXPECT_NE(html.find("<h3>Outputs</h3>"), std::string::npos);
  EXPECT_NE(html.find("huge.jpg: the 224x224 mask&#39;s 25000 runs were too many to keep"), std::string::npos);
  EXPECT_NE(html.find("bad.jpg: the 4x6 mask&#39;s runs do not cover its 24 pixels"), std::string::npos);
}

TEST(ReportOutputs, TextClassificationDrawsOneBarPerClass) {
  const json sample = {{"input", "text:17"},
                       {"task", "text_classification"},
                       {"classes",
                        {{{"class", 3}, {"label", "GPL-3"}, {"value", 0.5}},
                         {{"class", 1}, {"label", "Apache-2.0"}, {"value", 0.3}},
                         {{"class", 9}, {"label", ""}, {"value", 0.2}}}}};
  const auto charts = output_charts(task_record({{"8", json::array({sample})}}));
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].expected_marks, 3);
  EXPECT_EQ(charts[0].title.rfind("text:17: text classification", 0), 0u) << charts[0].title;
  const json& unit = main_unit(charts[0].spec);
  EXPECT_EQ(unit["mark"]["type"], "bar");
  EXPECT_EQ(unit["encoding"]["x"]["field"], "value");
  EXPECT_EQ(unit["encoding"]["y"]["field"], "label");
  const json& rows = charts[0].spec["data"]["values"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["label"], "GPL-3");
  EXPECT_DOUBLE_EQ(rows[0]["value"].get<double>(), 0.5);
  EXPECT_EQ(rows[2]["label"], "class 9");
}

TEST(ReportOutputs, ClassificationAndGenerationSamplesDrawNothing) {
  // Classification samples have no "task"; generation samples are keyed "<batch size>/<run>".
  const json classification = {{"input", "cat.jpg"},
                               {"classes", {{{"class", 281}, {"label", "tabby"}, {"value", 0.7}}}}};
  const EvaluationRecord r = task_record({{"1", json::array({classification})}, {"1/M", json::object()}});
  const std::size_t with = report_charts({ReportEvaluation{r, {}}}, {}).size();
  EvaluationRecord bare = r;
  bare.settings.erase("sample_outputs");
  EXPECT_EQ(with, report_charts({ReportEvaluation{bare, {}}}, {}).size());
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  EXPECT_EQ(render_report({ReportEvaluation{r, {}}}).find("<h3>Outputs</h3>"), std::string::npos);
}

}  // namespace
}  // namespace xsp
