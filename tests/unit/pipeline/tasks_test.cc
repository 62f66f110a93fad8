// The task pipeline (include/xsp/pipeline/tasks.h): NMS, argmax masks, text batches and the post-processor, on
// hand-made outputs with known answers.
#include "xsp/pipeline/tasks.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

namespace xsp {
namespace {

// Boxes {A, 4} and scores {A, classes} built row by row.
struct Anchors {
  std::size_t classes;
  std::vector<float> boxes, scores;
  void add(std::array<float, 4> box, std::vector<float> s) {
    boxes.insert(boxes.end(), box.begin(), box.end());
    s.resize(classes, 0.f);
    scores.insert(scores.end(), s.begin(), s.end());
  }
  std::size_t size() const { return boxes.size() / 4; }
  std::vector<Detection> nms(const NmsOptions& o) const {
    return non_max_suppression(boxes.data(), scores.data(), size(), classes, o);
  }
};

TEST(NonMaxSuppression, KeepsTheBestOfOverlappingBoxesPerClass) {
  Anchors a{3, {}, {}};
  // Class 1: box 1 lies inside box 0, IoU 81/100 = 0.81 (box 1 suppressed at 0.5); box 2 is apart.
  a.add({0, 0, 10, 10}, {0.f, 0.9f, 0.f});
  a.add({1, 1, 10, 10}, {0.f, 0.8f, 0.f});
  a.add({20, 20, 30, 30}, {0.f, 0.7f, 0.f});
  // Class 2 on box 1: other classes never suppress each other (batched_nms).
  a.scores[1 * 3 + 2] = 0.6f;
  NmsOptions o;
  o.iou_threshold = 0.5;
  o.score_threshold = 0.05;
  const auto d = a.nms(o);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], (Detection{0, 0, 10, 10, 0.9f, 1}));
  EXPECT_EQ(d[1], (Detection{20, 20, 30, 30, 0.7f, 1}));
  EXPECT_EQ(d[2], (Detection{1, 1, 10, 10, 0.6f, 2}));
  // At an IoU threshold above 0.81 the inner box stays.
  o.iou_threshold = 0.82;
  EXPECT_EQ(a.nms(o).size(), 4u);
  o.iou_threshold = 0.8;  // 0.81 > 0.8: suppressed
  EXPECT_EQ(a.nms(o).size(), 3u);
}

TEST(NonMaxSuppression, ThresholdsCandidatesAndMaxDetections) {
  Anchors a{2, {}, {}};
  for (int i = 0; i < 10; ++i) a.add({i * 20.f, 0, i * 20.f + 10, 10}, {0.f, 0.1f * static_cast<float>(i)});
  NmsOptions o;
  o.score_threshold = 0.3;  // strictly above: 0.4 .. 0.9 (0.30000001 for i = 3 is above too in float)
  auto d = a.nms(o);
  ASSERT_GE(d.size(), 6u);
  EXPECT_FLOAT_EQ(d.front().score, 0.9f);
  for (std::size_t i = 1; i < d.size(); ++i) EXPECT_GT(d[i - 1].score, d[i].score);
  o.score_threshold = 0.35;
  EXPECT_EQ(a.nms(o).size(), 6u);
  o.max_detections = 2;
  d = a.nms(o);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_FLOAT_EQ(d[1].score, 0.8f);
  o.max_detections = 100;
  o.candidates_per_class = 3;  // only the 3 best enter NMS
  EXPECT_EQ(a.nms(o).size(), 3u);
  // The background (class 0) is never detected however high it scores.
  Anchors bg{2, {}, {}};
  bg.add({0, 0, 1, 1}, {1.f, 0.f});
  EXPECT_TRUE(bg.nms(NmsOptions{}).empty());
}

TEST(NonMaxSuppression, TiesGoToTheLowerAnchorAndZeroAreaBoxesNeverSuppress) {
  Anchors a{2, {}, {}};
  a.add({0, 0, 10, 10}, {0.f, 0.5f});
  a.add({0, 0, 10, 10}, {0.f, 0.5f});  // the same box, the same score: the first anchor wins
  a.add({5, 5, 5, 5}, {0.f, 0.5f});    // zero area: IoU 0 with everything
  const auto d = a.nms(NmsOptions{});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].x2, 10.f);
  EXPECT_EQ(d[1].x1, 5.f);
}

TEST(SegmentationMask, ArgmaxRunsAndClassPixels) {
  // 3 classes over a 2x3 image; plane c holds class c's scores. Pixel classes: 0 0 2 / 2 1 1; ties to the lower.
  const std::vector<float> logits = {
      5, 5, 0, 0, 0, 0,  // class 0
      1, 5, 0, 0, 9, 9,  // class 1 (pixel 1 ties with class 0)
      0, 0, 1, 1, 0, 0,  // class 2
  };
  const SegmentationMask m = argmax_mask(logits.data(), 3, 2, 3);
  EXPECT_EQ(m.height, 2);
  EXPECT_EQ(m.width, 3);
  EXPECT_EQ(m.runs, (std::vector<std::int32_t>{0, 2, 2, 2, 1, 2}));
  EXPECT_EQ(mask_class_pixels(m, 4), (std::vector<std::int64_t>{2, 2, 2, 0}));
  SegmentationMask bad = m;
  bad.runs.back() = 3;  // 7 pixels in a 2x3 mask
  EXPECT_THROW(mask_class_pixels(bad), std::invalid_argument);
  bad.runs = {0, 6, 1};
  EXPECT_THROW(mask_class_pixels(bad), std::invalid_argument);
  bad.runs = {-1, 6};
  EXPECT_THROW(mask_class_pixels(bad), std::invalid_argument);
}

Tensor floats(std::vector<std::int64_t> shape, std::vector<float> data, std::string name = "") {
  Tensor t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  t.name = std::move(name);
  return t;
}

OutputSpec output(std::string type, std::vector<ProcessingStep> steps, std::string name = "out") {
  OutputSpec o;
  o.name = std::move(name);
  o.type = std::move(type);
  o.steps = std::move(steps);
  return o;
}

ProcessingStep step(std::string op, std::map<std::string, std::string> params = {}) {
  ProcessingStep s;
  s.op = std::move(op);
  s.params = std::move(params);
  return s;
}

TEST(TaskPostprocessor, DetectionFindsBoxesAndScoresByNameAndFillsClassScores) {
  const TaskPostprocessor post(output(
      "detection", {step("nms", {{"iou_threshold", "0.5"}, {"score_threshold", "0.1"}, {"max_detections", "10"}})}));
  // Two inputs, two anchors, three classes; dict order scores first, so names must decide.
  Tensor scores = floats({2, 2, 3},
                         {0, 0.2f, 0.9f, 0, 0.5f, 0,  //
                          1, 0, 0, 1, 0, 0},
                         "scores");
  Tensor boxes = floats({2, 2, 4},
                        {0, 0, 4, 4, 10, 10, 20, 20,  //
                         0, 0, 1, 1, 0, 0, 1, 1},
                        "boxes");
  const auto p = post.run({scores, boxes}, {"a.jpg", "b.jpg"});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].input_id, "a.jpg");
  ASSERT_EQ(p[0].detections.size(), 3u);
  EXPECT_EQ(p[0].detections[0], (Detection{0, 0, 4, 4, 0.9f, 2}));
  EXPECT_EQ(p[0].detections[1], (Detection{10, 10, 20, 20, 0.5f, 1}));
  EXPECT_EQ(p[0].detections[2], (Detection{0, 0, 4, 4, 0.2f, 1}));
  EXPECT_EQ(p[0].top_classes, (std::vector<int>{2, 1}));
  EXPECT_EQ(p[0].probabilities, (std::vector<float>{0, 0.5f, 0.9f}));
  EXPECT_TRUE(p[1].detections.empty());  // background only
  EXPECT_TRUE(p[1].top_classes.empty());
  // Unnamed outputs: boxes first, then scores.
  boxes.name = scores.name = "";
  EXPECT_EQ(post.run({boxes, scores}, {"a.jpg"})[0].detections.size(), 3u);
  EXPECT_THROW(post.run({scores, boxes}, {}), std::invalid_argument);  // [2,2,3] is no box tensor
  EXPECT_THROW(post.run({boxes}, {}), std::invalid_argument);
}

TEST(TaskPostprocessor, SegmentationTakesTheNamedOutputAndFractionsSumToOne) {
  const TaskPostprocessor post(output("segmentation", {step("argmax", {{"axis", "0"}})}, "out"));
  Tensor aux = floats({1, 2, 1, 2}, {9, 9, 0, 0}, "aux");
  Tensor out = floats({1, 2, 1, 2}, {0, 1, 1, 0}, "out");  // pixel 0 class 1, pixel 1 class 0
  const auto p = post.run({aux, out}, {"x"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].mask, (SegmentationMask{1, 2, {1, 1, 0, 1}}));
  EXPECT_EQ(p[0].probabilities, (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(p[0].top_classes, (std::vector<int>{0, 1}));
  EXPECT_THROW(post.run({floats({1, 2, 2}, {0, 0, 0, 0})}, {}), std::invalid_argument);
  EXPECT_THROW(TaskPostprocessor(output("segmentation", {step("argmax", {{"axis", "1"}})})), std::invalid_argument);
  EXPECT_THROW(TaskPostprocessor(output("generation", {})), std::invalid_argument);
}

TEST(TaskPostprocessor, TextClassificationSoftmaxAndTopK) {
  const TaskPostprocessor post(output("text_classification", {step("softmax"), step("top_k", {{"k", "2"}})}));
  const auto p = post.run({floats({1, 3}, {0.f, std::log(3.f), 0.f})}, {"text:0"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].top_classes, (std::vector<int>{1, 0}));  // ties to the lower class
  EXPECT_NEAR(p[0].probabilities[1], 0.6, 1e-6);
  EXPECT_NEAR(p[0].probabilities[0], 0.2, 1e-6);
  EXPECT_THROW(post.run({floats({3}, {0, 0, 0})}, {}), std::invalid_argument);
}

Manifest text_manifest(const std::string& pad_side) {
  Manifest m;
  m.path = "bert.yaml";
  InputSpec ids;
  ids.name = "input_ids";
  ids.type = "text";
  ids.element_type = "int64";
  ids.dimensions = {6};
  ids.steps = {step("tokenize", {{"add_bos", "true"}}),
               step("pad_truncate", {{"length", "6"}, {"side", pad_side}, {"pad_id", "3"}})};
  InputSpec mask;
  mask.name = "attention_mask";
  mask.type = "tensor";
  mask.element_type = "int64";
  mask.dimensions = {6};
  m.inputs = {ids, mask};
  m.outputs = {output("text_classification", {})};
  return m;
}

TEST(TextBatcher, PadsCutsAndMasksOnTheConfiguredSide) {
  if (!have_tokenizer()) GTEST_SKIP() << "XSP was built without SentencePiece";
  const Tokenizer tok = Tokenizer::load(std::filesystem::path(XSP_SOURCE_DIR) / "tests/fixtures/text/tiny.model");
  const std::string short_text = "the";
  const std::string long_text = "the licence of the program and the software that you received with it";
  const auto short_ids = tok.encode(short_text, true, false);
  const auto long_ids = tok.encode(long_text, true, false);
  ASSERT_LT(short_ids.size(), 6u);
  ASSERT_GT(long_ids.size(), 6u);
  {
    const TextBatcher b(text_manifest("right"), tok);
    const auto t = b.run({short_text, long_text});
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].name, "input_ids");
    EXPECT_EQ(t[1].name, "attention_mask");
    EXPECT_TRUE(t[0].is_int());
    EXPECT_EQ(t[0].shape, (std::vector<std::int64_t>{2, 6}));
    std::vector<std::int64_t> row0(t[0].int_data.begin(), t[0].int_data.begin() + 6);
    std::vector<std::int64_t> want = short_ids;
    want.resize(6, 3);
    EXPECT_EQ(row0, want);
    EXPECT_TRUE(std::equal(long_ids.begin(), long_ids.begin() + 6, t[0].int_data.begin() + 6));  // first 6 kept
    const std::size_t n = short_ids.size();
    for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(t[1].int_data[i], i < n ? 1 : 0) << i;
    for (std::size_t i = 6; i < 12; ++i) EXPECT_EQ(t[1].int_data[i], 1);
  }
  {
    const TextBatcher b(text_manifest("left"), tok);
    const auto t = b.run({short_text, long_text});
    const std::size_t n = short_ids.size();
    EXPECT_TRUE(std::equal(short_ids.begin(), short_ids.end(), t[0].int_data.begin() + static_cast<long>(6 - n)));
    EXPECT_TRUE(std::equal(long_ids.end() - 6, long_ids.end(), t[0].int_data.begin() + 6));  // last 6 kept
    for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(t[1].int_data[i], i >= 6 - n ? 1 : 0) << i;
  }
  Manifest bad = text_manifest("right");
  bad.inputs[1].name = "pixel_values";
  EXPECT_THROW(TextBatcher(bad, tok), std::invalid_argument);
  bad = text_manifest("right");
  bad.inputs[1].dimensions = {7};
  EXPECT_THROW(TextBatcher(bad, tok), std::invalid_argument);
  bad = text_manifest("right");
  bad.inputs[1].element_type = "float32";
  EXPECT_THROW(TextBatcher(bad, tok), std::invalid_argument);
  EXPECT_THROW(TextBatcher(text_manifest("right"), tok).run({}), std::invalid_argument);
}

TEST(TaskPipeline, WhichManifestsUseIt) {
  Manifest m = text_manifest("right");
  EXPECT_TRUE(uses_task_pipeline(m));
  m.inputs.resize(1);
  m.inputs[0].type = "image";
  m.outputs[0].type = "classification";
  EXPECT_FALSE(uses_task_pipeline(m));
  m.outputs[0].type = "detection";
  EXPECT_TRUE(uses_task_pipeline(m));
}

}  // namespace
}  // namespace xsp
