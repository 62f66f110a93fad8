// CUDA runtime and cuDNN versions for the system description (SPEC §7), found at run time with dlopen so that
// src/system needs neither CUDA headers nor a CUDA build, and never a framework header.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace xsp {

/// "12.2" from cudaRuntimeGetVersion()/cudaDriverGetVersion()'s integer 1000·major + 10·minor (12020). "" for
/// values ≤ 0 (no driver: cudaDriverGetVersion reports 0). Source: CUDA Runtime API, cudaRuntimeGetVersion.
std::string format_cuda_version(int version);

/// "8.9.2" / "9.1.0" from cudnnGetVersion(): cuDNN < 9 encodes 1000·major + 100·minor + patch (8902), cuDNN ≥ 9
/// 10000·major + 100·minor + patch (90100), per cudnn_version.h (CUDNN_VERSION) of each release. "" for 0.
std::string format_cudnn_version(std::uint64_t version);

/// How a library was found: kLoaded = already mapped into this process (by the framework, or by XSP's own
/// CUPTI profiler in a CUDA build: either way the copy this process runs with),
/// kFound = not loaded, but dlopen found it on the library path (installed, not used by this evaluation),
/// kAbsent = neither.
enum class LibraryPresence { kLoaded, kFound, kAbsent };
/// "loaded", "found (not loaded by the framework)", "absent".
std::string to_string(LibraryPresence presence);

/// Looks for the CUDA runtime (libcudart.so*, then /usr/local/cuda/lib64) and cuDNN (libcudnn.so*), preferring
/// copies already loaded into the process (dlopen RTLD_NOLOAD) over ones on the library path, and asks each for
/// its version. Returns
///   {"runtime": {"status": "loaded"|"found (not loaded by the framework)"|"absent", "version": "12.2",
///                "driver_version": "12.4" (when a driver answers), "library": "/path/libcudart.so.12"},
///    "cudnn":   {"status": ..., "version": "9.1.0", "library": "..."}}
/// "version"/"library" are left out when absent. Libraries opened only to read their version are closed
/// again. Never throws.
nlohmann::json describe_cuda_libraries();

/// Whether an environment variable can change measured performance and is therefore recorded with every
/// evaluation: thread counts and affinity (OMP_*, KMP_*, GOMP_*, MKL_*, OPENBLAS_*, DNNL_*, ONEDNN_*),
/// CUDA and its libraries (CUDA_*, CUBLAS_*, CUBLASLT_*, CUDNN_*, NVIDIA_TF32_OVERRIDE, NCCL_*), frameworks
/// (TORCH_*, PYTORCH_*, ORT_*, OPENCV_*), XSP_*, and the loader (LD_PRELOAD, LD_LIBRARY_PATH).
bool is_performance_relevant_env(const std::string& name);

}  // namespace xsp
