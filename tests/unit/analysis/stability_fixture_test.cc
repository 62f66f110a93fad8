// Eight zoo models measured on an NVIDIA H100 (2026-11-23, scripts/gpu/stability.sh: batch 1 and 32, leveled
// down to the kernel level, traces stripped to keep the file small): every stored verdict, interval and overhead
// is recomputed from the stored blocks and must come out the same; the machine state is NVML's real answer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/summary.h"
#include "xsp/store/store.h"
#include "xsp/system/machine_state.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

const fs::path kFixture = fs::path(XSP_TEST_FIXTURES) / "stability" / "zoo_kernel_leveled_h100.db";

std::vector<EvaluationRecord> load_all() {
  // Opening may migrate: work on a copy.
  const fs::path copy = fs::temp_directory_path() / ("xsp-stability-fixture-" + std::to_string(::getpid()) + ".db");
  fs::copy_file(kFixture, copy, fs::copy_options::overwrite_existing);
  std::vector<EvaluationRecord> out;
  {
    auto store = Store::open(copy);
    for (const auto& l : store->list()) out.push_back(*store->load(l.id));
  }
  fs::remove(copy);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

// The result windows of a run, rebuilt from its stored blocks (batch counts, rounds) and raw latencies.
std::vector<std::vector<double>> result_windows(const RunRecord& run) {
  const RunMeasurement& m = run.measurement;
  std::vector<std::vector<double>> windows;
  std::size_t at = 0;
  const std::size_t first_round = m.blocks.at(m.result_first_block).round;
  for (std::size_t i = m.result_first_block; i < m.blocks.size(); ++i) {
    const std::size_t w = (m.blocks[i].round - first_round) / 2;
    if (windows.size() <= w) windows.resize(w + 1);
    for (std::size_t k = 0; k < m.blocks[i].batches; ++k) windows[w].push_back(run.predict_latency_ns.at(at++));
  }
  EXPECT_EQ(at, run.predict_latency_ns.size());
  return windows;
}

TEST(StabilityFixture, EveryVerdictAndIntervalRecomputesFromTheStoredBlocks) {
  const auto records = load_all();
  ASSERT_EQ(records.size(), 8u);
  std::size_t runs = 0;
  for (const auto& r : records) {
    ASSERT_EQ(r.runs.size(), 6u) << r.model_name;  // {1, 32} x {M, M/F, M/F/K}
    for (const auto& run : r.runs) {
      ++runs;
      const RunMeasurement& m = run.measurement;
      EXPECT_EQ(m.design, "interleaved");
      ASSERT_FALSE(m.blocks.empty());
      EXPECT_EQ(m.blocks.size() - m.result_first_block, 6u) << r.model_name;  // 3 windows of 2 rounds
      const StabilityAssessment again = assess_windows(result_windows(run), m.rule);
      EXPECT_EQ(again, m.stability) << r.model_name << " bs " << run.batch_size << " " << to_string(run.trace_level);
      EXPECT_TRUE(m.stability.ci95_ns.contains(m.stability.median_ns));
      // The stored block medians are the medians of the stored latencies.
      std::size_t at = 0;
      for (std::size_t i = m.result_first_block; i < m.blocks.size(); ++i) {
        std::vector<double> block(
            run.predict_latency_ns.begin() + static_cast<std::ptrdiff_t>(at),
            run.predict_latency_ns.begin() + static_cast<std::ptrdiff_t>(at + m.blocks[i].batches));
        EXPECT_DOUBLE_EQ(median(block), m.blocks[i].median_ns);
        at += m.blocks[i].batches;
      }
    }
  }
  EXPECT_EQ(runs, 48u);
}

TEST(StabilityFixture, OverheadsRecomputeFromTheBlocksOfTheSameRounds) {
  for (const auto& r : load_all()) {
    ASSERT_EQ(r.level_overheads.size(), 8u) << r.model_name;  // per batch size: M/F, M/F/K x2, residual
    for (const LevelOverhead& o : r.level_overheads) {
      const RunRecord* deeper = r.find_run(o.batch_size, o.level);
      ASSERT_NE(deeper, nullptr);
      auto result_medians = [](const RunRecord& run) {
        std::vector<double> v;
        for (std::size_t i = run.measurement.result_first_block; i < run.measurement.blocks.size(); ++i)
          v.push_back(run.measurement.blocks[i].median_ns);
        return v;
      };
      const RunRecord* k = r.find_run(o.batch_size, TraceLevel::kKernel);
      PairedOverhead again;
      if (o.design == "interleaved" && o.level == TraceLevel::kFramework) {
        again = paired_overhead(result_medians(*deeper), result_medians(*r.find_run(o.batch_size, TraceLevel::kModel)));
      } else if (o.design == "interleaved") {  // M/F/K over the M/F blocks beside it
        again = paired_overhead(result_medians(*k), k->measurement.baseline_block_medians_ns.at("framework"));
      } else if (o.design == "sequential") {  // M/F/K over the clean M/F run
        again = unpaired_change(result_medians(*k), result_medians(*r.find_run(o.batch_size, TraceLevel::kFramework)));
      } else {
        ASSERT_EQ(o.design, "residual");
        again = unpaired_change(k->measurement.baseline_block_medians_ns.at("model"),
                                result_medians(*r.find_run(o.batch_size, TraceLevel::kModel)));
      }
      EXPECT_EQ(again, o.overhead) << r.model_name << " " << o.design;
    }
  }
}

TEST(StabilityFixture, SummaryNeverPrintsABareNegativeOverhead) {
  for (const auto& r : load_all()) {
    const auto tables = evaluation_summary(r);
    ASSERT_EQ(tables.size(), 2u);
    const Table& o = tables[1];
    std::size_t col = 0;
    while (o.columns[col].name != "overhead") ++col;
    for (const auto& row : o.rows) {
      const auto& text = std::get<std::string>(row[col]);
      if (text[0] == '-')
        EXPECT_TRUE(text.find("not significant") != std::string::npos || text.find("negative:") != std::string::npos)
            << text;
    }
    // A1 shows the verdict beside the number.
    const Table a1 = a1_model_information(r);
    for (const auto& row : a1.rows) EXPECT_EQ(std::get<std::string>(row[4]), "stable") << r.model_name;
  }
}

TEST(StabilityFixture, MachineStateIsWhatNvmlReportedOnTheH100) {
  const auto records = load_all();
  const RunRecord& run = records[1].runs[0];  // ResNet-50, batch 1, M
  const MachineState start = machine_state_from_json(run.machine_state.at("start"));
  EXPECT_EQ(start.nvml_status, "loaded");
  ASSERT_EQ(start.gpus.size(), 1u);
  EXPECT_EQ(start.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(start.gpus[0].sm_clock_mhz, 1980);
  EXPECT_EQ(start.gpus[0].mem_clock_mhz, 2619);
  EXPECT_TRUE(start.gpus[0].energy_mj.has_value());
  EXPECT_EQ(start.cpu.logical_cpus, 16);
  EXPECT_GT(run.machine_state.at("samples").get<int>(), 10);  // a light sample after every block
  // The idle sample taken outside any run: SM at 345 MHz with the gpu_idle reason, which is not throttling.
  std::ifstream in(fs::path(XSP_TEST_FIXTURES) / "stability" / "machine_state_h100.json");
  const MachineState idle = machine_state_from_json(nlohmann::json::parse(in));
  EXPECT_EQ(idle.gpus.at(0).sm_clock_mhz, 345);
  EXPECT_EQ(idle.gpus.at(0).clocks_event_reason_names, std::vector<std::string>{"gpu_idle"});
  EXPECT_TRUE(machine_state_warnings(idle, idle, std::nullopt, std::nullopt, 0).empty());
}

}  // namespace
}  // namespace xsp
