// The predictor adapter of the LoadGen workloads: batches cut to max_batch, predict() on the adapter's own thread,
// errors kept.
#include "xsp/eval/predictor_sut.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace xsp {
using loadgen::Result;
using loadgen::run;
using loadgen::Scenario;
using loadgen::Settings;
namespace {

class CountingPredictor final : public Predictor {
 public:
  std::vector<std::int64_t> batch_sizes;
  std::thread::id thread;
  bool fail = false;
  std::string framework_name() const override { return "counting"; }
  std::string framework_version() const override { return "0"; }
  void load(const Manifest&, const DeviceSpec&) override {}
  Tensor predict(const Tensor& input) override {
    thread = std::this_thread::get_id();
    batch_sizes.push_back(input.shape.at(0));
    if (fail) throw std::runtime_error("boom");
    return input;
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return nullptr; }
};

std::vector<Tensor> build(std::span<const std::uint64_t> idx) {
  return {Tensor{{static_cast<std::int64_t>(idx.size()), 1}, std::vector<float>(idx.size(), 1.f)}};
}

TEST(LoadgenPredictorSut, OfflineBatchesOnItsOwnThread) {
  CountingPredictor p;
  PredictorSut sut(p, build, 4);
  Settings s;
  s.scenario = Scenario::kOffline;
  s.target_qps = 100;
  s.min_duration_ms = 100;  // 10 samples
  s.min_query_count = 10;
  Result r = run(sut, s);
  EXPECT_EQ(r.sample_count, 10u);
  EXPECT_EQ(p.batch_sizes, (std::vector<std::int64_t>{4, 4, 2}));
  EXPECT_NE(p.thread, std::this_thread::get_id());
  EXPECT_TRUE(sut.first_error().empty());
}

TEST(LoadgenPredictorSut, ErrorsAreKeptAndQueriesStillComplete) {
  CountingPredictor p;
  p.fail = true;
  PredictorSut sut(p, build, 1);
  Settings s;
  s.scenario = Scenario::kSingleStream;
  s.min_query_count = 3;
  s.max_query_count = 3;
  s.min_duration_ms = 0;
  Result r = run(sut, s);
  EXPECT_EQ(r.query_count, 3u);
  EXPECT_EQ(sut.first_error(), "boom");
  EXPECT_THROW(PredictorSut(p, build, 0), std::invalid_argument);
}

}  // namespace
}  // namespace xsp
