// have_ceilings_benchmark() / measure_machine_ceilings() for builds without the CUDA micro-benchmarks. When the
// build compiles them (CUDA toolkit with cuBLAS), CMake compiles this file with XSP_CEILINGS_CUDA=1, which
// empties it: exactly one definition links either way, with no weak symbols (as device_profiler_fallback.cc).
#if !defined(XSP_CEILINGS_CUDA) || !XSP_CEILINGS_CUDA

#include <stdexcept>

#include "xsp/profilers/ceilings_benchmark.h"

namespace xsp {

bool have_ceilings_benchmark() { return false; }

MachineCeilings measure_machine_ceilings(const CeilingOptions&) {
  throw std::runtime_error(
      "machine ceilings: built without CUDA (CUDA toolkit with cuBLAS not found at configure time), so the GPU "
      "micro-benchmarks are not in this build; measure on a CUDA build, or import measured ceilings with "
      "`xsp machine ceilings --import FILE.json`");
}

}  // namespace xsp

#endif
