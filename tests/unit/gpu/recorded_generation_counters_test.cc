// A real generation counter run, recorded on an H200 (issue 30: generation at --trace-level hardware).
// `scripts/gpu/generation_counters.sh`: GPT-2 tiny (LibTorch 2.11, CUDA 13), `xsp evaluate gpt2_tiny --device cuda
// --synthetic --trace-level hardware --prompt-tokens 16 --output-tokens 6 --iterations 5 --warmup 2
// --counter-iterations 2 --seed 3` (evaluation 1): a timed kernel-level run of 5 requests, then a counter run of 2
// requests whose every kernel CUPTI's Range Profiler replayed once per metric pass (kernel replay, 30 passes on
// GH100). Checked without a GPU: every profiled kernel sits under its prefill or decode step, G5's counters per step
// against the counters' own totals and the physics of prefill (a GEMM over the prompt) and decode (a GEMV per token).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "recorded_store.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/registry.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

const fs::path kFixture = fs::path(XSP_TEST_FIXTURES) / "gpu" / "generation_counters_h200.db";

EvaluationRecord recorded(std::int64_t id) { return xsp::testing::recorded_evaluation(kFixture, id); }

double num(const Table& t, std::size_t row, std::string_view col) {
  const Cell& c = cell(t, t.rows.at(row), col);
  return std::holds_alternative<double>(c) ? std::get<double>(c) : static_cast<double>(std::get<std::int64_t>(c));
}

}  // namespace

TEST(RecordedGpuGeneration, ACounterRunGivesEveryPrefillAndDecodeStepItsKernelsCounters) {
  const EvaluationRecord e = recorded(1);
  ASSERT_EQ(e.runs.size(), 2u);
  const RunRecord& timed = e.runs[0];
  const RunRecord& hw = e.runs[1];
  EXPECT_EQ(timed.trace_level, TraceLevel::kKernel);
  EXPECT_EQ(hw.trace_level, TraceLevel::kHardware);
  // LoadGen ran both: the timed run's 5 queries, the counter run's counter_iterations.
  EXPECT_EQ(timed.generation->loadgen->queries, 5);
  EXPECT_EQ(hw.generation->loadgen->queries, 2);
  EXPECT_FALSE(hw.generation->timings_used);
  EXPECT_EQ(hw.generation->counter_replay, "kernel");

  std::size_t hardware_spans = 0;
  for (const Span& s : hw.trace.spans) hardware_spans += s.level == Level::kHardware;
  EXPECT_EQ(hw.trace.counters.at("counters.ranges"), hardware_spans);  // one span per range, none lost

  std::size_t outside = 99;
  const std::vector<StepCounters> steps = generation_step_counters(hw.trace, &outside);
  EXPECT_EQ(outside, 0u);       // every profiled kernel reached a step through its op
  ASSERT_EQ(steps.size(), 6u);  // prefill + 5 decode steps (6 output tokens)
  double kernels = 0;
  for (const StepCounters& c : steps) {
    EXPECT_EQ(c.requests, 2u) << c.step;
    kernels += c.kernels * 2;
    ASSERT_TRUE(c.flops && c.dram_bytes && c.arithmetic_intensity) << c.step;
    EXPECT_GT(*c.flops, 0) << c.step;
  }
  EXPECT_DOUBLE_EQ(kernels, static_cast<double>(hardware_spans));
  EXPECT_EQ(steps[0].phase, "prefill");
  // Decode steps launch the same kernels on a cache one position longer each time: the same count, FLOPs within 1%.
  for (std::size_t i = 2; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].phase, "decode");
    EXPECT_DOUBLE_EQ(steps[i].kernels, steps[1].kernels) << i;
    EXPECT_NEAR(*steps[i].flops / *steps[1].flops, 1.0, 0.01) << i;
  }
  // Prefill multiplies 16 prompt positions where a decode step multiplies one: many times the FLOPs over the same
  // weights, so a higher arithmetic intensity.
  EXPECT_GT(*steps[0].flops, 4 * *steps[1].flops);
  EXPECT_GT(*steps[0].arithmetic_intensity, 2 * *steps[1].arithmetic_intensity);

  // G5 renders the same figures; G4's kernel counts (the timed run, memcpy and memset included) bound them.
  const std::vector<Table> tables = run_analyses(e, {"G4", "G5"}, std::nullopt);
  ASSERT_EQ(tables.size(), 2u);
  const Table& g4 = tables[0];
  const Table& g5 = tables[1];
  ASSERT_EQ(g5.rows.size(), 6u);
  ASSERT_EQ(g4.rows.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(num(g5, i, "kernels"), steps[i].kernels) << i;
    EXPECT_DOUBLE_EQ(num(g5, i, "gflops"), *steps[i].flops * 1e-9) << i;
    EXPECT_LE(num(g5, i, "kernels"), num(g4, i, "kernel_count")) << i;
    EXPECT_GE(num(g5, i, "kernels"), num(g4, i, "kernel_count") - 4) << i;
  }
}
