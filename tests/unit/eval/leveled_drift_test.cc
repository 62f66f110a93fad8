// Leveled runs that drift cannot fool (SPEC §3): a fake model whose latency drifts +30% across the evaluation
// and whose framework profiler truly adds 10%. Interleaved rounds recover 10% ± 3%; the sequential order (all
// M, then all M/F) does not. A profiler that adds nothing is reported "not significant".
#include <gtest/gtest.h>

#include "fake_model.h"
#include "run_helpers.h"
#include "xsp/analysis/summary.h"

namespace xsp {
namespace {

using testing::FakeClock;
using testing::FakePredictor;
using testing::LatencyModel;

// Fake time the leveled evaluation below takes (~0.5 s warm-up + 2 × 2 s of measurement, M/F 10% slower).
constexpr double kEvaluationS = 4.7;

RunPlan leveled_options(LevelOrder order) {
  RunPlan o;
  o.batch_sizes = {1};
  o.trace_level = TraceLevel::kFramework;
  o.leveled = true;
  o.inputs.synthetic = true;
  o.measurement.warmup_min_ms = 500;
  o.measurement.min_duration_ms = 2000;
  o.measurement.max_duration_ms = 2000;
  o.measurement.order = order;
  return o;
}

struct Outcome {
  EvaluationRecord record;
  double drift = 0;  // realized drift at the end of the evaluation
};

Outcome evaluate_fake(LatencyModel model, RunPlan options) {
  FakeClock clock;
  FakePredictor predictor(clock, model);
  Outcome out;
  out.record = testing::sweep(testing::fake_manifest(), predictor, options, testing::quiet_session(&clock));
  out.drift = model.drift_per_s * predictor.age_s();
  return out;
}

const LevelOverhead& framework_overhead(const EvaluationRecord& r) {
  for (const auto& o : r.level_overheads)
    if (o.level == TraceLevel::kFramework && o.baseline == TraceLevel::kModel) return o;
  throw std::runtime_error("no M/F overhead in the record");
}

LatencyModel drifting() {
  LatencyModel m;
  m.drift_per_s = 0.30 / kEvaluationS;
  m.framework_overhead = 0.10;
  m.noise_cv = 0.02;
  m.seed = 7;
  return m;
}

TEST(LeveledDrift, InterleavedRoundsRecoverTheTrueOverhead) {
  const Outcome o = evaluate_fake(drifting(), leveled_options(LevelOrder::kInterleaved));
  EXPECT_GT(o.drift, 0.25);
  EXPECT_LT(o.drift, 0.35);
  const LevelOverhead& f = framework_overhead(o.record);
  EXPECT_EQ(f.design, "interleaved");
  EXPECT_EQ(f.overhead.rounds, 6u);
  EXPECT_NEAR(f.overhead.overhead_fraction, 0.10, 0.03);
  EXPECT_TRUE(f.overhead.ci95_fraction.contains(0.10))
      << f.overhead.ci95_fraction.low << " " << f.overhead.ci95_fraction.high;
  EXPECT_TRUE(f.overhead.significant());
  // The drift itself is not hidden: each run's windows moved by more than 10%.
  for (const auto& run : o.record.runs) {
    EXPECT_EQ(run.measurement.stability.verdict, Verdict::kUnstable);
    EXPECT_TRUE(run.measurement.reached_max_duration);
    EXPECT_GT(run.measurement.stability.drift_fraction, 0.10);
  }
}

TEST(LeveledDrift, SequentialOrderMistakesDriftForOverhead) {
  const Outcome o = evaluate_fake(drifting(), leveled_options(LevelOrder::kSequential));
  EXPECT_GT(o.drift, 0.25);
  EXPECT_LT(o.drift, 0.40);
  const LevelOverhead& f = framework_overhead(o.record);
  EXPECT_EQ(f.design, "sequential");
  EXPECT_GT(std::abs(f.overhead.overhead_fraction - 0.10), 0.03) << f.overhead.overhead_fraction;
  EXPECT_GT(f.overhead.overhead_fraction, 0.20);  // about +17% of drift between the two runs on top of 10%
}

TEST(LeveledDrift, NoOverheadReadsNotSignificant) {
  LatencyModel m;
  m.noise_cv = 0.05;
  m.seed = 3;
  const Outcome o = evaluate_fake(m, leveled_options(LevelOrder::kInterleaved));
  const LevelOverhead& f = framework_overhead(o.record);
  EXPECT_TRUE(f.overhead.ci95_fraction.contains(0.0));
  EXPECT_FALSE(f.overhead.significant());
  for (const auto& run : o.record.runs) EXPECT_EQ(run.measurement.stability.verdict, Verdict::kStable);
  // What the user reads: the overhead with its interval and "not significant", never a bare number.
  const auto tables = evaluation_summary(o.record);
  ASSERT_EQ(tables.size(), 2u);
  const Table& t = tables[1];
  ASSERT_EQ(t.rows.size(), 1u);
  std::size_t col = 0;
  while (t.columns[col].name != "overhead") ++col;
  const auto& text = std::get<std::string>(t.rows[0][col]);
  EXPECT_NE(text.find("not significant"), std::string::npos) << text;
  EXPECT_NE(render_text(t).find("not significant"), std::string::npos);
  EXPECT_EQ(render_text(t).find("overhead_percent"), std::string::npos);  // the bare figure is CSV/JSON only
}

TEST(LeveledDrift, RunsKeepTheirBlocksWindowsAndABoundedTrace) {
  LatencyModel m;
  m.noise_cv = 0.05;
  RunPlan options = leveled_options(LevelOrder::kInterleaved);
  options.batch_sizes = {1, 4};
  options.measurement.max_traced_batches = 40;
  const Outcome o = evaluate_fake(m, options);
  ASSERT_EQ(o.record.runs.size(), 4u);
  for (const RunRecord& run : o.record.runs) {
    const RunMeasurement& rm = run.measurement;
    EXPECT_EQ(rm.design, "interleaved");
    EXPECT_EQ(rm.batches_per_block, 33);  // round(2000 ms / (6 × 10 ms))
    ASSERT_GE(rm.blocks.size(), 6u);
    EXPECT_EQ(rm.blocks.size() % 2, 0u);                     // whole windows
    EXPECT_EQ(rm.result_first_block, rm.blocks.size() - 6);  // the result: the last 3 windows
    EXPECT_EQ(run.predict_latency_ns.size(), 6u * 33u);
    EXPECT_EQ(rm.stability.window_medians_ns.size(), 3u);
    EXPECT_TRUE(rm.warmup_converged);
    EXPECT_GE(rm.warmup_batches, 3);
    // Trace budget 40 batches with blocks of 33: the last block only (the profiler ran in every block).
    std::size_t predicts = 0, ops = 0;
    for (const Span& s : run.trace.spans) {
      predicts += s.level == Level::kModel && s.name == kStagePredict;
      ops += s.level == Level::kFramework;
    }
    EXPECT_EQ(predicts, 33u);
    EXPECT_EQ(ops, run.trace_level == TraceLevel::kFramework ? 33u : 0u);
    EXPECT_EQ(run.trace.counters.at("trace.untraced_batches"), (rm.blocks.size() - 1) * 33u);
    EXPECT_EQ(run.trace.assembly.unparented, 0u);
  }
  EXPECT_EQ(o.record.level_overheads.size(), 2u);  // one per batch size
  EXPECT_EQ(o.record.settings["measurement"]["min_duration_ms"], 2000.0);
}

TEST(LeveledDrift, KernelLevelRunsBesideTheShallowerLevelsAfterTheOthers) {
  // The device profiler adds 20% while on and leaves 3% behind once started.
  FakeClock clock;
  testing::FakeDeviceProfiler device(clock), counters(clock, /*batches_needed=*/4);
  LatencyModel m;
  m.framework_overhead = 0.10;
  m.device_overhead = 0.20;
  m.device_residue = 0.03;
  m.noise_cv = 0.01;
  FakePredictor predictor(clock, m, &device);
  RunPlan o = leveled_options(LevelOrder::kInterleaved);
  o.trace_level = TraceLevel::kHardware;
  o.batch_sizes = {1, 2};
  SessionOptions session = testing::quiet_session(&clock);
  session.profilers.device = &device;
  session.profilers.counters = &counters;
  const EvaluationRecord r = testing::sweep(testing::fake_manifest(), predictor, o, std::move(session));
  // M, M/F, M/F/K, M/F/H per batch size.
  ASSERT_EQ(r.runs.size(), 8u);
  const RunRecord* k = r.find_run(1, TraceLevel::kKernel);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->measurement.design, "interleaved");
  ASSERT_EQ(k->measurement.baseline_block_medians_ns.size(), 2u);  // M and M/F blocks beside it
  EXPECT_EQ(k->measurement.baseline_block_medians_ns.at("framework").size(), 6u);
  EXPECT_GT(k->trace.counters.at("fake.stops"), 0u);
  // The M and M/F runs ran before the device profiler ever started: no residue in them.
  EXPECT_NEAR(r.find_run(1, TraceLevel::kModel)->measurement.stability.median_ns, 10e6, 0.2e6);
  std::map<std::string, const LevelOverhead*> by;
  for (const auto& v : r.level_overheads)
    if (v.batch_size == 1) by[std::string(to_string(v.level)) + "/" + v.design] = &v;
  ASSERT_EQ(by.size(), 4u);
  EXPECT_NEAR(by.at("framework/interleaved")->overhead.overhead_fraction, 0.10, 0.01);
  // The kernel level over M/F blocks that share the residue: its own 20%, not 20% + 3%.
  EXPECT_NEAR(by.at("kernel/interleaved")->overhead.overhead_fraction, 0.20, 0.01);
  EXPECT_EQ(by.at("kernel/interleaved")->baseline, TraceLevel::kFramework);
  EXPECT_NE(by.at("kernel/interleaved")->note.find("after CUPTI first attached"), std::string::npos);
  // Against the clean M/F run before it: its 20% and the 3% residue, (1.2 × 1.03) − 1.
  EXPECT_NEAR(by.at("kernel/sequential")->overhead.overhead_fraction, 0.236, 0.01);
  // The residue shows as the M blocks beside kernel tracing against the M run before it.
  EXPECT_NEAR(by.at("model/residual")->overhead.overhead_fraction, 0.03, 0.01);
  EXPECT_TRUE(by.at("model/residual")->overhead.significant());
  // Counter run: the profiler's batches, a fixed count, no verdict.
  const RunRecord* h = r.find_run(1, TraceLevel::kHardware);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->measurement.design, "fixed");
  EXPECT_EQ(h->iterations, 4);
  EXPECT_EQ(h->measurement.stability.verdict, Verdict::kNotAssessed);
  EXPECT_EQ(counters.batches, 8);  // 4 per batch size, inside begin_batch/end_batch
}

}  // namespace
}  // namespace xsp
