// A real M -> M/F -> M/F/K evaluation recorded on an H200 (ResNet-18, batch 1, 2 measured batches per run,
// LibTorch 2.11 + CUDA 13, `xsp evaluate resnet18 --device cuda --synthetic --batch-sizes 1
// --trace-level kernel --leveled --iterations 2`) and its raw CUPTI records: correlation, external
// correlation, clock mapping, stream tracks and the GPU analyses, checked without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/profilers/gpu_activity.h"
#include "xsp/store/store.h"
#include "xsp/trace/assembler.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

const fs::path kFixtures = fs::path(XSP_TEST_FIXTURES) / "gpu";

// Known answers, read once off the recording (see the test comments for how each is cross-checked).
constexpr std::size_t kKernelsPerBatch = 111;  // kernels + memcpy + memset of one ResNet-18 bs1 inference

EvaluationRecord recorded() {
  // Opening migrates the store to this build's schema: work on a copy, never on the fixture.
  const fs::path dir = fs::temp_directory_path() / ("xsp-gpu-fixture-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFixtures / "resnet18_bs1_kernel_h200.db", dir / "x.db", fs::copy_options::overwrite_existing);
  auto record = Store::open(dir / "x.db")->load(1);
  fs::remove_all(dir);
  if (!record) throw std::runtime_error("fixture has no evaluation 1");
  return *record;
}

}  // namespace

TEST(RecordedGpuRun, EveryKernelHangsUnderItsLaunchAndAFrameworkOp) {
  const EvaluationRecord e = recorded();
  const RunRecord* run = e.run_for_level(1, Level::kKernel);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->trace.assembly.unparented, 0u);
  EXPECT_EQ(run->trace.clock.device_clock_mapping, "cupti timestamp callback: CLOCK_MONOTONIC");
  std::unordered_map<SpanId, const Span*> by_id;
  for (const auto& s : run->trace.spans) by_id[s.id] = &s;
  std::size_t kernels = 0;
  for (const auto& s : run->trace.spans) {
    if (s.level != Level::kKernel) continue;
    ++kernels;
    EXPECT_TRUE(s.track.is_device()) << s.name;
    ASSERT_TRUE(by_id.count(s.parent_id)) << s.name;
    const Span& launch = *by_id.at(s.parent_id);
    EXPECT_EQ(launch.level, Level::kSystem);
    EXPECT_EQ(s.parent_rule, ParentRule::kCorrelation);
    EXPECT_EQ(launch.correlation_id, s.correlation_id);
    // Both clocks agree: a kernel cannot start before the host called the API that launched it.
    EXPECT_GE(s.start_ns, launch.start_ns) << s.name;
    const Span* p = &launch;
    while (p->level > Level::kFramework) p = by_id.at(p->parent_id);
    EXPECT_EQ(p->level, Level::kFramework) << s.name;
    while (p->level != Level::kModel) p = by_id.at(p->parent_id);
    EXPECT_EQ(p->name, "predict");
  }
  EXPECT_EQ(kernels, 2 * kKernelsPerBatch);
}

TEST(RecordedGpuRun, RawCuptiRecordsAssembleToTheStoredKernels) {
  std::ifstream in(kFixtures / "resnet18_bs1_activity_h200.json");
  const GpuActivityLog log = gpu_activity_log_from_json(nlohmann::json::parse(in));
  EXPECT_EQ(log.kernels.size() + log.memcpys.size() + log.memsets.size(), 2 * kKernelsPerBatch);
  TraceRecorder recorder;
  append_spans(log, recorder);
  Trace trace = recorder.take();
  assemble(trace);
  std::size_t by_correlation = 0;
  for (const auto& s : trace.spans)
    by_correlation += s.level == Level::kKernel && s.parent_rule == ParentRule::kCorrelation;
  EXPECT_EQ(by_correlation, 2 * kKernelsPerBatch);
}

TEST(RecordedGpuRun, AnalysesAgreeWithEachOther) {
  const EvaluationRecord e = recorded();
  const auto a15 = a15_kernels_by_model(e);
  ASSERT_EQ(a15.rows.size(), 1u);
  const double kernel_ms = std::get<double>(a15.rows[0][2]);
  EXPECT_DOUBLE_EQ(std::get<double>(a15.rows[0][3]), static_cast<double>(kKernelsPerBatch));
  // A10 (by name) and A11 (by layer) split the same per-batch kernel time.
  const auto a10 = a10_kernels_by_name(e, 1);
  const auto a11 = a11_kernels_by_layer(e, 1);
  double by_name = 0, by_layer = 0, count = 0;
  for (const auto& row : a10.rows) {
    count += std::get<double>(row[1]);
    by_name += std::get<double>(row[2]);
  }
  for (const auto& row : a11.rows) by_layer += std::get<double>(row[4]);
  EXPECT_DOUBLE_EQ(count, static_cast<double>(kKernelsPerBatch));
  EXPECT_NEAR(by_name, by_layer, 1e-9);
  // A15 takes the trimmed mean of per-batch totals; with 2 batches that is their mean, as A10's totals are.
  EXPECT_NEAR(by_name, kernel_ms, 1e-9);
  const auto stats = kernel_launch_statistics(e);
  ASSERT_FALSE(stats.rows.empty());
  EXPECT_DOUBLE_EQ(std::get<double>(stats.rows[0].back()), 100.0);  // every kernel under a framework op
}
