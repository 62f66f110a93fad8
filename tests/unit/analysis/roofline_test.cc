// Roofline arithmetic (roofline.h) with hand-computed answers: Williams et al. 2009 formulas, the precision rule,
// latency-weighted means, the machine look-up and the JSON form of MachineCeilings.
#include "xsp/analysis/roofline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xsp {
namespace {

MachineCeilings ceilings() {
  MachineCeilings m;
  m.hostname = "node7";
  m.gpu_name = "NVIDIA H200";
  m.gpu_uuid = "GPU-1234";
  m.measured_at = "2026-11-20T10:00:00Z";
  m.clocks_note = "default application clocks";
  m.ceilings = {{"fp32", 60e12, "flop/s", "ffma kernel, best of 10"},
                {"tensor_fp16", 900e12, "flop/s", "cublasGemmEx 8192^3"},
                {"dram", 4.5e12, "bytes/s", "d2d copy 4 GiB"},
                {"l2", 12e12, "bytes/s", "copy in 16 MiB"},
                {"l1", 36e12, "bytes/s", "loads in 64 KiB"}};
  return m;
}

TEST(Roofline, Formulas) {
  EXPECT_DOUBLE_EQ(*arithmetic_intensity(1e9, 4e8), 2.5);
  EXPECT_FALSE(arithmetic_intensity(1e9, 0).has_value());
  EXPECT_FALSE(arithmetic_intensity(NAN, 1).has_value());
  EXPECT_DOUBLE_EQ(arithmetic_intensity(0, 10).value(), 0);
  // min(peak, bandwidth × AI): below the ridge the diagonal, above it the peak.
  EXPECT_DOUBLE_EQ(attainable_flops_per_s(60e12, 4.5e12, 2), 9e12);
  EXPECT_DOUBLE_EQ(attainable_flops_per_s(60e12, 4.5e12, 100), 60e12);
  EXPECT_NEAR(ridge_point(60e12, 4.5e12), 13.333333333333334, 1e-12);
  EXPECT_THROW(ridge_point(60e12, 0), std::invalid_argument);
  EXPECT_EQ(classify(13.3, 13.333), Bound::kMemory);
  EXPECT_EQ(classify(13.333, 13.333), Bound::kCompute);  // at the ridge: compute
  EXPECT_EQ(to_string(Bound::kMemory), "memory");
  EXPECT_EQ(to_string(MemoryLevel::kDram), "dram");
}

TEST(Roofline, LevelBytes) {
  const CounterValues c = {{"dram_read_bytes", 100}, {"dram_write_bytes", 28}, {"l2_bytes", 512}};
  EXPECT_DOUBLE_EQ(*level_bytes(c, MemoryLevel::kDram), 128);
  EXPECT_DOUBLE_EQ(*level_bytes(c, MemoryLevel::kL2), 512);
  EXPECT_FALSE(level_bytes(c, MemoryLevel::kL1).has_value());
  EXPECT_FALSE(level_bytes({{"dram_read_bytes", 100}}, MemoryLevel::kDram).has_value());  // write missing
}

TEST(Roofline, PrecisionRule) {
  EXPECT_EQ(compute_ceiling_for("tensor_fp16_flops"), "tensor_fp16");
  EXPECT_EQ(compute_ceiling_for("fp64_flops"), "fp64");
  EXPECT_EQ(compute_ceiling_for("dram_read_bytes"), "");
  EXPECT_EQ(dominant_precision({{"fp32_flops", 1e6}, {"tensor_fp16_flops", 5e8}}), "tensor_fp16");
  EXPECT_EQ(dominant_precision({{"fp32_flops", 1e9}, {"tensor_fp16_flops", 5e8}}), "fp32");
  // Tie: the earlier counter of flop_counters() (CUDA-core before tensor).
  EXPECT_EQ(dominant_precision({{"fp16_flops", 7}, {"tensor_fp16_flops", 7}}), "fp16");
  EXPECT_FALSE(dominant_precision({{"fp32_flops", 0}, {"dram_read_bytes", 8}}).has_value());
  EXPECT_FALSE(dominant_precision({}).has_value());
}

TEST(Roofline, LatencyWeightedMean) {
  EXPECT_DOUBLE_EQ(*weighted_mean({{50, 30}, {90, 20}}), 66);
  EXPECT_DOUBLE_EQ(*weighted_mean({{50, 30}, {NAN, 20}, {10, -1}}), 50);
  EXPECT_FALSE(weighted_mean({{50, 0}}).has_value());
  EXPECT_FALSE(weighted_mean({}).has_value());

  CounterAggregate a;
  a.add({{"fp32_flops", 10}, {"achieved_occupancy_percent", 40}, {"dram_read_bytes", 4}}, 100.0);
  a.add({{"fp32_flops", 30}, {"achieved_occupancy_percent", 80}, {"sm_throughput_percent", 10}}, 300.0);
  a.add({{"fp32_flops", 5}, {"achieved_occupancy_percent", 0}}, std::nullopt);  // no latency: not in the mean
  const CounterValues v = a.values();
  EXPECT_DOUBLE_EQ(v.at("fp32_flops"), 45);
  EXPECT_DOUBLE_EQ(v.at("dram_read_bytes"), 4);
  EXPECT_DOUBLE_EQ(v.at("achieved_occupancy_percent"), (40 * 100 + 80 * 300) / 400.0);  // 70, not the mean 60
  EXPECT_DOUBLE_EQ(v.at("sm_throughput_percent"), 10);
  EXPECT_EQ(a.kernels(), 3u);
  EXPECT_EQ(a.unweighted(), 1u);
}

TEST(Roofline, PointOnMeasuredCeilings) {
  const MachineCeilings m = ceilings();
  // 9e9 FLOPs (tensor_fp16 8e9 dominant), DRAM 1e9 B -> AI 9 < ridge 200: memory-bound, roof 4.5e12 × 9.
  const CounterValues c = {{"tensor_fp16_flops", 8e9}, {"fp32_flops", 1e9}, {"dram_read_bytes", 6e8},
                           {"dram_write_bytes", 4e8},  {"l2_bytes", 3e9},   {"l1_bytes", 9e9}};
  const RooflinePoint p = roofline_point(c, &m, 5e6);  // 5 ms
  EXPECT_DOUBLE_EQ(*p.flops, 9e9);
  EXPECT_EQ(*p.precision, "tensor_fp16");
  EXPECT_DOUBLE_EQ(*p.peak_flops_per_s, 900e12);
  EXPECT_DOUBLE_EQ(*p.achieved_flops_per_s, 1.8e12);
  const LevelPoint& d = p.at(MemoryLevel::kDram);
  EXPECT_DOUBLE_EQ(*d.ai, 9);
  EXPECT_DOUBLE_EQ(*d.ridge, 200);
  EXPECT_DOUBLE_EQ(*d.attainable_flops_per_s, 40.5e12);
  EXPECT_EQ(*d.bound, Bound::kMemory);
  EXPECT_DOUBLE_EQ(*p.at(MemoryLevel::kL2).ai, 3);
  EXPECT_DOUBLE_EQ(*p.at(MemoryLevel::kL1).ai, 1);
  // Roofs: L1 36e12, L2 36e12, DRAM 40.5e12: L1 is the first strictly lowest, and the roof of % of roof.
  EXPECT_EQ(p.binding->level, BindingLevel::kL1);
  EXPECT_DOUBLE_EQ(p.binding->attainable_flops_per_s, 36e12);
  EXPECT_NEAR(*p.percent_of_roofline, 100 * 1.8e12 / 36e12, 1e-9);

  // Without ceilings: intensities only.
  const RooflinePoint q = roofline_point(c, nullptr, 5e6);
  EXPECT_DOUBLE_EQ(*q.at(MemoryLevel::kDram).ai, 9);
  EXPECT_FALSE(q.at(MemoryLevel::kDram).bound.has_value());
  EXPECT_FALSE(q.peak_flops_per_s.has_value());
  EXPECT_FALSE(q.percent_of_roofline.has_value());

  // A precision the machine has no ceiling for: no bound.
  const RooflinePoint f8 =
      roofline_point({{"tensor_fp8_flops", 1e9}, {"dram_read_bytes", 1}, {"dram_write_bytes", 1}}, &m, 1e3);
  EXPECT_EQ(*f8.precision, "tensor_fp8");
  EXPECT_FALSE(f8.at(MemoryLevel::kDram).bound.has_value());

  // No FLOPs but traffic (a copy kernel): AI 0, memory-bound whatever the peak.
  const RooflinePoint copy =
      roofline_point({{"fp32_flops", 0}, {"dram_read_bytes", 8}, {"dram_write_bytes", 8}}, &m, 1e3);
  EXPECT_DOUBLE_EQ(*copy.at(MemoryLevel::kDram).ai, 0);
  EXPECT_EQ(*copy.at(MemoryLevel::kDram).bound, Bound::kMemory);
}

TEST(Roofline, EvaluationMachineAndSelection) {
  EvaluationRecord e;
  e.device = "cuda:1";
  e.system = {{"host", {{"hostname", "node7"}}},
              {"gpu", {{{"index", 0}, {"name", "NVIDIA H100"}}, {{"index", 1}, {"name", "NVIDIA H200"}}}}};
  MachineIdentity id = evaluation_machine(e);
  EXPECT_EQ(id.hostname, "node7");
  EXPECT_EQ(id.gpu_name, "NVIDIA H200");
  EXPECT_EQ(no_ceilings_note(id).rfind("no measured ceilings for GPU NVIDIA H200 on host node7: run `xsp machine "
                                       "ceilings`",
                                       0),
            0u);

  MachineCeilings old = ceilings(), recent = ceilings(), other = ceilings();
  old.measured_at = "2026-01-01T00:00:00Z";
  other.gpu_name = "NVIDIA H100";
  other.gpu_uuid = "GPU-9";
  other.measured_at = "2026-12-01T00:00:00Z";
  const std::vector<MachineCeilings> stored = {old, other, recent};
  std::string note;
  const MachineCeilings* c = select_ceilings(stored, id, &note);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c, &stored[2]);  // the latest H200 of node7, not the newer H100
  EXPECT_NE(note.find("matched by host name and GPU name"), std::string::npos);

  id.gpu_uuid = "GPU-9";  // the UUID wins over the name
  EXPECT_EQ(select_ceilings(stored, id), &stored[1]);

  MachineIdentity unnamed{"node7", "", ""};
  EXPECT_EQ(select_ceilings(stored, unnamed, &note), nullptr);  // two GPU models on node7: ambiguous
  EXPECT_NE(note.find("several GPU models"), std::string::npos);
  const std::vector<MachineCeilings> one_gpu = {old, recent};
  EXPECT_EQ(select_ceilings(one_gpu, unnamed, &note), &one_gpu[1]);
  EXPECT_NE(note.find("matched by host name only"), std::string::npos);
  EXPECT_EQ(select_ceilings(stored, MachineIdentity{"elsewhere", "NVIDIA H200", ""}), nullptr);
}

TEST(Roofline, CeilingsJsonRoundTripAndErrors) {
  const MachineCeilings m = ceilings();
  EXPECT_EQ(machine_ceilings_from_json(to_json(m)), m);
  nlohmann::json j = to_json(m);
  j["ceilings"][1]["value"] = -3;
  try {
    machine_ceilings_from_json(j);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ceilings[1].value: expected a positive number, got -3"), std::string::npos)
        << e.what();
  }
  j = to_json(m);
  j["ceilings"][0]["unit"] = "GB/s";
  EXPECT_THROW(machine_ceilings_from_json(j), std::invalid_argument);
  j = to_json(m);
  j.erase("gpu_name");
  try {
    machine_ceilings_from_json(j);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_name: missing"), std::string::npos) << e.what();
  }
}

TEST(Roofline, CeilingsTable) {
  const Table t = machine_ceilings_table(ceilings());
  ASSERT_EQ(t.rows.size(), 5u);
  EXPECT_EQ(std::get<std::string>(t.rows[0][0]), "fp32");
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][2]), 60);  // TFLOP/s
  EXPECT_EQ(std::get<std::string>(t.rows[0][3]), "TFLOP/s");
  EXPECT_NEAR(std::get<double>(t.rows[0][4]), 60e12 / 4.5e12, 1e-12);  // ridge vs DRAM
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[1][5]), 75);                // tensor_fp16 vs L2
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[2][2]), 4500);              // DRAM in GB/s
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[2][4]));   // memory rows have no ridge
  EXPECT_NE(t.title.find("NVIDIA H200 (GPU-1234) on node7"), std::string::npos);
}

// Issue 31, finding 9: the store picks the latest ceilings by comparing measured_at as text, so "9999" or a time in
// the future would win over every later measurement; only a real ISO-8601 UTC time, at most a day ahead, is accepted.
TEST(Roofline, CeilingsMeasuredAtMustBeARealUtcTimeNotInTheFuture) {
  const MachineCeilings m = ceilings();  // measured_at 2026-11-20T10:00:00Z
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(*parse_utc_time("2026-11-26T12:00:00Z")));
  EXPECT_EQ(machine_ceilings_from_json(to_json(m), now), m);
  const auto error_for = [&](const std::string& measured_at) {
    nlohmann::json j = to_json(m);
    j["measured_at"] = measured_at;
    try {
      machine_ceilings_from_json(j, now);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  for (const std::string bad : {"9999", "2026-13-45T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-20T24:00:00Z",
                                "2026-11-20T10:00:60Z", "2026-11-20 10:00:00Z", "2026-11-20T10:00:00+00:00",
                                "2026-11-20T10:00:00", " 2026-11-20T10:00:00Z", "２026-11-20T10:00:00Z"}) {
    const std::string e = error_for(bad);
    EXPECT_NE(e.find("measured_at: expected an ISO-8601 UTC time YYYY-MM-DDTHH:MM:SSZ (a real date and time), got '" +
                     bad + "'"),
              std::string::npos)
        << e;
  }
  const std::string future = error_for("2026-11-27T12:00:01Z");
  EXPECT_NE(future.find("measured_at: expected a time at most a day after now (2026-11-26T12:00:00Z), got "
                        "'2026-11-27T12:00:01Z'"),
            std::string::npos)
      << future;
  EXPECT_EQ(error_for("2026-11-27T12:00:00Z"), "(accepted)");  // a day ahead: clocks of two machines may differ
  EXPECT_EQ(error_for("2024-02-29T23:59:59Z"), "(accepted)");  // a leap day
  EXPECT_EQ(parse_utc_time("1970-01-02T00:00:01Z"), std::optional<std::int64_t>(86401));
  EXPECT_EQ(parse_utc_time("2000-03-01T00:00:00Z"), std::optional<std::int64_t>(951868800));
}
}  // namespace
}  // namespace xsp
