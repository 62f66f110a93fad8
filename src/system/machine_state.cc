// Machine state around a run (NVML through dlopen, /proc and /sys); see include/xsp/system/machine_state.h.
#include "xsp/system/machine_state.h"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "xsp/util/strings.h"

namespace xsp {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// NVML loading

struct LoadedNvml {
  NvmlApi api;
  bool ok = false;
  std::string status;
};

// Set once the load was tried, so that a sample given a null NvmlApi can say why NVML is missing without being the
// one to trigger a dlopen.
std::atomic<const LoadedNvml*> g_tried{nullptr};

template <typename Fn>
void resolve(void* lib, const char* name, Fn& out) {
  // dlsym returns void*; POSIX guarantees the round trip to a function pointer. The prototypes differ from nvml.h
  // only in spelling (nvmlDevice_t is a pointer, the enums are int-sized), not in ABI.
  out = reinterpret_cast<Fn>(::dlsym(lib, name));
}

LoadedNvml load_nvml() {
  LoadedNvml l;
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    ::dlerror();  // clear, so that our failure cannot show up in someone else's dlerror()
    l.status = "absent (libnvidia-ml.so.1 not found)";
    return l;
  }
  using Init = int (*)();
  using ErrorString = const char* (*)(int);
  Init init = nullptr;
  ErrorString error_string = nullptr;
  resolve(lib, "nvmlInit_v2", init);
  resolve(lib, "nvmlErrorString", error_string);
  const int rc = init != nullptr ? init() : -1;
  if (rc != kNvmlSuccess) {
    l.status = "nvmlInit_v2 failed: ";
    if (init == nullptr) {
      l.status += "symbol not found";
    } else {
      l.status += std::to_string(rc);
      const char* text = error_string != nullptr ? error_string(rc) : nullptr;
      if (text != nullptr && *text != '\0') l.status += std::string(" (") + text + ")";
    }
    ::dlclose(lib);
    return l;
  }
  NvmlApi& a = l.api;
  resolve(lib, "nvmlDeviceGetCount_v2", a.device_get_count);
  resolve(lib, "nvmlDeviceGetHandleByIndex_v2", a.device_get_handle_by_index);
  resolve(lib, "nvmlDeviceGetName", a.device_get_name);
  resolve(lib, "nvmlDeviceGetUUID", a.device_get_uuid);
  resolve(lib, "nvmlDeviceGetClockInfo", a.device_get_clock_info);
  resolve(lib, "nvmlDeviceGetTemperature", a.device_get_temperature);
  resolve(lib, "nvmlDeviceGetPowerUsage", a.device_get_power_usage);
  resolve(lib, "nvmlDeviceGetTotalEnergyConsumption", a.device_get_total_energy_consumption);
  resolve(lib, "nvmlDeviceGetCurrentClocksEventReasons", a.device_get_current_clocks_event_reasons);
  if (a.device_get_current_clocks_event_reasons == nullptr)  // renamed in R535; the old name has the same ABI
    resolve(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", a.device_get_current_clocks_event_reasons);
  resolve(lib, "nvmlDeviceGetViolationStatus", a.device_get_violation_status);
  ::dlerror();
  l.ok = true;
  l.status = "loaded";
  return l;  // the library stays open: the function pointers live as long as the process
}

const LoadedNvml& loaded_nvml() {
  static const LoadedNvml l = [] {
    LoadedNvml r;
    try {
      r = load_nvml();
    } catch (...) {  // only std::string can throw here (bad_alloc); sampling must not
      r = LoadedNvml{};
    }
    return r;
  }();
  g_tried.store(&l, std::memory_order_release);
  return l;
}

std::string status_for(const NvmlApi* nvml) {
  if (nvml != nullptr) return "loaded";
  if (const LoadedNvml* l = g_tried.load(std::memory_order_acquire); l != nullptr && !l->ok) return l->status;
  return "absent (no NVML given)";
}

// ---------------------------------------------------------------------------------------------------------------
// Sampling

struct Device {
  int index = 0;
  void* handle = nullptr;
  bool has_handle = false;
};

std::vector<Device> enumerate(const NvmlApi* nvml, int gpu_index) {
  std::vector<Device> out;
  if (nvml == nullptr) return out;
  unsigned count = 0;
  const bool counted = nvml->device_get_count != nullptr && nvml->device_get_count(&count) == kNvmlSuccess;
  std::vector<int> indices;
  if (gpu_index >= 0) {
    // Without a count the index is tried as given: a handle failure still records that the GPU was asked for.
    if (!counted || static_cast<unsigned>(gpu_index) < count) indices.push_back(gpu_index);
  } else if (counted) {
    for (unsigned i = 0; i < count && i < 1024; ++i) indices.push_back(static_cast<int>(i));
  }
  for (int i : indices) {
    Device d;
    d.index = i;
    if (nvml->device_get_handle_by_index != nullptr)
      d.has_handle = nvml->device_get_handle_by_index(static_cast<unsigned>(i), &d.handle) == kNvmlSuccess;
    out.push_back(d);
  }
  return out;
}

std::string nvml_text(int (*fn)(void*, char*, unsigned), void* handle) {
  if (fn == nullptr) return {};
  char buf[kNvmlNameBufferSize] = {};
  if (fn(handle, buf, sizeof buf) != kNvmlSuccess) return {};
  buf[sizeof buf - 1] = '\0';  // do not trust a misbehaving library to terminate it
  return buf;
}

std::optional<int> nvml_clock(const NvmlApi& nvml, void* handle, int type) {
  unsigned v = 0;
  if (nvml.device_get_clock_info == nullptr || nvml.device_get_clock_info(handle, type, &v) != kNvmlSuccess)
    return std::nullopt;
  return static_cast<int>(v);
}

std::optional<std::uint64_t> nvml_reasons(const NvmlApi& nvml, void* handle) {
  unsigned long long v = 0;
  if (nvml.device_get_current_clocks_event_reasons == nullptr ||
      nvml.device_get_current_clocks_event_reasons(handle, &v) != kNvmlSuccess)
    return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

std::optional<std::uint64_t> nvml_violation(const NvmlApi& nvml, void* handle, int policy) {
  NvmlViolationTime t;
  if (nvml.device_get_violation_status == nullptr ||
      nvml.device_get_violation_status(handle, policy, &t) != kNvmlSuccess)
    return std::nullopt;
  return static_cast<std::uint64_t>(t.violation_time);
}

GpuState sample_gpu(const NvmlApi& nvml, const Device& d) {
  GpuState g;
  g.index = d.index;
  if (!d.has_handle) return g;
  void* h = d.handle;
  g.name = nvml_text(nvml.device_get_name, h);
  g.uuid = nvml_text(nvml.device_get_uuid, h);
  g.sm_clock_mhz = nvml_clock(nvml, h, kNvmlClockSm);
  g.mem_clock_mhz = nvml_clock(nvml, h, kNvmlClockMem);
  if (unsigned c = 0;
      nvml.device_get_temperature && nvml.device_get_temperature(h, kNvmlTemperatureGpu, &c) == kNvmlSuccess)
    g.temperature_c = static_cast<int>(c);
  if (unsigned mw = 0; nvml.device_get_power_usage && nvml.device_get_power_usage(h, &mw) == kNvmlSuccess)
    g.power_w = mw / 1000.0;
  if (unsigned long long mj = 0;
      nvml.device_get_total_energy_consumption && nvml.device_get_total_energy_consumption(h, &mj) == kNvmlSuccess)
    g.energy_mj = mj;
  g.clocks_event_reasons = nvml_reasons(nvml, h);
  if (g.clocks_event_reasons) g.clocks_event_reason_names = clocks_event_reason_names(*g.clocks_event_reasons);
  g.power_violation_ns = nvml_violation(nvml, h, kNvmlPerfPolicyPower);
  g.thermal_violation_ns = nvml_violation(nvml, h, kNvmlPerfPolicyThermal);
  return g;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// scaling_governor of every CPU that has cpufreq, in CPU number order (cpu0 first).
std::vector<std::string> read_governors() {
  std::vector<std::pair<long, std::string>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/sys/devices/system/cpu", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
        !std::all_of(name.begin() + 3, name.end(), [](unsigned char c) { return std::isdigit(c); }))
      continue;
    const std::string g(util::trim(read_file((it->path() / "cpufreq" / "scaling_governor").string())));
    if (!g.empty()) found.emplace_back(std::stol(name.substr(3)), g);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

CpuState sample_cpu() {
  CpuState c = parse_cpu_state(read_file("/proc/loadavg"), read_governors(), read_file("/proc/cpuinfo"));
  if (c.logical_cpus == 0)
    if (const long n = ::sysconf(_SC_NPROCESSORS_ONLN); n > 0) c.logical_cpus = static_cast<int>(n);
  return c;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

MachineState sample(const NvmlApi* nvml, const std::vector<Device>& devices) {
  MachineState s;
  try {
    s.host_ns = monotonic_ns();
    s.nvml_status = status_for(nvml);
    if (nvml != nullptr)
      for (const auto& d : devices) s.gpus.push_back(sample_gpu(*nvml, d));
    s.cpu = sample_cpu();
  } catch (...) {
    // Only allocation or filesystem trouble gets here; keep what was sampled.
  }
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Warnings and formatting

std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// At most two decimals, trailing zeros dropped: 5.2, 2.04, 3.
std::string short_number(double v) {
  std::string s = printf_string("%.2f", v);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string ms_text(std::uint64_t ns) { return ns == 0 ? "0 ms" : printf_string("%.1f ms", ns / 1e6); }

std::string percent_text(double fraction) { return printf_string("%+.1f%%", fraction * 100.0); }

const GpuState* find_gpu(const MachineState& s, int index) {
  for (const auto& g : s.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

std::optional<std::uint64_t> counter_delta(const std::optional<std::uint64_t>& a,
                                           const std::optional<std::uint64_t>& b) {
  if (!a || !b || *b < *a) return std::nullopt;  // backwards: the driver was reloaded, the delta means nothing
  return *b - *a;
}

void gpu_warnings(const GpuState& s, const GpuState* e, std::optional<int> sm_min, std::optional<int> sm_max,
                  std::uint64_t reasons_seen, const MonitorThresholds& th, std::vector<std::string>& out) {
  const std::string who = "gpu " + std::to_string(s.index) + ": ";
  if (e != nullptr) {
    const auto power = counter_delta(s.power_violation_ns, e->power_violation_ns);
    const auto thermal = counter_delta(s.thermal_violation_ns, e->thermal_violation_ns);
    if ((power && *power > 0) || (thermal && *thermal > 0)) {
      std::string w = who + "throttled during the run: ";
      if (power) w += "power cap for " + ms_text(*power);
      if (power && thermal) w += ", ";
      if (thermal) w += "thermal for " + ms_text(*thermal);
      out.push_back(w + " (NVML violation counters)");
    }
  }

  std::uint64_t reasons = reasons_seen | s.clocks_event_reasons.value_or(0);
  if (e != nullptr) reasons |= e->clocks_event_reasons.value_or(0);
  if (const std::uint64_t bad = reasons & ~kClocksEventBenign; bad != 0) {
    std::string w = who + "clocks held back during the run: ";
    const auto names = clocks_event_reason_names(bad);
    for (std::size_t i = 0; i < names.size(); ++i) w += (i ? ", " : "") + names[i];
    out.push_back(w);
  }

  const std::optional<int> sm_start = s.sm_clock_mhz, sm_end = e != nullptr ? e->sm_clock_mhz : std::nullopt;
  std::optional<int> lo = sm_min, hi = sm_max;
  for (const auto& v : {sm_min, sm_max, sm_start, sm_end}) {
    if (!v) continue;
    lo = lo ? std::min(*lo, *v) : *v;
    hi = hi ? std::max(*hi, *v) : *v;
  }
  if (lo && hi && *hi > 0 && static_cast<double>(*hi - *lo) / *hi > th.clock_change_fraction) {
    std::string w = who + "SM clock changed during the run: ";
    const bool ends_are_extremes = sm_start && sm_end && std::min(*sm_start, *sm_end) == *lo &&
                                   std::max(*sm_start, *sm_end) == *hi && *sm_start > 0;
    if (ends_are_extremes) {
      w += std::to_string(*sm_start) + " -> " + std::to_string(*sm_end) + " MHz (" +
           percent_text(static_cast<double>(*sm_end - *sm_start) / *sm_start) + ")";
    } else {
      w += std::to_string(*lo) + " to " + std::to_string(*hi) + " MHz seen (" +
           percent_text(-static_cast<double>(*hi - *lo) / *hi) + " of max";
      if (sm_start || sm_end) {
        w += ";";
        if (sm_start) w += " start " + std::to_string(*sm_start);
        if (sm_start && sm_end) w += ",";
        if (sm_end) w += " end " + std::to_string(*sm_end);
        w += " MHz";
      }
      w += ")";
    }
    out.push_back(w);
  }
}

bool governor_scales(const std::string& g) {
  return g == "powersave" || g == "ondemand" || g == "conservative" || g == "schedutil" || g == "mixed";
}

[[noreturn]] void bad_field(const std::string& field, const char* expected) {
  throw std::invalid_argument("machine state: " + field + ": expected " + expected);
}

// Typed readers for machine_state_from_json: a missing key leaves the target alone, a wrong type throws.
const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

void read_string(const nlohmann::json& j, const char* key, const std::string& path, std::string& out) {
  if (const auto* v = member(j, key)) {
    if (!v->is_string()) bad_field(path + key, "a string");
    out = v->get<std::string>();
  }
}

template <typename Int>
void read_int(const nlohmann::json& j, const char* key, const std::string& path, Int& out) {
  const auto* v = member(j, key);
  if (v == nullptr) return;
  if (!v->is_number_integer()) bad_field(path + key, "an integer");
  if constexpr (std::is_unsigned_v<Int>) {
    if (v->is_number_unsigned()) {
      out = v->get<Int>();
      return;
    }
    const auto i = v->get<std::int64_t>();
    if (i < 0) bad_field(path + key, "a non-negative integer");
    out = static_cast<Int>(i);
  } else {
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
      bad_field(path + key, "an integer in range");
    const auto i = v->get<std::int64_t>();
    if (i < std::numeric_limits<Int>::min() || i > std::numeric_limits<Int>::max())
      bad_field(path + key, "an integer in range");
    out = static_cast<Int>(i);
  }
}

template <typename Int>
void read_int(const nlohmann::json& j, const char* key, const std::string& path, std::optional<Int>& out) {
  if (member(j, key) == nullptr) return;
  Int v{};
  read_int(j, key, path, v);
  out = v;
}

void read_double(const nlohmann::json& j, const char* key, const std::string& path, std::optional<double>& out) {
  if (const auto* v = member(j, key)) {
    if (!v->is_number()) bad_field(path + key, "a number");
    out = v->get<double>();
  }
}

template <typename T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

}  // namespace

const NvmlApi* system_nvml(std::string* status) {
  const LoadedNvml& l = loaded_nvml();
  if (status != nullptr) *status = l.status;
  return l.ok ? &l.api : nullptr;
}

MachineState sample_machine_state(const NvmlApi* nvml, int gpu_index) {
  std::vector<Device> devices;
  try {
    devices = enumerate(nvml, gpu_index);
  } catch (...) {
  }
  return sample(nvml, devices);
}

MachineState sample_machine_state() {
  std::string status;
  const NvmlApi* nvml = system_nvml(&status);
  MachineState s = sample_machine_state(nvml, -1);
  s.nvml_status = status;
  return s;
}

std::vector<std::string> clocks_event_reason_names(std::uint64_t mask) {
  // Bit i of the mask, as the kClocksEvent* constants define it.
  static constexpr const char* kNames[] = {"gpu_idle",
                                           "applications_clocks_setting",
                                           "sw_power_cap",
                                           "hw_slowdown",
                                           "sync_boost",
                                           "sw_thermal_slowdown",
                                           "hw_thermal_slowdown",
                                           "hw_power_brake_slowdown",
                                           "display_clock_setting"};
  std::vector<std::string> out;
  for (unsigned bit = 0; bit < 64; ++bit) {
    const std::uint64_t b = std::uint64_t{1} << bit;
    if ((mask & b) == 0) continue;
    if (bit < std::size(kNames)) {
      out.emplace_back(kNames[bit]);
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "unknown_0x%llx", static_cast<unsigned long long>(b));
      out.emplace_back(buf);
    }
  }
  return out;
}

CpuState parse_cpu_state(const std::string& loadavg_text, const std::vector<std::string>& governors,
                         const std::string& cpuinfo_text) {
  CpuState c;
  {
    std::istringstream in(loadavg_text);
    double a = 0, b = 0, d = 0;
    if (in >> a >> b >> d) {
      c.load_avg_1m = a;
      c.load_avg_5m = b;
      c.load_avg_15m = d;
    }
  }
  for (const auto& g : governors) {
    const std::string t(util::trim(g));
    if (t.empty()) continue;
    if (c.governor.empty()) {
      c.governor = t;
    } else if (c.governor != t) {
      c.governor = "mixed";
      break;
    }
  }
  std::istringstream lines(cpuinfo_text);
  std::string line;
  double mhz_sum = 0;
  int mhz_count = 0;
  while (std::getline(lines, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key(util::trim(line.substr(0, colon)));
    if (key == "processor") {
      ++c.logical_cpus;
    } else if (key == "cpu MHz") {
      const std::string value(util::trim(line.substr(colon + 1)));
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && std::isfinite(v) && v > 0) {
        mhz_sum += v;
        ++mhz_count;
      }
    }
  }
  if (mhz_count > 0) c.cpu_mhz_mean = mhz_sum / mhz_count;
  return c;
}

std::vector<std::string> machine_state_warnings(const MachineState& start, const MachineState& end,
                                                std::optional<int> sm_min, std::optional<int> sm_max,
                                                std::uint64_t reasons_seen, const MonitorThresholds& th) {
  std::vector<std::string> out;
  try {
    const bool one_gpu = start.gpus.size() == 1;
    for (const auto& g : start.gpus)
      gpu_warnings(g, find_gpu(end, g.index), one_gpu ? sm_min : std::nullopt, one_gpu ? sm_max : std::nullopt,
                   one_gpu ? reasons_seen : 0, th, out);

    const CpuState& c = start.cpu;
    if (c.load_avg_1m && c.logical_cpus > 0 && *c.load_avg_1m > th.load_per_cpu * c.logical_cpus)
      out.push_back("cpu: load average " + short_number(*c.load_avg_1m) + " on " + std::to_string(c.logical_cpus) +
                    (c.logical_cpus == 1 ? " CPU" : " CPUs") +
                    " at the start of the run (other work competes for the CPU)");
    const std::string& gov = !start.cpu.governor.empty() ? start.cpu.governor : end.cpu.governor;
    if (governor_scales(gov))
      out.push_back("cpu: frequency governor '" + gov + "'" + (gov == "mixed" ? " (CPUs differ; " : " (") +
                    "use 'performance' for stable timings)");
  } catch (...) {
    // Allocation failure only; warnings are advice, never a reason to fail a run.
  }
  return out;
}

MachineMonitor::MachineMonitor(const NvmlApi* nvml, int gpu_index, MonitorThresholds thresholds)
    : nvml_(nvml), gpu_index_(gpu_index), thresholds_(thresholds) {}

void MachineMonitor::fold(Followed& f, const std::optional<int>& sm, const std::optional<std::uint64_t>& reasons) {
  if (sm) {
    f.sm_min = f.sm_min ? std::min(*f.sm_min, *sm) : *sm;
    f.sm_max = f.sm_max ? std::max(*f.sm_max, *sm) : *sm;
  }
  if (reasons) f.reasons_seen |= *reasons;
}

void MachineMonitor::fold_full(const MachineState& s) {
  for (auto& f : followed_)
    if (const GpuState* g = find_gpu(s, f.index)) fold(f, g->sm_clock_mhz, g->clocks_event_reasons);
  ++samples_;
}

void MachineMonitor::start() {
  followed_.clear();
  start_ = end_ = MachineState{};
  samples_ = 0;
  finished_ = false;
  std::vector<Device> devices;
  try {
    devices = enumerate(nvml_, gpu_index_);
    for (const auto& d : devices) followed_.push_back({d.index, d.handle, d.has_handle, {}, {}, 0});
  } catch (...) {
    devices.clear();
    followed_.clear();
  }
  start_ = sample(nvml_, devices);
  fold_full(start_);
  started_ = true;
}

void MachineMonitor::observe() {
  if (!started_ || finished_ || nvml_ == nullptr) return;
  // Two NVML calls per GPU and no allocation: this runs between blocks of batches.
  for (auto& f : followed_) {
    if (!f.has_handle) continue;
    fold(f, nvml_clock(*nvml_, f.handle, kNvmlClockSm), nvml_reasons(*nvml_, f.handle));
  }
  ++samples_;
}

void MachineMonitor::finish() {
  if (finished_) return;
  if (!started_) start_ = MachineState{};
  std::vector<Device> devices;
  try {
    if (!started_)  // finish() alone: follow the GPUs now, so that the end sample still has them
      for (const auto& d : enumerate(nvml_, gpu_index_))
        followed_.push_back({d.index, d.handle, d.has_handle, {}, {}, 0});
    for (const auto& f : followed_) devices.push_back({f.index, f.handle, f.has_handle});
  } catch (...) {
    devices.clear();
  }
  end_ = sample(nvml_, devices);
  fold_full(end_);
  finished_ = true;
}

std::vector<std::string> MachineMonitor::warnings() const {
  if (!finished_) return {};
  if (followed_.size() <= 1) {
    const Followed none;
    const Followed& f = followed_.empty() ? none : followed_.front();
    return machine_state_warnings(start_, end_, f.sm_min, f.sm_max, f.reasons_seen, thresholds_);
  }
  std::vector<std::string> out;
  try {
    // One GPU at a time, so that each GPU's observed extremes go with that GPU; the CPU once.
    MachineState s = start_, e = end_;
    for (const auto& f : followed_) {
      s.gpus.clear();
      e.gpus.clear();
      if (const GpuState* g = find_gpu(start_, f.index)) s.gpus.push_back(*g);
      if (const GpuState* g = find_gpu(end_, f.index)) e.gpus.push_back(*g);
      if (s.gpus.empty()) continue;
      s.cpu = e.cpu = CpuState{};
      for (auto& w : machine_state_warnings(s, e, f.sm_min, f.sm_max, f.reasons_seen, thresholds_))
        out.push_back(std::move(w));
    }
    s.gpus.clear();
    e.gpus.clear();
    s.cpu = start_.cpu;
    e.cpu = end_.cpu;
    for (auto& w : machine_state_warnings(s, e, std::nullopt, std::nullopt, 0, thresholds_))
      out.push_back(std::move(w));
  } catch (...) {
  }
  return out;
}

nlohmann::json MachineMonitor::to_json() const {
  std::optional<int> lo, hi;
  std::uint64_t seen = 0;
  nlohmann::json per_gpu = nlohmann::json::array();
  for (const auto& f : followed_) {
    if (f.sm_min) lo = lo ? std::min(*lo, *f.sm_min) : *f.sm_min;
    if (f.sm_max) hi = hi ? std::max(*hi, *f.sm_max) : *f.sm_max;
    seen |= f.reasons_seen;
    nlohmann::json g = {{"index", f.index}, {"clocks_event_reasons_seen", clocks_event_reason_names(f.reasons_seen)}};
    put(g, "sm_clock_mhz_min", f.sm_min);
    put(g, "sm_clock_mhz_max", f.sm_max);
    per_gpu.push_back(std::move(g));
  }
  nlohmann::json j = {{"start", xsp::to_json(start_)},
                      {"end", xsp::to_json(end_)},
                      {"clocks_event_reasons_seen", clocks_event_reason_names(seen)},
                      {"samples", samples_}};
  put(j, "sm_clock_mhz_min", lo);
  put(j, "sm_clock_mhz_max", hi);
  if (followed_.size() > 1) j["per_gpu"] = std::move(per_gpu);
  return j;
}

nlohmann::json to_json(const MachineState& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : s.gpus) {
    nlohmann::json j = {{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}};
    put(j, "sm_clock_mhz", g.sm_clock_mhz);
    put(j, "mem_clock_mhz", g.mem_clock_mhz);
    put(j, "temperature_c", g.temperature_c);
    put(j, "power_w", g.power_w);
    put(j, "energy_mj", g.energy_mj);
    put(j, "clocks_event_reasons", g.clocks_event_reasons);
    if (g.clocks_event_reasons) j["clocks_event_reason_names"] = g.clocks_event_reason_names;
    put(j, "power_violation_ns", g.power_violation_ns);
    put(j, "thermal_violation_ns", g.thermal_violation_ns);
    gpus.push_back(std::move(j));
  }
  nlohmann::json cpu = {{"governor", s.cpu.governor}, {"logical_cpus", s.cpu.logical_cpus}};
  put(cpu, "load_avg_1m", s.cpu.load_avg_1m);
  put(cpu, "load_avg_5m", s.cpu.load_avg_5m);
  put(cpu, "load_avg_15m", s.cpu.load_avg_15m);
  put(cpu, "cpu_mhz_mean", s.cpu.cpu_mhz_mean);
  return {{"host_ns", s.host_ns}, {"nvml_status", s.nvml_status}, {"gpus", std::move(gpus)}, {"cpu", std::move(cpu)}};
}

MachineState machine_state_from_json(const nlohmann::json& j) {
  if (!j.is_object()) bad_field("(top level)", "an object");
  MachineState s;
  read_int(j, "host_ns", "", s.host_ns);
  read_string(j, "nvml_status", "", s.nvml_status);
  if (const auto* gpus = member(j, "gpus")) {
    if (!gpus->is_array()) bad_field("gpus", "an array");
    for (std::size_t i = 0; i < gpus->size(); ++i) {
      const auto& gj = (*gpus)[i];
      const std::string p = "gpus[" + std::to_string(i) + "].";
      if (!gj.is_object()) bad_field(p.substr(0, p.size() - 1), "an object");
      GpuState g;
      read_int(gj, "index", p, g.index);
      read_string(gj, "name", p, g.name);
      read_string(gj, "uuid", p, g.uuid);
      read_int(gj, "sm_clock_mhz", p, g.sm_clock_mhz);
      read_int(gj, "mem_clock_mhz", p, g.mem_clock_mhz);
      read_int(gj, "temperature_c", p, g.temperature_c);
      read_double(gj, "power_w", p, g.power_w);
      read_int(gj, "energy_mj", p, g.energy_mj);
      read_int(gj, "clocks_event_reasons", p, g.clocks_event_reasons);
      if (const auto* names = member(gj, "clocks_event_reason_names")) {
        if (!names->is_array()) bad_field(p + "clocks_event_reason_names", "an array of strings");
        for (const auto& n : *names) {
          if (!n.is_string()) bad_field(p + "clocks_event_reason_names", "an array of strings");
          g.clocks_event_reason_names.push_back(n.get<std::string>());
        }
      } else if (g.clocks_event_reasons) {
        g.clocks_event_reason_names = clocks_event_reason_names(*g.clocks_event_reasons);
      }
      read_int(gj, "power_violation_ns", p, g.power_violation_ns);
      read_int(gj, "thermal_violation_ns", p, g.thermal_violation_ns);
      s.gpus.push_back(std::move(g));
    }
  }
  if (const auto* cj = member(j, "cpu")) {
    if (!cj->is_object()) bad_field("cpu", "an object");
    read_string(*cj, "governor", "cpu.", s.cpu.governor);
    read_double(*cj, "load_avg_1m", "cpu.", s.cpu.load_avg_1m);
    read_double(*cj, "load_avg_5m", "cpu.", s.cpu.load_avg_5m);
    read_double(*cj, "load_avg_15m", "cpu.", s.cpu.load_avg_15m);
    read_double(*cj, "cpu_mhz_mean", "cpu.", s.cpu.cpu_mhz_mean);
    read_int(*cj, "logical_cpus", "cpu.", s.cpu.logical_cpus);
  }
  return s;
}

std::string format_machine_state(const MachineState& s) {
  std::ostringstream o;
  if (s.gpus.empty()) o << "gpu: none (nvml " << (s.nvml_status.empty() ? "not sampled" : s.nvml_status) << ")\n";
  for (const auto& g : s.gpus) {
    std::vector<std::string> parts;
    if (g.sm_clock_mhz) parts.push_back("SM " + std::to_string(*g.sm_clock_mhz) + " MHz");
    if (g.mem_clock_mhz) parts.push_back("mem " + std::to_string(*g.mem_clock_mhz) + " MHz");
    if (g.temperature_c) parts.push_back(std::to_string(*g.temperature_c) + " C");
    if (g.power_w) parts.push_back(printf_string("%.1f W", *g.power_w));
    if (g.clocks_event_reasons) {
      std::string r = "reasons: ";
      const auto names = clocks_event_reason_names(*g.clocks_event_reasons);
      if (names.empty()) r += "none";
      for (std::size_t i = 0; i < names.size(); ++i) r += (i ? ", " : "") + names[i];
      parts.push_back(r);
    }
    o << "gpu " << g.index << (g.name.empty() ? "" : " " + g.name) << ":";
    for (std::size_t i = 0; i < parts.size(); ++i) o << (i ? ", " : " ") << parts[i];
    if (parts.empty()) o << " (no readings)";
    o << "\n";
  }
  const CpuState& c = s.cpu;
  o << "cpu: governor " << (c.governor.empty() ? "n/a (no cpufreq)" : c.governor);
  if (c.load_avg_1m && c.load_avg_5m && c.load_avg_15m)
    o << ", load " << short_number(*c.load_avg_1m) << " " << short_number(*c.load_avg_5m) << " "
      << short_number(*c.load_avg_15m);
  if (c.logical_cpus > 0) o << ", " << c.logical_cpus << (c.logical_cpus == 1 ? " CPU" : " CPUs");
  if (c.cpu_mhz_mean) o << ", " << printf_string("%.0f MHz", *c.cpu_mhz_mean);
  o << "\n";
  return o.str();
}

}  // namespace xsp
