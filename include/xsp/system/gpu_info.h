// NVIDIA GPU facts for the system description (SPEC §7), read through nvidia-smi so that a CPU-only build
// still records the machine's GPUs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace xsp {

/// Parses the output of `nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total
/// --format=csv,noheader` (one line per GPU, e.g. "NVIDIA H100 80GB HBM3, 535.104.05, 1980 MHz, 2619 MHz,
/// 81559 MiB") into [{index, name, driver_version, sm_clock_mhz, mem_clock_mhz, memory_total_bytes}]. Fields
/// nvidia-smi reports as "[N/A]" or that do not parse are left out; lines without 5 fields are skipped.
nlohmann::json parse_nvidia_smi_gpus(const std::string& csv);

/// The "CUDA Version: X.Y" that plain `nvidia-smi` prints in its banner (the newest CUDA the driver supports),
/// or "" when absent.
std::string parse_nvidia_smi_cuda_version(const std::string& banner);

/// Runs nvidia-smi when it is on PATH: {"gpus": [...], "driver_cuda_version": "12.2"}; an empty object when
/// nvidia-smi is missing or fails. Never throws.
nlohmann::json describe_nvidia_gpus();

/// The system description as readable lines ("host: ...", "cpu: ...", "gpu 0: ..."), for `xsp show`. Unknown
/// keys are printed as JSON; never throws on missing keys.
std::string format_system(const nlohmann::json& system);

}  // namespace xsp
