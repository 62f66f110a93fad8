#include "xsp/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace fs = std::filesystem;
using namespace xsp;

namespace {

ProcessingStep step(std::string op, std::map<std::string, std::string> params = {},
                    std::map<std::string, std::vector<double>> lists = {}) {
  ProcessingStep s;
  s.op = std::move(op);
  s.params = std::move(params);
  s.list_params = std::move(lists);
  return s;
}

InputSpec imagenet_spec() {
  InputSpec spec;
  spec.type = "image";
  spec.element_type = "float32";
  spec.layout = "NCHW";
  spec.color_mode = "RGB";
  spec.dimensions = {3, 224, 224};
  spec.steps = {
      step("decode"), step("resize", {{"shorter_side", "256"}, {"method", "bilinear"}}),
      step("center_crop", {{"size", "224"}}),
      step("normalize", {{"scale", "255"}}, {{"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}})};
  return spec;
}

fs::path images_dir() { return fs::path(XSP_SOURCE_DIR) / "data" / "images"; }

#ifdef XSP_WITH_OPENCV
#define REQUIRE_DECODER()
#else
#define REQUIRE_DECODER() GTEST_SKIP() << "built without OpenCV"
#endif

}  // namespace

TEST(Pipeline, ListsTheShippedPhotographsSorted) {
  const auto files = list_images(images_dir());
  ASSERT_EQ(files.size(), 5u);
  EXPECT_EQ(files.front().filename(), "astronaut.jpg");
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
}

TEST(Pipeline, MissingOrEmptyInputFolderIsAnError) {
  EXPECT_THROW(list_images("/nonexistent/xsp"), std::runtime_error);
  const auto empty = fs::temp_directory_path() / "xsp-empty-inputs";
  fs::create_directories(empty);
  try {
    list_images(empty);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no image"), std::string::npos);
  }
}

TEST(Pipeline, PreprocessesRealPhotographsToNormalizedNCHW) {
  REQUIRE_DECODER();
  const auto files = list_images(images_dir());
  std::vector<EncodedInput> batch{read_input(files[0]), read_input(files[1])};
  const Preprocessor pre(imagenet_spec());
  const Tensor t = pre.run(batch);
  ASSERT_EQ(t.shape, (std::vector<std::int64_t>{2, 3, 224, 224}));
  ASSERT_EQ(t.data.size(), 2u * 3 * 224 * 224);
  // Normalized values of 8-bit pixels lie in [(0 - mean)/std, (1 - mean)/std] per channel.
  const double lo = (0 - 0.485) / 0.229 - 1e-4, hi = (1 - 0.406) / 0.225 + 1e-4;
  double sum = 0;
  for (float v : t.data) {
    ASSERT_GE(v, lo);
    ASSERT_LE(v, hi);
    sum += v;
  }
  // A real photograph is not constant: values spread over a good part of the range.
  const auto [mn, mx] = std::minmax_element(t.data.begin(), t.data.end());
  EXPECT_GT(*mx - *mn, 3.0f);
}

TEST(Pipeline, NormalizeMatchesTheFormulaOnAKnownPixel) {
  REQUIRE_DECODER();
  // A 4x4 image with one colour (R=255, G=0, B=51) survives resize/crop unchanged in colour.
  InputSpec spec = imagenet_spec();
  spec.dimensions = {3, 2, 2};
  spec.steps = {step("decode"), step("resize", {{"shorter_side", "2"}}), step("center_crop", {{"size", "2"}}),
                step("normalize", {{"scale", "255"}}, {{"mean", {0.5, 0.5, 0.5}}, {"std", {0.25, 0.5, 1.0}}})};
  // BMP of 4x4 pixels written by hand: BGR bytes, rows bottom-up, 12 bytes per row (no padding needed).
  std::vector<std::uint8_t> bmp = {'B', 'M'};
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bmp.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  auto u16 = [&](std::uint16_t v) {
    for (int i = 0; i < 2; ++i) bmp.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  u32(54 + 48);
  u32(0);
  u32(54);
  u32(40);
  u32(4);
  u32(4);
  u16(1);
  u16(24);
  u32(0);
  u32(48);
  u32(2835);
  u32(2835);
  u32(0);
  u32(0);
  for (int p = 0; p < 16; ++p) {
    bmp.push_back(51);
    bmp.push_back(0);
    bmp.push_back(255);
  }
  const Tensor t = Preprocessor(spec).run({EncodedInput{"red.bmp", bmp}});
  ASSERT_EQ(t.shape, (std::vector<std::int64_t>{1, 3, 2, 2}));
  EXPECT_NEAR(t.data[0], (1.0 - 0.5) / 0.25, 1e-5);        // R plane
  EXPECT_NEAR(t.data[4], (0.0 - 0.5) / 0.5, 1e-5);         // G plane
  EXPECT_NEAR(t.data[8], (51 / 255.0 - 0.5) / 1.0, 1e-5);  // B plane
}

TEST(Pipeline, ShapeMismatchAfterStepsNamesTheInput) {
  REQUIRE_DECODER();
  InputSpec spec = imagenet_spec();
  spec.steps.erase(spec.steps.begin() + 2);  // no center crop: 256 x 341 is not 224 x 224
  const auto files = list_images(images_dir());
  try {
    Preprocessor(spec).run({read_input(files[2])});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(files[2].filename().string()), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("3x224x224"), std::string::npos);
  }
}

TEST(Pipeline, UndecodableInputIsAnError) {
  REQUIRE_DECODER();
  EXPECT_THROW(Preprocessor(imagenet_spec()).run({EncodedInput{"junk.jpg", {1, 2, 3}}}), std::runtime_error);
}

TEST(Pipeline, SoftmaxTopKWithLabels) {
  OutputSpec spec;
  spec.type = "classification";
  spec.steps = {step("softmax"), step("top_k", {{"k", "2"}})};
  const Postprocessor post(spec, {"a", "b", "c"});
  Tensor logits{{2, 3}, {0.f, std::log(2.f), std::log(7.f), 5.f, 5.f, 1.f}};
  const auto out = post.run(logits, {"x", "y"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].top_classes, (std::vector<int>{2, 1}));
  EXPECT_NEAR(out[0].top_probabilities[0], 0.7, 1e-6);  // e^ln7 / (1 + 2 + 7)
  EXPECT_NEAR(out[0].top_probabilities[1], 0.2, 1e-6);
  EXPECT_EQ(out[0].top_labels, (std::vector<std::string>{"c", "b"}));
  // Ties keep the lower class index first.
  EXPECT_EQ(out[1].top_classes, (std::vector<int>{0, 1}));
  EXPECT_EQ(out[1].input_id, "y");
}

TEST(Pipeline, SyntheticBatchIsSeededStandardNormal) {
  const Tensor a = synthetic_batch({3, 8, 8}, 4, 42), b = synthetic_batch({3, 8, 8}, 4, 42);
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(a.data, b.data);
  const double mean = std::accumulate(a.data.begin(), a.data.end(), 0.0) / a.data.size();
  EXPECT_NEAR(mean, 0.0, 0.15);
}
