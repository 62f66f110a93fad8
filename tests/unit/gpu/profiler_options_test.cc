#include "xsp/profilers/profiler_options.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "xsp/profilers/device_profiler.h"

namespace xsp {
namespace {

using Env = std::map<std::string, std::string>;

/// An environment of its own for each test, and the names asked of it.
struct FakeEnv {
  Env vars;
  std::set<std::string> asked;
  GetEnv getenv() {
    return [this](const char* name) -> const char* {
      asked.insert(name);
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

/// The message apply_env_overrides throws for `vars`, or "" when it does not throw.
std::string env_error(const Env& vars) {
  FakeEnv env{vars, {}};
  CuptiOptions cupti;
  CounterOptions counters;
  try {
    apply_env_overrides(cupti, counters, env.getenv());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ProfilerOptions, EnumNamesKnownAnswers) {
  EXPECT_EQ(to_string(CuptiOptions::ApiSource::kCallback), "callback");
  EXPECT_EQ(to_string(CuptiOptions::ApiSource::kActivity), "activity");
  EXPECT_EQ(to_string(CuptiOptions::Clock::kCallback), "callback");
  EXPECT_EQ(to_string(CuptiOptions::Clock::kOffset), "offset");
  EXPECT_EQ(to_string(CounterOptions::Replay::kUser), "user");
  EXPECT_EQ(to_string(CounterOptions::Replay::kKernel), "kernel");
}

TEST(ProfilerOptions, EnumsRoundTrip) {
  for (auto v : {CuptiOptions::ApiSource::kCallback, CuptiOptions::ApiSource::kActivity})
    EXPECT_EQ(parse_api_source(to_string(v)), v);
  for (auto v : {CuptiOptions::Clock::kCallback, CuptiOptions::Clock::kOffset}) EXPECT_EQ(parse_clock(to_string(v)), v);
  for (auto v : {CounterOptions::Replay::kUser, CounterOptions::Replay::kKernel})
    EXPECT_EQ(parse_replay(to_string(v)), v);
}

TEST(ProfilerOptions, EnumParseErrorsNameTheExpectedValues) {
  EXPECT_EQ(error_of([] { parse_api_source("activities"); }), "activities: expected callback or activity");
  EXPECT_EQ(error_of([] { parse_clock("Offset"); }), "Offset: expected callback or offset");  // exact, lower case
  EXPECT_EQ(error_of([] { parse_replay(""); }), ": expected user or kernel");
  EXPECT_EQ(error_of([] { parse_replay("application"); }), "application: expected user or kernel");
}

TEST(ProfilerOptions, DefaultsAreThePreviousBehaviour) {
  const CuptiOptions c;
  EXPECT_EQ(c.api_source, CuptiOptions::ApiSource::kCallback);
  EXPECT_EQ(c.clock, CuptiOptions::Clock::kCallback);
  EXPECT_TRUE(c.zeroed_buffers);
  EXPECT_FALSE(c.latency_timestamps);
  EXPECT_FALSE(c.all_apis);
  EXPECT_TRUE(c.dump_dir.empty());
  const CounterOptions k;
  EXPECT_EQ(k.replay, CounterOptions::Replay::kUser);
  EXPECT_EQ(k.max_ranges, 2048u);
  EXPECT_FALSE(k.timing);
  EXPECT_TRUE(k.dump_dir.empty());
}

TEST(ApplyEnvOverrides, UnsetLeavesDefaults) {
  FakeEnv env;
  CuptiOptions cupti;
  CounterOptions counters;
  apply_env_overrides(cupti, counters, env.getenv());
  EXPECT_EQ(cupti, CuptiOptions{});
  EXPECT_EQ(counters, CounterOptions{});
}

TEST(ApplyEnvOverrides, UnsetLeavesWhatTheCallerSet) {
  FakeEnv env;
  CuptiOptions cupti;
  cupti.clock = CuptiOptions::Clock::kOffset;
  cupti.dump_dir = "/tmp/a";
  CounterOptions counters;
  counters.max_ranges = 7;
  const CuptiOptions cupti_before = cupti;
  const CounterOptions counters_before = counters;
  apply_env_overrides(cupti, counters, env.getenv());
  EXPECT_EQ(cupti, cupti_before);
  EXPECT_EQ(counters, counters_before);
}

/// Each variable, one at a time: it sets its own field and nothing else.
TEST(ApplyEnvOverrides, EachVariableSetsItsField) {
  struct Case {
    std::string variable, value;
    CuptiOptions cupti;
    CounterOptions counters;
  };
  std::vector<Case> cases;
  auto add = [&](std::string var, std::string value, auto&& edit) {
    Case c{std::move(var), std::move(value), {}, {}};
    edit(c.cupti, c.counters);
    cases.push_back(std::move(c));
  };
  add("XSP_CUPTI_API_SOURCE", "activity",
      [](CuptiOptions& c, CounterOptions&) { c.api_source = CuptiOptions::ApiSource::kActivity; });
  add("XSP_CUPTI_CLOCK", "offset", [](CuptiOptions& c, CounterOptions&) { c.clock = CuptiOptions::Clock::kOffset; });
  add("XSP_CUPTI_ZEROED_BUFFERS", "0", [](CuptiOptions& c, CounterOptions&) { c.zeroed_buffers = false; });
  add("XSP_CUPTI_LATENCY_TIMESTAMPS", "1", [](CuptiOptions& c, CounterOptions&) { c.latency_timestamps = true; });
  add("XSP_CUPTI_ALL_APIS", "1", [](CuptiOptions& c, CounterOptions&) { c.all_apis = true; });
  add("XSP_DUMP_GPU_ACTIVITY", "/tmp/gpu dump", [](CuptiOptions& c, CounterOptions&) { c.dump_dir = "/tmp/gpu dump"; });
  add("XSP_COUNTER_REPLAY", "kernel",
      [](CuptiOptions&, CounterOptions& k) { k.replay = CounterOptions::Replay::kKernel; });
  add("XSP_COUNTER_MAX_RANGES", "8192", [](CuptiOptions&, CounterOptions& k) { k.max_ranges = 8192; });
  add("XSP_COUNTER_TIMING", "1", [](CuptiOptions&, CounterOptions& k) { k.timing = true; });
  add("XSP_DUMP_COUNTERS", "dump/counters", [](CuptiOptions&, CounterOptions& k) { k.dump_dir = "dump/counters"; });

  std::set<std::string> covered;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.variable + "=" + c.value);
    FakeEnv env{{{c.variable, c.value}}, {}};
    CuptiOptions cupti;
    CounterOptions counters;
    apply_env_overrides(cupti, counters, env.getenv());
    EXPECT_EQ(cupti, c.cupti);
    EXPECT_EQ(counters, c.counters);
    covered.insert(c.variable);
  }
  // Every profiler variable of the table has a case here (store and zoo are the CLI's).
  for (const EnvOverride& o : env_overrides()) {
    if (o.option == "store" || o.option == "zoo") continue;
    EXPECT_TRUE(covered.contains(o.variable)) << o.variable << " has no case in this test";
  }
}

TEST(ApplyEnvOverrides, AllAtOnce) {
  FakeEnv env{{{"XSP_CUPTI_API_SOURCE", "activity"},
               {"XSP_CUPTI_CLOCK", "offset"},
               {"XSP_CUPTI_ZEROED_BUFFERS", "false"},
               {"XSP_CUPTI_LATENCY_TIMESTAMPS", "on"},
               {"XSP_CUPTI_ALL_APIS", "yes"},
               {"XSP_DUMP_GPU_ACTIVITY", "g"},
               {"XSP_COUNTER_REPLAY", "kernel"},
               {"XSP_COUNTER_MAX_RANGES", "1"},
               {"XSP_COUNTER_TIMING", "true"},
               {"XSP_DUMP_COUNTERS", "c"}},
              {}};
  CuptiOptions cupti;
  CounterOptions counters;
  apply_env_overrides(cupti, counters, env.getenv());
  EXPECT_EQ(cupti,
            (CuptiOptions{CuptiOptions::ApiSource::kActivity, CuptiOptions::Clock::kOffset, false, true, true, "g"}));
  EXPECT_EQ(counters, (CounterOptions{CounterOptions::Replay::kKernel, 1, true, "c"}));
}

TEST(ApplyEnvOverrides, BooleanSpellings) {
  for (const char* on : {"1", "true", "yes", "on"}) {
    FakeEnv env{{{"XSP_COUNTER_TIMING", on}}, {}};
    CuptiOptions cupti;
    CounterOptions counters;
    apply_env_overrides(cupti, counters, env.getenv());
    EXPECT_TRUE(counters.timing) << on;
  }
  for (const char* off : {"0", "false", "no", "off"}) {
    FakeEnv env{{{"XSP_CUPTI_ZEROED_BUFFERS", off}}, {}};
    CuptiOptions cupti;
    CounterOptions counters;
    apply_env_overrides(cupti, counters, env.getenv());
    EXPECT_FALSE(cupti.zeroed_buffers) << off;
  }
}

TEST(ApplyEnvOverrides, EmptyValueCountsAsUnset) {
  Env vars;
  for (const EnvOverride& o : env_overrides()) vars[o.variable] = "";
  FakeEnv env{vars, {}};
  CuptiOptions cupti;
  cupti.dump_dir = "kept";
  CounterOptions counters;
  apply_env_overrides(cupti, counters, env.getenv());
  EXPECT_EQ(cupti.dump_dir, "kept");
  EXPECT_EQ(counters, CounterOptions{});
}

TEST(ApplyEnvOverrides, BadValueNamesTheVariableAndTheExpectedValues) {
  EXPECT_EQ(env_error({{"XSP_COUNTER_REPLAY", "foo"}}), "XSP_COUNTER_REPLAY=foo: expected user or kernel");
  EXPECT_EQ(env_error({{"XSP_CUPTI_API_SOURCE", "cb"}}), "XSP_CUPTI_API_SOURCE=cb: expected callback or activity");
  EXPECT_EQ(env_error({{"XSP_CUPTI_CLOCK", "tsc"}}), "XSP_CUPTI_CLOCK=tsc: expected callback or offset");
  EXPECT_EQ(env_error({{"XSP_COUNTER_MAX_RANGES", "0"}}), "XSP_COUNTER_MAX_RANGES=0: expected a positive integer");
  EXPECT_EQ(env_error({{"XSP_COUNTER_MAX_RANGES", "-1"}}), "XSP_COUNTER_MAX_RANGES=-1: expected a positive integer");
  EXPECT_EQ(env_error({{"XSP_COUNTER_MAX_RANGES", "12k"}}), "XSP_COUNTER_MAX_RANGES=12k: expected a positive integer");
  EXPECT_EQ(env_error({{"XSP_COUNTER_MAX_RANGES", "99999999999999999999999"}}),
            "XSP_COUNTER_MAX_RANGES=99999999999999999999999: expected a positive integer");
  EXPECT_EQ(env_error({{"XSP_CUPTI_ZEROED_BUFFERS", "2"}}),
            "XSP_CUPTI_ZEROED_BUFFERS=2: expected 1 or 0 (true/false, yes/no, on/off)");
  // Every boolean variable refuses what is not a boolean, rather than reading it as false.
  for (const char* v : {"XSP_CUPTI_LATENCY_TIMESTAMPS", "XSP_CUPTI_ALL_APIS", "XSP_COUNTER_TIMING"}) {
    EXPECT_EQ(env_error({{v, "TRUE"}}), std::string(v) + "=TRUE: expected 1 or 0 (true/false, yes/no, on/off)");
  }
}

TEST(ApplyEnvOverrides, ReadsExactlyTheProfilerVariables) {
  FakeEnv env;
  CuptiOptions cupti;
  CounterOptions counters;
  apply_env_overrides(cupti, counters, env.getenv());
  std::set<std::string> expected;
  for (const EnvOverride& o : env_overrides())
    if (o.option != "store" && o.option != "zoo") expected.insert(o.variable);
  EXPECT_EQ(env.asked, expected);  // never XSP_STORE / XSP_ZOO, nothing unlisted
}

TEST(EnvOverrides, EveryVariableOnceNoSharedFlag) {
  const std::set<std::string> expected = {"XSP_CUPTI_API_SOURCE",
                                          "XSP_CUPTI_CLOCK",
                                          "XSP_CUPTI_ZEROED_BUFFERS",
                                          "XSP_CUPTI_LATENCY_TIMESTAMPS",
                                          "XSP_CUPTI_ALL_APIS",
                                          "XSP_DUMP_GPU_ACTIVITY",
                                          "XSP_COUNTER_REPLAY",
                                          "XSP_COUNTER_MAX_RANGES",
                                          "XSP_COUNTER_TIMING",
                                          "XSP_DUMP_COUNTERS",
                                          "XSP_STORE",
                                          "XSP_ZOO"};
  std::set<std::string> variables, options, flags;
  for (const EnvOverride& o : env_overrides()) {
    SCOPED_TRACE(o.variable);
    EXPECT_TRUE(variables.insert(o.variable).second) << "listed twice";
    EXPECT_TRUE(options.insert(o.option).second) << "option " << o.option << " listed twice";
    EXPECT_TRUE(flags.insert(o.flag).second) << "flag " << o.flag << " shared";
    EXPECT_TRUE(o.variable.starts_with("XSP_"));
    EXPECT_TRUE(o.flag.starts_with("--")) << o.flag;
    EXPECT_FALSE(o.meaning.empty());
  }
  EXPECT_EQ(variables, expected);
  EXPECT_EQ(env_overrides().size(), expected.size());
}

TEST(EnvOverrides, FlagNamesKnownAnswers) {
  // The CLI registers these names (src/cli/): a rename here is a rename there.
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"XSP_CUPTI_API_SOURCE", {"cupti.api_source", "--cupti-api-source"}},
      {"XSP_CUPTI_CLOCK", {"cupti.clock", "--cupti-clock"}},
      {"XSP_CUPTI_ZEROED_BUFFERS", {"cupti.zeroed_buffers", "--no-cupti-zeroed-buffers"}},
      {"XSP_CUPTI_LATENCY_TIMESTAMPS", {"cupti.latency_timestamps", "--cupti-latency-timestamps"}},
      {"XSP_CUPTI_ALL_APIS", {"cupti.all_apis", "--cupti-all-apis"}},
      {"XSP_DUMP_GPU_ACTIVITY", {"cupti.dump_dir", "--dump-gpu-activity"}},
      {"XSP_COUNTER_REPLAY", {"counters.replay", "--counter-replay"}},
      {"XSP_COUNTER_MAX_RANGES", {"counters.max_ranges", "--counter-max-ranges"}},
      {"XSP_COUNTER_TIMING", {"counters.timing", "--counter-timing"}},
      {"XSP_DUMP_COUNTERS", {"counters.dump_dir", "--dump-counters"}},
      {"XSP_STORE", {"store", "--store"}},
      {"XSP_ZOO", {"zoo", "--zoo"}},
  };
  for (const EnvOverride& o : env_overrides()) {
    const auto it = expected.find(o.variable);
    ASSERT_NE(it, expected.end()) << o.variable;
    EXPECT_EQ(o.option, it->second.first) << o.variable;
    EXPECT_EQ(o.flag, it->second.second) << o.variable;
  }
}

TEST(SetProfilerOption, OneParserByKey) {
  CuptiOptions cupti;
  CounterOptions counters;
  set_profiler_option(cupti, counters, "counters.max_ranges", "64");
  set_profiler_option(cupti, counters, "cupti.api_source", "activity");
  EXPECT_EQ(counters.max_ranges, 64u);
  EXPECT_EQ(cupti.api_source, CuptiOptions::ApiSource::kActivity);
  set_profiler_option(cupti, counters, "cupti.dump_dir", "");  // "" turns a dump off again
  EXPECT_TRUE(cupti.dump_dir.empty());
  EXPECT_EQ(error_of([&] { set_profiler_option(cupti, counters, "counters.replay", "x"); }),
            "x: expected user or kernel");
  // store and zoo are listed for the docs, but they are the CLI's to apply.
  EXPECT_EQ(error_of([&] { set_profiler_option(cupti, counters, "store", "a.db"); }), "unknown profiler option store");
  EXPECT_EQ(error_of([&] { set_profiler_option(cupti, counters, "cupti.replay", "user"); }),
            "unknown profiler option cupti.replay");
}

#if defined(XSP_WITH_CUPTI)
TEST(ProfilerFactories, TakeOptionsWithoutTouchingTheGpu) {
  CuptiOptions cupti;
  cupti.api_source = CuptiOptions::ApiSource::kActivity;
  EXPECT_EQ(create_device_profiler(cupti)->name(), "cupti");
  CounterOptions counters;
  counters.replay = CounterOptions::Replay::kKernel;
  EXPECT_EQ(create_counter_profiler(counters)->name(), "cupti-range-profiler");
  counters.max_ranges = 0;
  EXPECT_EQ(error_of([&] { create_counter_profiler(counters); }), "counter profiler: counters.max_ranges must be > 0");
}
#endif

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The profilers take their options from the caller; the only variable they read is CUDA's own NVTX injection path.
TEST(ProfilerOptionsGuard, CuptiSourcesReadNoXspVariable) {
  const std::filesystem::path dir = std::filesystem::path(XSP_SOURCE_DIR) / "src" / "profilers" / "cupti";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (ext != ".cc" && ext != ".h") continue;
    ++files;
    const std::string text = read_file(entry.path());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(text.find("getenv(\"XSP_"), std::string::npos);
    // Not through a helper either: every getenv names NVTX_INJECTION64_PATH.
    constexpr std::string_view kNvtx = "getenv(\"NVTX_INJECTION64_PATH\")";
    for (std::size_t at = text.find("getenv("); at != std::string::npos; at = text.find("getenv(", at + 1)) {
      EXPECT_EQ(text.compare(at, kNvtx.size(), kNvtx), 0) << text.substr(at, 60);
    }
  }
  EXPECT_GE(files, 3);  // cupti_profiler.cc/.h, counter_profiler.cc: the directory was found
}

/// scripts/gpu/*.sh set XSP_* variables for the tools they run: each one must still be read by someone.
TEST(ProfilerOptionsGuard, ScriptVariablesAreListed) {
  std::set<std::string> listed;
  for (const EnvOverride& o : env_overrides()) listed.insert(o.variable);
  const std::regex assignment(R"((^|[\s;])(XSP_[A-Z0-9_]+)=)");
  int scripts = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(XSP_SOURCE_DIR) / "scripts" / "gpu")) {
    if (entry.path().extension() != ".sh") continue;
    ++scripts;
    const std::string text = read_file(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), assignment), end; it != end; ++it) {
      EXPECT_TRUE(listed.contains((*it)[2].str())) << entry.path().filename() << " sets " << (*it)[2].str();
    }
  }
  EXPECT_GT(scripts, 0);
}

}  // namespace
}  // namespace xsp
