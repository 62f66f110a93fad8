// CUPTI/CUDA error checks shared by the CUPTI profilers (private to xsp_cupti).
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <stdexcept>
#include <string>

namespace xsp::cupti {

inline std::string result_text(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) return "CUPTI error " + std::to_string(r);
  return text;
}

/// Why a CUPTI error at start-up usually happens, in the user's terms.
inline std::string hint(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return " (another profiler is attached to this process: Nsight Systems/Compute, the PyTorch profiler, "
             "or a CUDA_INJECTION64_PATH tool; CUPTI supports one at a time)";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return " (insufficient privileges for GPU profiling: see "
             "https://developer.nvidia.com/CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, or run as root)";
    case CUPTI_ERROR_INVALID_DEVICE:
      return " (no usable CUDA device visible to this process)";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return " (CUPTI could not initialize: is the NVIDIA driver loaded and libcupti from the same CUDA release?)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return " (profiling is not supported on this virtualized GPU)";
    default:
      return "";
  }
}

inline void check(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) {
    throw std::runtime_error(std::string("CUPTI: ") + call + " failed: " + result_text(r) + hint(r));
  }
}

inline void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA: ") + call + " failed: " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
  }
}

}  // namespace xsp::cupti
