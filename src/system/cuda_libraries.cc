// CUDA runtime / cuDNN versions through dlopen: see include/xsp/system/cuda_libraries.h.
#include "xsp/system/cuda_libraries.h"

#include <dlfcn.h>

#include <array>
#include <string_view>

namespace xsp {
namespace {

struct Opened {
  void* handle = nullptr;
  LibraryPresence presence = LibraryPresence::kAbsent;
  std::string path;
};

// A loaded copy wins: that is the one the framework calls. Names go from the unversioned development link to
// the sonames of the releases XSP has met, newest first.
Opened open_library(std::initializer_list<const char*> names, std::initializer_list<const char*> fallbacks) {
  Opened o;
  for (const char* name : names)
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      o.handle = h;
      o.presence = LibraryPresence::kLoaded;
      return o;
    }
  for (auto list : {names, fallbacks})
    for (const char* name : list)
      if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        o.handle = h;
        o.presence = LibraryPresence::kFound;
        return o;
      }
  ::dlerror();  // clear the last failure so that it cannot leak into someone else's dlerror()
  return o;
}

std::string library_path(void* symbol) {
  Dl_info info{};
  if (symbol != nullptr && ::dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return {};
}

nlohmann::json describe_runtime() {
  Opened lib = open_library({"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                             "libcudart.so.10.2", "libcudart.so.10.1", "libcudart.so.10.0"},
                            {"/usr/local/cuda/lib64/libcudart.so", "/usr/local/cuda/lib64/libcudart.so.13",
                             "/usr/local/cuda/lib64/libcudart.so.12"});
  nlohmann::json out = {{"status", to_string(lib.presence)}};
  if (!lib.handle) return out;
  // cudaError_t is an enum (int); 0 = cudaSuccess.
  using GetVersion = int (*)(int*);
  auto runtime = reinterpret_cast<GetVersion>(::dlsym(lib.handle, "cudaRuntimeGetVersion"));
  auto driver = reinterpret_cast<GetVersion>(::dlsym(lib.handle, "cudaDriverGetVersion"));
  int v = 0;
  if (runtime && runtime(&v) == 0 && v > 0) out["version"] = format_cuda_version(v);
  v = 0;
  if (driver && driver(&v) == 0 && v > 0) out["driver_version"] = format_cuda_version(v);
  if (auto path = library_path(reinterpret_cast<void*>(runtime)); !path.empty()) out["library"] = path;
  if (lib.presence == LibraryPresence::kFound) ::dlclose(lib.handle);
  return out;
}

nlohmann::json describe_cudnn() {
  Opened lib = open_library({"libcudnn.so", "libcudnn.so.9", "libcudnn.so.8", "libcudnn.so.7"},
                            {"/usr/local/cuda/lib64/libcudnn.so", "/usr/local/cuda/lib/libcudnn.so"});
  nlohmann::json out = {{"status", to_string(lib.presence)}};
  if (!lib.handle) return out;
  using GetVersion = std::size_t (*)();
  auto version = reinterpret_cast<GetVersion>(::dlsym(lib.handle, "cudnnGetVersion"));
  if (version) {
    if (auto s = format_cudnn_version(version()); !s.empty()) out["version"] = s;
    if (auto path = library_path(reinterpret_cast<void*>(version)); !path.empty()) out["library"] = path;
  }
  if (lib.presence == LibraryPresence::kFound) ::dlclose(lib.handle);
  return out;
}

}  // namespace

std::string format_cuda_version(int version) {
  if (version <= 0) return {};
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string format_cudnn_version(std::uint64_t version) {
  if (version == 0) return {};
  // cuDNN 9 changed the encoding (CUDNN_VERSION = major*10000 + minor*100 + patch); 8.x and older used
  // major*1000; the two ranges do not overlap for real releases (8.9.7 = 8907 < 90000).
  const std::uint64_t major_unit = version >= 90000 ? 10000 : 1000;
  return std::to_string(version / major_unit) + "." + std::to_string((version % major_unit) / 100) + "." +
         std::to_string(version % 100);
}

std::string to_string(LibraryPresence presence) {
  switch (presence) {
    case LibraryPresence::kLoaded:
      return "loaded";
    case LibraryPresence::kFound:
      return "found (not loaded by the framework)";
    case LibraryPresence::kAbsent:
      return "absent";
  }
  return "absent";
}

nlohmann::json describe_cuda_libraries() {
  nlohmann::json out = nlohmann::json::object();
  try {
    out["runtime"] = describe_runtime();
  } catch (...) {
    out["runtime"] = {{"status", "absent"}};
  }
  try {
    out["cudnn"] = describe_cudnn();
  } catch (...) {
    out["cudnn"] = {{"status", "absent"}};
  }
  return out;
}

bool is_performance_relevant_env(const std::string& name) {
  static constexpr std::array<std::string_view, 3> kExact = {"LD_PRELOAD", "LD_LIBRARY_PATH", "NVIDIA_TF32_OVERRIDE"};
  static constexpr std::array<std::string_view, 17> kPrefixes = {
      "OMP_",      "KMP_",   "GOMP_", "MKL_",   "OPENBLAS_", "DNNL_", "ONEDNN_", "CUDA_", "CUBLAS_",
      "CUBLASLT_", "CUDNN_", "NCCL_", "TORCH_", "PYTORCH_",  "ORT_",  "OPENCV_", "XSP_"};
  for (auto e : kExact)
    if (name == e) return true;
  for (auto p : kPrefixes)
    if (std::string_view(name).starts_with(p)) return true;
  return false;
}

}  // namespace xsp
