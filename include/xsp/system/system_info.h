// System description captured with every evaluation (SPEC §7): enough to reproduce the measurement.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "xsp/util/time.h"

namespace xsp {

/// XSP's own version ("0.1.0") and the git revision it was built from ("unknown" outside a checkout).
std::string xsp_version();
std::string xsp_git_revision();

/// Describes this machine and process as JSON:
///  host: hostname, os (PRETTY_NAME of /etc/os-release), kernel (uname -r), arch
///  cpu: model (/proc/cpuinfo "model name"), logical_cores, physical_cores (unique core ids), flags subset
///       (avx2, avx512f, fma...), max_mhz where /sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq exists
///  memory: total_bytes, available_bytes (/proc/meminfo)
///  gpu: one object per NVIDIA GPU from nvidia-smi when it is on PATH (name, driver_version, sm_clock_mhz,
///       mem_clock_mhz, memory_total_bytes; see gpu_info.h), [] otherwise
///  cuda: {runtime: {status, version, driver_version, library}, cudnn: {status, version, library}} found by
///        dlopen (cuda_libraries.h; status "absent" without them), plus driver_cuda_version from nvidia-smi's
///        banner when known
///  software: compiler (__VERSION__ with GCC/Clang prefix), cxx_standard, xsp_version, xsp_git_revision,
///            build_type, libc (gnu_get_libc_version)
///  environment: values of the set variables that change performance (is_performance_relevant_env():
///               OMP_*, MKL_*, CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, CUBLAS_WORKSPACE_CONFIG, CUDNN_*,
///               TORCH_*, PYTORCH_*, LD_PRELOAD...)
///  captured_at: ISO 8601 UTC
/// Never throws: a fact that cannot be read is left out.
nlohmann::json describe_system();

/// Current UTC time as ISO 8601 with seconds ("2026-11-21T22:08:00Z"); xsp/util/time.h.
using util::utc_now_iso8601;

}  // namespace xsp
