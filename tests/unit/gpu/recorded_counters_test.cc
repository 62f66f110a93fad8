// A real leveled hardware-level evaluation recorded on an H200 (ResNet-18, batch 1: M, M/F, M/F/K with 2
// measured batches, then the counter run: 15 metric passes rotated over 15 identical batches,
// `xsp evaluate resnet18 --device cuda --synthetic --batch-sizes 1 --trace-level hardware --leveled
// --iterations 2`), its raw counters (XSP_DUMP_COUNTERS) and the machine's measured ceilings
// (`xsp machine ceilings`): counter spans, the join with the M/F/K kernels and the counter analyses without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <variant>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/roofline.h"
#include "xsp/profilers/counter_spans.h"
#include "xsp/profilers/hardware_counters.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

const fs::path kFixtures = fs::path(XSP_TEST_FIXTURES) / "counters";
constexpr std::size_t kCounterRanges = 102;  // compute kernels of one ResNet-18 bs1 inference (no memcpy/memset)

struct Recorded {
  EvaluationRecord record;
  MachineCeilings ceilings;
};

Recorded recorded() {
  const fs::path dir = fs::temp_directory_path() / ("xsp-hw-fixture-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFixtures / "resnet18_bs1_hardware_h200.db", dir / "x.db", fs::copy_options::overwrite_existing);
  auto store = Store::open(dir / "x.db");
  auto record = store->load(1);
  auto all = store->list_ceilings();
  store.reset();
  fs::remove_all(dir);
  if (!record || all.empty()) throw std::runtime_error("fixture lacks evaluation 1 or its ceilings");
  return {*record, all.front()};
}

CounterCollection recorded_collection() {
  std::ifstream in(kFixtures / "resnet18_bs1_counters_h200.json");
  return counter_collection_from_json(nlohmann::json::parse(in));
}

double cell(const Table& t, std::size_t row, const std::string& column) {
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].name == column) {
      const auto& v = t.rows.at(row).at(c);
      if (const auto* d = std::get_if<double>(&v)) return *d;
      if (const auto* i = std::get_if<long>(&v)) return static_cast<double>(*i);
      return std::nan("");
    }
  throw std::runtime_error("no column " + column);
}

}  // namespace

TEST(RecordedCounters, OneRangePerKernelEveryLaunchInsideAnOpAndEveryPassAlike) {
  const CounterCollection c = recorded_collection();
  EXPECT_EQ(c.replay, "user");
  EXPECT_EQ(c.passes, 15u);
  EXPECT_EQ(c.chip, "GH100");
  EXPECT_EQ(c.dropped_ranges, 0u);
  ASSERT_EQ(c.ranges.size(), kCounterRanges);
  ASSERT_EQ(c.launches.size(), kCounterRanges);
  for (const auto& l : c.launches) EXPECT_NE(l.op, kNoSpan) << l.kernel_name;
  // Every metric of the counter set was collected for every range.
  for (const auto& r : c.ranges) EXPECT_EQ(r.metrics.size(), hw::metric_names().size());

  const Recorded r = recorded();
  const RunRecord* run = r.record.run_for_level(1, Level::kHardware);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->trace.counters.at("counters.ranges"), kCounterRanges);
  EXPECT_FALSE(run->trace.counters.contains("counters.mismatched_passes"));
  EXPECT_FALSE(run->trace.counters.contains("counters.missing_passes"));
  std::size_t hardware = 0;
  for (const auto& s : run->trace.spans) {
    if (s.level != Level::kHardware) continue;
    ++hardware;
    EXPECT_EQ(s.parent_rule, ParentRule::kContext) << s.name;  // the op open at the launch
    EXPECT_EQ(s.tag("replay"), "user");
  }
  EXPECT_EQ(hardware, kCounterRanges);
}

TEST(RecordedCounters, AnalysesJoinEveryComputeKernelAndSumTheRecordedFlops) {
  const auto [record, ceilings] = recorded();
  EXPECT_EQ(ceilings.gpu_name, "NVIDIA H200");
  ASSERT_NE(ceilings.find("tensor_tf32"), nullptr);

  // Known answer: the model's FLOPs straight from the raw metric values (FMA = 2).
  double flops = 0;
  for (const auto& r : recorded_collection().ranges)
    flops += hw::total_flops(hw::evaluate_counters(r.metrics)).value_or(0);
  ASSERT_GT(flops, 1e9);  // ResNet-18 at 224x224: ~1.8 GMAC

  AnalysisOptions options;
  options.ceilings = ceilings;
  const auto tables = run_analyses(record, {"A8", "A12", "A15"}, options);
  ASSERT_EQ(tables.size(), 3u);
  const Table& a8 = tables[0];
  const Table& a12 = tables[1];
  const Table& a15 = tables[2];
  for (const auto& note : a8.notes) EXPECT_EQ(note.find("differ"), std::string::npos) << note;  // no name mismatch

  std::size_t with_counters = 0;
  double a8_gflops = 0;
  for (std::size_t i = 0; i < a8.rows.size(); ++i) {
    const double g = cell(a8, i, "gflops");
    if (std::isnan(g)) continue;
    ++with_counters;
    a8_gflops += g;
  }
  EXPECT_EQ(with_counters, kCounterRanges);  // every compute kernel joined; memcpy/memset have none
  EXPECT_NEAR(a8_gflops * 1e9, flops, flops * 1e-9);

  double a12_gflops = 0;
  for (std::size_t i = 0; i < a12.rows.size(); ++i)
    if (const double g = cell(a12, i, "gflops"); !std::isnan(g)) a12_gflops += g;
  EXPECT_NEAR(a12_gflops * 1e9, flops, flops * 1e-9);
  ASSERT_EQ(a15.rows.size(), 1u);
  EXPECT_NEAR(cell(a15, 0, "gflops") * 1e9, flops, flops * 1e-9);
  // AI is recomputed from sums (SPEC §4): FLOPs over DRAM read + write bytes.
  const double ai = cell(a15, 0, "arithmetic_intensity");
  EXPECT_NEAR(ai, cell(a15, 0, "gflops") * 1e9 / (cell(a15, 0, "dram_read_bytes") + cell(a15, 0, "dram_write_bytes")),
              ai * 1e-9);
}
