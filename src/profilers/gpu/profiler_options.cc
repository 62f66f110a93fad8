// Profiler options: parsers, the table of environment overrides and its application. Every option is described
// once, in kOptions below; env_overrides(), set_profiler_option() and apply_env_overrides() all read that table, so
// a new option cannot be parsable without being listed (or the reverse).
#include "xsp/profilers/profiler_options.h"

#include <array>
#include <charconv>
#include <stdexcept>

namespace xsp {

namespace {

[[noreturn]] void bad_value(std::string_view text, std::string_view expected) {
  throw std::invalid_argument(std::string(text) + ": expected " + std::string(expected));
}

bool parse_bool(std::string_view text) {
  // The spellings scripts and CLI11 use; anything else is an error rather than a silent false.
  for (std::string_view t : {"1", "true", "yes", "on"})
    if (text == t) return true;
  for (std::string_view f : {"0", "false", "no", "off"})
    if (text == f) return false;
  bad_value(text, "1 or 0 (true/false, yes/no, on/off)");
}

std::size_t parse_positive(std::string_view text) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n == 0) bad_value(text, "a positive integer");
  return n;
}

using Setter = void (*)(CuptiOptions&, CounterOptions&, std::string_view);

/// One profiler option: its key, variable, flag, help line and parser.
struct OptionSpec {
  std::string_view option;
  std::string_view variable;
  std::string_view flag;
  std::string_view meaning;
  Setter set;
  std::string_view switch_value = "";  // the value a flag without argument sets (EnvOverride::switch_value)
};

constexpr std::array<OptionSpec, 10> kOptions{{
    {"cupti.api_source", "XSP_CUPTI_API_SOURCE", "--cupti-api-source",
     "callback|activity: SYSTEM spans from the CUPTI callback API (default) or from RUNTIME/DRIVER activity records "
     "tied to ops by external correlation (slower)",
     [](CuptiOptions& c, CounterOptions&, std::string_view v) { c.api_source = parse_api_source(v); }},
    {"cupti.clock", "XSP_CUPTI_CLOCK", "--cupti-clock",
     "callback|offset: CUPTI timestamps taken by XSP's clock callback (default) or CUPTI's clock plus an offset "
     "measured at start",
     [](CuptiOptions& c, CounterOptions&, std::string_view v) { c.clock = parse_clock(v); }},
    {"cupti.zeroed_buffers", "XSP_CUPTI_ZEROED_BUFFERS", "--no-cupti-zeroed-buffers",
     "0 turns off: CUPTI gets buffers XSP zeroed off the launching thread (default 1)",
     [](CuptiOptions& c, CounterOptions&, std::string_view v) { c.zeroed_buffers = parse_bool(v); }, "false"},
    {"cupti.latency_timestamps", "XSP_CUPTI_LATENCY_TIMESTAMPS", "--cupti-latency-timestamps",
     "1: record kernels' queued/submitted times (adds launch overhead; default 0)",
     [](CuptiOptions& c, CounterOptions&, std::string_view v) { c.latency_timestamps = parse_bool(v); }, "true"},
    {"cupti.all_apis", "XSP_CUPTI_ALL_APIS", "--cupti-all-apis",
     "1: with API source activity, trace every CUDA API, not only launches, copies, syncs and allocations "
     "(default 0)",
     [](CuptiOptions& c, CounterOptions&, std::string_view v) { c.all_apis = parse_bool(v); }, "true"},
    {"cupti.dump_dir", "XSP_DUMP_GPU_ACTIVITY", "--dump-gpu-activity",
     "DIR: also write each run's raw CUPTI records to DIR/gpu_activity_<n>.json",
     [](CuptiOptions& c, CounterOptions&, std::string_view v) { c.dump_dir = std::filesystem::path(v); }},
    {"counters.replay", "XSP_COUNTER_REPLAY", "--counter-replay",
     "user|kernel: one metric pass per measured batch (default) or every kernel replayed once per pass inside its "
     "launch (one batch; ~100x slower)",
     [](CuptiOptions&, CounterOptions& c, std::string_view v) { c.replay = parse_replay(v); }},
    {"counters.max_ranges", "XSP_COUNTER_MAX_RANGES", "--counter-max-ranges",
     "N > 0: kernels one metric pass can hold; more are dropped and counted (default 2048, ~0.9 ms of setup each)",
     [](CuptiOptions&, CounterOptions& c, std::string_view v) { c.max_ranges = parse_positive(v); }},
    {"counters.timing", "XSP_COUNTER_TIMING", "--counter-timing",
     "1: print the duration of each counter profiler setup step on stderr (default 0)",
     [](CuptiOptions&, CounterOptions& c, std::string_view v) { c.timing = parse_bool(v); }, "true"},
    {"counters.dump_dir", "XSP_DUMP_COUNTERS", "--dump-counters",
     "DIR: also write each counter run's raw ranges and launches to DIR/counters_<n>.json",
     [](CuptiOptions&, CounterOptions& c, std::string_view v) { c.dump_dir = std::filesystem::path(v); }},
}};

}  // namespace

std::string_view to_string(CuptiOptions::ApiSource source) {
  return source == CuptiOptions::ApiSource::kActivity ? "activity" : "callback";
}
std::string_view to_string(CuptiOptions::Clock clock) {
  return clock == CuptiOptions::Clock::kOffset ? "offset" : "callback";
}
std::string_view to_string(CounterOptions::Replay replay) {
  return replay == CounterOptions::Replay::kKernel ? "kernel" : "user";
}

CuptiOptions::ApiSource parse_api_source(std::string_view text) {
  if (text == "callback") return CuptiOptions::ApiSource::kCallback;
  if (text == "activity") return CuptiOptions::ApiSource::kActivity;
  bad_value(text, "callback or activity");
}
CuptiOptions::Clock parse_clock(std::string_view text) {
  if (text == "callback") return CuptiOptions::Clock::kCallback;
  if (text == "offset") return CuptiOptions::Clock::kOffset;
  bad_value(text, "callback or offset");
}
CounterOptions::Replay parse_replay(std::string_view text) {
  if (text == "user") return CounterOptions::Replay::kUser;
  if (text == "kernel") return CounterOptions::Replay::kKernel;
  bad_value(text, "user or kernel");
}

void set_profiler_option(CuptiOptions& cupti, CounterOptions& counters, std::string_view option,
                         std::string_view value) {
  for (const OptionSpec& spec : kOptions) {
    if (spec.option == option) return spec.set(cupti, counters, value);
  }
  throw std::invalid_argument("unknown profiler option " + std::string(option));
}

const std::vector<EnvOverride>& env_overrides() {
  static const std::vector<EnvOverride> table = [] {
    std::vector<EnvOverride> t;
    for (const OptionSpec& s : kOptions)
      t.push_back({std::string(s.variable), std::string(s.option), std::string(s.flag), std::string(s.meaning),
                   std::string(s.switch_value)});
    // Read by the CLI itself (src/cli/), listed here so that --help and the docs have every variable in one place.
    t.push_back({"XSP_STORE", "store", "--store",
                 "FILE: results store (SQLite); default $XDG_DATA_HOME/xsp/xsp.db, else ~/.local/share/xsp/xsp.db"});
    t.push_back({"XSP_ZOO", "zoo", "--zoo", "DIR: model-zoo folder of manifests; default the source tree's models/"});
    return t;
  }();
  return table;
}

void apply_env_overrides(CuptiOptions& cupti, CounterOptions& counters, const GetEnv& getenv) {
  for (const OptionSpec& spec : kOptions) {
    const char* value = getenv(std::string(spec.variable).c_str());
    if (value == nullptr || *value == '\0') continue;
    try {
      spec.set(cupti, counters, value);
    } catch (const std::invalid_argument& e) {
      // The parsers say "<value>: expected ..."; the variable's name completes it.
      throw std::invalid_argument(std::string(spec.variable) + "=" + e.what());
    }
  }
}

nlohmann::json to_json(const CuptiOptions& o) {
  return {{"api_source", std::string(to_string(o.api_source))},
          {"clock", std::string(to_string(o.clock))},
          {"zeroed_buffers", o.zeroed_buffers},
          {"latency_timestamps", o.latency_timestamps},
          {"all_apis", o.all_apis},
          {"dump_dir", o.dump_dir.string()}};
}

nlohmann::json to_json(const CounterOptions& o) {
  return {{"replay", std::string(to_string(o.replay))},
          {"max_ranges", o.max_ranges},
          {"timing", o.timing},
          {"dump_dir", o.dump_dir.string()}};
}

namespace {

// JSON values go through the same string parser as flags and environment variables (set_profiler_option).
void set_from_json(CuptiOptions& cupti, CounterOptions& counters, const std::string& group, const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument(group + ": expected an object, got " + j.dump());
  for (const auto& [key, value] : j.items()) {
    std::string text;
    if (value.is_string())
      text = value.get<std::string>();
    else if (value.is_boolean())
      text = value.get<bool>() ? "true" : "false";
    else if (value.is_number_unsigned())
      text = std::to_string(value.get<std::uint64_t>());
    else
      throw std::invalid_argument(group + "." + key + ": expected a string, boolean or count, got " + value.dump());
    try {
      set_profiler_option(cupti, counters, group + "." + key, text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(group + "." + key + ": " + e.what());
    }
  }
}

}  // namespace

CuptiOptions cupti_options_from_json(const nlohmann::json& j) {
  CuptiOptions cupti;
  CounterOptions unused;
  set_from_json(cupti, unused, "cupti", j);
  return cupti;
}

CounterOptions counter_options_from_json(const nlohmann::json& j) {
  CuptiOptions unused;
  CounterOptions counters;
  set_from_json(unused, counters, "counters", j);
  return counters;
}

}  // namespace xsp
