// System description stored with every evaluation (SPEC §7). Each fact is read on its own and any failure
// only leaves that fact out: a missing /proc file must never cost the user an evaluation.
#include "xsp/system/system_info.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "xsp/system/cuda_libraries.h"
#include "xsp/system/gpu_info.h"
#include "xsp/util/strings.h"

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#ifndef XSP_VERSION
#define XSP_VERSION "0.0.0"
#endif
#ifndef XSP_GIT_REVISION
#define XSP_GIT_REVISION "unknown"
#endif

extern char** environ;

namespace xsp {
namespace {

/// Splits "key : value" lines (the /proc/cpuinfo and /proc/meminfo layout). false when there is no colon.
bool split_colon(const std::string& line, std::string& key, std::string& value) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return false;
  key = util::trim(std::string_view(line).substr(0, colon));
  value = util::trim(std::string_view(line).substr(colon + 1));
  return true;
}

std::optional<std::string> read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return std::string(util::trim(line));
}

void describe_host(nlohmann::json& out) {
  nlohmann::json host = nlohmann::json::object();
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) host["hostname"] = std::string(name);
  {
    std::ifstream in("/etc/os-release");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
      std::string v = line.substr(std::string_view("PRETTY_NAME=").size());
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
        v = v.substr(1, v.size() - 2);
      }
      host["os"] = v;
      break;
    }
  }
  struct utsname u {};
  if (uname(&u) == 0) {
    host["kernel"] = std::string(u.release);
    host["arch"] = std::string(u.machine);
  }
  out["host"] = std::move(host);
}

void describe_cpu(nlohmann::json& out) {
  nlohmann::json cpu = nlohmann::json::object();
  std::ifstream in("/proc/cpuinfo");
  std::string line, key, value;
  std::size_t processors = 0;
  std::string physical_id;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id): one per physical core
  std::set<std::string> flags;
  std::string model, fallback_model;
  while (std::getline(in, line)) {
    if (!split_colon(line, key, value)) continue;
    if (key == "processor") {
      ++processors;
      physical_id.clear();
    } else if (key == "model name" && model.empty()) {
      model = value;
    } else if ((key == "Hardware" || key == "Model" || key == "cpu model") && fallback_model.empty()) {
      // Non-x86 kernels name the CPU differently; keep something rather than nothing.
      fallback_model = value;
    } else if (key == "physical id") {
      physical_id = value;
    } else if (key == "core id") {
      cores.emplace(physical_id, value);
    } else if ((key == "flags" || key == "Features") && flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  if (!model.empty()) {
    cpu["model"] = model;
  } else if (!fallback_model.empty()) {
    cpu["model"] = fallback_model;
  }
  const std::size_t logical = processors > 0 ? processors : std::thread::hardware_concurrency();
  if (logical > 0) cpu["logical_cores"] = logical;
  if (!cores.empty()) cpu["physical_cores"] = cores.size();
  // In a container or under taskset the process may use fewer cores than the machine has; that, not the
  // machine's count, bounds the measured throughput.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpu["available_cores"] = CPU_COUNT(&set);
  // Only the instruction-set extensions that decide which kernels a framework picks.
  static constexpr const char* kInteresting[] = {
      "sse4_2",      "avx",         "avx2",        "fma",      "f16c",     "avx512f",  "avx512bw", "avx512vl",
      "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd",    "sve"};
  nlohmann::json present = nlohmann::json::array();
  for (const char* f : kInteresting) {
    if (flags.count(f) != 0) present.push_back(f);
  }
  cpu["flags"] = std::move(present);
  if (auto khz = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")) {
    try {
      cpu["max_mhz"] = std::stod(*khz) / 1000.0;
    } catch (...) {
      // unreadable frequency: left out
    }
  }
  out["cpu"] = std::move(cpu);
}

void describe_memory(nlohmann::json& out) {
  nlohmann::json mem = nlohmann::json::object();
  std::ifstream in("/proc/meminfo");
  std::string line, key, value;
  while (std::getline(in, line)) {
    if (!split_colon(line, key, value)) continue;
    const char* field = key == "MemTotal" ? "total_bytes" : key == "MemAvailable" ? "available_bytes" : nullptr;
    if (field == nullptr) continue;
    try {
      // /proc/meminfo says "kB" but means KiB.
      mem[field] = static_cast<std::uint64_t>(std::stoull(value)) * 1024u;
    } catch (...) {
    }
  }
  out["memory"] = std::move(mem);
}

std::string compiler_name() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

std::string cxx_standard() {
  switch (__cplusplus) {
    case 201703L:
      return "C++17";
    case 202002L:
      return "C++20";
    case 202302L:
      return "C++23";
    default:
      return "C++ (" + std::to_string(__cplusplus) + ")";
  }
}

void describe_software(nlohmann::json& out) {
  nlohmann::json sw = nlohmann::json::object();
  sw["compiler"] = compiler_name();
  sw["cxx_standard"] = cxx_standard();
  sw["xsp_version"] = xsp_version();
  sw["xsp_git_revision"] = xsp_git_revision();
  // CMake's build type is not passed to this file; NDEBUG is what CMake's optimized configurations set.
#if defined(NDEBUG)
  sw["build_type"] = "release";
#else
  sw["build_type"] = "debug";
#endif
#if defined(__GLIBC__)
  sw["libc"] = std::string("glibc ") + gnu_get_libc_version();
#endif
  out["software"] = std::move(sw);
}

void describe_environment(nlohmann::json& out) {
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    if (is_performance_relevant_env(std::string(name))) env[std::string(name)] = std::string(entry.substr(eq + 1));
  }
  out["environment"] = std::move(env);
}

}  // namespace

std::string xsp_version() { return XSP_VERSION; }
std::string xsp_git_revision() { return XSP_GIT_REVISION; }

nlohmann::json describe_system() {
  nlohmann::json out = nlohmann::json::object();
  // Each part separately: one unreadable source (or an allocation failure) must not drop the others.
  for (void (*part)(nlohmann::json&) :
       {describe_host, describe_cpu, describe_memory, describe_software, describe_environment}) {
    try {
      part(out);
    } catch (...) {
      // left out, as documented: describe_system never throws
    }
  }
  try {
    // GPUs through nvidia-smi (none found: empty list); CUDA as the driver reports it, and the CUDA runtime
    // and cuDNN the process has loaded (or could load), each with its own version call.
    const auto nv = describe_nvidia_gpus();
    out["gpu"] = nv.value("gpus", nlohmann::json::array());
    out["cuda"] = describe_cuda_libraries();
    if (nv.contains("driver_cuda_version")) out["cuda"]["driver_cuda_version"] = nv["driver_cuda_version"];
    out["captured_at"] = utc_now_iso8601();
  } catch (...) {
  }
  return out;
}

}  // namespace xsp
