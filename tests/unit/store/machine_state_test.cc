// Machine state around a run: NVML sampling through injected fakes, the warning rules on hand-made figures, JSON,
// the /proc parsers, and what a real sample must hold on any Linux machine (with or without NVML).
#include "xsp/system/machine_state.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace xsp {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// A fake NVML: plain functions over a global table of GPUs, the handle being the table entry's address.

struct FakeGpu {
  const char* name = "NVIDIA Fake 80GB";
  const char* uuid = "GPU-00000000-0000-0000-0000-000000000000";
  unsigned sm = 1980, mem = 2619, temp = 41, milliwatts = 112'300;
  unsigned long long energy = 5'000'000, reasons = 0, power_viol = 0, thermal_viol = 0;
  bool fail_temperature = false, fail_reasons = false, fail_violation = false;
};

std::vector<FakeGpu> g_fake;

constexpr int kNotSupported = 3;     // NVML_ERROR_NOT_SUPPORTED
constexpr int kInvalidArgument = 2;  // NVML_ERROR_INVALID_ARGUMENT

FakeGpu& gpu(void* d) { return *static_cast<FakeGpu*>(d); }

int fake_count(unsigned* n) {
  *n = static_cast<unsigned>(g_fake.size());
  return kNvmlSuccess;
}
int fake_handle(unsigned i, void** d) {
  if (i >= g_fake.size()) return kInvalidArgument;
  *d = &g_fake[i];
  return kNvmlSuccess;
}
int fake_name(void* d, char* out, unsigned n) {
  std::snprintf(out, n, "%s", gpu(d).name);
  return kNvmlSuccess;
}
int fake_uuid(void* d, char* out, unsigned n) {
  std::snprintf(out, n, "%s", gpu(d).uuid);
  return kNvmlSuccess;
}
int fake_clock(void* d, int type, unsigned* mhz) {
  if (type == kNvmlClockSm)
    *mhz = gpu(d).sm;
  else if (type == kNvmlClockMem)
    *mhz = gpu(d).mem;
  else
    return kInvalidArgument;
  return kNvmlSuccess;
}
int fake_temperature(void* d, int sensor, unsigned* c) {
  if (gpu(d).fail_temperature || sensor != kNvmlTemperatureGpu) return kNotSupported;
  *c = gpu(d).temp;
  return kNvmlSuccess;
}
int fake_power(void* d, unsigned* mw) {
  *mw = gpu(d).milliwatts;
  return kNvmlSuccess;
}
int fake_energy(void* d, unsigned long long* mj) {
  *mj = gpu(d).energy;
  return kNvmlSuccess;
}
int fake_reasons(void* d, unsigned long long* r) {
  if (gpu(d).fail_reasons) return kNotSupported;
  *r = gpu(d).reasons;
  return kNvmlSuccess;
}
int fake_violation(void* d, int policy, NvmlViolationTime* t) {
  if (gpu(d).fail_violation) return kNotSupported;
  t->reference_time = 1;
  if (policy == kNvmlPerfPolicyPower)
    t->violation_time = gpu(d).power_viol;
  else if (policy == kNvmlPerfPolicyThermal)
    t->violation_time = gpu(d).thermal_viol;
  else
    return kInvalidArgument;
  return kNvmlSuccess;
}

NvmlApi fake_api() {
  NvmlApi a;
  a.device_get_count = fake_count;
  a.device_get_handle_by_index = fake_handle;
  a.device_get_name = fake_name;
  a.device_get_uuid = fake_uuid;
  a.device_get_clock_info = fake_clock;
  a.device_get_temperature = fake_temperature;
  a.device_get_power_usage = fake_power;
  a.device_get_total_energy_consumption = fake_energy;
  a.device_get_current_clocks_event_reasons = fake_reasons;
  a.device_get_violation_status = fake_violation;
  return a;
}

class MachineStateFake : public ::testing::Test {
 protected:
  void SetUp() override { g_fake.assign(1, FakeGpu{}); }
  void TearDown() override { g_fake.clear(); }
  NvmlApi api_ = fake_api();
};

// One GPU's start/end states, for the warning rules.
MachineState one_gpu(std::optional<int> sm, std::uint64_t reasons = 0, std::optional<std::uint64_t> power_ns = {},
                     std::optional<std::uint64_t> thermal_ns = {}) {
  MachineState s;
  GpuState g;
  g.sm_clock_mhz = sm;
  g.clocks_event_reasons = reasons;
  g.power_violation_ns = power_ns;
  g.thermal_violation_ns = thermal_ns;
  s.gpus.push_back(g);
  return s;
}

// The GPU warnings only: the CPU ones depend on the machine the test runs on.
std::vector<std::string> gpu_only(const std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  for (const auto& w : warnings)
    if (w.rfind("cpu: ", 0) != 0) out.push_back(w);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Sampling

TEST_F(MachineStateFake, SamplingFillsEveryFieldNvmlAnswers) {
  g_fake[0].reasons = kClocksEventGpuIdle | kClocksEventSwPowerCap;
  g_fake[0].power_viol = 7'000;
  g_fake[0].thermal_viol = 9'000;
  const MachineState s = sample_machine_state(&api_);
  EXPECT_EQ(s.nvml_status, "loaded");
  EXPECT_GT(s.host_ns, 0);
  ASSERT_EQ(s.gpus.size(), 1u);
  const GpuState& g = s.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA Fake 80GB");
  EXPECT_EQ(g.uuid, "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(g.sm_clock_mhz, 1980);
  EXPECT_EQ(g.mem_clock_mhz, 2619);
  EXPECT_EQ(g.temperature_c, 41);
  ASSERT_TRUE(g.power_w);
  EXPECT_DOUBLE_EQ(*g.power_w, 112.3);  // mW -> W
  EXPECT_EQ(g.energy_mj, 5'000'000u);
  EXPECT_EQ(g.clocks_event_reasons, kClocksEventGpuIdle | kClocksEventSwPowerCap);
  EXPECT_EQ(g.clocks_event_reason_names, (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(g.power_violation_ns, 7'000u);
  EXPECT_EQ(g.thermal_violation_ns, 9'000u);
}

TEST_F(MachineStateFake, FailingOrMissingCallsLeaveOnlyTheirFieldsEmpty) {
  g_fake.resize(2);
  g_fake[1].fail_temperature = true;
  g_fake[1].fail_reasons = true;
  g_fake[1].fail_violation = true;
  api_.device_get_total_energy_consumption = nullptr;  // an old driver without the symbol
  api_.device_get_uuid = nullptr;
  const MachineState s = sample_machine_state(&api_);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].temperature_c, 41);
  EXPECT_FALSE(s.gpus[0].energy_mj);
  EXPECT_EQ(s.gpus[0].uuid, "");
  const GpuState& g = s.gpus[1];
  EXPECT_EQ(g.index, 1);
  EXPECT_EQ(g.sm_clock_mhz, 1980);  // the calls that work still fill their fields
  EXPECT_TRUE(g.power_w);
  EXPECT_FALSE(g.temperature_c);
  EXPECT_FALSE(g.clocks_event_reasons);
  EXPECT_TRUE(g.clocks_event_reason_names.empty());
  EXPECT_FALSE(g.power_violation_ns);
  EXPECT_FALSE(g.thermal_violation_ns);
}

TEST_F(MachineStateFake, GpuIndexSelectsOneGpu) {
  g_fake.resize(3);
  g_fake[2].sm = 1410;
  const MachineState s = sample_machine_state(&api_, 2);
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].index, 2);
  EXPECT_EQ(s.gpus[0].sm_clock_mhz, 1410);
  EXPECT_TRUE(sample_machine_state(&api_, 7).gpus.empty());  // beyond NVML's count
}

TEST_F(MachineStateFake, RefusedHandleKeepsTheIndexOnly) {
  api_.device_get_count = nullptr;  // count unknown: the asked index is tried as given
  const MachineState s = sample_machine_state(&api_, 4);
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].index, 4);
  EXPECT_EQ(s.gpus[0].name, "");
  EXPECT_FALSE(s.gpus[0].sm_clock_mhz);
  EXPECT_TRUE(sample_machine_state(&api_).gpus.empty());  // all GPUs, but no count
}

TEST(MachineState, NullApiSamplesTheCpuOnly) {
  const MachineState s = sample_machine_state(nullptr);
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_FALSE(s.nvml_status.empty());
  EXPECT_GT(s.cpu.logical_cpus, 0);
}

// What must hold on any Linux machine, with or without a GPU and NVML.
TEST(MachineState, SystemSampleOnThisMachine) {
  const MachineState s = sample_machine_state();
  EXPECT_GT(s.host_ns, 0);
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) {
    EXPECT_EQ(s.nvml_status.rfind("absent", 0), 0u) << s.nvml_status;
    EXPECT_EQ(s.nvml_status, "absent (libnvidia-ml.so.1 not found)");
    EXPECT_TRUE(s.gpus.empty());
    EXPECT_EQ(system_nvml(), nullptr);
  } else {
    ::dlclose(lib);
    EXPECT_TRUE(s.nvml_status == "loaded" || s.nvml_status.rfind("nvmlInit_v2 failed: ", 0) == 0) << s.nvml_status;
    EXPECT_EQ(system_nvml() != nullptr, s.nvml_status == "loaded");
  }
  ASSERT_TRUE(s.cpu.load_avg_1m) << format_machine_state(s);
  EXPECT_GE(*s.cpu.load_avg_1m, 0.0);
  EXPECT_TRUE(s.cpu.load_avg_5m);
  EXPECT_TRUE(s.cpu.load_avg_15m);
  EXPECT_GT(s.cpu.logical_cpus, 0);
  EXPECT_NE(format_machine_state(s).find("cpu: governor "), std::string::npos);
}

TEST(MachineState, SystemNvmlIsLoadedOnceForAllThreads) {
  std::string first;
  const NvmlApi* api = system_nvml(&first);
  EXPECT_FALSE(first.empty());
  std::vector<std::thread> threads;
  std::vector<const NvmlApi*> seen(4);
  std::vector<std::string> statuses(4);
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { seen[i] = system_nvml(&statuses[i]); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(seen[i], api);
    EXPECT_EQ(statuses[i], first);
  }
  // A null NvmlApi after a failed load records why NVML is missing.
  if (api == nullptr) EXPECT_EQ(sample_machine_state(nullptr).nvml_status, first);
}

// ---------------------------------------------------------------------------------------------------------------
// Warning rules

TEST(MachineStateWarnings, ViolationCounterDeltasGiveTheThrottleTimeInMs) {
  const auto start = one_gpu(1980, 0, 5'000'000'000ull, 2'000'000'000ull);
  const auto end = one_gpu(1980, 0, 5'120'000'000ull, 2'000'000'000ull);
  EXPECT_EQ(machine_state_warnings(start, end, {}, {}, 0),
            std::vector<std::string>{
                "gpu 0: throttled during the run: power cap for 120.0 ms, thermal for 0 ms (NVML violation counters)"});
  const auto hot = one_gpu(1980, 0, 5'000'000'000ull, 2'000'400'000ull);
  EXPECT_EQ(machine_state_warnings(start, hot, {}, {}, 0),
            std::vector<std::string>{
                "gpu 0: throttled during the run: power cap for 0 ms, thermal for 0.4 ms (NVML violation counters)"});
  EXPECT_TRUE(machine_state_warnings(start, start, {}, {}, 0).empty());
  // A counter that went backwards (driver reload) or is missing at one end says nothing.
  EXPECT_TRUE(machine_state_warnings(end, start, {}, {}, 0).empty());
  EXPECT_TRUE(machine_state_warnings(start, one_gpu(1980), {}, {}, 0).empty());
}

TEST(MachineStateWarnings, ClockDropBeyondFivePercentWarns) {
  EXPECT_EQ(machine_state_warnings(one_gpu(1980), one_gpu(1755), {}, {}, 0),
            std::vector<std::string>{"gpu 0: SM clock changed during the run: 1980 -> 1755 MHz (-11.4%)"});
  EXPECT_TRUE(machine_state_warnings(one_gpu(1980), one_gpu(1960), {}, {}, 0).empty());  // -1.0%
  EXPECT_EQ(machine_state_warnings(one_gpu(1200), one_gpu(1980), {}, {}, 0),
            std::vector<std::string>{"gpu 0: SM clock changed during the run: 1200 -> 1980 MHz (+65.0%)"});
  // The dip only an observe() sample saw.
  EXPECT_EQ(machine_state_warnings(one_gpu(1980), one_gpu(1980), 1500, 1980, 0),
            std::vector<std::string>{"gpu 0: SM clock changed during the run: 1500 to 1980 MHz seen (-24.2% of max; "
                                     "start 1980, end 1980 MHz)"});
  EXPECT_TRUE(machine_state_warnings(one_gpu(1980), one_gpu(1980), 1960, 1980, 0).empty());
  MonitorThresholds strict;
  strict.clock_change_fraction = 0.005;
  EXPECT_EQ(machine_state_warnings(one_gpu(1980), one_gpu(1960), {}, {}, 0, strict).size(), 1u);
  EXPECT_TRUE(machine_state_warnings(one_gpu({}), one_gpu({}), {}, {}, 0).empty());  // no clock, no say
}

TEST(MachineStateWarnings, IdleAndChosenClockReasonsDoNotWarnLimitsDo) {
  const std::uint64_t benign = kClocksEventGpuIdle | kClocksEventApplicationsClocksSetting |
                               kClocksEventDisplayClockSetting | kClocksEventSyncBoost;
  EXPECT_TRUE(machine_state_warnings(one_gpu(1980, benign), one_gpu(1980, benign), {}, {}, benign).empty());
  EXPECT_EQ(machine_state_warnings(one_gpu(1980, kClocksEventGpuIdle), one_gpu(1980), {}, {}, kClocksEventSwPowerCap),
            std::vector<std::string>{"gpu 0: clocks held back during the run: sw_power_cap"});
  EXPECT_EQ(
      machine_state_warnings(one_gpu(1980, kClocksEventHwSlowdown), one_gpu(1980, kClocksEventSwPowerCap), {}, {}, 0),
      std::vector<std::string>{"gpu 0: clocks held back during the run: sw_power_cap, hw_slowdown"});
  EXPECT_EQ(machine_state_warnings(one_gpu(1980), one_gpu(1980, 0x1000), {}, {}, 0),
            std::vector<std::string>{"gpu 0: clocks held back during the run: unknown_0x1000"});
}

TEST(MachineStateWarnings, CpuLoadAndGovernor) {
  MachineState s;
  s.cpu.logical_cpus = 2;
  s.cpu.load_avg_1m = 5.2;
  s.cpu.governor = "powersave";
  EXPECT_EQ(machine_state_warnings(s, s, {}, {}, 0),
            (std::vector<std::string>{
                "cpu: load average 5.2 on 2 CPUs at the start of the run (other work competes for the CPU)",
                "cpu: frequency governor 'powersave' (use 'performance' for stable timings)"}));
  s.cpu.load_avg_1m = 2.0;  // exactly 1 per CPU: not more than the threshold
  s.cpu.governor = "performance";
  EXPECT_TRUE(machine_state_warnings(s, s, {}, {}, 0).empty());
  for (const char* g : {"ondemand", "conservative", "schedutil", "mixed"}) {
    s.cpu.governor = g;
    EXPECT_EQ(machine_state_warnings(s, s, {}, {}, 0).size(), 1u) << g;
  }
  for (const char* g : {"userspace", "", "something_new"}) {
    s.cpu.governor = g;
    EXPECT_TRUE(machine_state_warnings(s, s, {}, {}, 0).empty()) << g;
  }
  MachineState absent;  // no load average, no CPU count, no governor: nothing to say
  EXPECT_TRUE(machine_state_warnings(absent, absent, {}, {}, 0).empty());
  MonitorThresholds lenient;
  lenient.load_per_cpu = 3.0;
  s.cpu.governor = "performance";
  s.cpu.load_avg_1m = 5.2;
  EXPECT_TRUE(machine_state_warnings(s, s, {}, {}, 0, lenient).empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Monitor

TEST_F(MachineStateFake, MonitorKeepsExtremesAndReasonsOfTheLightSamples) {
  MachineMonitor m(&api_, 0);
  m.start();
  g_fake[0].sm = 1500;
  g_fake[0].reasons = kClocksEventSwThermalSlowdown;
  g_fake[0].thermal_viol = 80'000'000;
  m.observe();
  g_fake[0].sm = 1980;
  g_fake[0].reasons = kClocksEventGpuIdle;
  m.observe();
  m.finish();
  EXPECT_EQ(m.start_state().gpus.at(0).sm_clock_mhz, 1980);
  EXPECT_EQ(m.end_state().gpus.at(0).thermal_violation_ns, 80'000'000u);
  EXPECT_EQ(gpu_only(m.warnings()),
            (std::vector<std::string>{
                "gpu 0: throttled during the run: power cap for 0 ms, thermal for 80.0 ms (NVML violation counters)",
                "gpu 0: clocks held back during the run: sw_thermal_slowdown",
                "gpu 0: SM clock changed during the run: 1500 to 1980 MHz seen (-24.2% of max; start 1980, end 1980 "
                "MHz)"}));
  const nlohmann::json j = m.to_json();
  EXPECT_EQ(j["samples"], 4);
  EXPECT_EQ(j["sm_clock_mhz_min"], 1500);
  EXPECT_EQ(j["sm_clock_mhz_max"], 1980);
  EXPECT_EQ(j["clocks_event_reasons_seen"], (nlohmann::json{"gpu_idle", "sw_thermal_slowdown"}));
  EXPECT_EQ(machine_state_from_json(j["start"]).gpus.at(0).sm_clock_mhz, 1980);
  EXPECT_TRUE(j["end"].is_object());
  EXPECT_FALSE(j.contains("per_gpu"));
}

TEST_F(MachineStateFake, MonitorAttributesEachGpusSamplesToThatGpu) {
  g_fake.resize(2);
  MachineMonitor m(&api_);
  m.start();
  g_fake[1].sm = 1600;  // only GPU 1 dips, and only between the full samples
  m.observe();
  g_fake[1].sm = 1980;
  m.finish();
  EXPECT_EQ(gpu_only(m.warnings()), std::vector<std::string>{"gpu 1: SM clock changed during the run: 1600 to 1980 "
                                                             "MHz seen (-19.2% of max; start 1980, end 1980 MHz)"});
  const nlohmann::json j = m.to_json();
  ASSERT_EQ(j["per_gpu"].size(), 2u);
  EXPECT_EQ(j["per_gpu"][0]["sm_clock_mhz_min"], 1980);
  EXPECT_EQ(j["per_gpu"][1]["sm_clock_mhz_min"], 1600);
}

TEST_F(MachineStateFake, MonitorQuietOnAStableRunAndBeforeFinish) {
  MachineMonitor m(&api_);
  m.observe();  // before start: ignored
  m.start();
  m.observe();
  EXPECT_TRUE(m.warnings().empty());  // not finished yet
  m.finish();
  m.observe();  // after finish: ignored
  EXPECT_TRUE(gpu_only(m.warnings()).empty());
  EXPECT_EQ(m.to_json()["samples"], 3);
}

TEST(MachineMonitor, WithoutNvmlFollowsTheCpuOnly) {
  MachineMonitor m(nullptr);
  m.start();
  m.observe();
  m.finish();
  EXPECT_TRUE(m.start_state().gpus.empty());
  EXPECT_GT(m.end_state().cpu.logical_cpus, 0);
  for (const auto& w : m.warnings()) EXPECT_EQ(w.rfind("cpu: ", 0), 0u) << w;
  const nlohmann::json j = m.to_json();
  EXPECT_FALSE(j.contains("sm_clock_mhz_min"));
  EXPECT_TRUE(j["clocks_event_reasons_seen"].empty());
}

// ---------------------------------------------------------------------------------------------------------------
// JSON, names, parsers, formatting

TEST(MachineStateJson, RoundTripKeepsEveryFieldAndOmitsAbsentOnes) {
  MachineState s;
  s.host_ns = 123'456'789'012;
  s.nvml_status = "loaded";
  GpuState g;
  g.index = 1;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-abc";
  g.sm_clock_mhz = 1980;
  g.mem_clock_mhz = 2619;
  g.temperature_c = 41;
  g.power_w = 112.3;
  g.energy_mj = 18'446'744'073'709'551'000ull;  // beyond int64: kept unsigned
  g.clocks_event_reasons = kClocksEventGpuIdle | kClocksEventHwThermalSlowdown;
  g.clocks_event_reason_names = clocks_event_reason_names(*g.clocks_event_reasons);
  g.power_violation_ns = 120'000'000;
  g.thermal_violation_ns = 0;
  s.gpus.push_back(g);
  GpuState bare;
  bare.index = 2;
  s.gpus.push_back(bare);
  s.cpu.governor = "performance";
  s.cpu.load_avg_1m = 0.52;
  s.cpu.load_avg_5m = 0.4;
  s.cpu.load_avg_15m = 0.33;
  s.cpu.cpu_mhz_mean = 2596.1;
  s.cpu.logical_cpus = 2;

  const nlohmann::json j = to_json(s);
  EXPECT_FALSE(j["gpus"][1].contains("sm_clock_mhz"));
  EXPECT_FALSE(j["gpus"][1].contains("clocks_event_reason_names"));
  EXPECT_EQ(j["gpus"][0]["clocks_event_reason_names"], (nlohmann::json{"gpu_idle", "hw_thermal_slowdown"}));
  const MachineState r = machine_state_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(to_json(r), j);
  EXPECT_EQ(r.host_ns, s.host_ns);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].energy_mj, g.energy_mj);
  EXPECT_EQ(r.gpus[0].thermal_violation_ns, 0u);
  EXPECT_EQ(r.gpus[0].clocks_event_reason_names, g.clocks_event_reason_names);
  EXPECT_FALSE(r.gpus[1].power_w);
  EXPECT_EQ(r.cpu.load_avg_5m, 0.4);
  EXPECT_EQ(to_json(machine_state_from_json(to_json(MachineState{}))), to_json(MachineState{}));

  nlohmann::json no_names = j;  // hand-written: names derived from the mask
  no_names["gpus"][0].erase("clocks_event_reason_names");
  EXPECT_EQ(machine_state_from_json(no_names).gpus[0].clocks_event_reason_names, g.clocks_event_reason_names);
}

TEST(MachineStateJson, WrongTypesThrowNamingTheField) {
  const auto message = [](const nlohmann::json& j) -> std::string {
    try {
      machine_state_from_json(j);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no throw)";
  };
  const nlohmann::json good = to_json(one_gpu(1980));
  nlohmann::json bad = good;
  bad["gpus"][0]["sm_clock_mhz"] = "1980";
  EXPECT_NE(message(bad).find("gpus[0].sm_clock_mhz"), std::string::npos) << message(bad);
  bad = good;
  bad["gpus"][0]["energy_mj"] = -1;
  EXPECT_NE(message(bad).find("gpus[0].energy_mj"), std::string::npos) << message(bad);
  bad = good;
  bad["cpu"]["load_avg_1m"] = "high";
  EXPECT_NE(message(bad).find("cpu.load_avg_1m"), std::string::npos) << message(bad);
  bad = good;
  bad["gpus"] = 3;
  EXPECT_NE(message(bad).find("gpus"), std::string::npos) << message(bad);
  bad = good;
  bad["gpus"][0]["clocks_event_reason_names"] = {1, 2};
  EXPECT_NE(message(bad).find("clocks_event_reason_names"), std::string::npos) << message(bad);
  bad = good;
  bad["gpus"][0]["temperature_c"] = 1ull << 40;
  EXPECT_NE(message(bad).find("temperature_c"), std::string::npos) << message(bad);
  EXPECT_NE(message(nlohmann::json::array()).find("top level"), std::string::npos);
}

TEST(MachineState, ReasonNames) {
  EXPECT_TRUE(clocks_event_reason_names(0).empty());
  EXPECT_EQ(clocks_event_reason_names(0x1ff),
            (std::vector<std::string>{"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                                      "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                      "hw_power_brake_slowdown", "display_clock_setting"}));
  EXPECT_EQ(clocks_event_reason_names(0x8000000000000004ull),
            (std::vector<std::string>{"sw_power_cap", "unknown_0x8000000000000000"}));
}

TEST(MachineState, ParsesLoadavgGovernorsAndCpuinfo) {
  const std::string cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 2596.100\ncache size\t: 33792 KB\n\n"
      "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 2400.000\n\n";
  const CpuState c = parse_cpu_state("5.20 0.40 0.33 1/82 8690\n", {"performance", "performance"}, cpuinfo);
  EXPECT_EQ(c.load_avg_1m, 5.2);
  EXPECT_EQ(c.load_avg_5m, 0.4);
  EXPECT_EQ(c.load_avg_15m, 0.33);
  EXPECT_EQ(c.governor, "performance");
  EXPECT_EQ(c.logical_cpus, 2);
  ASSERT_TRUE(c.cpu_mhz_mean);
  EXPECT_NEAR(*c.cpu_mhz_mean, 2498.05, 1e-9);

  EXPECT_EQ(parse_cpu_state("", {"powersave\n", "performance"}, "").governor, "mixed");
  const CpuState empty = parse_cpu_state("garbage", {}, "");
  EXPECT_EQ(empty.governor, "");  // no cpufreq, e.g. a VM
  EXPECT_FALSE(empty.load_avg_1m);
  EXPECT_FALSE(empty.cpu_mhz_mean);
  EXPECT_EQ(empty.logical_cpus, 0);
  // An Arm /proc/cpuinfo: processors but no "cpu MHz".
  const CpuState arm = parse_cpu_state("0.00 0.01 0.05 1/100 42", {"schedutil"},
                                       "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n");
  EXPECT_EQ(arm.logical_cpus, 2);
  EXPECT_FALSE(arm.cpu_mhz_mean);
  EXPECT_EQ(arm.load_avg_1m, 0.0);
}

TEST(MachineState, FormatsShortLines) {
  MachineState s = one_gpu(1980, 0);
  s.gpus[0].name = "NVIDIA H100 80GB HBM3";
  s.gpus[0].mem_clock_mhz = 2619;
  s.gpus[0].temperature_c = 41;
  s.gpus[0].power_w = 112.3;
  s.cpu = parse_cpu_state("0.52 0.40 0.33 1/82 8690", {"performance"},
                          "processor : 0\ncpu MHz : 2596.1\n"
                          "processor : 1\ncpu MHz : 2596.1\n");
  EXPECT_EQ(format_machine_state(s),
            "gpu 0 NVIDIA H100 80GB HBM3: SM 1980 MHz, mem 2619 MHz, 41 C, 112.3 W, reasons: none\n"
            "cpu: governor performance, load 0.52 0.4 0.33, 2 CPUs, 2596 MHz\n");
  s.gpus[0].clocks_event_reasons = kClocksEventGpuIdle | kClocksEventSwPowerCap;
  EXPECT_NE(format_machine_state(s).find("reasons: gpu_idle, sw_power_cap\n"), std::string::npos);
  MachineState none;
  none.nvml_status = "absent (libnvidia-ml.so.1 not found)";
  EXPECT_EQ(format_machine_state(none),
            "gpu: none (nvml absent (libnvidia-ml.so.1 not found))\ncpu: governor n/a (no cpufreq)\n");
}

}  // namespace
}  // namespace xsp
