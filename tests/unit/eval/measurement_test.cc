// Warm-up, block size, stopping rule and verdicts of run_phase() on injected latency series (fake clock):
// known answers for a stationary series, a step change, a transient, and the fixed-count mode.
#include "xsp/eval/measurement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "fake_clock.h"

namespace xsp {
namespace {

using testing::FakeClock;

constexpr double kMs = 1e6;

// Serves latencies from `latency(level, measured_ns)` where measured_ns is the time since the first measured
// batch (< 0 during warm-up), advancing the fake clock by each.
class SeriesExecutor final : public BlockExecutor {
 public:
  SeriesExecutor(FakeClock& clock, std::function<double(std::size_t, double)> latency)
      : clock_(clock), latency_(std::move(latency)) {}
  void begin_block(std::size_t, bool warmup) override {
    ++blocks_begun;
    if (!warmup && measure_start_ < 0) measure_start_ = static_cast<double>(clock_.now_ns());
  }
  int blocks_begun = 0;
  double run_batch(std::size_t level, bool warmup) override {
    const double t = warmup ? -1 : static_cast<double>(clock_.now_ns()) - measure_start_;
    const double ns = latency_(level, t);
    clock_.advance(ns);
    ++(warmup ? warmup_batches : measured_batches);
    return ns;
  }
  void end_block(std::size_t, bool) override {}
  int warmup_batches = 0, measured_batches = 0;

 private:
  FakeClock& clock_;
  std::function<double(std::size_t, double)> latency_;
  double measure_start_ = -1;
};

MeasurementOptions defaults() { return MeasurementOptions{}; }

TEST(Measurement, StationaryNoiseAtFivePercentCvIsStable) {
  FakeClock clock;
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(1.0, 0.05);
  SeriesExecutor ex(clock, [&](std::size_t, double) { return 10 * kMs * std::max(0.5, noise(rng)); });
  const PhaseResult r = run_phase(1, defaults(), clock, ex);
  const auto& s = r.levels[0].stability;
  EXPECT_EQ(s.verdict, Verdict::kStable);
  EXPECT_NEAR(s.cv, 0.05, 0.01);
  EXPECT_NEAR(s.median_ns, 10 * kMs, 0.2 * kMs);
  EXPECT_TRUE(s.ci95_ns.contains(10 * kMs));
  EXPECT_EQ(s.window_medians_ns.size(), 3u);
  EXPECT_FALSE(r.reached_max_duration);
  // Block size from the warm-up median: round(1000 ms / (2·3 · 10 ms)) = 17 batches.
  EXPECT_EQ(r.batches_per_block, 17);
  // Stable at the first check: 6 rounds, 102 batches, ~1 s measured.
  EXPECT_EQ(r.rounds, 6u);
  EXPECT_EQ(r.levels[0].result_latencies_ns().size(), 102u);
  EXPECT_TRUE(r.warmup_converged);
  EXPECT_GE(r.warmup_ns, 1000 * kMs);
}

TEST(Measurement, StepChangeHalfWayIsUnstableWhenThereIsNoTimeLeft) {
  FakeClock clock;
  MeasurementOptions o = defaults();
  o.min_duration_ms = o.max_duration_ms = 1200;  // no extension possible
  // 10 ms, then 13 ms from half-way through the measurement.
  SeriesExecutor ex(clock, [](std::size_t, double t) { return (t >= 600 * kMs ? 13 : 10) * kMs; });
  const PhaseResult r = run_phase(1, o, clock, ex);
  const auto& s = r.levels[0].stability;
  EXPECT_EQ(s.verdict, Verdict::kUnstable);
  EXPECT_NEAR(s.window_medians_ns.front(), 10 * kMs, 1);
  EXPECT_NEAR(s.window_medians_ns.back(), 13 * kMs, 1);
  EXPECT_NEAR(s.drift_fraction, 0.3, 1e-9);
  EXPECT_TRUE(r.reached_max_duration);
}

TEST(Measurement, EarlyStepIsLeftBehindWhenTimeAllowsAndTheResultIsTheNewLevel) {
  FakeClock clock;
  MeasurementOptions o = defaults();
  o.max_duration_ms = 5000;
  SeriesExecutor ex(clock, [](std::size_t, double t) { return (t >= 300 * kMs ? 13 : 10) * kMs; });
  const PhaseResult r = run_phase(1, o, clock, ex);
  const auto& lm = r.levels[0];
  EXPECT_EQ(lm.stability.verdict, Verdict::kStable);
  EXPECT_DOUBLE_EQ(lm.stability.median_ns, 13 * kMs);
  EXPECT_GT(lm.result_first_block, 0u);  // the settling windows were left out of the result
  EXPECT_FALSE(r.reached_max_duration);
}

TEST(Measurement, WarmUpWaitsForTheTransientToEnd) {
  FakeClock clock;
  const double t0 = static_cast<double>(clock.now_ns());
  // Three times slower at first, decaying to 10 ms with a 0.8 s time constant. Warm-up blocks of 1000 ms / 3:
  // the last three agree within 10% from ~2.67 s on (factors 1.20, 1.13, 1.09 at their centres), not before.
  SeriesExecutor ex(clock, [&](std::size_t, double) {
    const double age_s = (static_cast<double>(clock.now_ns()) - t0) / 1e9;
    return 10 * kMs * (1 + 2 * std::exp(-age_s / 0.8));
  });
  const PhaseResult r = run_phase(1, defaults(), clock, ex);
  EXPECT_TRUE(r.warmup_converged);
  EXPECT_GT(r.warmup_ns, 2000 * kMs);
  EXPECT_LT(r.warmup_ns, 4000 * kMs);
  EXPECT_EQ(r.levels[0].stability.verdict, Verdict::kStable);
}

TEST(Measurement, WarmUpThatNeverConvergesStopsAtItsMaximum) {
  FakeClock clock;
  MeasurementOptions o = defaults();
  o.warmup_max_ms = 2000;
  // Every other warm-up block at 14 ms instead of 10: the windows never agree.
  SeriesExecutor* self = nullptr;
  SeriesExecutor ex(clock, [&](std::size_t, double) { return (self->blocks_begun % 2 ? 14 : 10) * kMs; });
  self = &ex;
  const PhaseResult r = run_phase(1, o, clock, ex);
  EXPECT_FALSE(r.warmup_converged);
  EXPECT_GE(r.warmup_ns, 2000 * kMs);
  EXPECT_LT(r.warmup_ns, 2400 * kMs);  // stops at the first round after the maximum
}

TEST(Measurement, FixedCountsWhenTimesAreZero) {
  FakeClock clock;
  MeasurementOptions o = defaults();
  o.warmup_min_batches = 2;
  o.warmup_min_ms = o.warmup_max_ms = 0;
  o.min_batches = 1;
  o.min_duration_ms = o.max_duration_ms = 0;
  SeriesExecutor ex(clock, [](std::size_t, double) { return 10 * kMs; });
  const PhaseResult r = run_phase(1, o, clock, ex);
  EXPECT_EQ(ex.warmup_batches, 2);
  EXPECT_EQ(ex.measured_batches, 1);
  EXPECT_EQ(r.levels[0].stability.verdict, Verdict::kNotAssessed);
}

TEST(Measurement, InterleavedRoundsAlternateTheOrder) {
  FakeClock clock;
  std::vector<std::size_t> order;
  struct Recorder final : BlockExecutor {
    FakeClock& clock;
    std::vector<std::size_t>& order;
    Recorder(FakeClock& c, std::vector<std::size_t>& o) : clock(c), order(o) {}
    void begin_block(std::size_t level, bool warmup) override {
      if (!warmup) order.push_back(level);
    }
    double run_batch(std::size_t, bool) override {
      clock.advance(5 * kMs);
      return 5 * kMs;
    }
    void end_block(std::size_t, bool) override {}
  } ex(clock, order);
  const PhaseResult r = run_phase(2, defaults(), clock, ex);
  ASSERT_GE(order.size(), 8u);
  EXPECT_EQ((std::vector<std::size_t>(order.begin(), order.begin() + 8)),
            (std::vector<std::size_t>{0, 1, 1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(r.levels[0].blocks.size(), r.levels[1].blocks.size());
}

TEST(Measurement, OptionsAreCheckedNamingTheField) {
  MeasurementOptions o;
  o.min_batches = 0;
  try {
    validate(o);
    FAIL() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "measurement.min_batches");
    EXPECT_NE(std::string(e.what()).find("got 0"), std::string::npos) << e.what();
  }
  o = MeasurementOptions{};
  o.rule.tolerance = 0;
  EXPECT_THROW(validate(o), RequestError);
  o = MeasurementOptions{};
  o.order = LevelOrder::kSequential;
  o.min_duration_ms = 250;
  EXPECT_EQ(measurement_options_from_json(to_json(o)), o);
  EXPECT_THROW(measurement_options_from_json({{"min_batches", "ten"}}), RequestError);
}

}  // namespace
}  // namespace xsp
