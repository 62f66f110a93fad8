// The Offline batch-size sweep on a predictor whose latency is a + b·batch (throughput batch/(a + b·batch)
// saturates at 1/b): the optimal batch must be the one SPEC §4 A1's rule gives for that model.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "run_helpers.h"
#include "xsp/analysis/analyses.h"
#include "xsp/eval/evaluate.h"

namespace xsp {
namespace {

constexpr double kFixedMs = 2.0, kPerSampleMs = 0.5;
double model_latency_ms(std::int64_t batch) { return kFixedMs + kPerSampleMs * static_cast<double>(batch); }

class LinearLatencyPredictor final : public Predictor {
 public:
  std::string framework_name() const override { return "linear"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest&, const DeviceSpec&) override {}
  Tensor predict(const Tensor& input) override {
    const auto batch = input.shape.at(0);
    std::this_thread::sleep_for(std::chrono::microseconds(std::llround(model_latency_ms(batch) * 1000)));
    return Tensor{{batch, 2}, std::vector<float>(static_cast<std::size_t>(batch) * 2)};
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return nullptr; }
};

Manifest fake_manifest() {
  Manifest m;
  m.name = "linear";
  m.version = "1.0.0";
  InputSpec in;
  in.type = "tensor";
  in.dimensions = {2};
  m.inputs.push_back(in);
  m.outputs.push_back(OutputSpec{});
  return m;
}

RunPlan sweep_options(std::vector<std::size_t> sizes) {
  RunPlan o;
  o.inputs.synthetic = true;
  o.scenario.settings.scenario = loadgen::Scenario::kOffline;
  o.scenario.settings.min_query_count =
      160;  // offline: 160 samples, a multiple of every swept batch (no partial batch)
  o.scenario.settings.target_qps = 1;
  o.scenario.settings.min_duration_ms = 1;
  o.scenario.synthetic_samples = 16;
  o.scenario.sweep_batch_sizes = std::move(sizes);
  return o;
}

EvaluationRecord run_scenario(const Manifest& manifest, Predictor& predictor, const RunPlan& plan) {
  return testing::scenario(manifest, predictor, plan, testing::quiet_session());
}

TEST(OfflineSweep, OptimalBatchFollowsTheA1RuleOnTheLatencyModel) {
  // Model throughput gains between consecutive sizes: 1->2 +67%, 2->4 +50%, 4->8 +33%, 8->16 +20%,
  // 16->32 +11%, 32->40 +2.3% (<= 5%): the optimal batch is 32, with wide margins on both sides of 5%.
  const std::vector<std::size_t> sizes = {1, 2, 4, 8, 16, 32, 40};
  std::vector<std::pair<int, double>> model;
  for (auto b : sizes) model.emplace_back(static_cast<int>(b), b / model_latency_ms(static_cast<std::int64_t>(b)));
  ASSERT_EQ(optimal_batch_size(model), 32);

  LinearLatencyPredictor p;
  const auto rec = run_scenario(fake_manifest(), p, sweep_options(sizes));
  ASSERT_EQ(rec.runs.size(), sizes.size());
  EXPECT_EQ(rec.batch_sizes, (std::vector<int>{1, 2, 4, 8, 16, 32, 40}));
  const auto& sweep = rec.settings.at("sweep");
  // The sweep applies A1's rule to what it measured. Sleeps overshoot by a roughly fixed amount per batch, which
  // favours large batches; on a loaded machine (CI runs tests in parallel) that can push a measured step across
  // the 5% threshold. So: the pick must always be A1's pick on the measured throughputs, and must be the model's
  // 32 whenever every measured step lies on the model's side of the threshold.
  std::vector<std::pair<int, double>> measured;
  for (const auto& row : sweep.at("rows"))
    measured.emplace_back(row.at("batch_size").get<int>(), row.at("samples_per_second").get<double>());
  const auto picked_opt = optimal_batch_size(measured);
  ASSERT_TRUE(picked_opt.has_value());
  const int picked = *picked_opt;
  EXPECT_EQ(sweep.at("optimal_batch_size"), picked);
  bool same_side = true;
  for (std::size_t i = 1; i < measured.size(); ++i) {
    const bool model_gain = model[i].second / model[i - 1].second - 1 > 0.05;
    const bool measured_gain = measured[i].second / measured[i - 1].second - 1 > 0.05;
    same_side = same_side && model_gain == measured_gain;
  }
  if (same_side) EXPECT_EQ(sweep.at("optimal_batch_size"), 32);
  ASSERT_EQ(sweep.at("rows").size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto& row = sweep["rows"][i];
    EXPECT_EQ(row["batch_size"], sizes[i]);
    const double expected = 1000.0 * sizes[i] / model_latency_ms(static_cast<std::int64_t>(sizes[i]));
    // Sleeps overshoot and the harness adds a little: below the model, never above. How far below depends on the
    // machine's load (a loaded 2-core machine gave 0.6x), so no lower bound other than a measured, positive rate.
    EXPECT_LE(row["samples_per_second"].get<double>(), expected * 1.01) << sizes[i];
    EXPECT_GT(row["samples_per_second"].get<double>(), 0.0) << sizes[i];
    EXPECT_GE(row["batch_p99_ms"].get<double>(), model_latency_ms(static_cast<std::int64_t>(sizes[i])));
    EXPECT_EQ(rec.runs[i].batch_size, static_cast<int>(sizes[i]));
    // The predict stage is one batch (as in A1), not the whole offline query.
    EXPECT_EQ(rec.runs[i].stage_latency_ns.at(kStagePredict).n, 160 / sizes[i]);
  }
  const std::string report = format_scenario_record(rec);
  EXPECT_NE(report.find("optimal batch size: " + std::to_string(picked)), std::string::npos) << report;
  EXPECT_NE(report.find("<- optimal"), std::string::npos) << report;
  // A1 on the stored record applies the same rule to the per-batch predict latencies (trimmed means), and agrees
  // with the sweep whenever no step between batch sizes lies on different sides of the 5% threshold in the two
  // measurements: the sweep's rates time whole offline queries, A1's single batches, and on a loaded machine (CI
  // runs tests in parallel) a step near the threshold can fall either way in one of them.
  std::vector<std::pair<int, double>> per_batch;
  for (const RunRecord& run : rec.runs)
    per_batch.emplace_back(run.batch_size, run.batch_size * 1e9 / run.stage_latency_ns.at(kStagePredict).trimmed_mean);
  const auto a1_pick = optimal_batch_size(per_batch);
  ASSERT_TRUE(a1_pick.has_value());
  const Table a1 = a1_model_information(rec);
  EXPECT_NE(a1.notes.back().find("optimal batch size: " + std::to_string(*a1_pick)), std::string::npos)
      << a1.notes.back();
  bool steps_agree = true;
  for (std::size_t i = 1; i < measured.size(); ++i)
    steps_agree = steps_agree && (measured[i].second / measured[i - 1].second - 1 > 0.05) ==
                                     (per_batch[i].second / per_batch[i - 1].second - 1 > 0.05);
  if (steps_agree) EXPECT_EQ(*a1_pick, picked);
}

TEST(OfflineSweep, LatencyBoundPicksTheLargestBatchWithinIt) {
  // Per-batch latency 2 + 0.5·b ms: 8 -> 6 ms, 16 -> 10 ms, 64 -> 34 ms. Under a 20 ms bound: 16 (10 ms of
  // margin for scheduling hiccups on a loaded machine either way).
  LinearLatencyPredictor p;
  auto o = sweep_options({8, 16, 64});
  o.scenario.sweep_latency_bound_ms = 20.0;
  const auto rec = run_scenario(fake_manifest(), p, o);
  EXPECT_EQ(rec.settings["sweep"]["optimal_batch_size"], 16);
  EXPECT_EQ(rec.settings["sweep"]["latency_bound_ms"], 20.0);
  o.scenario.sweep_latency_bound_ms = 1.0;  // nothing meets it
  o.scenario.sweep_batch_sizes = {8};
  const auto none = run_scenario(fake_manifest(), p, o);
  EXPECT_TRUE(none.settings["sweep"]["optimal_batch_size"].is_null());
  EXPECT_NE(format_scenario_record(none).find("optimal batch size: none"), std::string::npos);
}

// Validation refuses these before a plan exists (validate_fields(), the one place requests are checked).
TEST(OfflineSweep, RejectsSweepsOutsideOfflineAndZeroBatches) {
  ScenarioRequest s;
  s.scenario = "single-stream";
  s.sweep_batch_sizes = {1, 2};
  EXPECT_EQ(testing::scenario_field_refused(s), "scenario.sweep_batch_sizes");
  s.scenario = "offline";
  s.sweep_batch_sizes = {1, 0};
  EXPECT_EQ(testing::scenario_field_refused(s), "scenario.sweep_batch_sizes");
  s.sweep_batch_sizes = {1};
  s.latency_bound_ms = -3;
  EXPECT_EQ(testing::scenario_field_refused(s), "scenario.latency_bound_ms");
  s.latency_bound_ms = 20;
  EXPECT_EQ(testing::scenario_field_refused(s), "(accepted)");
}

}  // namespace
}  // namespace xsp
