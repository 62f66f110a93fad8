// Micro-benchmarks that measure a GPU's ceilings (`xsp machine ceilings`). Implemented with CUDA and cuBLAS in
// xsp_cupti; builds without CUDA get a stub that throws.
#pragma once

#include "xsp/record/ceilings.h"

namespace xsp {

struct CeilingOptions {
  int device = 0;        ///< CUDA device ordinal
  int repetitions = 10;  ///< timed repetitions per ceiling; the best is kept (peaks, not typical values)
};

/// Whether this build can measure ceilings (CUDA toolkit and cuBLAS present at configure time).
bool have_ceilings_benchmark();

/// Measures every ceiling of MachineCeilings on `options.device`: FP64/FP32/FP16 FMA kernels, cuBLAS GEMMs on the
/// tensor cores (FP16, BF16, TF32, FP64, INT8), DRAM bandwidth (device-to-device copy of a buffer far larger than
/// L2), L2 bandwidth (copy within an L2-resident buffer), L1 bandwidth (loads from an L1-resident buffer).
/// Times with CUDA events. Never changes clocks or other device settings. Throws std::runtime_error naming the
/// failed step (no GPU, out of memory, built without CUDA).
MachineCeilings measure_machine_ceilings(const CeilingOptions& options);

}  // namespace xsp
