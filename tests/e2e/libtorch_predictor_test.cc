// End-to-end tests of the LibTorch predictor and its RecordFunction framework profiler on resnet18
// (TorchScript, exported into XSP_TEST_ZOO by the export_test_zoo fixture).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"
#include "xsp/predictors/libtorch.h"
#include "xsp/trace/trace.h"

namespace xsp {
namespace {

const std::filesystem::path kManifest = std::filesystem::path(XSP_TEST_ZOO) / "resnet18.yaml";

class LibTorchPredictorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kManifest) ||
        !std::filesystem::exists(std::filesystem::path(XSP_TEST_ZOO) / "resnet18.pt"))
      GTEST_SKIP() << "no exported resnet18 in " << XSP_TEST_ZOO << " (run scripts/export_zoo.py)";
    register_libtorch_predictor();
    manifest_ = load_manifest(kManifest);
    predictor_ = create_predictor("libtorch");
    predictor_->load(manifest_, DeviceSpec{});
  }

  static Tensor input(std::int64_t batch) {
    Tensor t;
    t.shape = {batch, 3, 224, 224};
    t.data.resize(static_cast<std::size_t>(t.numel()));
    // Every sample is the same image, so each sample's logits must be equal.
    const std::size_t per_sample = t.data.size() / static_cast<std::size_t>(batch);
    for (std::size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = static_cast<float>((i % per_sample) % 255) / 255.0f - 0.5f;
    return t;
  }

  Manifest manifest_;
  std::unique_ptr<Predictor> predictor_;
};

TEST_F(LibTorchPredictorTest, NameAndVersion) {
  EXPECT_EQ(predictor_->framework_name(), "libtorch");
  EXPECT_EQ(predictor_->framework_version().rfind("1.", 0), 0u) << predictor_->framework_version();
  EXPECT_NE(predictor_->framework_profiler(), nullptr);
}

TEST_F(LibTorchPredictorTest, PredictBatchOfTwo) {
  const Tensor out = predictor_->predict(input(2));
  ASSERT_EQ(out.shape, (std::vector<std::int64_t>{2, 1000}));
  ASSERT_EQ(out.data.size(), 2000u);
  EXPECT_TRUE(std::all_of(out.data.begin(), out.data.end(), [](float v) { return std::isfinite(v); }));
  // Batching must not mix samples up.
  for (int i = 0; i < 1000; ++i) EXPECT_NEAR(out.data[i], out.data[1000 + i], 1e-3f);
}

TEST_F(LibTorchPredictorTest, WrongShapeIsInvalidArgument) {
  Tensor t;
  t.shape = {1, 3, 100, 100};
  t.data.resize(static_cast<std::size_t>(t.numel()));
  try {
    predictor_->predict(t);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[N,3,224,224]"), std::string::npos) << what;
    EXPECT_NE(what.find("[1,3,100,100]"), std::string::npos) << what;
  }
  t.shape = {3, 224, 224};  // batch dimension missing
  t.data.resize(static_cast<std::size_t>(t.numel()));
  EXPECT_THROW(predictor_->predict(t), std::invalid_argument);
}

TEST_F(LibTorchPredictorTest, MissingFileNamesTheFile) {
  Manifest m = manifest_;
  m.graph_for("libtorch").graph_path = "/nonexistent/dir/missing_model.pt";
  auto p = create_predictor("libtorch");
  try {
    p->load(m, DeviceSpec{});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/missing_model.pt"), std::string::npos) << e.what();
  }
}

TEST_F(LibTorchPredictorTest, NotAModelNamesTheFile) {
  Manifest m = manifest_;
  m.graph_for("libtorch").graph_path = kManifest.string();  // a YAML file, not a TorchScript archive
  auto p = create_predictor("libtorch");
  try {
    p->load(m, DeviceSpec{});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(kManifest.string()), std::string::npos) << e.what();
  }
}

TEST_F(LibTorchPredictorTest, FrameworkProfilerSpans) {
  const Tensor x = input(1);
  // The profiling graph executor specializes the graph after its first runs: profile a warm module.
  for (int i = 0; i < 3; ++i) predictor_->predict(x);

  TraceRecorder rec;
  const SpanId predict_a = rec.next_id();
  const SpanId predict_b = rec.next_id();
  FrameworkProfiler* prof = predictor_->framework_profiler();
  prof->start(rec, predict_a);
  EXPECT_THROW(prof->start(rec, predict_a), std::logic_error);
  const std::int64_t t0 = now_ns();
  predictor_->predict(x);
  const std::int64_t t1 = now_ns();
  prof->set_parent(predict_b);
  predictor_->predict(x);
  prof->stop();
  Trace trace = rec.take();

  ASSERT_FALSE(trace.spans.empty());
  EXPECT_EQ(trace.counters["framework.dropped_spans"], 0u);
  std::set<SpanId> ids;
  for (const Span& s : trace.spans) ids.insert(s.id);
  std::map<SpanId, int> top_convs;
  std::int64_t top_sum_a = 0;
  const Span* conv1 = nullptr;
  bool saw_layer1_0_conv1 = false;
  for (const Span& s : trace.spans) {
    EXPECT_EQ(s.level, Level::kFramework);
    EXPECT_GE(s.end_ns, s.start_ns);
    const bool top = s.parent_id == predict_a || s.parent_id == predict_b;
    EXPECT_TRUE(top || (ids.count(s.parent_id) && s.parent_id != s.id)) << s.name << " parent " << s.parent_id;
    EXPECT_EQ(s.parent_rule, ParentRule::kContext) << s.name;
    if (s.parent_id == predict_a) top_sum_a += s.duration_ns();
    if (top && s.name == "aten::conv2d") {
      ++top_convs[s.parent_id];
      EXPECT_EQ(s.tag("module_type").value_or(""), "Conv2d");
      if (s.tag("module") == "conv1" && s.parent_id == predict_a) conv1 = &s;
      if (s.tag("module") == "layer1.0.conv1") {
        saw_layer1_0_conv1 = true;
        // Output 1x64x56x56 floats = 802816 bytes (plus whatever scratch oneDNN takes).
        EXPECT_GE(s.tag_int("allocated_bytes").value_or(0), 64 * 56 * 56 * 4);
        if (s.parent_id == predict_a)
          std::printf("[ info ] layer1.0.conv1 allocated_bytes=%s shapes=%s\n",
                      std::string(s.tag("allocated_bytes").value_or("")).c_str(),
                      std::string(s.tag("shapes").value_or("")).c_str());
      }
    }
  }
  // resnet18: stem conv1 + 4 stages x 2 BasicBlocks x 2 convs + 3 downsample convs = 1 + 16 + 3 = 20.
  EXPECT_EQ(top_convs[predict_a], 20);
  EXPECT_EQ(top_convs[predict_b], 20);
  ASSERT_NE(conv1, nullptr);
  EXPECT_TRUE(saw_layer1_0_conv1);
  EXPECT_EQ(conv1->tag("shapes").value_or("").rfind("[1,3,224,224],[64,3,7,7]", 0), 0u)
      << conv1->tag("shapes").value_or("");
  // Its output alone is 1x64x112x112 floats.
  EXPECT_GE(conv1->tag_int("allocated_bytes").value_or(0), 64 * 112 * 112 * 4);

  // Top-level ops should cover nearly all of the forward; the rest is interpreter and predictor overhead.
  const double coverage = static_cast<double>(top_sum_a) / static_cast<double>(t1 - t0);
  std::printf("[ info ] top-level op time / predict wall time = %.3f (%.2f ms / %.2f ms), %zu spans\n", coverage,
              top_sum_a / 1e6, (t1 - t0) / 1e6, trace.spans.size());
  EXPECT_GE(coverage, 0.8);
}

TEST_F(LibTorchPredictorTest, ProfilerStopsCleanly) {
  FrameworkProfiler* prof = predictor_->framework_profiler();
  TraceRecorder rec;
  prof->start(rec, rec.next_id());
  prof->stop();
  prof->stop();                   // idempotent
  predictor_->predict(input(1));  // not recorded after stop
  Trace trace = rec.take();
  EXPECT_TRUE(trace.spans.empty());
  // A second session works and records again.
  TraceRecorder rec2;
  prof->start(rec2, rec2.next_id());
  predictor_->predict(input(1));
  prof->stop();
  EXPECT_FALSE(rec2.take().spans.empty());
}

}  // namespace
}  // namespace xsp
