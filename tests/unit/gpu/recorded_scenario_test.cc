// A real LoadGen Server scenario traced at kernel level, recorded on an H200 (issue 30: the scenario workload takes
// its runs from the RunSession on the SUT's worker thread, so every level the batch sweep traces, a scenario traces
// too). `scripts/gpu/scenario_kernel.sh`: ResNet-18 (LibTorch 2.11, CUDA 13), `xsp evaluate resnet18 --device cuda
// --synthetic --scenario server --target-qps 200 --latency-bound-ms 20 --min-duration-ms 3000 --min-queries 300
// --trace-level kernel --trace-tail 3 --seed 5` (evaluation 1), then a SingleStream run at framework level
// (evaluation 2). Checked without a GPU: the kept queries, their kernels under their launches, ops, predict and query
// spans, the statistics of what was dropped, and the GPU analyses over the kept queries.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "recorded_store.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/trace/run_statistics.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

const fs::path kFixture = fs::path(XSP_TEST_FIXTURES) / "gpu" / "scenario_server_kernel_h200.db";

EvaluationRecord recorded(std::int64_t id) { return xsp::testing::recorded_evaluation(kFixture, id); }

// The nearest ancestor of `s` at `level`, or nullptr.
const Span* ancestor(const std::unordered_map<SpanId, const Span*>& by_id, const Span& s, Level level) {
  for (auto it = by_id.find(s.parent_id); it != by_id.end(); it = by_id.find(it->second->parent_id))
    if (it->second->level == level) return it->second;
  return nullptr;
}

}  // namespace

TEST(RecordedGpuScenario, ServerTailQueriesKeepTheirKernelsUnderLaunchesOpsPredictAndQuerySpans) {
  const EvaluationRecord e = recorded(1);
  EXPECT_EQ(e.scenario, "server");
  EXPECT_EQ(e.trace_level, TraceLevel::kKernel);
  ASSERT_EQ(e.runs.size(), 1u);
  const RunRecord& run = e.runs[0];
  EXPECT_EQ(run.trace_level, TraceLevel::kKernel);
  EXPECT_EQ(run.predict_latency_ns.size(), 600u);  // 200 QPS x 3 s, every query measured
  EXPECT_EQ(run.trace.assembly.unparented, 0u);
  EXPECT_FALSE(run.trace.clock.device_clock_mapping.empty());
  EXPECT_EQ(run.trace.counters.at(stat::kScenarioTracedQueries), 600u);
  EXPECT_EQ(run.trace.counters.at(stat::kScenarioKeptQueryTraces), 4u);  // 3 slowest + the median
  EXPECT_EQ(run.trace.counters.at(stat::kScenarioDroppedQueryTraces), 596u);
  // Recorded at schema 7: version 9 moved the run's result out of settings.results into its own column.
  ASSERT_TRUE(run.scenario_result.has_value());
  EXPECT_EQ(run.scenario_result->scenario, "server");
  EXPECT_EQ(run.scenario_result->query_count, 600);
  EXPECT_EQ(run.scenario_result->tail_traces.value().trace_level, "kernel");
  EXPECT_EQ(run.scenario_result->tail_traces->kept.size(), 4u);

  std::unordered_map<SpanId, const Span*> by_id;
  for (const Span& s : run.trace.spans) by_id[s.id] = &s;
  std::map<SpanId, std::size_t> kernels_per_query;
  std::set<std::int64_t> kept;
  for (const Span& s : run.trace.spans) {
    if (s.level == Level::kModel && s.name == "query") {
      kept.insert(*s.tag_int("query"));
      // A kept query's latency is the one LoadGen measured for it.
      EXPECT_EQ(*s.tag_int("latency_ns"),
                static_cast<std::int64_t>(run.predict_latency_ns.at(static_cast<std::size_t>(*s.tag_int("query")))));
      kernels_per_query[s.id];  // every kept query appears, even one without kernels
    }
    if (s.level != Level::kKernel) continue;
    // Joined to its launch by correlation id, never by time ...
    ASSERT_TRUE(by_id.count(s.parent_id)) << s.name;
    const Span& launch = *by_id.at(s.parent_id);
    EXPECT_EQ(launch.level, Level::kSystem) << s.name;
    EXPECT_EQ(s.parent_rule, ParentRule::kCorrelation) << s.name;
    EXPECT_EQ(launch.correlation_id, s.correlation_id) << s.name;
    EXPECT_GE(s.start_ns, launch.start_ns) << s.name;
    // ... and through its launch to the op, the predict span of its batch and its query, whose interval holds it
    // (predict() synchronizes before it returns).
    const Span* op = ancestor(by_id, s, Level::kFramework);
    const Span* predict = ancestor(by_id, s, Level::kModel);
    ASSERT_NE(op, nullptr) << s.name;
    ASSERT_NE(predict, nullptr) << s.name;
    EXPECT_EQ(predict->name, "predict");
    const Span& query = *by_id.at(predict->parent_id);
    EXPECT_EQ(query.name, "query");
    EXPECT_GE(s.start_ns, predict->start_ns) << s.name;
    EXPECT_LE(s.end_ns, predict->end_ns) << s.name;
    ++kernels_per_query[query.id];
  }
  EXPECT_EQ(kept.size(), 4u);
  // The same model at batch 1: every kept query ran the same GPU work, slow or not.
  ASSERT_EQ(kernels_per_query.size(), 4u);
  const std::size_t per_query = kernels_per_query.begin()->second;
  // The batch sweep's recording of the same model on the same stack launches the same 111 kernels, memcpys and
  // memsets per inference (recorded_run_test.cc, kKernelsPerBatch): tracing under LoadGen changes nothing on the GPU.
  EXPECT_EQ(per_query, 111u);
  for (const auto& [query, n] : kernels_per_query) EXPECT_EQ(n, per_query);

  // A10 over the kept queries: per batch, the kernels of one query.
  const Table a10 = a10_kernels_by_name(e, 1);
  double count = 0;
  const int c = column_index(a10, "count");
  ASSERT_GE(c, 0);
  for (const auto& row : a10.rows) {
    const Cell& cell = row.at(static_cast<std::size_t>(c));
    count += std::holds_alternative<double>(cell) ? std::get<double>(cell)
                                                  : static_cast<double>(std::get<std::int64_t>(cell));
  }
  EXPECT_DOUBLE_EQ(count, static_cast<double>(per_query));
}

TEST(RecordedGpuScenario, SingleStreamAtFrameworkLevelHasOpsButNoDeviceSpans) {
  const EvaluationRecord e = recorded(2);
  EXPECT_EQ(e.scenario, "single-stream");
  ASSERT_EQ(e.runs.size(), 1u);
  const RunRecord& run = e.runs[0];
  EXPECT_EQ(run.trace_level, TraceLevel::kFramework);
  EXPECT_EQ(run.trace.assembly.unparented, 0u);
  std::size_t ops = 0;
  for (const Span& s : run.trace.spans) {
    EXPECT_LE(s.level, Level::kFramework) << s.name;
    ops += s.level == Level::kFramework;
  }
  EXPECT_GT(ops, 4u * 50u);  // 4 kept queries of a ResNet-18 forward each
}
