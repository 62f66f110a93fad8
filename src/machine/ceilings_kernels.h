// Private to xsp_ceilings: the CUDA half of measure_machine_ceilings(), kept free of C++20 so nvcc compiles it
// as C++17 (CMake 3.25 cannot ask nvcc for C++20).
#pragma once

#include <string>
#include <vector>

namespace xsp {

struct RawCeilingOptions {
  int device = 0;
  int repetitions = 10;
};

struct RawCeiling {
  std::string name, unit, method;
  double value = 0;
};

struct RawCeilings {
  std::string hostname, gpu_name, gpu_uuid;
  std::vector<RawCeiling> ceilings;
};

/// Runs every ceiling micro-benchmark (see xsp/profilers/ceilings_benchmark.h); throws std::runtime_error or
/// std::invalid_argument naming the failed step.
RawCeilings run_ceiling_benchmarks(const RawCeilingOptions& options);

}  // namespace xsp
