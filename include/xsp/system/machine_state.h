// The machine's state around a run: GPU clocks, temperature, power and throttling (NVML, loaded with dlopen so
// that no build needs it) and the CPU's frequency governor and load. Benchmark numbers drift on noisy machines;
// recording this with every run, and turning throttling or a clock change into a warning, says when a figure is
// not to be trusted.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xsp {

/// NVML's nvmlViolationTime_t, declared here because nvml.h is not needed to build XSP (NVML's C ABI is stable).
struct NvmlViolationTime {
  unsigned long long reference_time = 0;  ///< CPU timestamp of the reading (µs)
  unsigned long long violation_time = 0;  ///< cumulative time held back by the policy since driver load (ns)
};

/// NVML constants XSP passes or decodes (values from NVML's public ABI).
inline constexpr int kNvmlSuccess = 0;               ///< NVML_SUCCESS
inline constexpr int kNvmlClockSm = 1;               ///< NVML_CLOCK_SM (nvmlClockType_t)
inline constexpr int kNvmlClockMem = 2;              ///< NVML_CLOCK_MEM
inline constexpr int kNvmlTemperatureGpu = 0;        ///< NVML_TEMPERATURE_GPU (nvmlTemperatureSensors_t)
inline constexpr int kNvmlPerfPolicyPower = 0;       ///< NVML_PERF_POLICY_POWER (nvmlPerfPolicyType_t)
inline constexpr int kNvmlPerfPolicyThermal = 1;     ///< NVML_PERF_POLICY_THERMAL
inline constexpr unsigned kNvmlNameBufferSize = 96;  ///< NVML_DEVICE_NAME_V2_BUFFER_SIZE (UUID's is the same)

/// Bits of NVML's clocks event (formerly "throttle") reasons mask.
inline constexpr std::uint64_t kClocksEventGpuIdle = 0x1;
inline constexpr std::uint64_t kClocksEventApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kClocksEventSwPowerCap = 0x4;
inline constexpr std::uint64_t kClocksEventHwSlowdown = 0x8;
inline constexpr std::uint64_t kClocksEventSyncBoost = 0x10;
inline constexpr std::uint64_t kClocksEventSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kClocksEventHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kClocksEventHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kClocksEventDisplayClockSetting = 0x100;
/// The reasons that do not mean the GPU was held back by a limit: it was idle, or someone chose the clocks
/// (application clocks, display, sync boost across GPUs). Every other bit, unknown ones included, is throttling.
inline constexpr std::uint64_t kClocksEventBenign = kClocksEventGpuIdle | kClocksEventApplicationsClocksSetting |
                                                    kClocksEventSyncBoost | kClocksEventDisplayClockSetting;

/// The NVML entry points XSP uses, as plain function pointers (so tests can inject fakes). Any may be null: the
/// fields it would fill stay empty. Each returns an nvmlReturn_t as int (0 = NVML_SUCCESS); the device handle
/// (nvmlDevice_t, a pointer in NVML's ABI) is an opaque void*. The instance must outlive every sample and
/// MachineMonitor that uses it.
struct NvmlApi {
  /// nvmlDeviceGetCount_v2: the number of GPUs NVML sees (all of them, not only CUDA_VISIBLE_DEVICES).
  int (*device_get_count)(unsigned int* count) = nullptr;
  /// nvmlDeviceGetHandleByIndex_v2: NVML's index order, which is PCI bus order like nvidia-smi's.
  int (*device_get_handle_by_index)(unsigned int index, void** device) = nullptr;
  /// nvmlDeviceGetName / nvmlDeviceGetUUID: NUL-terminated text into a buffer of `length` bytes.
  int (*device_get_name)(void* device, char* name, unsigned int length) = nullptr;
  int (*device_get_uuid)(void* device, char* uuid, unsigned int length) = nullptr;
  /// nvmlDeviceGetClockInfo: current clock of `clock_type` (kNvmlClockSm, kNvmlClockMem) in MHz.
  int (*device_get_clock_info)(void* device, int clock_type, unsigned int* mhz) = nullptr;
  /// nvmlDeviceGetTemperature: `sensor` kNvmlTemperatureGpu, in °C.
  int (*device_get_temperature)(void* device, int sensor, unsigned int* celsius) = nullptr;
  /// nvmlDeviceGetPowerUsage: board power draw in mW.
  int (*device_get_power_usage)(void* device, unsigned int* milliwatts) = nullptr;
  /// nvmlDeviceGetTotalEnergyConsumption: energy since the driver was loaded, in mJ (Volta and newer).
  int (*device_get_total_energy_consumption)(void* device, unsigned long long* millijoules) = nullptr;
  /// nvmlDeviceGetCurrentClocksEventReasons, or nvmlDeviceGetCurrentClocksThrottleReasons on drivers older than
  /// R535 that lack it (same ABI): the kClocksEvent* bitmask in effect now.
  int (*device_get_current_clocks_event_reasons)(void* device, unsigned long long* reasons) = nullptr;
  /// nvmlDeviceGetViolationStatus: `policy` kNvmlPerfPolicyPower or kNvmlPerfPolicyThermal.
  int (*device_get_violation_status)(void* device, int policy, NvmlViolationTime* time) = nullptr;
};

/// The process-wide NVML, dlopen'ed and initialised once on first use (thread-safe); nullptr when libnvidia-ml.so.1
/// cannot be loaded or nvmlInit_v2 fails. `status` (optional out) says why: "loaded", "absent (libnvidia-ml.so.1 not
/// found)", "nvmlInit_v2 failed: <code>" (followed by NVML's error string in parentheses when it has one). A failed
/// load is not retried. The library stays loaded and initialised until the process exits: nvmlShutdown is never
/// called, since NVML counts init/shutdown pairs and other code in the process may be using it.
const NvmlApi* system_nvml(std::string* status = nullptr);

/// One GPU as NVML reports it at one instant. Each optional is empty when its NVML call is missing or failed.
struct GpuState {
  int index = 0;                                       ///< NVML index
  std::string name;                                    ///< e.g. "NVIDIA H100 80GB HBM3"; "" when unknown
  std::string uuid;                                    ///< e.g. "GPU-5d3c…"; "" when unknown
  std::optional<int> sm_clock_mhz, mem_clock_mhz;      ///< current clocks (MHz)
  std::optional<int> temperature_c;                    ///< GPU core temperature (°C)
  std::optional<double> power_w;                       ///< board power draw (W)
  std::optional<std::uint64_t> energy_mj;              ///< total energy since driver load (mJ)
  std::optional<std::uint64_t> clocks_event_reasons;   ///< NVML bitmask (kClocksEvent*)
  std::vector<std::string> clocks_event_reason_names;  ///< e.g. "sw_power_cap", "hw_thermal_slowdown"
  /// Cumulative time since driver load that power / thermal limits held the clocks below the application clocks
  /// (ns). A start/end delta > 0 is throttling during the run even when no sample caught the reason bit.
  std::optional<std::uint64_t> power_violation_ns, thermal_violation_ns;
};

/// The CPU facts that make host-side timings noisy. Load and CPU count are the whole host's, as /proc shows them
/// (a container's CPU limit is not applied), which is what competes with the run.
struct CpuState {
  /// /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor, the same on every CPU (so cpu0's); "" when cpufreq is
  /// absent (e.g. most VMs); "mixed" if CPUs differ.
  std::string governor;
  std::optional<double> load_avg_1m, load_avg_5m, load_avg_15m;  ///< /proc/loadavg
  std::optional<double> cpu_mhz_mean;  ///< mean "cpu MHz" of /proc/cpuinfo (absent on CPUs that do not report it)
  int logical_cpus = 0;                ///< "processor" entries of /proc/cpuinfo, else the online CPU count
};

/// One sample of the machine.
struct MachineState {
  std::int64_t host_ns = 0;  ///< CLOCK_MONOTONIC when sampled (ns), the clock of xsp::now_ns()
  /// As system_nvml() for the system's NVML; "loaded" for any other NvmlApi given; for a null one, system_nvml()'s
  /// failure when it was tried and failed, else "absent (no NVML given)".
  std::string nvml_status;
  std::vector<GpuState> gpus;
  CpuState cpu;
};

/// Full sample: every GPU NVML reports (or only `gpu_index` when >= 0; a GPU whose handle NVML refuses appears
/// with its index only) and the CPU facts. `nvml` may be null (no GPUs). Never throws: a failing source leaves
/// its fields empty. Costs a few NVML calls per GPU and reading /proc and /sys, so keep it outside timed regions.
MachineState sample_machine_state(const NvmlApi* nvml, int gpu_index = -1);
MachineState sample_machine_state();  ///< system_nvml(), all GPUs

/// Thresholds for machine_state_warnings.
struct MonitorThresholds {
  double clock_change_fraction = 0.05;  ///< warn when (max - min) / max of the SM clock exceeds this
  double load_per_cpu = 1.0;            ///< warn when the 1-minute load average exceeds this × logical CPUs
};

/// Warnings for a run, each one human-readable sentence naming the GPU and figures, e.g.
///  "gpu 0: throttled during the run: power cap for 120.0 ms, thermal for 0 ms (NVML violation counters)",
///  "gpu 0: clocks held back during the run: sw_power_cap, hw_slowdown",
///  "gpu 0: SM clock changed during the run: 1980 -> 1755 MHz (-11.4%)",
///  "cpu: load average 5.2 on 2 CPUs at the start of the run (other work competes for the CPU)",
///  "cpu: frequency governor 'powersave' (use 'performance' for stable timings)".
/// Rules, per GPU of `start` (matched to `end` by index); nothing is said about a field that is absent:
///  - throttling: the power or thermal violation counter grew between start and end (a counter that went
///    backwards, i.e. a driver reload, is ignored); the sentence gives both deltas in ms.
///  - clocks held back: any reason bit outside kClocksEventBenign (gpu_idle, applications_clocks_setting,
///    sync_boost, display_clock_setting) in the union of `reasons_seen` and the GPU's start and end reasons.
///  - clock change: (max - min) / max of the SM clock over `sm_min`, `sm_max` and the GPU's start and end clocks
///    exceeds thresholds.clock_change_fraction. Written "start -> end MHz (±x% of start)" when the start and end
///    clocks are the extremes, else "min to max MHz seen (-x% of max; start S, end E MHz)".
///  `sm_min`, `sm_max` and `reasons_seen` are the extra samples of the run (MachineMonitor::observe()) and are
///  applied only when `start` holds exactly one GPU, since they cannot be told apart per GPU; MachineMonitor passes
///  one GPU at a time when it follows several.
/// And for the CPU:
///  - load: start's load_avg_1m > thresholds.load_per_cpu × logical CPUs.
///  - governor (start's, else end's): every governor that changes the frequency with the load warns —
///    "powersave" (which under intel_pstate / amd-pstate still scales), "ondemand", "conservative", "schedutil" —
///    and "mixed"; "performance" and "userspace" (fixed by the user) do not, nor does a name XSP does not know.
std::vector<std::string> machine_state_warnings(const MachineState& start, const MachineState& end,
                                                std::optional<int> sm_min, std::optional<int> sm_max,
                                                std::uint64_t reasons_seen, const MonitorThresholds& thresholds = {});

/// Follows one run: start() takes a full sample, observe() a light one (SM clock + reasons only, cheap enough to call
/// between blocks of batches, outside timed regions), finish() a full one, after which warnings() gives the warnings.
/// Keeps the min/max SM clock and the union of reasons seen over all samples, per GPU. The GPUs are fixed at start().
/// Not thread-safe; never throws. `nvml` may be null (CPU facts only) and must outlive the monitor.
class MachineMonitor {
 public:
  explicit MachineMonitor(const NvmlApi* nvml, int gpu_index = -1, MonitorThresholds thresholds = {});

  void start();    ///< full sample; forgets an earlier run
  void observe();  ///< light sample; ignored before start() or after finish()
  void finish();   ///< full sample at the end (alone, without start(): the end sample only); then warnings() hold

  const MachineState& start_state() const { return start_; }
  const MachineState& end_state() const { return end_; }
  /// machine_state_warnings over the run, GPU by GPU; empty before finish().
  std::vector<std::string> warnings() const;
  /// {"start":…, "end":…, "sm_clock_mhz_min":…, "sm_clock_mhz_max":…, "clocks_event_reasons_seen":[names],
  /// "samples":N}: min/max over all followed GPUs, omitted when no SM clock was read; samples counts start, observe and
  /// finish calls. With several GPUs, "per_gpu" adds [{"index", "sm_clock_mhz_min", "sm_clock_mhz_max",
  /// "clocks_event_reasons_seen"}].
  nlohmann::json to_json() const;

 private:
  struct Followed {  // one GPU: its NVML handle and what the samples saw
    int index = 0;
    void* handle = nullptr;
    bool has_handle = false;
    std::optional<int> sm_min, sm_max;
    std::uint64_t reasons_seen = 0;
  };
  void fold(Followed& f, const std::optional<int>& sm, const std::optional<std::uint64_t>& reasons);
  void fold_full(const MachineState& s);

  const NvmlApi* nvml_;
  int gpu_index_;
  MonitorThresholds thresholds_;
  std::vector<Followed> followed_;
  MachineState start_, end_;
  int samples_ = 0;
  bool started_ = false, finished_ = false;
};

/// {"host_ns", "nvml_status", "gpus": [{"index", "name", "uuid", "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
/// "power_w", "energy_mj", "clocks_event_reasons", "clocks_event_reason_names", "power_violation_ns",
/// "thermal_violation_ns"}], "cpu": {"governor", "load_avg_1m", "load_avg_5m", "load_avg_15m", "cpu_mhz_mean",
/// "logical_cpus"}}; absent optionals are omitted (reason names too, when the mask is absent).
nlohmann::json to_json(const MachineState& state);
/// The inverse of to_json (round trip). Missing keys keep their defaults; reason names missing beside a mask are
/// derived from it. Throws std::invalid_argument naming the field (e.g. "machine state: gpus[0].sm_clock_mhz: expected
/// an integer") on a wrong type or a value out of range.
MachineState machine_state_from_json(const nlohmann::json& j);

/// Names of the bits set in `mask`, lowest bit first: "gpu_idle", "applications_clocks_setting", "sw_power_cap",
/// "hw_slowdown", "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
/// "display_clock_setting"; a bit NVML added later is "unknown_0x…".
std::vector<std::string> clocks_event_reason_names(std::uint64_t mask);

/// Parsers used by sample_machine_state, public for tests. `loadavg_text` is /proc/loadavg ("0.52 0.40 0.33 1/82
/// 8690"), `governors` the scaling_governor of each CPU that has one (cpu0 first), `cpuinfo_text` /proc/cpuinfo.
/// Text that does not parse leaves its fields empty; never throws.
CpuState parse_cpu_state(const std::string& loadavg_text, const std::vector<std::string>& governors,
                         const std::string& cpuinfo_text);

/// Short lines for `xsp machine state` and `xsp show`, one per GPU and one for the CPU, e.g.
/// "gpu 0 NVIDIA H100 80GB HBM3: SM 1980 MHz, mem 2619 MHz, 41 C, 112.3 W, reasons: none" and
/// "cpu: governor performance, load 0.52 0.4 0.33, 2 CPUs, 2596 MHz" (at most two decimals); absent fields are left
/// out; "gpu: none (nvml <status>)" stands for no GPUs.
std::string format_machine_state(const MachineState& state);

}  // namespace xsp
