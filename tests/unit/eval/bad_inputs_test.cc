// Issue 12, defect 10: a folder with an empty and a truncated image. The evaluation finds them before its first
// batch (the fake clock has not moved: nothing was predicted) and stops naming the file, or with skip_bad_inputs
// leaves them out, measures the good ones and records what it left out and why. A scenario does the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "fake_clock.h"
#include "fake_model.h"
#include "run_helpers.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

#ifdef XSP_WITH_OPENCV
Manifest image_manifest() {
  Manifest m = testing::fake_manifest();
  InputSpec& in = m.inputs.front();
  in.type = "image";
  in.color_mode = "RGB";
  in.dimensions = {3, 8, 8};
  ProcessingStep decode, resize, crop;
  decode.op = "decode";
  resize.op = "resize";
  resize.params["shorter_side"] = "8";
  crop.op = "center_crop";
  crop.params["size"] = "8";
  in.steps = {decode, resize, crop};
  return m;
}

class BadInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xsp-bad-inputs-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const fs::path images = fs::path(XSP_SOURCE_DIR) / "data" / "images";
    fs::copy_file(images / "astronaut.jpg", dir_ / "a_good.jpg");
    fs::copy_file(images / "chelsea.jpg", dir_ / "b_good.jpg");
    std::ifstream in(images / "coffee.jpg", std::ios::binary);
    const std::string whole{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::ofstream(dir_ / "c_cut.jpg", std::ios::binary) << whole.substr(0, whole.size() / 2);
    std::ofstream(dir_ / "d_empty.jpg", std::ios::binary).flush();
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunPlan plan(bool skip) const {
    RunPlan o;
    o.inputs.images_dir = dir_;
    o.inputs.skip_bad_inputs = skip;
    o.sweep.store_predictions = true;
    o.measurement.warmup_min_batches = 1;
    o.measurement.warmup_min_ms = o.measurement.warmup_max_ms = 0;
    o.measurement.min_batches = 4;
    o.measurement.min_duration_ms = o.measurement.max_duration_ms = 0;
    return o;
  }
  EvaluationRecord run(Predictor& predictor, bool skip) {
    return testing::sweep(image_manifest(), predictor, plan(skip), testing::quiet_session(&clock_));
  }

  fs::path dir_;
  testing::FakeClock clock_;
};

TEST_F(BadInputs, TheFirstBadFileStopsTheEvaluationBeforeItsFirstBatch) {
  testing::FakePredictor predictor(clock_, {});
  const std::int64_t before = clock_.now_ns();
  try {
    run(predictor, false);
    FAIL() << "a truncated input was measured";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find((dir_ / "c_cut.jpg").string() + ": input c_cut.jpg: truncated JPEG"), std::string::npos) << m;
    EXPECT_NE(m.find("found before measuring"), std::string::npos) << m;
    EXPECT_NE(m.find("--skip-bad-inputs"), std::string::npos) << m;
  }
  EXPECT_EQ(clock_.now_ns(), before) << "a batch was predicted before the bad input was found";
}

TEST_F(BadInputs, SkippedFilesAreLeftOutCountedAndNamedWithTheirReason) {
  testing::FakePredictor predictor(clock_, {});
  const EvaluationRecord r = run(predictor, true);
  EXPECT_EQ(r.status, "complete");
  EXPECT_EQ(r.settings["input_count"], 2);
  EXPECT_EQ(r.settings["inputs_skipped_count"], 2);
  const auto& skipped = r.settings["inputs_skipped"];
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0]["file"], (dir_ / "c_cut.jpg").string());
  EXPECT_NE(skipped[0]["reason"].get<std::string>().find("truncated JPEG"), std::string::npos);
  EXPECT_EQ(skipped[1]["file"], (dir_ / "d_empty.jpg").string());
  EXPECT_NE(skipped[1]["reason"].get<std::string>().find("is empty (0 bytes)"), std::string::npos);
  // Only the good files were fed: the stored predictions name nothing else.
  ASSERT_EQ(r.runs.size(), 1u);
  std::set<std::string> fed;
  for (const auto& p : r.runs[0].predictions) fed.insert(p.input_id);
  EXPECT_EQ(fed, (std::set<std::string>{"a_good.jpg", "b_good.jpg"}));
}

TEST_F(BadInputs, AFolderOfOnlyBadFilesIsAnErrorEvenWhenSkipping) {
  fs::remove(dir_ / "a_good.jpg");
  fs::remove(dir_ / "b_good.jpg");
  testing::FakePredictor predictor(clock_, {});
  try {
    run(predictor, true);
    FAIL() << "ran without a usable input";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable input: all 2 files were left out"), std::string::npos) << e.what();
  }
}

TEST_F(BadInputs, ScenariosScreenTheirSampleLibraryToo) {
  testing::FakePredictor predictor(clock_, {});
  RunPlan o;
  o.scenario.settings.scenario = loadgen::Scenario::kOffline;
  o.scenario.settings.min_query_count = 1;
  o.scenario.settings.min_duration_ms = 0;
  o.inputs.synthetic = false;
  o.inputs.images_dir = dir_;
  const auto run = [&] { return testing::scenario(image_manifest(), predictor, o, testing::quiet_session(&clock_)); };
  EXPECT_THROW(run(), std::runtime_error);
  o.inputs.skip_bad_inputs = true;
  o.inputs.max_batch_bytes = 100;  // the 4-image library of 3x8x8 floats needs 3072 bytes
  try {
    run();
    FAIL() << "a library over max_batch_bytes was allocated";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3072 bytes, more than the limit of 100 bytes"), std::string::npos)
        << e.what();
  }
  o.inputs.max_batch_bytes = kDefaultMaxBatchBytes;
  const EvaluationRecord r = run();
  EXPECT_EQ(r.settings["input_count"], 2);
  EXPECT_EQ(r.settings["inputs_skipped_count"], 2);
}
#endif

TEST(BatchBytes, SyntheticBatchesFollowTheRaisedOrLoweredLimit) {
  testing::FakeClock clock;
  testing::FakePredictor predictor(clock, {});
  RunPlan o;
  o.inputs.synthetic = true;
  o.batch_sizes = {8};  // 8 x 4 floats = 128 bytes
  o.measurement.warmup_min_batches = 1;
  o.measurement.warmup_min_ms = o.measurement.warmup_max_ms = 0;
  o.measurement.min_batches = 1;
  o.measurement.min_duration_ms = o.measurement.max_duration_ms = 0;
  o.inputs.max_batch_bytes = 127;
  const auto run = [&] {
    return testing::sweep(testing::fake_manifest(), predictor, o, testing::quiet_session(&clock));
  };
  try {
    run();
    FAIL() << "a batch over max_batch_bytes was allocated";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("128 bytes, more than the limit of 127 bytes"), std::string::npos) << e.what();
  }
  o.inputs.max_batch_bytes = 128;
  EXPECT_EQ(run().runs.size(), 1u);
}

}  // namespace
}  // namespace xsp
