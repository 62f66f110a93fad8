// End to end on the CI-size task models of the zoo (docs/tasks.md) through evaluate(), the one library call, on CPU at
// trace level framework: SSDlite detection and LR-ASPP segmentation on the photographs of data/images, the BERT-style
// text classifier on the license-text prompts tokenized by the exported SentencePiece model. Asserts the outputs'
// shapes (boxes within the image, masks of its size, class scores that are probabilities), framework ops nested under
// their predict spans, the store round trip of detections and masks, and the CLI's `show` and refusals.
#include "xsp/pipeline/tasks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "e2e_shell.h"
#include "xsp/eval/evaluate.h"
#include "xsp/predictors/libtorch.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

const fs::path kZoo = XSP_TEST_ZOO;
using xsp::e2e::sh;
using xsp::e2e::temp_dir;

struct Evaluated {
  EvaluationRecord record, loaded;
};

// One evaluation of `model` at batch size 2, trace level framework, predictions stored, saved and loaded back.
Evaluated evaluate_model(const std::string& model) {
  register_libtorch_predictor();
  const fs::path dir = temp_dir("tasks-" + model);
  EvaluationRequest r;
  r.model = model;
  r.batch_sizes = {2};
  r.trace_level = TraceLevel::kFramework;
  r.store_predictions = true;
  r.measurement.warmup_min_batches = 1;
  r.measurement.warmup_min_ms = r.measurement.warmup_max_ms = 0;
  r.measurement.min_batches = 3;
  r.measurement.min_duration_ms = r.measurement.max_duration_ms = 0;
  EvaluationContext c;
  c.zoo = kZoo;
  c.default_images_dir = fs::path(XSP_SOURCE_DIR) / "data" / "images";
  c.record_machine_state = false;
  auto store = Store::open(dir / "xsp.db");
  c.store = store.get();
  Evaluated e;
  e.record = evaluate(r, c);
  e.loaded = store->load(e.record.id).value();
  fs::remove_all(dir);
  return e;
}

// Framework ops of the run, each with its parent: every op descends from a MODEL predict span and lies within it.
std::map<std::string, int> ops_under_predict(const RunRecord& run) {
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : run.trace.spans) by_id[s.id] = &s;
  std::map<std::string, int> ops;
  for (const Span& s : run.trace.spans) {
    if (s.level != Level::kFramework) continue;
    const Span* p = &s;
    while (p->parent_id != kNoSpan && by_id.count(p->parent_id) && p->level != Level::kModel)
      p = by_id.at(p->parent_id);
    EXPECT_EQ(p->level, Level::kModel) << s.name;
    EXPECT_EQ(p->name, kStagePredict) << s.name;
    EXPECT_GE(s.start_ns, p->start_ns) << s.name;
    EXPECT_LE(s.end_ns, p->end_ns) << s.name;
    ops[s.name]++;
  }
  return ops;
}

std::set<std::string> photos() {
  std::set<std::string> names;
  for (const auto& f : fs::directory_iterator(fs::path(XSP_SOURCE_DIR) / "data" / "images"))
    if (f.path().extension() == ".jpg") names.insert(f.path().filename().string());
  return names;
}

TEST(TaskModels, DetectionBoxesLieWithinTheImageAndSurviveTheStore) {
  const Evaluated e = evaluate_model("ssdlite_mobilenet_v3");
  ASSERT_EQ(e.record.runs.size(), 1u);
  const RunRecord& run = e.record.runs[0];
  EXPECT_EQ(e.record.settings["task"], "detection");
  ASSERT_GE(run.predictions.size(), 2u);  // 3 batches of 2 from 5 photos
  const auto known = photos();
  for (const InputPrediction& p : run.predictions) {
    SCOPED_TRACE(p.input_id);
    EXPECT_TRUE(known.count(p.input_id));
    ASSERT_FALSE(p.detections.empty());
    EXPECT_LE(p.detections.size(), 100u);  // nms.max_detections
    EXPECT_EQ(p.probabilities.size(), 91u);
    for (std::size_t i = 0; i < p.detections.size(); ++i) {
      const Detection& d = p.detections[i];
      EXPECT_LE(0.f, d.x1);
      EXPECT_LE(d.x1, d.x2);
      EXPECT_LE(d.x2, 320.f);
      EXPECT_LE(0.f, d.y1);
      EXPECT_LE(d.y1, d.y2);
      EXPECT_LE(d.y2, 320.f);
      EXPECT_GT(d.score, 0.01f);  // nms.score_threshold
      EXPECT_GE(d.label, 1);      // never the background
      EXPECT_LT(d.label, 91);
      if (i > 0) EXPECT_GE(p.detections[i - 1].score, d.score);
    }
  }
  const auto ops = ops_under_predict(run);
  EXPECT_GT(ops.count("aten::conv2d") + ops.count("aten::_convolution"), 0u);
  EXPECT_GT(ops.count("aten::softmax"), 0u);  // the wrapper's class scores
  ASSERT_EQ(e.loaded.runs.size(), 1u);
  EXPECT_EQ(e.loaded.runs[0].predictions, run.predictions);  // detections included (schema 7)
  // The sample outputs of the last batch name their inputs and count the same detections as the stored ones.
  const auto& sample = e.record.settings["sample_outputs"]["2"];
  ASSERT_EQ(sample.size(), 2u);
  for (const auto& s : sample) {
    EXPECT_EQ(s["task"], "detection");
    EXPECT_EQ(s["input_size"], nlohmann::json({320, 320}));  // the frame of the boxes: the input's [H, W]
    for (const InputPrediction& p : run.predictions)
      if (p.input_id == s["input"].get<std::string>())
        EXPECT_EQ(s["detection_count"].get<std::size_t>(), p.detections.size());
  }
}

TEST(TaskModels, SegmentationMasksHaveTheImageSize) {
  const Evaluated e = evaluate_model("lraspp_mobilenet_v3");
  ASSERT_EQ(e.record.runs.size(), 1u);
  const RunRecord& run = e.record.runs[0];
  EXPECT_EQ(e.record.settings["task"], "segmentation");
  ASSERT_GE(run.predictions.size(), 2u);
  for (const InputPrediction& p : run.predictions) {
    SCOPED_TRACE(p.input_id);
    EXPECT_EQ(p.mask.height, 224);
    EXPECT_EQ(p.mask.width, 224);
    const auto pixels = mask_class_pixels(p.mask, 21);  // throws unless the runs cover 224 x 224 exactly
    EXPECT_EQ(std::accumulate(pixels.begin(), pixels.end(), std::int64_t{0}), 224 * 224);
    EXPECT_EQ(pixels.size(), 21u);
    ASSERT_EQ(p.probabilities.size(), 21u);
    EXPECT_NEAR(std::accumulate(p.probabilities.begin(), p.probabilities.end(), 0.0), 1.0, 1e-5);
    ASSERT_FALSE(p.top_classes.empty());
    EXPECT_EQ(pixels[static_cast<std::size_t>(p.top_classes[0])], *std::max_element(pixels.begin(), pixels.end()));
  }
  const auto ops = ops_under_predict(run);
  EXPECT_GT(ops.count("aten::upsample_bilinear2d") + ops.count("aten::upsample_bilinear2d.vec") +
                ops.count("aten::interpolate"),
            0u);
  EXPECT_EQ(e.loaded.runs[0].predictions, run.predictions);
  // The sample outputs carry each mask's runs (what the report and the web UI draw), equal to the stored mask.
  int matched = 0;
  for (const auto& s : e.record.settings["sample_outputs"]["2"])
    for (const InputPrediction& p : run.predictions)
      if (p.input_id == s["input"].get<std::string>()) {
        EXPECT_EQ(s["mask"]["runs"].get<std::vector<std::int32_t>>(), p.mask.runs);
        EXPECT_EQ(s["mask"]["height"], 224);
        ++matched;
      }
  EXPECT_EQ(matched, 2);
}

TEST(TaskModels, TextClassifierReadsTokenizedPromptsWithTheirMask) {
  const Evaluated e = evaluate_model("bert_tiny");
  ASSERT_EQ(e.record.runs.size(), 1u);
  const RunRecord& run = e.record.runs[0];
  EXPECT_EQ(e.record.settings["task"], "text_classification");
  EXPECT_EQ(e.record.settings["inputs"], "texts");
  EXPECT_EQ(e.record.settings["input_count"], 390);  // the prompts of gpt2_prompts.txt
  ASSERT_EQ(run.predictions.size(), 6u);             // 3 batches of 2 distinct prompts
  for (std::size_t i = 0; i < run.predictions.size(); ++i) {
    const InputPrediction& p = run.predictions[i];
    EXPECT_EQ(p.input_id, "text:" + std::to_string(2 + i));  // the warm-up batch read lines 0 and 1
    ASSERT_EQ(p.probabilities.size(), 14u);                  // license_labels.txt
    EXPECT_NEAR(std::accumulate(p.probabilities.begin(), p.probabilities.end(), 0.0), 1.0, 1e-5);
    EXPECT_EQ(p.top_classes.size(), 5u);
  }
  // The token ids enter the word embedding (2000 ids x 64 wide) as a [2,64] tensor: batch 2, pad_truncate.length 64.
  int word_embeddings = 0;
  for (const Span& s : run.trace.spans) {
    const auto shapes = s.tag("shapes");
    if (s.level != Level::kFramework || s.name != "aten::embedding" || !shapes || shapes->rfind("[2000,64]", 0) != 0)
      continue;
    ++word_embeddings;
    EXPECT_EQ(*shapes, "[2000,64],[2,64]");
  }
  EXPECT_EQ(word_embeddings, 3);  // one per measured batch
  ops_under_predict(run);
  EXPECT_EQ(e.loaded.runs[0].predictions, run.predictions);
}

TEST(TaskModelsCli, ShowPrintsOutputsAndBadRequestsNameTheirFlag) {
  const fs::path dir = temp_dir("tasks-cli");
  const std::string xsp = std::string(XSP_CLI) + " --zoo " + kZoo.string() + " --store " + (dir / "x.db").string();
  const std::string quick =
      " --iterations 2 --warmup 1 --warmup-min-ms 0 --warmup-max-ms 0 --min-duration-ms 0 "
      "--max-duration-ms 0";
  const auto [rc, out] = sh(xsp + " evaluate ssdlite_mobilenet_v3" + quick);
  ASSERT_EQ(rc, 0) << out;
  const auto [rc2, shown] = sh(xsp + " show 1");
  ASSERT_EQ(rc2, 0) << shown;
  EXPECT_NE(shown.find("Outputs"), std::string::npos) << shown;
  EXPECT_NE(shown.find("detection"), std::string::npos) << shown;
  const auto [rc3, bert] = sh(xsp + " evaluate bert_tiny" + quick);
  ASSERT_EQ(rc3, 0) << bert;
  const auto [rc4, shown2] = sh(xsp + " show 2");
  EXPECT_NE(shown2.find("text_classification"), std::string::npos) << shown2;
  EXPECT_NE(shown2.find(" text:"), std::string::npos) << shown2;  // the last batch's inputs: lines of the prompts
  // A text model reads texts, not synthetic tensors; a dataset (accuracy) is classification's.
  const auto [rc5, synthetic] = sh(xsp + " evaluate bert_tiny --synthetic");
  EXPECT_EQ(rc5, 2) << synthetic;
  EXPECT_NE(synthetic.find("--synthetic"), std::string::npos) << synthetic;
  const auto [rc6, scenario] = sh(xsp + " evaluate ssdlite_mobilenet_v3 --scenario single-stream --dataset digits");
  EXPECT_EQ(rc6, 2) << scenario;
  EXPECT_NE(scenario.find("--dataset"), std::string::npos) << scenario;
  const auto [rc7, listed] = sh(xsp + " list");
  EXPECT_NE(listed.find("BERT_Tiny"), std::string::npos) << listed;
  fs::remove_all(dir);
}

// The task models in every LoadGen scenario (issue 30: the run engine's scenario workload takes any model the
// task pipeline runs): images pre-processed once, or a text model's prompts tokenized once into a library of two
// integer inputs, batched per query and run through predict_all(). SingleStream at framework level keeps the tail
// queries' traces with the model's ops under their predict spans.
TEST(TaskModelsInScenarios, DetectionSegmentationAndTextRunSingleStreamServerAndOffline) {
  register_libtorch_predictor();
  const fs::path dir = temp_dir("tasks-scenarios");
  auto store = Store::open(dir / "xsp.db");
  for (const std::string model : {"ssdlite_mobilenet_v3", "lraspp_mobilenet_v3", "bert_tiny"}) {
    for (const std::string scenario : {"single-stream", "server", "offline"}) {
      SCOPED_TRACE(model + " " + scenario);
      EvaluationRequest r;
      r.model = model;
      ScenarioRequest s;
      s.scenario = scenario;
      s.min_queries = 6;
      s.target_qps = 20;
      s.latency_bound_ms = 5000;
      if (scenario == "offline") s.max_batch = 2;
      r.scenario = s;
      r.measurement.min_duration_ms = 100;
      if (scenario == "single-stream") r.trace_level = TraceLevel::kFramework;
      EvaluationContext c;
      c.zoo = kZoo;
      c.default_images_dir = fs::path(XSP_SOURCE_DIR) / "data" / "images";
      c.record_machine_state = false;
      c.store = store.get();
      const EvaluationRecord rec = evaluate(r, c);
      EXPECT_EQ(rec.scenario, scenario);
      ASSERT_EQ(rec.runs.size(), 1u);
      const RunRecord& run = rec.runs[0];
      ASSERT_TRUE(run.scenario_result.has_value());
      EXPECT_GE(run.scenario_result->sample_count, 6);
      EXPECT_EQ(run.batch_size, scenario == "offline" ? 2 : 1);
      for (double ns : run.predict_latency_ns) EXPECT_GT(ns, 0);
      if (model == "bert_tiny") {
        EXPECT_EQ(rec.settings.at("inputs"), "texts");
        EXPECT_GE(rec.settings.at("input_count").get<std::size_t>(), 2u);
      } else {
        EXPECT_EQ(rec.settings.at("input_count").get<std::size_t>(), photos().size());
      }
      if (scenario == "single-stream") {
        EXPECT_EQ(run.trace_level, TraceLevel::kFramework);
        EXPECT_FALSE(ops_under_predict(run).empty());
        EXPECT_EQ(run.trace.assembly.unparented, 0u);
      }
      const EvaluationRecord loaded = store->load(rec.id).value();
      EXPECT_EQ(loaded.runs.at(0).predict_latency_ns, run.predict_latency_ns);
    }
  }
  fs::remove_all(dir);
}

}  // namespace
