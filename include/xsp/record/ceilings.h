// Measured machine ceilings (SPEC §4: the roofline's peaks come from measurements of the machine, never from a
// datasheet). Produced by `xsp machine ceilings` (xsp::measure_machine_ceilings), stored per machine, read by the
// roofline analyses.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace xsp {

/// One measured peak.
struct Ceiling {
  /// Compute ceilings (unit flop/s, or op/s for int8): "fp64", "fp32", "fp16" (CUDA-core FMA kernels),
  /// "tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp64", "tensor_int8" (cuBLAS GEMM).
  /// Memory ceilings (unit bytes/s): "dram", "l2", "l1".
  std::string name;
  double value = 0;    ///< flop/s (compute) or bytes/s (memory): the best of the repetitions
  std::string unit;    ///< "flop/s", "op/s" or "bytes/s"
  std::string method;  ///< how it was measured, e.g. "cublasGemmEx 8192x8192x8192 fp16->fp32, best of 10"
  bool operator==(const Ceiling&) const = default;
};

/// The ceilings of one GPU of one machine.
struct MachineCeilings {
  std::string hostname;
  std::string gpu_name;     ///< e.g. "NVIDIA H200"
  std::string gpu_uuid;     ///< "GPU-..." when known
  std::string measured_at;  ///< ISO 8601 UTC
  std::string clocks_note;  ///< clock state during the measurement (application clocks are never changed)
  std::vector<Ceiling> ceilings;

  /// The ceiling named `name`, or nullptr.
  const Ceiling* find(const std::string& name) const;
  bool operator==(const MachineCeilings&) const = default;
};

}  // namespace xsp
