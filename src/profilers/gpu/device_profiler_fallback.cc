// have_device_profiler() / create_device_profiler() for builds without CUPTI. When the build has CUPTI
// (XSP_WITH_CUPTI), xsp_cupti defines them instead and CMake compiles this file with XSP_GPU_CUPTI_FACTORY=1,
// which empties it: exactly one definition links either way, with no weak symbols.
#if !defined(XSP_GPU_CUPTI_FACTORY) || !XSP_GPU_CUPTI_FACTORY

#include <stdexcept>

#include "xsp/profilers/device_profiler.h"

namespace xsp {

bool have_device_profiler() { return false; }

std::unique_ptr<DeviceProfiler> create_device_profiler(const CuptiOptions&) {
  throw std::runtime_error("device profiler: built without CUPTI (CUDA toolkit not found at configure time)");
}

std::unique_ptr<DeviceProfiler> create_counter_profiler(const CounterOptions&) {
  throw std::runtime_error("counter profiler: built without CUPTI (CUDA toolkit not found at configure time)");
}

}  // namespace xsp

#endif
