// run_scenario() with a fake predictor of fixed latency: counts, latencies, batching, storage round trip and
// the peak-QPS search's record of every tried rate.
#include "xsp/eval/scenario_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "run_helpers.h"
#include "xsp/eval/evaluate.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t kPredictNs = 1'000'000;  // the fake predictor's fixed latency: 1 ms per predict()

// Sleeps kPredictNs per predict() call and records the batch sizes it saw (called on the adapter's thread).
class SleepingPredictor final : public Predictor {
 public:
  std::mutex mu;
  std::vector<std::int64_t> batches;
  std::atomic<bool> fail{false};
  std::string framework_name() const override { return "sleeping"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest&, const DeviceSpec&) override {}
  Tensor predict(const Tensor& input) override {
    if (fail) throw std::runtime_error("boom");
    std::this_thread::sleep_for(std::chrono::nanoseconds(kPredictNs));
    std::lock_guard lock(mu);
    batches.push_back(input.shape.at(0));
    return Tensor{{input.shape.at(0), 10}, std::vector<float>(static_cast<std::size_t>(input.shape.at(0)) * 10)};
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return nullptr; }
};

Manifest fake_manifest() {
  Manifest m;
  m.name = "fake";
  m.version = "1.0.0";
  InputSpec in;
  in.type = "tensor";
  in.dimensions = {3, 2, 2};
  m.inputs.push_back(in);
  m.outputs.push_back(OutputSpec{});
  return m;
}

RunPlan options_for(loadgen::Scenario s) {
  RunPlan o;
  o.scenario.settings.scenario = s;
  o.scenario.settings.min_duration_ms = 20;
  o.scenario.settings.min_query_count = 16;
  o.scenario.settings.seed = 7;
  o.inputs.synthetic = true;
  o.scenario.synthetic_samples = 8;
  return o;
}

EvaluationRecord run_scenario(const Manifest& manifest, Predictor& predictor, const RunPlan& plan) {
  return testing::scenario(manifest, predictor, plan, testing::quiet_session());
}

void expect_latencies_at_least(const RunRecord& run, double min_ns) {
  ASSERT_FALSE(run.predict_latency_ns.empty());
  for (double l : run.predict_latency_ns) EXPECT_GE(l, min_ns);
}

TEST(ScenarioRunner, SingleStreamOneSamplePerQuery) {
  SleepingPredictor p;
  const auto rec = run_scenario(fake_manifest(), p, options_for(loadgen::Scenario::kSingleStream));
  EXPECT_EQ(rec.scenario, "single-stream");
  ASSERT_EQ(rec.runs.size(), 1u);
  const auto& run = rec.runs[0];
  EXPECT_GE(run.predict_latency_ns.size(), 16u);
  EXPECT_EQ(run.batch_size, 1);
  EXPECT_EQ(run.trace_level, TraceLevel::kModel);
  expect_latencies_at_least(run, kPredictNs);
  EXPECT_EQ(p.batches.size(), run.predict_latency_ns.size());  // one predict per query, no warm-up
  EXPECT_EQ(rec.settings["scenario_settings"]["seed"], 7);
  ASSERT_TRUE(run.scenario_result.has_value());
  EXPECT_EQ(run.scenario_result->query_count, static_cast<std::int64_t>(run.predict_latency_ns.size()));
  EXPECT_FALSE(rec.settings.contains("results"));  // the result is typed, in the run
}

TEST(ScenarioRunner, MultiStreamCutsQueriesIntoMaxBatch) {
  SleepingPredictor p;
  auto o = options_for(loadgen::Scenario::kMultiStream);
  o.scenario.settings.samples_per_query = 4;
  o.scenario.max_batch = 2;
  const auto rec = run_scenario(fake_manifest(), p, o);
  ASSERT_EQ(rec.runs.size(), 1u);
  const auto& run = rec.runs[0];
  EXPECT_EQ(run.batch_size, 2);
  EXPECT_GE(run.predict_latency_ns.size(), 16u);
  expect_latencies_at_least(run, 2 * kPredictNs);  // two batches of 2 per query
  EXPECT_EQ(run.scenario_result.value().sample_count, 4 * static_cast<std::int64_t>(run.predict_latency_ns.size()));
  for (auto b : p.batches) EXPECT_EQ(b, 2);
}

TEST(ScenarioRunner, ServerIssuesTheSizedSchedule) {
  SleepingPredictor p;
  auto o = options_for(loadgen::Scenario::kServer);
  o.scenario.settings.target_qps = 200;
  o.scenario.settings.min_duration_ms = 100;  // 200 qps * 0.1 s = 20 queries >= 16
  const auto rec = run_scenario(fake_manifest(), p, o);
  ASSERT_EQ(rec.runs.size(), 1u);
  EXPECT_EQ(rec.runs[0].predict_latency_ns.size(), 20u);
  expect_latencies_at_least(rec.runs[0], kPredictNs);
  EXPECT_EQ(rec.scenario, "server");
}

TEST(ScenarioRunner, OfflineIsOneQueryOfAllSamplesInMaxBatches) {
  SleepingPredictor p;
  auto o = options_for(loadgen::Scenario::kOffline);
  o.scenario.settings.target_qps = 200;
  o.scenario.settings.min_duration_ms = 100;  // 20 samples
  o.scenario.max_batch = 8;
  const auto rec = run_scenario(fake_manifest(), p, o);
  ASSERT_EQ(rec.runs.size(), 1u);
  EXPECT_EQ(rec.runs[0].batch_size, 8);
  EXPECT_EQ(rec.runs[0].predict_latency_ns.size(), 1u);
  EXPECT_EQ(rec.runs[0].scenario_result.value().sample_count, 20);
  EXPECT_EQ(rec.runs[0].scenario_result->batches, 3);      // batches 8, 8, 4
  expect_latencies_at_least(rec.runs[0], 3 * kPredictNs);  // batches 8, 8, 4
  EXPECT_EQ(p.batches, (std::vector<std::int64_t>{8, 8, 4}));
}

class ScenarioStore : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "xsp-scenario-test-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ScenarioStore, RecordRoundTripsWithIdenticalRawLatencies) {
  SleepingPredictor p;
  auto rec = run_scenario(fake_manifest(), p, options_for(loadgen::Scenario::kSingleStream));
  rec.created_at = "2024-01-01T00:00:00Z";
  auto store = Store::open(dir_ / "s.db");
  const auto id = store->save(rec);
  const auto loaded = store->load(id);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->runs.size(), 1u);
  EXPECT_EQ(loaded->runs[0].predict_latency_ns, rec.runs[0].predict_latency_ns);
  EXPECT_EQ(loaded->scenario, "single-stream");
  EXPECT_EQ(loaded->settings, rec.settings);
  EXPECT_EQ(loaded->kind(), RecordKind::kScenario);
  // The report is recomputed from the raw latencies, so it is the same before and after storing.
  const std::string report = format_scenario_record(*loaded);
  EXPECT_EQ(report, format_scenario_record(rec));
  EXPECT_NE(report.find("single-stream"), std::string::npos);
}

TEST_F(ScenarioStore, PeakSearchRecordsEveryTriedRate) {
  SleepingPredictor p;
  auto o = options_for(loadgen::Scenario::kServer);
  o.scenario.find_peak_qps = true;
  o.scenario.settings.min_duration_ms = 50;
  o.scenario.settings.min_query_count = 16;
  o.scenario.settings.target_qps = 200;              // capacity of a 1 ms server is ~1000 qps: 200 passes
  o.scenario.settings.latency_bound_ns = 5'000'000;  // p99 <= 5 ms
  auto rec = run_scenario(fake_manifest(), p, o);
  ASSERT_GE(rec.runs.size(), 2u);
  bool pass = false, fail = false;
  for (const auto& r : rec.runs) (r.scenario_result.value().meets_bound ? pass : fail) = true;
  EXPECT_TRUE(pass);
  EXPECT_TRUE(fail);
  const double peak = rec.settings["peak_qps"].get<double>();
  // Below the ~1000 qps capacity; no lower bound: preemption on a loaded machine lowers the real capacity.
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, 1000);
  auto store = Store::open(dir_ / "s.db");
  rec.created_at = "2024-01-01T00:00:00Z";
  const auto loaded = store->load(store->save(rec));
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->runs.size(), rec.runs.size());
  for (std::size_t i = 0; i < rec.runs.size(); ++i)
    EXPECT_EQ(loaded->runs[i].predict_latency_ns, rec.runs[i].predict_latency_ns);
  const std::string report = format_scenario_record(*loaded);
  EXPECT_NE(report.find("peak QPS"), std::string::npos);
  EXPECT_NE(report.find("fail"), std::string::npos);
}

TEST(ScenarioRunner, RejectsBadOptionsAndReportsPredictErrors) {
  // Bad options are refused by validation (validate_fields()), before any plan exists.
  ScenarioRequest s;
  s.scenario = "offline";
  s.find_peak_qps = true;
  EXPECT_EQ(testing::scenario_field_refused(s), "scenario.find_peak_qps");
  s = ScenarioRequest{};
  s.scenario = "single-stream";
  s.max_batch = 0;
  EXPECT_EQ(testing::scenario_field_refused(s), "scenario.max_batch");
  s.max_batch = 1;
  EXPECT_EQ(testing::scenario_field_refused(s), "(accepted)");
  SleepingPredictor p;
  RunPlan o = options_for(loadgen::Scenario::kSingleStream);
  p.fail = true;
  EXPECT_THROW(run_scenario(fake_manifest(), p, o), std::runtime_error);
}

}  // namespace
}  // namespace xsp
