// EvaluationRecord look-ups (SPEC §3: each level's latencies come from the run where it is the deepest).
#include "xsp/record/record.h"

#include <gtest/gtest.h>

namespace xsp {
namespace {

RunRecord run(int batch, TraceLevel level) {
  RunRecord r;
  r.batch_size = batch;
  r.trace_level = level;
  r.iterations = batch * 10 + static_cast<int>(level);  // tells runs apart in failure messages
  return r;
}

EvaluationRecord leveled() {
  EvaluationRecord e;
  e.leveled = true;
  e.batch_sizes = {1, 2};
  e.trace_level = TraceLevel::kFramework;
  // Deliberately deepest first, so the choice cannot rely on insertion order.
  e.runs = {run(1, TraceLevel::kFramework), run(1, TraceLevel::kModel), run(2, TraceLevel::kFramework),
            run(2, TraceLevel::kModel)};
  return e;
}

TEST(Record, FindRunMatchesBatchAndTraceLevel) {
  const EvaluationRecord e = leveled();
  EXPECT_EQ(e.find_run(1, TraceLevel::kModel), &e.runs[1]);
  EXPECT_EQ(e.find_run(2, TraceLevel::kFramework), &e.runs[2]);
  EXPECT_EQ(e.find_run(3, TraceLevel::kModel), nullptr);
  EXPECT_EQ(e.find_run(1, TraceLevel::kKernel), nullptr);
}

TEST(Record, RunForLevelTakesTheRunWhereTheLevelIsDeepest) {
  const EvaluationRecord e = leveled();
  EXPECT_EQ(e.run_for_level(1, Level::kModel), &e.runs[1]);      // M run
  EXPECT_EQ(e.run_for_level(1, Level::kFramework), &e.runs[0]);  // M/F run
  EXPECT_EQ(e.run_for_level(2, Level::kModel), &e.runs[3]);
  EXPECT_EQ(e.run_for_level(2, Level::kFramework), &e.runs[2]);
  // APPLICATION is enabled by every setting: the shallowest run is the least perturbed.
  EXPECT_EQ(e.run_for_level(1, Level::kApplication), &e.runs[1]);
  EXPECT_EQ(e.run_for_level(1, Level::kKernel), nullptr);  // no run records kernels
  EXPECT_EQ(e.run_for_level(4, Level::kModel), nullptr);   // no such batch size
}

TEST(Record, RunForLevelWithoutLeveledRunsUsesTheSingleRun) {
  EvaluationRecord e;
  e.runs = {run(1, TraceLevel::kKernel)};
  EXPECT_EQ(e.run_for_level(1, Level::kModel), &e.runs[0]);
  EXPECT_EQ(e.run_for_level(1, Level::kFramework), &e.runs[0]);
  EXPECT_EQ(e.run_for_level(1, Level::kKernel), &e.runs[0]);
  EXPECT_EQ(e.run_for_level(1, Level::kHardware), nullptr);
}

TEST(Record, KindOfEveryStoredScenarioValue) {
  EXPECT_EQ(record_kind("batch-sweep"), RecordKind::kBatchSweep);
  EXPECT_EQ(record_kind(""), RecordKind::kBatchSweep);  // stores written before scenarios
  for (const char* s : {"single-stream", "multi-stream", "server", "offline"})
    EXPECT_EQ(record_kind(s), RecordKind::kScenario) << s;
  for (const char* s : {"generation", "generation-single-stream", "generation-server", "generation-offline"})
    EXPECT_EQ(record_kind(s), RecordKind::kGeneration) << s;
  EvaluationRecord r;
  EXPECT_EQ(r.kind(), RecordKind::kBatchSweep);
  r.scenario = "server";
  EXPECT_EQ(r.kind(), RecordKind::kScenario);
  EXPECT_EQ(to_string(RecordKind::kGeneration), "generation");
  for (const char* bad : {"Server", "generation-multi-stream", "generation-", "sweep"}) {
    try {
      (void)record_kind(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xsp
