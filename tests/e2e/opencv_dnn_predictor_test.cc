// End-to-end tests of the OpenCV DNN predictor against the LibTorch predictor on the same weights (the test zoo's
// resnet18 and mobilenet_v2, exported to TorchScript and ONNX from one instance by export_test_zoo), on the five
// real photographs of data/images; then `xsp evaluate` on both frameworks and `xsp compare`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "e2e_shell.h"
#include "xsp/analysis/compare.h"
#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/predictor/predictor.h"
#include "xsp/predictors/libtorch.h"
#include "xsp/predictors/opencv_dnn.h"
#include "xsp/store/store.h"
#include "xsp/trace/trace.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

const fs::path kZoo = XSP_TEST_ZOO;
const fs::path kImages = fs::path(XSP_SOURCE_DIR) / "data" / "images";

std::vector<float> softmax_row(const Tensor& logits, std::size_t row) {
  const std::size_t classes = static_cast<std::size_t>(logits.shape[1]);
  const float* x = logits.data.data() + row * classes;
  const float mx = *std::max_element(x, x + classes);
  double sum = 0;
  std::vector<double> e(classes);
  for (std::size_t c = 0; c < classes; ++c) sum += e[c] = std::exp(static_cast<double>(x[c]) - mx);
  std::vector<float> p(classes);
  for (std::size_t c = 0; c < classes; ++c) p[c] = static_cast<float>(e[c] / sum);
  return p;
}

int argmax_row(const Tensor& t, std::size_t row) {
  const std::size_t classes = static_cast<std::size_t>(t.shape[1]);
  const float* x = t.data.data() + row * classes;
  return static_cast<int>(std::max_element(x, x + classes) - x);
}

/// Both predictors loaded with one zoo model, and the five images pre-processed as one batch.
class TwoFrameworks : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const fs::path manifest_file = kZoo / (std::string(GetParam()) + ".yaml");
    if (!fs::exists(manifest_file)) GTEST_SKIP() << "no " << manifest_file << " (run scripts/export_zoo.py)";
    register_libtorch_predictor();
    register_opencv_dnn_predictor();
    manifest_ = load_manifest(manifest_file);
    for (const char* fw : {"libtorch", "opencv-dnn"}) verify_checksum(manifest_, fw);
    torch_ = create_predictor("libtorch");
    torch_->load(manifest_, DeviceSpec{});
    cv_ = create_predictor("opencv-dnn");
    cv_->load(manifest_, DeviceSpec{});
    std::vector<EncodedInput> inputs;
    for (const auto& f : list_images(kImages)) inputs.push_back(read_input(f));
    ASSERT_EQ(inputs.size(), 5u);
    for (const auto& in : inputs) ids_.push_back(in.id);
    batch_ = Preprocessor(manifest_.inputs[0]).run(inputs);
  }

  Tensor sample(std::size_t i) const {
    Tensor t;
    t.shape = batch_.shape;
    t.shape[0] = 1;
    const std::size_t n = batch_.data.size() / static_cast<std::size_t>(batch_.shape[0]);
    t.data.assign(batch_.data.begin() + static_cast<std::ptrdiff_t>(i * n),
                  batch_.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
    return t;
  }

  Manifest manifest_;
  std::unique_ptr<Predictor> torch_, cv_;
  Tensor batch_;
  std::vector<std::string> ids_;
};

TEST_P(TwoFrameworks, SameTop1AndCloseProbabilitiesOnRealImages) {
  EXPECT_EQ(cv_->framework_name(), "opencv-dnn");
  EXPECT_EQ(cv_->framework_version().rfind("4.", 0), 0u) << cv_->framework_version();
  // The whole batch of 5 at once: OpenCV runs N = 5 from the static batch-1 ONNX export.
  const Tensor lt = torch_->predict(batch_);
  const Tensor cv = cv_->predict(batch_);
  ASSERT_EQ(lt.shape, (std::vector<std::int64_t>{5, 1000}));
  ASSERT_EQ(cv.shape, lt.shape);
  double max_dp = 0, max_dlogit = 0, max_logit = 0, sum_js = 0;
  int undecidable = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(ids_[i]);
    // Top-1 must agree wherever the weights decide it: when LibTorch's top-1/top-2 logit margin exceeds 10x the
    // frameworks' largest logit difference on that input. Random-init MobileNetV2's logits collapse to ~1e-9
    // (margins ~1e-15), where argmax is decided by summation order, not by the weights: counted, not compared.
    std::vector<float> row(lt.data.begin() + static_cast<std::ptrdiff_t>(i * 1000),
                           lt.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * 1000));
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<>());
    double row_dlogit = 0;
    for (std::size_t c = 0; c < 1000; ++c)
      row_dlogit = std::max(row_dlogit, static_cast<double>(std::abs(lt.data[i * 1000 + c] - cv.data[i * 1000 + c])));
    if (row[0] - row[1] > 10 * row_dlogit)
      EXPECT_EQ(argmax_row(cv, i), argmax_row(lt, i));
    else
      ++undecidable;
    const auto p = softmax_row(lt, i), q = softmax_row(cv, i);
    for (std::size_t c = 0; c < 1000; ++c) {
      max_dp = std::max(max_dp, static_cast<double>(std::abs(p[c] - q[c])));
      max_dlogit = std::max(max_dlogit, static_cast<double>(std::abs(lt.data[i * 1000 + c] - cv.data[i * 1000 + c])));
      max_logit = std::max(max_logit, static_cast<double>(std::abs(lt.data[i * 1000 + c])));
    }
    sum_js += js_divergence(p, q);
  }
  std::printf(
      "[ info ] %s: max |dp| = %.3g, max |dlogit| = %.3g (max |logit| %.3g), mean JS = %.3g nats, "
      "top-1 undecidable on %d of 5\n",
      GetParam(), max_dp, max_dlogit, max_logit, sum_js / 5, undecidable);
  // ResNet-18's logits (|logit| up to ~7) decide top-1 on every image.
  if (std::string(GetParam()) == "resnet18") EXPECT_EQ(undecidable, 0);
  // Measured on this machine (OpenCV 4.6 vs LibTorch 1.13, float32, CPU, resnet18): max |dp| 4.6e-7, max |dlogit|
  // 6.2e-6, mean JS 1.3e-13 nats; the bounds leave >= 20x room for other CPUs' summation orders.
  EXPECT_LT(max_dp, 1e-5);
  EXPECT_LT(max_dlogit, 1e-3);
  EXPECT_LT(sum_js / 5, 1e-9);

  // Batch of 1 gives the same logits as the row of the batch of 5 (no sample mix-up in OpenCV's batching).
  const Tensor one = cv_->predict(sample(3));
  for (std::size_t c = 0; c < 1000; ++c) EXPECT_NEAR(one.data[c], cv.data[3 * 1000 + c], 1e-4f);
}

struct Expected {
  std::size_t layers;        // layers OpenCV reports
  std::size_t spans;         // layers that ran (not fused) = FRAMEWORK spans per forward
  std::size_t convolutions;  // Convolution spans per forward
};

TEST_P(TwoFrameworks, LayerSpansFromOpenCvPerfProfile) {
  // resnet18: ONNX has 20 Conv (BatchNorm folded at export), 17 Relu, 8 Add, MaxPool, GlobalAveragePool, Flatten,
  // Gemm; OpenCV adds a Flatten and an output Identity: 51 layers. It fuses every ReLU into the Convolution or
  // Eltwise before it (17 layers report 0 time), so 34 run: 20 Convolution, 8 Eltwise, 2 Pooling, 2 Flatten,
  // 1 InnerProduct, 1 Identity.
  // mobilenet_v2: 52 Conv, 35 ReLU6 (all fused), 10 Add, pooling, 2 Flatten, Gemm, Identity: 102 layers, 67 run.
  const Expected want = std::string(GetParam()) == "resnet18" ? Expected{51, 34, 20} : Expected{102, 67, 52};
  const Tensor x = sample(0);
  for (int i = 0; i < 2; ++i) cv_->predict(x);  // warm: OpenCV allocates its blobs on the first forward

  TraceRecorder rec;
  const SpanId predict_a = rec.next_id(), predict_b = rec.next_id();
  FrameworkProfiler* prof = cv_->framework_profiler();
  ASSERT_NE(prof, nullptr);
  prof->start(rec, predict_a);
  EXPECT_THROW(prof->start(rec, predict_a), std::logic_error);
  const std::int64_t t0 = now_ns();
  cv_->predict(x);
  const std::int64_t t1 = now_ns();
  prof->set_parent(predict_b);
  cv_->predict(batch_);  // batch of 5
  prof->stop();
  prof->stop();  // idempotent
  Trace trace = rec.take();

  std::map<SpanId, std::vector<const Span*>> by_parent;
  for (const Span& s : trace.spans) {
    EXPECT_EQ(s.level, Level::kFramework);
    EXPECT_EQ(s.parent_rule, ParentRule::kContext);
    EXPECT_GT(s.end_ns, s.start_ns) << s.name;
    EXPECT_EQ(s.tag("start_reconstructed").value_or(""), "true");
    EXPECT_TRUE(s.tag("module").has_value());
    by_parent[s.parent_id].push_back(&s);
  }
  ASSERT_EQ(by_parent.size(), 2u) << "every span under one of the two predict spans";
  EXPECT_EQ(trace.counters["framework.dropped_spans"], 0u);
  EXPECT_EQ(trace.counters["framework.fused_layers"], 2 * (want.layers - want.spans));
  EXPECT_EQ(trace.counters.count("framework.layer_times_exceed_forward"), 0u);
  for (SpanId parent : {predict_a, predict_b}) {
    const auto& spans = by_parent[parent];
    ASSERT_EQ(spans.size(), want.spans);
    std::size_t convs = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      convs += spans[i]->name == "Convolution";
      // Laid end to end in execution order (OpenCV layer id order).
      if (i > 0) {
        EXPECT_EQ(spans[i]->start_ns, spans[i - 1]->end_ns);
        EXPECT_GT(spans[i]->tag_int("layer_id").value_or(0), spans[i - 1]->tag_int("layer_id").value_or(0));
      }
    }
    EXPECT_EQ(convs, want.convolutions);
  }
  const auto& a = by_parent[predict_a];
  EXPECT_EQ(a.front()->name, "Convolution");
  EXPECT_EQ(a.front()->tag("module").value_or(""),
            std::string(GetParam()) == "resnet18" ? "/conv1/Conv" : "/features/features.0/features.0.0/Conv");
  EXPECT_EQ(a.front()->tag("shapes").value_or(""), "[1,3,224,224]");
  EXPECT_EQ(by_parent[predict_b].front()->tag("shapes").value_or(""), "[5,3,224,224]");
  // Inside the predict call, and covering most of it.
  EXPECT_GE(a.front()->start_ns, t0);
  EXPECT_LE(a.back()->end_ns, t1);
  const double share = static_cast<double>(a.back()->end_ns - a.front()->start_ns) / static_cast<double>(t1 - t0);
  std::printf("[ info ] %s: %zu layer spans per forward, layers / predict wall time = %.3f\n", GetParam(), a.size(),
              share);
  EXPECT_GE(share, 0.8);
}

TEST_P(TwoFrameworks, ErrorsNameWhatIsWrong) {
  Tensor bad;
  bad.shape = {1, 3, 100, 100};
  bad.data.resize(static_cast<std::size_t>(bad.numel()));
  EXPECT_THROW(cv_->predict(bad), std::invalid_argument);
  auto p = create_predictor("opencv-dnn");
  EXPECT_THROW(p->load(manifest_, DeviceSpec{"cuda", 0}), std::invalid_argument);
  Manifest m = manifest_;
  m.graph_for("opencv-dnn").graph_path = (kZoo / (std::string(GetParam()) + ".yaml")).string();  // not ONNX
  try {
    p->load(m, DeviceSpec{});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam() + std::string(".yaml")), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, TwoFrameworks, ::testing::Values("resnet18", "mobilenet_v2"));

using xsp::e2e::sh;

TEST(CompareCli, TwoFrameworksSameInputs) {
  if (!fs::exists(kZoo / "resnet18.onnx")) GTEST_SKIP() << "no exported resnet18 in " << kZoo;
  const fs::path dir = fs::temp_directory_path() / ("xsp-e2e-compare-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path db = dir / "xsp.db";
  const std::string cli = std::string(XSP_CLI) + " --zoo " + kZoo.string() + " --store " + db.string();
  const std::string common =
      " evaluate resnet18 --batch-sizes 1,2 --trace-level framework --leveled --iterations 3 "
      "--warmup 1 --warmup-max-ms 0 --min-duration-ms 0 --max-duration-ms 0 --no-progress --store-predictions";
  for (const char* fw : {"opencv-dnn", "libtorch"}) {
    auto [rc, out] = sh(cli + common + " --framework " + fw);
    ASSERT_EQ(rc, 0) << out;
  }
  // A framework the manifest has no graph for is refused with the manifest's frameworks named.
  auto [rc_bad, out_bad] = sh(cli + " evaluate resnet18 --framework tensorflow --no-progress");
  EXPECT_NE(rc_bad, 0);
  EXPECT_NE(out_bad.find("libtorch, opencv-dnn, onnxruntime, aotinductor"), std::string::npos) << out_bad;

  auto store = Store::open(db);
  const auto cv = store->load(1), lt = store->load(2);
  ASSERT_TRUE(cv && lt);
  EXPECT_EQ(cv->framework_name, "opencv-dnn");
  EXPECT_EQ(lt->framework_name, "libtorch");
  const auto agreement = compare_predictions(evaluation_predictions(*cv), evaluation_predictions(*lt));
  EXPECT_EQ(agreement.common_inputs, 5u);
  EXPECT_EQ(agreement.top1_agree, 5u);
  EXPECT_LT(agreement.max_abs_diff, 1e-5);

  auto [rc, out] = sh(cli + " compare 1 2");
  ASSERT_EQ(rc, 0) << out;
  for (const char* want : {"compare.A1", "compare.A6.totals", "compare.A6.e1", "compare.A6.e2", "Convolution",
                           "aten::conv2d", "compare.predictions", "100.000"})
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
  std::printf("%s\n", out.c_str());
  auto [rc_json, json] = sh(cli + " compare 1 2 --format json --batch-size 1");
  EXPECT_EQ(rc_json, 0) << json;
  EXPECT_NE(json.find("\"top1_agree_percent\""), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xsp
