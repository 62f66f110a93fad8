// Options of the device profilers (CUPTI activity/callback profiler, counter profiler): typed structs given to the
// factories of xsp/profilers/device_profiler.h, one string parser for every option (set_profiler_option), and the
// one table of the XSP_* environment variables that override option defaults (env_overrides). No CUDA here: the
// CLI, tools and tests use it in every build.
//
// Precedence, lowest to highest: the struct defaults below < XSP_* environment variables (apply_env_overrides) <
// command-line flags. The profilers themselves never read the environment: what they do is what they were given.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace xsp {

/// The CUPTI activity/callback profiler of SYSTEM/KERNEL/LIBRARY spans (create_device_profiler()).
struct CuptiOptions {
  /// Where SYSTEM spans (CUDA runtime/driver API calls) come from. kCallback: the CUPTI callback API on the traced
  /// APIs only, each call tied to the innermost framework op open on its thread. kActivity: RUNTIME/DRIVER activity
  /// records tied to ops through CUPTI's external correlation ids (one CUPTI call per op; measured slower,
  /// BENCHMARKS.md).
  enum class ApiSource { kCallback, kActivity };
  ApiSource api_source = ApiSource::kCallback;
  /// How CUPTI's timestamps reach the host clock (CLOCK_MONOTONIC). kCallback: CUPTI calls XSP's clock for every
  /// timestamp (cuptiActivityRegisterTimestampCallback), falling back to kOffset when CUPTI refuses it. kOffset: a
  /// constant offset measured at start() against CUPTI's own clock (to measure what the callback costs).
  /// Trace::clock.device_clock_mapping says which one a run got.
  enum class Clock { kCallback, kOffset };
  Clock clock = Clock::kCallback;
  /// Hand CUPTI buffers that XSP zeroed on CUPTI's worker thread (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER),
  /// so CUPTI does not zero each new 8 MiB buffer on the thread that launches kernels. false to measure what it saves.
  bool zeroed_buffers = true;
  /// Collect kernels' queued/submitted times (cuptiActivityEnableLatencyTimestamps); off because it adds launch
  /// overhead. Only with DeviceProfilerOptions::kernel.
  bool latency_timestamps = false;
  /// With ApiSource::kActivity: record every runtime/driver API, not only those that launch, copy, set, wait,
  /// allocate or free (docs/spans.md). Ignored with ApiSource::kCallback.
  bool all_apis = false;
  /// When not empty, stop() also writes the run's raw records as dump_dir/gpu_activity_<n>.json (to_json of the
  /// GpuActivityLog; how the fixtures of tests/fixtures/gpu were recorded). Created if missing.
  std::filesystem::path dump_dir;

  bool operator==(const CuptiOptions&) const = default;
};

/// The CUPTI Range Profiler of counter runs: HARDWARE spans (create_counter_profiler()).
struct CounterOptions {
  /// How the metric passes are collected. kUser: one pass per measured batch, the batches repeating identically
  /// (batches_needed() = passes). kKernel: every kernel replayed once per pass inside its launch (one batch
  /// suffices; CUPTI saves and restores device memory around each replay: ~100x slower on ResNet-50).
  enum class Replay { kUser, kKernel };
  Replay replay = Replay::kUser;
  /// Ranges (kernels) one pass can hold; CUPTI drops the rest, counted as dropped ranges. > 0. Initializing the
  /// counter data image costs ~0.9 ms per range on an H200, hence no larger default.
  std::size_t max_ranges = 2048;
  /// Print the duration of each setup step of start() on stderr (where a counter run's start-up seconds go).
  bool timing = false;
  /// When not empty, stop() also writes the raw ranges and launches as dump_dir/counters_<n>.json (to_json of the
  /// CounterCollection; read by scripts/gpu/ncu_compare.py). Created if missing.
  std::filesystem::path dump_dir;

  bool operator==(const CounterOptions&) const = default;
};

/// Names of the enum values, as flags, environment variables and logs spell them: "callback" | "activity",
/// "callback" | "offset", "user" | "kernel".
std::string_view to_string(CuptiOptions::ApiSource source);
std::string_view to_string(CuptiOptions::Clock clock);
std::string_view to_string(CounterOptions::Replay replay);
/// Inverses of to_string (exact, lower case). Throw std::invalid_argument("<text>: expected callback or activity")
/// etc.: a caller prefixes where the text came from ("--counter-replay ", "XSP_COUNTER_REPLAY=").
CuptiOptions::ApiSource parse_api_source(std::string_view text);
CuptiOptions::Clock parse_clock(std::string_view text);
CounterOptions::Replay parse_replay(std::string_view text);

/// The one parser of option values from text, by option key ("cupti.api_source", "counters.max_ranges"... the
/// `option` of env_overrides(), which names the struct field). Booleans: 1|true|yes|on and 0|false|no|off;
/// max_ranges: a positive decimal integer; dump dirs: any path ("" = off). Throws std::invalid_argument
/// "<value>: expected ..." for a bad value, and "unknown profiler option <key>" for a key that is not one of them
/// ("store" and "zoo" included: the CLI applies those itself).
void set_profiler_option(CuptiOptions& cupti, CounterOptions& counters, std::string_view option,
                         std::string_view value);

/// One environment variable that overrides an option's default (a flag given on the command line wins over it).
struct EnvOverride {
  std::string variable;  ///< "XSP_COUNTER_REPLAY"
  std::string option;    ///< the option key: "counters.replay" (set_profiler_option), or "store" / "zoo"
  std::string flag;      ///< the CLI flag of the same option: "--counter-replay"
  std::string meaning;   ///< one line for --help and docs: accepted values and effect
  /// For a flag that takes no value, the value it sets ("true", or "false" for --no-...); "" when the flag takes
  /// a value.
  std::string switch_value;
};

/// THE one place listing every environment variable XSP reads as an override, in a stable order: the profiler
/// options, then XSP_STORE and XSP_ZOO (which the CLI applies itself). Each variable and each flag appears once.
/// Used by --help and the docs.
const std::vector<EnvOverride>& env_overrides();

/// Reads one variable; returns nullptr when unset. Injectable so that tests need not touch the process environment.
using GetEnv = std::function<const char*(const char*)>;

/// The process environment (std::getenv).
inline const char* process_getenv(const char* name) { return std::getenv(name); }

/// Applies the profiler variables of env_overrides() that are set to a non-empty value (empty = unset, so that
/// `XSP_DUMP_COUNTERS= cmd` turns an exported one off), leaving every other field as it was: call it on defaults,
/// then apply command-line flags. Throws std::invalid_argument "XSP_COUNTER_REPLAY=foo: expected user or kernel"
/// for a bad value (the variable, its value, what it accepts). Never reads XSP_STORE / XSP_ZOO.
void apply_env_overrides(CuptiOptions& cupti, CounterOptions& counters, const GetEnv& getenv = process_getenv);

/// The options as JSON (stored with every request: EvaluationRequest::cupti / counters), keys as the fields above,
/// enums as their to_string() text.
nlohmann::json to_json(const CuptiOptions& options);
nlohmann::json to_json(const CounterOptions& options);
/// Inverses; missing keys keep their defaults. Throw std::invalid_argument "cupti.<key>: expected ..., got ...".
CuptiOptions cupti_options_from_json(const nlohmann::json& j);
CounterOptions counter_options_from_json(const nlohmann::json& j);

}  // namespace xsp
