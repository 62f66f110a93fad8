// Hardware counters of the HARDWARE level (SPEC §2, §4): the counters XSP reports, each defined once as a linear
// combination of Nsight Perf metrics (the names `ncu --query-metrics` lists), and the HARDWARE span conventions.
// This header is the one place where metric names live; it needs no CUDA header.
//
// HARDWARE spans (written by the counter profiler in a counter run, TraceLevel::kHardware):
//  - one span per profiled kernel (one range of the CUPTI Range Profiler), Level::kHardware, name = the kernel's
//    demangled name, thread_id = the launching host thread;
//  - parent (ParentRule::kContext) = the innermost FRAMEWORK op open when the kernel was launched, else the
//    MODEL "predict" span; so a HARDWARE span sits where the KERNEL span of the same launch sits in an M/F/K run,
//    and the n-th HARDWARE span of a layer is the n-th kernel (kind "kernel") of that layer in the M/F/K run;
//  - start_ns/end_ns = the launch API call on the host clock: a counter run's timings are never used (SPEC §3,
//    kernel replay distorts them);
//  - tags: one per counter of counter_defs() that was collected (name = CounterDef::name, value in decimal),
//    "range_index" (order in the profiler's counter data), "replay" ("kernel": each kernel replayed once per
//    pass; "user": metric passes rotated over identical batches), "collection_note" when a value is partial.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xsp::hw {

/// One Nsight Perf metric with its weight in a counter (FMA instructions weigh 2: one multiply and one add).
struct MetricTerm {
  std::string_view metric;  ///< full metric name with rollup, e.g. "dram__bytes_read.sum"
  double weight = 1;
};

/// An XSP counter: sum over terms of weight × metric value.
struct CounterDef {
  std::string_view name;  ///< tag name on HARDWARE spans; unit suffix in the name (_flops, _bytes, _percent, _ns)
  std::vector<MetricTerm> terms;
  std::string_view description;
  /// How values aggregate over kernels (SPEC §4): "sum" (FLOPs, bytes) or "latency_weighted_mean" (percentages).
  std::string_view aggregation;
};

// Counter names (tags of HARDWARE spans).
inline constexpr std::string_view kFp64Flops = "fp64_flops";               ///< CUDA-core FP64: dadd + dmul + 2·dfma
inline constexpr std::string_view kFp32Flops = "fp32_flops";               ///< CUDA-core FP32: fadd + fmul + 2·ffma
inline constexpr std::string_view kFp16Flops = "fp16_flops";               ///< CUDA-core FP16: hadd + hmul + 2·hfma
inline constexpr std::string_view kTensorFp16Flops = "tensor_fp16_flops";  ///< tensor path, FP16 sources
inline constexpr std::string_view kTensorBf16Flops = "tensor_bf16_flops";  ///< tensor path, BF16 sources
inline constexpr std::string_view kTensorTf32Flops = "tensor_tf32_flops";  ///< tensor path, TF32 sources
inline constexpr std::string_view kTensorFp64Flops = "tensor_fp64_flops";  ///< tensor path, FP64 sources
inline constexpr std::string_view kTensorFp8Flops = "tensor_fp8_flops";    ///< tensor path, FP8 sources
inline constexpr std::string_view kTensorInt8Ops = "tensor_int8_ops";      ///< tensor path, INT8 (not FLOPs)
inline constexpr std::string_view kDramReadBytes = "dram_read_bytes";
inline constexpr std::string_view kDramWriteBytes = "dram_write_bytes";
inline constexpr std::string_view kL2Bytes = "l2_bytes";  ///< bytes requested from L2 (all clients, read + write)
inline constexpr std::string_view kL1Bytes = "l1_bytes";  ///< bytes requested from L1/TEX (global, local, shared)
/// Mean active warps per active cycle as % of the SM's maximum (achieved occupancy).
inline constexpr std::string_view kAchievedOccupancyPercent = "achieved_occupancy_percent";
/// SM throughput as % of peak sustained over the kernel's elapsed cycles (ncu's "SM Throughput").
inline constexpr std::string_view kSmThroughputPercent = "sm_throughput_percent";
/// Kernel duration under the profiler (replayed, serialized): informational only, never a latency.
inline constexpr std::string_view kReplayDurationNs = "replay_duration_ns";

/// The counters, in report order. Metric names checked against the GH100 (H100/H200) metric list of CUPTI 13's
/// Profiler Host API (cuptiProfilerHostGetMetricProperties), as `ncu --query-metrics --chip gh100` lists them.
const std::vector<CounterDef>& counter_defs();

/// The counter named `name`, or nullptr.
const CounterDef* find_counter(std::string_view name);

/// Every distinct metric name the counters need, sorted (what a counter run configures).
std::vector<std::string> metric_names();

/// Counters from raw metric values (metric name → value): a counter is present only when all its metrics are.
std::map<std::string, double> evaluate_counters(const std::map<std::string, double>& metric_values);

/// The floating-point counters that make up "flops" (CUDA-core and tensor path, all precisions; INT8 excluded).
const std::vector<std::string_view>& flop_counters();

/// Total FLOPs of a set of counter values: sum of the flop_counters() present; std::nullopt when none is.
std::optional<double> total_flops(const std::map<std::string, double>& counters);

}  // namespace xsp::hw
