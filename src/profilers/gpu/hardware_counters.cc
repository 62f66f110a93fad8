#include "xsp/profilers/hardware_counters.h"

#include <algorithm>
#include <set>

namespace xsp::hw {

namespace {

// Tensor-path "math ops" (sm__ops_path_tensor_*) count each multiply and each add, so one FMA is 2 ops: the
// weight is 1. Checked on an H200 against cuBLAS GEMMs of known size (2·M·N·K FLOPs; BENCHMARKS.md).
std::vector<CounterDef> make_defs() {
  const auto sass = [](const char* op) {
    return std::string("sm__sass_thread_inst_executed_op_") + op + "_pred_on.sum";
  };
  // String storage for the composed names: string_views in CounterDef must outlive the program.
  // Never destroyed, as counter_defs() below.
  static const auto& names =
      *new std::vector<std::string>{sass("dadd"), sass("dmul"), sass("dfma"), sass("fadd"), sass("fmul"),
                                    sass("ffma"), sass("hadd"), sass("hmul"), sass("hfma")};
  return {
      {kFp64Flops, {{names[0], 1}, {names[1], 1}, {names[2], 2}}, "FP64 FLOPs on CUDA cores (FMA = 2)", "sum"},
      {kFp32Flops, {{names[3], 1}, {names[4], 1}, {names[5], 2}}, "FP32 FLOPs on CUDA cores (FMA = 2)", "sum"},
      {kFp16Flops, {{names[6], 1}, {names[7], 1}, {names[8], 2}}, "FP16 FLOPs on CUDA cores (FMA = 2)", "sum"},
      {kTensorFp16Flops, {{"sm__ops_path_tensor_src_fp16.sum", 1}}, "tensor-core FLOPs, FP16 sources", "sum"},
      {kTensorBf16Flops, {{"sm__ops_path_tensor_src_bf16_dst_fp32.sum", 1}}, "tensor-core FLOPs, BF16 sources", "sum"},
      {kTensorTf32Flops, {{"sm__ops_path_tensor_src_tf32_dst_fp32.sum", 1}}, "tensor-core FLOPs, TF32 sources", "sum"},
      {kTensorFp64Flops, {{"sm__ops_path_tensor_src_fp64.sum", 1}}, "tensor-core FLOPs, FP64 sources", "sum"},
      {kTensorFp8Flops, {{"sm__ops_path_tensor_src_fp8.sum", 1}}, "tensor-core FLOPs, FP8 sources", "sum"},
      {kTensorInt8Ops, {{"sm__ops_path_tensor_src_int8.sum", 1}}, "tensor-core INT8 ops", "sum"},
      {kDramReadBytes, {{"dram__bytes_read.sum", 1}}, "bytes read from DRAM", "sum"},
      {kDramWriteBytes, {{"dram__bytes_write.sum", 1}}, "bytes written to DRAM", "sum"},
      {kL2Bytes, {{"lts__t_bytes.sum", 1}}, "bytes requested from L2", "sum"},
      {kL1Bytes, {{"l1tex__t_bytes.sum", 1}}, "bytes requested from L1/TEX", "sum"},
      {kAchievedOccupancyPercent,
       {{"sm__warps_active.avg.pct_of_peak_sustained_active", 1}},
       "achieved occupancy (% of max warps per SM)",
       "latency_weighted_mean"},
      {kSmThroughputPercent,
       {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 1}},
       "SM throughput (% of peak)",
       "latency_weighted_mean"},
      {kReplayDurationNs, {{"gpu__time_duration.sum", 1}}, "duration under replay (not a latency)", "sum"},
  };
}

}  // namespace

const std::vector<CounterDef>& counter_defs() {
  // Never destroyed: the injection library evaluates counters in an exit handler registered before this is first
  // made, and a function-local static made later is destroyed before that handler runs.
  static const auto* defs = new std::vector<CounterDef>(make_defs());
  return *defs;
}

const CounterDef* find_counter(std::string_view name) {
  for (const auto& d : counter_defs())
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<std::string> metric_names() {
  std::set<std::string> out;
  for (const auto& d : counter_defs())
    for (const auto& t : d.terms) out.emplace(t.metric);
  return {out.begin(), out.end()};
}

std::map<std::string, double> evaluate_counters(const std::map<std::string, double>& metric_values) {
  std::map<std::string, double> out;
  for (const auto& d : counter_defs()) {
    double sum = 0;
    bool complete = true;
    for (const auto& t : d.terms) {
      const auto it = metric_values.find(std::string(t.metric));
      if (it == metric_values.end()) {
        complete = false;
        break;
      }
      sum += t.weight * it->second;
    }
    if (complete) out.emplace(std::string(d.name), sum);
  }
  return out;
}

const std::vector<std::string_view>& flop_counters() {
  static const auto* names = new std::vector<std::string_view>{kFp64Flops,       kFp32Flops,       kFp16Flops,
                                                               kTensorFp16Flops, kTensorBf16Flops, kTensorTf32Flops,
                                                               kTensorFp64Flops, kTensorFp8Flops};  // as above
  return *names;
}

std::optional<double> total_flops(const std::map<std::string, double>& counters) {
  std::optional<double> total;
  for (const auto name : flop_counters()) {
    const auto it = counters.find(std::string(name));
    if (it != counters.end()) total = total.value_or(0) + it->second;
  }
  return total;
}

}  // namespace xsp::hw
