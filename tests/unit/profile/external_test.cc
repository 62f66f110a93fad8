// `xsp profile -- CMD` (docs/profile.md): the pieces on hand-made parts with known answers, and the command end to
// end on a C++ program annotated with NVTX (tests/programs/nvtx_program.cc: known sleeps inside its ranges), run by
// the real `xsp` binary with the real injection library. No GPU.
#include "xsp/profile/external.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/summary.h"
#include "xsp/profilers/hardware_counters.h"
#include "xsp/store/store.h"
#include "xsp/trace/export.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
using external::TracePart;

Span span(SpanId id, SpanId parent, Level level, std::string name, std::int64_t start, std::int64_t end,
          std::uint64_t thread) {
  Span s;
  s.id = id;
  s.parent_id = parent;
  s.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
  s.level = level;
  s.name = std::move(name);
  s.start_ns = start;
  s.end_ns = end;
  s.track = Track::host_thread(thread);
  return s;
}

// A part as the injection library writes it: the process span (id 1) parents the ranges that have none.
TracePart part(std::int64_t pid, std::uint64_t other_thread) {
  TracePart p;
  p.file = "nvtx-" + std::to_string(pid) + ".xsptrace";
  const auto main = static_cast<std::uint64_t>(pid);
  p.trace.spans = {span(1, kNoSpan, Level::kApplication, "prog", 0, 1000, main),
                   span(2, 1, Level::kModel, "step", 100, 900, main),
                   span(3, 2, Level::kFramework, "aten::mm", 200, 500, main),
                   span(4, 3, Level::kLibrary, "cublasSgemm", 250, 400, main),
                   span(5, 2, Level::kModel, "inner", 600, 700, main),
                   span(6, 1, Level::kModel, "worker", 300, 800, other_thread)};
  p.trace.counters["nvtx.ranges"] = 5;
  p.trace.processes = {{pid, "prog --x", {main, other_thread}}};
  return p;
}

const Span* named(const Trace& t, std::string_view name, std::int64_t start) {
  for (const Span& s : t.spans)
    if (s.name == name && s.start_ns == start) return &s;
  return nullptr;
}

TEST(MergeParts, IdsAreShiftedPerPartAndEveryProcessKeepsItsNesting) {
  Trace t = external::merge_parts({part(100, 101), part(200, 201)}, TraceLevel::kLibrary);
  ASSERT_EQ(t.spans.size(), 12u);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) EXPECT_TRUE(by_id.emplace(s.id, &s).second) << "duplicate id " << s.id;
  for (std::uint64_t main : {100u, 200u}) {
    const Span* process = nullptr;
    const Span* mm = nullptr;
    for (const Span& s : t.spans) {
      if (s.track.id != main) continue;
      if (s.level == Level::kApplication) process = &s;
      if (s.name == "aten::mm") mm = &s;
    }
    ASSERT_NE(process, nullptr);
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(process->parent_id, kNoSpan);
    const Span* step = by_id.at(mm->parent_id);
    EXPECT_EQ(step->name, "step");
    EXPECT_EQ(step->parent_id, process->id);
    EXPECT_EQ(step->track.id, main) << "a part's parents stay within the part";
  }
  EXPECT_EQ(t.counters.at("nvtx.ranges"), 10u);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[1].pid, 200);
  EXPECT_EQ(t.process_of_thread(201)->pid, 200);
  EXPECT_EQ(t.process_of_thread(999), nullptr);
  EXPECT_EQ(t.assembly.roots, 2u);
  EXPECT_EQ(t.assembly.unparented, 0u);
}

// A window part that `xsp profile --stop` did not collect is folded with its process's last part: one process, one
// APPLICATION span over both, the window's ranges kept with their ids (one counter numbers a process's spans).
TEST(FoldParts, AProcessWindowAndItsLastPartBecomeOneProcess) {
  TracePart window;
  window.file = "nvtx-100-w1.xsptrace";
  window.trace.spans = {span(1, kNoSpan, Level::kApplication, "prog", 0, 50, 100),
                        span(20, 1, Level::kModel, "step", 10, 40, 100),
                        span(21, 1, Level::kModel, "worker", 12, 30, 102)};
  window.trace.counters["nvtx.ranges"] = 2;
  window.trace.processes = {{100, "prog --x", {100, 102}}};
  std::vector<TracePart> folded = external::fold_parts({window, part(100, 101), part(200, 201)});
  ASSERT_EQ(folded.size(), 2u);
  EXPECT_EQ(folded[0].file, "nvtx-100-w1.xsptrace");
  const Trace& t = folded[0].trace;
  ASSERT_EQ(t.spans.size(), 8u) << "one APPLICATION span, 2 window ranges, 5 of the last part";
  int applications = 0;
  for (const Span& sp : t.spans)
    if (sp.level == Level::kApplication) {
      ++applications;
      EXPECT_EQ(sp.start_ns, 0);
      EXPECT_EQ(sp.end_ns, 1000);
    }
  EXPECT_EQ(applications, 1);
  EXPECT_EQ(t.counters.at("nvtx.ranges"), 7u);
  EXPECT_EQ(t.processes.at(0).thread_ids, (std::vector<std::uint64_t>{100, 101, 102}));
  EXPECT_EQ(folded[1].trace.processes.at(0).pid, 200);
  // Merged: two processes, every id unique.
  Trace merged = external::merge_parts(std::move(folded), TraceLevel::kLibrary);
  EXPECT_EQ(merged.processes.size(), 2u);
  std::set<SpanId> ids;
  for (const Span& sp : merged.spans) EXPECT_TRUE(ids.insert(sp.id).second) << sp.id;
  EXPECT_EQ(merged.assembly.unparented, 0u);
}

TEST(MergeParts, LevelsBelowTheTraceLevelAreDroppedAndTheirChildrenReparented) {
  TracePart p = part(100, 101);
  // A MODEL range opened inside an op (a user range around a library call): it outlives its dropped parent.
  p.trace.spans.push_back(span(7, 3, Level::kModel, "user-in-op", 300, 350, 100));
  Trace t = external::merge_parts({std::move(p)}, TraceLevel::kModel);
  for (const Span& s : t.spans) EXPECT_LE(static_cast<int>(s.level), static_cast<int>(Level::kModel)) << s.name;
  EXPECT_EQ(t.counters.at("profile.spans_below_trace_level"), 2u);
  const Span* in_op = named(t, "user-in-op", 300);
  ASSERT_NE(in_op, nullptr);
  EXPECT_EQ(named(t, "step", 100)->id, in_op->parent_id);
}

TEST(RecordedEnvironment, SecretsAreRedactedAndNamesSorted) {
  const nlohmann::json env = external::recorded_environment(
      {"PATH=/usr/bin", "HF_TOKEN=hf_abc", "aws_secret_access_key=x", "MY_API_KEY=k", "PGPASSWORD=p", "A=b=c", "=x"});
  EXPECT_EQ(env["PATH"], "/usr/bin");
  EXPECT_EQ(env["A"], "b=c");
  for (const char* secret : {"HF_TOKEN", "aws_secret_access_key", "MY_API_KEY", "PGPASSWORD"})
    EXPECT_EQ(env[secret], "(redacted)") << secret;
  EXPECT_EQ(env.size(), 6u);
  EXPECT_EQ(env.begin().key(), "A");
}

TEST(ProcessExit, DescribesCodesAndSignalsAsAShellWould) {
  external::ProcessExit e;
  e.code = 3;
  EXPECT_EQ(e.shell_status(), 3);
  EXPECT_EQ(e.describe(), "exited with status 3");
  e = {};
  e.signaled = true;
  e.signal = SIGSEGV;
  e.core_dumped = true;
  EXPECT_EQ(e.shell_status(), 139);
  EXPECT_EQ(e.describe(), "ended by signal 11 (SIGSEGV), core dumped");
  EXPECT_EQ(e.to_json()["signal_name"], "SIGSEGV");
}

TEST(ProfileOptions, ValidateNamesWhatIsWrong) {
  external::CommandOptions o;
  o.inject_library = "/nonexistent/libxsp_inject.so";
  EXPECT_THROW(external::validate(o), std::invalid_argument);  // no command
  o.argv = {"true"};
  try {
    external::validate(o);
    FAIL() << "a missing library was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libxsp_inject.so"), std::string::npos) << e.what();
  }
  auto refusal = [&] {
    try {
      external::validate(o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (TraceLevel deep : {TraceLevel::kKernel, TraceLevel::kHardware}) {
    o.trace_level = deep;
    if (external::have_cuda_part())
      EXPECT_EQ(refusal().find("--trace-level"), std::string::npos)
          << refusal() << ": counters are collected by kernel replay in the injected process";
    else
      EXPECT_NE(refusal().find("no CUPTI part"), std::string::npos) << refusal();
  }
  o.trace_level = TraceLevel::kLibrary;
  o.capture_profiler_api = true;
  EXPECT_NE(refusal().find("--capture cuda-profiler-api at --trace-level library"), std::string::npos) << refusal();
  EXPECT_EQ(external::default_trace_level(), external::have_cuda_part() ? TraceLevel::kKernel : TraceLevel::kLibrary);
}

TEST(ProfileOptions, ParseCaptureTakesTheThreeForms) {
  external::CommandOptions o;
  external::parse_capture("cuda-profiler-api", o);
  EXPECT_TRUE(o.capture_profiler_api);
  external::parse_capture("nvtx:infer", o);
  EXPECT_EQ(o.capture_range, "infer");
  EXPECT_FALSE(o.capture_profiler_api);
  external::parse_capture("all", o);
  EXPECT_TRUE(o.capture_range.empty());
  try {
    external::parse_capture("cudaProfilerApi", o);
    FAIL() << "an unknown form was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cuda-profiler-api"), std::string::npos) << e.what();
  }
}

TEST(ProfileOptions, LeveledRunsGoMThenDeeperAndRoundsAlternateTheOrder) {
  external::CommandOptions o;
  o.trace_level = TraceLevel::kKernel;
  EXPECT_EQ(external::command_levels(o), std::vector<TraceLevel>{TraceLevel::kKernel});
  o.leveled = true;
  EXPECT_EQ(external::command_levels(o),
            (std::vector<TraceLevel>{TraceLevel::kModel, TraceLevel::kFramework, TraceLevel::kKernel}));
  o.trace_level = TraceLevel::kFramework;
  EXPECT_EQ(external::command_levels(o), (std::vector<TraceLevel>{TraceLevel::kModel, TraceLevel::kFramework}));
  o.trace_level = TraceLevel::kModel;
  EXPECT_EQ(external::command_levels(o), std::vector<TraceLevel>{TraceLevel::kModel});
  o.trace_level = TraceLevel::kLibrary;
  o.repeat = 3;
  using R = std::pair<int, TraceLevel>;
  const auto M = TraceLevel::kModel, F = TraceLevel::kFramework, L = TraceLevel::kLibrary;
  EXPECT_EQ(external::run_order(o),
            (std::vector<R>{{0, M}, {0, F}, {0, L}, {1, L}, {1, F}, {1, M}, {2, M}, {2, F}, {2, L}}));
  // Counters: a counter run after the kernel run, once, outside the alternation (its timings are replays).
  const auto K = TraceLevel::kKernel, H = TraceLevel::kHardware;
  o.trace_level = H;
  o.repeat = 2;
  EXPECT_EQ(external::command_levels(o), (std::vector<TraceLevel>{M, F, K, H}));
  EXPECT_EQ(external::run_order(o), (std::vector<R>{{0, M}, {0, F}, {0, K}, {1, K}, {1, F}, {1, M}, {0, H}}));
  o.leveled = false;
  EXPECT_EQ(external::command_levels(o), (std::vector<TraceLevel>{K, H}));
  EXPECT_EQ(external::run_order(o), (std::vector<R>{{0, K}, {1, K}, {0, H}}));
  o.repeat = 1;
  EXPECT_EQ(external::run_order(o), (std::vector<R>{{0, K}, {0, H}}));
  o.leveled = true;
  o.trace_level = L;
  // Refused: no rounds; on-demand collection repeated.
  o.argv = {"true"};
  o.inject_library = "/bin/sh";  // any readable file
  o.repeat = 0;
  EXPECT_THROW(external::validate(o), std::invalid_argument);
  o.repeat = 2;
  o.on_demand = true;
  try {
    external::validate(o);
    FAIL() << "--signal with --repeat was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--signal with --leveled or --repeat"), std::string::npos) << e.what();
  }
  o.on_demand = false;
  EXPECT_NO_THROW(external::validate(o));
}

// One run of a command: on `thread`, a "load" range, then `steps` "step" ranges of the given durations (each with an
// "inner" MODEL range and a framework op inside).
external::Execution execution(int round, TraceLevel level, const std::vector<std::int64_t>& steps, int code = 0) {
  external::Execution e;
  e.round = round;
  e.level = level;
  e.run.exit.code = code;
  e.run.start_ns = 1'000'000'000LL * (round * 10 + static_cast<int>(level));
  const std::uint64_t thread = 100 + static_cast<std::uint64_t>(round);
  SpanId id = 1;
  std::int64_t t = e.run.start_ns;
  e.trace.spans.push_back(span(id++, kNoSpan, Level::kApplication, "prog", t, t + 10'000'000'000LL, thread));
  e.trace.spans.push_back(span(id++, 1, Level::kModel, "load", t, t + 5'000'000, thread));
  t += 5'000'000;
  for (std::int64_t d : steps) {
    const SpanId step = id++;
    e.trace.spans.push_back(span(step, 1, Level::kModel, "step", t, t + d, thread));
    e.trace.spans.push_back(span(id++, step, Level::kModel, "inner", t, t + d / 2, thread));
    e.trace.spans.push_back(span(id++, step, Level::kFramework, "aten::mm", t + d / 2, t + d, thread));
    t += d;
  }
  e.run.end_ns = t;
  e.trace.processes = {{static_cast<std::int64_t>(thread), "prog", {thread}}};
  return e;
}

// Rounds AB, BA with M/F 10% slower than M in each round (and round 2 twice as slow as round 1, a drift the
// pairing cancels): the overhead is exactly +10% with no spread; each level's latencies come from its own runs.
TEST(ExternalRecord, LeveledRunsGiveEachLevelItsOwnSamplesAndThePairedOverhead) {
  external::CommandOptions o;
  o.argv = {"python3", "infer.py"};
  o.trace_level = TraceLevel::kFramework;
  o.leveled = true;
  o.repeat = 2;
  const auto M = TraceLevel::kModel, F = TraceLevel::kFramework;
  std::vector<external::Execution> runs;
  runs.push_back(execution(0, M, {98'000'000, 100'000'000, 102'000'000}));
  runs.push_back(execution(0, F, {108'000'000, 110'000'000, 112'000'000}));
  runs.push_back(execution(1, F, {218'000'000, 220'000'000, 222'000'000}));
  runs.push_back(execution(1, M, {196'000'000, 200'000'000, 204'000'000}));
  EXPECT_EQ(external::sample_range_of(runs, ""), "step") << "three steps a run against one load";
  EXPECT_EQ(external::sample_range_of(runs, "load"), "load");
  EXPECT_EQ(external::sample_range_of({execution(0, M, {50'000'000})}, ""), "step")
      << "one load (5 ms) and one step (50 ms): the tie goes to the range holding more time, not to byte order";
  EXPECT_EQ(external::samples_of(runs[0].trace, "step"), (std::vector<double>{98e6, 100e6, 102e6}))
      << "the nested \"inner\" ranges are not samples";

  const EvaluationRecord r = external::external_record(o, std::move(runs));
  EXPECT_TRUE(r.leveled);
  EXPECT_EQ(r.settings["sample_range"], "step");
  ASSERT_EQ(r.settings["executions"].size(), 4u);
  EXPECT_EQ(r.settings["executions"][2]["run"], "M/F");
  EXPECT_EQ(r.settings["executions"][2]["round"], 1);
  EXPECT_EQ(r.settings["executions"][2]["median_ns"], 220e6);
  ASSERT_EQ(r.runs.size(), 2u);
  const RunRecord& m = r.runs[0];
  const RunRecord& f = r.runs[1];
  EXPECT_EQ(m.trace_level, M);
  EXPECT_EQ(f.trace_level, F);
  EXPECT_EQ(m.predict_latency_ns, (std::vector<double>{98e6, 100e6, 102e6, 196e6, 200e6, 204e6}));
  EXPECT_EQ(m.stage_latency_ns.at("step").n, 6u);
  EXPECT_EQ(m.stage_latency_ns.at("load").n, 2u);
  EXPECT_EQ(m.stage_latency_ns.at("inner").n, 6u);
  ASSERT_EQ(m.measurement.blocks.size(), 2u);
  EXPECT_EQ(m.measurement.blocks[0].median_ns, 100e6);
  EXPECT_EQ(m.measurement.blocks[1].median_ns, 200e6);
  EXPECT_EQ(m.measurement.blocks[1].round, 1u);
  // The two runs are the windows: their medians differ by 2x, far outside 10%.
  EXPECT_EQ(m.measurement.stability.verdict, Verdict::kUnstable);
  EXPECT_EQ(m.measurement.stability.window_medians_ns, (std::vector<double>{100e6, 200e6}));
  // The kept trace is the run with the median block (the lower of two): round 1's M run is not kept.
  EXPECT_EQ(m.trace.spans.front().track.id, 100u);
  std::size_t samples = 0;
  for (const Span& s : m.trace.spans) samples += s.tag("sample").has_value();
  EXPECT_EQ(samples, 3u) << "the three steps; load is outermost too, but not the sample range";

  ASSERT_EQ(r.level_overheads.size(), 1u);
  const LevelOverhead& o1 = r.level_overheads[0];
  EXPECT_EQ(o1.level, F);
  EXPECT_EQ(o1.baseline, M);
  EXPECT_EQ(o1.design, "interleaved");
  EXPECT_EQ(o1.overhead.rounds, 2u);
  EXPECT_NEAR(o1.overhead.overhead_fraction, 0.10, 1e-12);
  EXPECT_NEAR(o1.overhead.ci95_fraction.low, 0.10, 1e-9);
  EXPECT_NEAR(o1.overhead.ci95_fraction.high, 0.10, 1e-9);
  EXPECT_DOUBLE_EQ(o1.latency_ns, 165e6);
  EXPECT_DOUBLE_EQ(o1.baseline_latency_ns, 150e6);

  // The summary shows the samples per run and the overhead.
  const auto tables = evaluation_summary(r);
  std::set<std::string> ids;
  for (const Table& t : tables) ids.insert(t.id);
  EXPECT_EQ(ids, (std::set<std::string>{"summary.ranges", "summary.samples", "summary.overheads"}));
}

// A run that fails ends the sequence: its exit is the evaluation's, and the levels it never reached have no run.
TEST(ExternalRecord, AFailedRunIsTheEvaluationsExitAndSaysTheRestWasNotRun) {
  external::CommandOptions o;
  o.argv = {"./prog"};
  o.trace_level = TraceLevel::kFramework;
  o.leveled = true;
  o.repeat = 3;
  std::vector<external::Execution> runs;
  runs.push_back(execution(0, TraceLevel::kModel, {10'000'000}, 3));
  const EvaluationRecord r = external::external_record(o, std::move(runs));
  EXPECT_EQ(r.settings["exit"]["code"], 3);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(r.level_overheads.empty());
  bool said = false;
  for (const std::string& w : r.runs[0].warnings)
    said |= w.find("the runs after it were not made") != std::string::npos;
  EXPECT_TRUE(said);
  // One run: its samples split into windows in time.
  EXPECT_EQ(r.runs[0].measurement.stability.verdict, Verdict::kNotAssessed);
  EXPECT_EQ(r.runs[0].measurement.stability.samples, 1u);
}

// --trace-level hardware: a kernel run, then a counter run whose part holds parentless HARDWARE spans on the launching
// thread (as the injected counter profiler writes them). Merged, each lands in the op open at its launch; the analyses
// join it with the kernel run's kernel of the same op and place (2 kernels of 2e6 and 6e6 FP32 FLOPs, known answers);
// the counter run is no timing run: no overhead, and it says so.
TracePart counter_part(bool counters) {
  const std::uint64_t thread = 7;
  TracePart p;
  p.file = counters ? "h.xsptrace" : "k.xsptrace";
  p.trace.processes = {{7, "prog", {thread}}};
  p.trace.spans = {span(1, kNoSpan, Level::kApplication, "prog", 0, 10'000, thread),
                   span(2, 1, Level::kModel, "step", 100, 9'000, thread),
                   span(3, 2, Level::kFramework, "aten::mm", 200, 8'000, thread)};
  for (int k = 0; k < 2; ++k) {
    const std::int64_t at = 300 + 1000 * k;
    if (counters) {
      Span h =
          span(static_cast<SpanId>(4 + k), kNoSpan, Level::kHardware, k == 0 ? "sgemm" : "splitk", at, at + 20, thread);
      h.tags = {Tag("fp32_flops", std::string(k == 0 ? "2000000" : "6000000")), Tag("dram_read_bytes", "1000000"),
                Tag("dram_write_bytes", "1000000"), Tag("range_index", static_cast<std::int64_t>(k)),
                Tag("replay", "kernel")};
      p.trace.spans.push_back(std::move(h));
    } else {
      const SpanId call = static_cast<SpanId>(4 + 2 * k);
      p.trace.spans.push_back(span(call, kNoSpan, Level::kSystem, "cudaLaunchKernel", at, at + 20, thread));
      Span kernel = span(call + 1, call, Level::kKernel, k == 0 ? "sgemm" : "splitk", at + 100, at + 600, thread);
      kernel.track = Track::stream(0, 7);
      kernel.tags = {Tag("kind", "kernel")};
      p.trace.spans.push_back(std::move(kernel));
    }
  }
  return p;
}

TEST(ExternalRecord, ACounterRunIsJoinedWithTheKernelRunAndNeverTimed) {
  external::CommandOptions o;
  o.argv = {"./prog"};
  o.trace_level = TraceLevel::kHardware;
  std::vector<external::Execution> runs(2);
  runs[0].level = TraceLevel::kKernel;
  runs[0].trace = external::merge_parts({counter_part(false)}, TraceLevel::kKernel);
  runs[1].level = TraceLevel::kHardware;
  runs[1].trace = external::merge_parts({counter_part(true)}, TraceLevel::kHardware);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : runs[1].trace.spans) by_id.emplace(s.id, &s);
  std::size_t placed = 0;
  for (const Span& s : runs[1].trace.spans)
    if (s.level == Level::kHardware) {
      ASSERT_NE(s.parent_id, kNoSpan) << s.name;
      EXPECT_EQ(by_id.at(s.parent_id)->name, "aten::mm") << s.name << " lies in the op open at its launch";
      ++placed;
    }
  EXPECT_EQ(placed, 2u);

  const EvaluationRecord r = external::external_record(o, std::move(runs));
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].trace_level, TraceLevel::kKernel);
  EXPECT_EQ(r.runs[1].trace_level, TraceLevel::kHardware);
  EXPECT_TRUE(r.level_overheads.empty()) << "a counter run's durations are replays, never an overhead";
  bool said = false;
  for (const std::string& w : r.runs[1].warnings) said |= w.find("counter run") != std::string::npos;
  EXPECT_TRUE(said);
  for (const Table& t : evaluation_summary(r)) {
    if (t.id != "summary.samples") continue;
    ASSERT_EQ(t.rows.size(), 2u);
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      if (t.columns[c].name == "stability") EXPECT_EQ(std::get<std::string>(t.rows[1].at(c)), "n/a (counter run)");
      if (t.columns[c].name == "median_ms")
        EXPECT_FALSE(std::holds_alternative<double>(t.rows[1].at(c))) << "a replayed step is no latency";
    }
  }

  const auto tables = run_analyses(r, {"A8"}, AnalysisOptions{});
  ASSERT_EQ(tables.size(), 1u);
  const Table& a8 = tables[0];
  std::size_t gflops_col = a8.columns.size(), name_col = a8.columns.size();
  for (std::size_t c = 0; c < a8.columns.size(); ++c) {
    if (a8.columns[c].name == "gflops") gflops_col = c;
    if (a8.columns[c].name == "kernel_name") name_col = c;
  }
  ASSERT_LT(gflops_col, a8.columns.size());
  ASSERT_LT(name_col, a8.columns.size());
  std::map<std::string, double> gflops;
  for (const auto& row : a8.rows)
    if (const auto* g = std::get_if<double>(&row.at(gflops_col))) gflops[std::get<std::string>(row.at(name_col))] = *g;
  EXPECT_EQ(gflops, (std::map<std::string, double>{{"sgemm", 0.002}, {"splitk", 0.006}}));
}

// Two processes whose CUPTI correlation ids collide (both count from 1): each kernel joins its own process's call.
TEST(MergeParts, CorrelationIdsStayWithinTheirProcess) {
  std::vector<TracePart> parts;
  for (std::int64_t pid : {100, 200}) {
    TracePart p = part(pid, pid + 1);
    // The same times, ids and stream in both processes: only the process tells them apart.
    Span call = span(8, kNoSpan, Level::kSystem, "cudaLaunchKernel", 260, 270, pid);
    call.correlation_id = 5;
    Span kernel = span(9, kNoSpan, Level::kKernel, "k" + std::to_string(pid), 400, 450, 0);
    kernel.track = Track::stream(0, 7);
    kernel.correlation_id = 5;
    Span other_thread = span(10, kNoSpan, Level::kSystem, "cudaMalloc", 50, 60, pid + 1);  // outside every range
    p.trace.spans.push_back(call);
    p.trace.spans.push_back(kernel);
    p.trace.spans.push_back(other_thread);
    parts.push_back(std::move(p));
  }
  Trace t = external::merge_parts(std::move(parts), TraceLevel::kKernel);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id.emplace(s.id, &s);
  for (std::int64_t pid : {100, 200}) {
    const Span* k = named(t, "k" + std::to_string(pid), 400);
    ASSERT_NE(k, nullptr);
    const Span* call = by_id.at(k->parent_id);
    EXPECT_EQ(call->name, "cudaLaunchKernel");
    EXPECT_EQ(call->track.id, static_cast<std::uint64_t>(pid))
        << "the kernel of process " << pid << " joined another process's call";
    EXPECT_EQ(by_id.at(call->parent_id)->name, "cublasSgemm");
    const Span* malloc = named(t, "cudaMalloc", 50);
    ASSERT_NE(malloc, nullptr);
    // Stream 7 of each process is a track of its own, and says whose it is.
    EXPECT_EQ(k->track.stream_number(), 7u);
    ASSERT_NE(t.process_of_track(k->track), nullptr);
    EXPECT_EQ(t.process_of_track(k->track)->pid, pid);
  }
  EXPECT_NE(named(t, "k100", 400)->track, named(t, "k200", 400)->track);
  EXPECT_EQ(to_string(named(t, "k200", 400)->track), "GPU 0 stream 7 (process #2)");
  const nlohmann::json doc = to_chrome_trace(t, TraceResource{});
  std::set<std::string> stream_names;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 0) stream_names.insert(e["args"]["name"]);
  EXPECT_EQ(stream_names, (std::set<std::string>{"stream 7 of process 100", "stream 7 of process 200"}));
  for (const Span& s : t.spans) {
    if (s.name != "cudaMalloc") continue;
    const Span* process = by_id.at(s.parent_id);
    EXPECT_EQ(process->level, Level::kApplication) << "a call outside every range belongs to its process";
    EXPECT_EQ(static_cast<std::uint64_t>(t.process_of_thread(s.track.id)->pid), process->track.id);
  }
  EXPECT_EQ(t.assembly.unparented, 0u);
}

TEST(ChromeExport, EveryProcessIsATrackGroup) {
  Trace t = external::merge_parts({part(100, 101), part(200, 201)}, TraceLevel::kLibrary);
  const nlohmann::json doc = to_chrome_trace(t, TraceResource{});
  std::map<std::uint64_t, std::set<std::uint64_t>> pids_of_thread;
  std::map<std::uint64_t, std::string> process_names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") pids_of_thread[e["tid"].get<std::uint64_t>()].insert(e["pid"].get<std::uint64_t>());
    if (e["ph"] == "M" && e["name"] == "process_name")
      process_names[e["pid"].get<std::uint64_t>()] = e["args"]["name"].get<std::string>();
  }
  const std::uint64_t first = *pids_of_thread.at(100).begin();
  EXPECT_EQ(pids_of_thread.at(101), std::set<std::uint64_t>{first}) << "a process's threads share its pid";
  const std::uint64_t second = *pids_of_thread.at(200).begin();
  EXPECT_NE(first, second);
  EXPECT_EQ(process_names.at(first), "process 100: prog --x");
  EXPECT_EQ(process_names.at(second), "process 200: prog --x");
}

// Recorded on an H200 (scripts/gpu/profile_ops.py, PyTorch 2.11): eager ResNet-50 and BERT-base, 3 steps under
// emit_nvtx with the injection library, and the same 3 steps under torch.profiler (CPU activity). Every op
// torch.profiler reports inside the steps is a FRAMEWORK span of the merged trace, as often, nested under its step.
class RecordedTorchOps : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedTorchOps, EveryOpTorchProfilerSeesIsAFrameworkSpanOfItsStep) {
  const fs::path dir = fs::path(XSP_TEST_FIXTURES) / "profile" / GetParam();
  std::vector<TracePart> parts = external::read_parts(dir);
  ASSERT_EQ(parts.size(), 1u);
  const Trace t = external::merge_parts(std::move(parts), TraceLevel::kFramework);
  std::ifstream in(dir / "torch_ops.json");
  const nlohmann::json reference = nlohmann::json::parse(in);
  std::map<std::string, std::int64_t> expected;
  for (const auto& [name, count] : reference["ops"].items()) {
    // CPU activity also lists CUDA runtime calls (cudaLaunchKernel ...): no ops, and no NVTX ranges either.
    if (name.find("::") != std::string::npos) expected[name] = count.get<std::int64_t>();
  }
  ASSERT_FALSE(expected.empty());

  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id.emplace(s.id, &s);
  auto step_of = [&](const Span& s) -> const Span* {
    for (SpanId p = s.parent_id; p != kNoSpan;) {
      const Span* parent = by_id.at(p);
      if (parent->level == Level::kModel) return parent->name == "step" ? parent : nullptr;
      p = parent->parent_id;
    }
    return nullptr;
  };
  // emit_nvtx's ranges exist only inside its context (the steps); the op observer sees every op from CUDA's
  // initialization on, the warm-up passes too.
  const bool observer = GetParam().ends_with("_observer");
  std::map<std::string, std::int64_t> seen;
  std::set<SpanId> steps;
  std::size_t with_shapes = 0, framework = 0, outside = 0;
  for (const Span& s : t.spans) {
    if (s.level != Level::kFramework) continue;
    const Span* step = step_of(s);
    if (observer && step == nullptr) {
      ++outside;
      continue;
    }
    ++framework;
    ASSERT_NE(step, nullptr) << s.name << " outside every step";
    if (observer) EXPECT_EQ(s.tag("domain"), std::optional<std::string_view>("torch.ops")) << s.name;
    steps.insert(step->id);
    EXPECT_GE(s.start_ns, step->start_ns);
    EXPECT_LE(s.end_ns, step->end_ns);
    ++seen[s.name];
    with_shapes += s.tag("shapes").has_value();
  }
  EXPECT_EQ(steps.size(), 3u);
  EXPECT_EQ(seen, expected);
  EXPECT_GT(with_shapes, framework / 2) << "record_shapes=True (--op-shapes) gives most ops their input shapes";
  EXPECT_EQ(t.assembly.unparented, 0u);
  EXPECT_EQ(t.counters.at("nvtx.unmatched_pops"), 0u);
  if (observer) {
    EXPECT_GT(outside, 0u) << "the warm-up passes' ops";
    EXPECT_EQ(t.counters.at("profile.torch_ops_observed"), 1u);
  }
}

// MODEL_observer: the same program without emit_nvtx, its ops from the RecordFunction observer with --op-shapes
// (scripts/gpu/profile_cuda.py ... observer, H200, 2026-11-28).
INSTANTIATE_TEST_SUITE_P(H200, RecordedTorchOps,
                         ::testing::Values("resnet50", "bert", "resnet50_observer", "bert_observer"));

// The program's outermost ranges are its samples: the layer analyses read a profiled ResNet-50 as they read a
// LibTorch one. Per step, its top-level ops (torch.profiler's counts over 3 steps, divided by 3): 53 conv2d, 53
// batch_norm, 49 relu_, 16 add_, one each of max_pool2d, adaptive_avg_pool2d, flatten and linear = 175 layers.
TEST(RecordedTorchLayers, EachStepOfAProfiledResNet50Holds175Layers) {
  Trace t = external::merge_parts(external::read_parts(fs::path(XSP_TEST_FIXTURES) / "profile" / "resnet50"),
                                  TraceLevel::kFramework);
  external::CommandOptions o;
  o.argv = {"python3", "profile_ops.py", "resnet50", "nvtx"};
  o.trace_level = TraceLevel::kFramework;
  const EvaluationRecord e = external::external_record(o, external::CommandRun{}, std::move(t));
  EXPECT_EQ(e.model_name, "profile_ops.py");
  LayerExtractionReport report;
  const std::vector<Layer> layers = extract_layers(e.runs[0].trace, &report);
  EXPECT_EQ(report.predict_spans, 3u);
  ASSERT_EQ(layers.size(), 3u * 175u);
  std::map<std::string, std::size_t> per_type;
  for (const Layer& l : layers) ++per_type[l.type];
  EXPECT_EQ(per_type["aten::conv2d"], 3u * 53u);
  EXPECT_EQ(per_type["aten::batch_norm"], 3u * 53u);
  EXPECT_EQ(per_type["aten::relu_"], 3u * 49u);
  EXPECT_EQ(per_type["aten::add_"], 3u * 16u);
  EXPECT_EQ(layers.front().type, "aten::conv2d");
  EXPECT_EQ(layers.front().shapes.rfind("[8,3,224,224]", 0), 0u) << layers.front().shapes;
  EXPECT_EQ(layers[174].type, "aten::linear");
  EXPECT_EQ(layers[175].index, 0u);
  EXPECT_EQ(e.runs[0].stage_latency_ns.at("step").n, 3u);
}

// The CUPTI part, recorded on an H200 (scripts/gpu/profile_cuda.py, PyTorch 2.11, CUDA 13.0): the same 3 steps as
// above at --trace-level kernel. Every kernel torch.profiler (CUDA activity) reports over the 3 steps is a KERNEL span
// of the merged trace, as often, and every one hangs under its launch call, a framework op and its step.
using KernelCounts = std::map<std::string, std::int64_t>;

const Span* ancestor(const std::map<SpanId, const Span*>& by_id, const Span& s, Level level) {
  for (SpanId p = s.parent_id; p != kNoSpan;) {
    const Span* parent = by_id.at(p);
    if (parent->level == level) return parent;
    p = parent->parent_id;
  }
  return nullptr;
}

bool is_kernel(const Span& s) {
  const auto kind = s.tag("kind");
  return s.level == Level::kKernel && kind && *kind == "kernel";
}

class RecordedCudaKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedCudaKernels, KernelsPerStepEqualTorchProfilersAndEachHasItsOp) {
  const fs::path dir = fs::path(XSP_TEST_FIXTURES) / "profile" / GetParam();
  const Trace t = external::merge_parts(external::read_parts(dir), TraceLevel::kKernel);
  std::ifstream in(dir / "torch_ops.json");
  const nlohmann::json reference = nlohmann::json::parse(in);
  KernelCounts expected;
  // Kineto also lists the user range "step" on the GPU side (its gpu_user_annotation): no kernel.
  for (const auto& [name, count] : reference["kernels"].items())
    if (name != "step") expected[name] = count.get<std::int64_t>();
  ASSERT_FALSE(expected.empty());

  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id.emplace(s.id, &s);
  KernelCounts seen;
  std::map<SpanId, std::size_t> per_step;
  std::size_t without_op = 0;
  std::size_t outside_steps = 0;  // the input's randn and the 3 warm-up passes: the whole run is collected
  for (const Span& s : t.spans) {
    if (!is_kernel(s)) continue;
    ASSERT_NE(s.parent_id, kNoSpan) << s.name;
    EXPECT_EQ(by_id.at(s.parent_id)->level, Level::kSystem) << s.name << " hangs under its launch";
    const Span* step = ancestor(by_id, s, Level::kModel);
    if (step == nullptr) {
      ++outside_steps;
      continue;
    }
    EXPECT_EQ(step->name, "step");
    ++per_step[step->id];
    without_op += ancestor(by_id, s, Level::kFramework) == nullptr;
    ++seen[s.name];
  }
  EXPECT_EQ(seen, expected);
  EXPECT_GT(outside_steps, 0u);
  ASSERT_EQ(per_step.size(), 3u);
  for (const auto& [step, n] : per_step) EXPECT_EQ(n, per_step.begin()->second) << "every step launches alike";
  EXPECT_EQ(without_op, 0u) << "every kernel has a framework op";
  EXPECT_EQ(t.assembly.unparented, 0u);
  EXPECT_EQ(t.counters.count("cupti.dropped_records") ? t.counters.at("cupti.dropped_records") : 0u, 0u);
  EXPECT_EQ(t.counters.count("profile.cupti_unavailable"), 0u);
}

INSTANTIATE_TEST_SUITE_P(H200, RecordedCudaKernels,
                         ::testing::Values("resnet50", "bert", "resnet50_observer", "bert_observer"));

// The counter run of the same program (--trace-level hardware --capture nvtx:step, 1 step, recorded on an H200 by
// scripts/gpu/profile_hardware.py): 232 kernels replayed inside their launches. Each HARDWARE span lies in its step
// and its framework op; their FLOPs equal Nsight Compute's on the same step kernel by kernel (ncu_flops.json, from
// ncu --nvtx-include step/ with the same metrics); joined with the kernel run above, every kernel of every step gets
// its counters and A8 sums to the step's FLOPs.
TEST(RecordedCudaKernels, ACounterRunMatchesNsightComputeAndJoinsTheKernelRun) {
  const fs::path fixtures = fs::path(XSP_TEST_FIXTURES) / "profile";
  Trace counters = external::merge_parts(external::read_parts(fixtures / "resnet50_counters"), TraceLevel::kHardware);
  std::ifstream in(fixtures / "resnet50_counters" / "ncu_flops.json");
  const std::vector<double> ncu = nlohmann::json::parse(in).at("flops").get<std::vector<double>>();
  ASSERT_EQ(ncu.size(), 232u);

  std::map<SpanId, const Span*> by_id;
  for (const Span& s : counters.spans) by_id.emplace(s.id, &s);
  std::map<std::int64_t, double> flops_by_range;
  for (const Span& s : counters.spans) {
    if (s.level != Level::kHardware) continue;
    const Span* step = ancestor(by_id, s, Level::kModel);
    ASSERT_NE(step, nullptr) << s.name;
    EXPECT_EQ(step->name, "step");
    EXPECT_NE(ancestor(by_id, s, Level::kFramework), nullptr) << s.name << " has its op";
    EXPECT_EQ(s.tag("replay"), "kernel");
    double flops = 0;
    for (std::string_view c : hw::flop_counters())
      if (const auto v = s.tag(c)) flops += std::stod(std::string(*v));
    flops_by_range[s.tag_int("range_index").value()] = flops;
  }
  ASSERT_EQ(flops_by_range.size(), ncu.size());
  double total = 0;
  for (const auto& [index, flops] : flops_by_range) {
    EXPECT_NEAR(flops, ncu.at(static_cast<std::size_t>(index)), 1e-9 * ncu.at(static_cast<std::size_t>(index)) + 1)
        << "kernel " << index;
    total += flops;
  }
  EXPECT_DOUBLE_EQ(total, 74'277'643'968.0);
  EXPECT_EQ(counters.counters.at("counters.ranges"), 232u);
  EXPECT_EQ(counters.counters.count("counters.dropped_ranges"), 0u);

  external::CommandOptions o;
  o.argv = {"python3", "profile_ops.py", "resnet50", "nvtx"};
  o.trace_level = TraceLevel::kHardware;
  o.sample_range = "step";
  std::vector<external::Execution> runs(2);
  runs[0].level = TraceLevel::kKernel;
  runs[0].trace = external::merge_parts(external::read_parts(fixtures / "resnet50"), TraceLevel::kKernel);
  runs[1].level = TraceLevel::kHardware;
  runs[1].trace = std::move(counters);
  const EvaluationRecord r = external::external_record(o, std::move(runs));
  const auto tables = run_analyses(r, {"A8"}, AnalysisOptions{});
  ASSERT_EQ(tables.size(), 1u);
  const Table& a8 = tables[0];
  std::size_t gflops_col = a8.columns.size();
  for (std::size_t c = 0; c < a8.columns.size(); ++c)
    if (a8.columns[c].name == "gflops") gflops_col = c;
  ASSERT_LT(gflops_col, a8.columns.size());
  double a8_flops = 0;
  std::size_t joined = 0;
  for (const auto& row : a8.rows)
    if (const auto* g = std::get_if<double>(&row.at(gflops_col)); g != nullptr && !std::isnan(*g)) {
      a8_flops += *g * 1e9;
      ++joined;
    }
  EXPECT_EQ(joined, 232u) << "every kernel of a step joined with its counters";
  EXPECT_NEAR(a8_flops, total, total * 1e-9);
  for (const auto& note : a8.notes) EXPECT_EQ(note.find("differ"), std::string::npos) << note;
}

// A program that spawns a CUDA worker (a second Python process doing 10 matrix products in a range "child work"):
// one evaluation, two processes, each with its own kernels under its own calls and ranges.
TEST(RecordedCudaKernels, ASpawnedWorkerIsASecondProcessWithItsOwnKernels) {
  const Trace t = external::merge_parts(external::read_parts(fs::path(XSP_TEST_FIXTURES) / "profile" / "spawn"),
                                        TraceLevel::kKernel);
  ASSERT_EQ(t.processes.size(), 2u);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id.emplace(s.id, &s);
  std::map<std::int64_t, std::size_t> kernels_of;  // pid → kernels
  std::size_t child_matmuls = 0;
  for (const Span& s : t.spans) {
    if (!is_kernel(s)) continue;
    const Span* process = ancestor(by_id, s, Level::kApplication);
    ASSERT_NE(process, nullptr) << s.name;
    const Span* call = by_id.at(s.parent_id);
    ASSERT_EQ(call->level, Level::kSystem);
    const TraceProcess* p = t.process_of_thread(call->track.id);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(static_cast<std::uint64_t>(p->pid), process->track.id) << "a kernel under another process's span";
    ++kernels_of[p->pid];
    const Span* range = ancestor(by_id, s, Level::kModel);
    if (range != nullptr && range->name == "child work") ++child_matmuls;
  }
  ASSERT_EQ(kernels_of.size(), 2u) << "both processes recorded kernels";
  EXPECT_GE(child_matmuls, 10u) << "the child's 10 products (and their clamps) under its own range";
  EXPECT_EQ(t.assembly.unparented, 0u);
}

// --capture cuda-profiler-api: the program calls cudaProfilerStart before its second step and cudaProfilerStop after
// it; the kernels and ranges of the other two steps are left out, and counted.
TEST(RecordedCudaKernels, ProfilerApiCaptureKeepsOnlyTheStepBetweenStartAndStop) {
  const Trace t = external::merge_parts(external::read_parts(fs::path(XSP_TEST_FIXTURES) / "profile" / "profiler_api"),
                                        TraceLevel::kKernel);
  const Trace whole = external::merge_parts(external::read_parts(fs::path(XSP_TEST_FIXTURES) / "profile" / "resnet50"),
                                            TraceLevel::kKernel);
  auto index = [](const Trace& trace) {
    std::map<SpanId, const Span*> by_id;
    for (const Span& s : trace.spans) by_id.emplace(s.id, &s);
    return by_id;
  };
  const auto by_id = index(t), whole_by_id = index(whole);
  std::size_t steps = 0, kernels = 0, whole_step_kernels = 0;
  for (const Span& s : t.spans) {
    steps += s.level == Level::kModel && s.name == "step";
    if (!is_kernel(s)) continue;
    ++kernels;
    const Span* step = ancestor(by_id, s, Level::kModel);
    ASSERT_NE(step, nullptr) << s.name << ": a kernel outside the captured step (the warm-up's) was kept";
  }
  for (const Span& s : whole.spans) whole_step_kernels += is_kernel(s) && ancestor(whole_by_id, s, Level::kModel);
  EXPECT_EQ(steps, 1u);
  EXPECT_EQ(kernels * 3, whole_step_kernels) << "one step's kernels of the same program's three";
  EXPECT_GT(t.counters.at("profile.spans_outside_capture"), 0u);
}

// torch.profiler inside a program under `xsp profile`: CUPTI 13.0 admits one subscriber per process, so the one
// that subscribed first (XSP, at CUDA's initialization) records everything and torch.profiler runs without CUDA
// activity (Kineto warns CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); its CPU ops are complete.
TEST(RecordedCudaKernels, WithTorchProfilerInTheProgramXspKeepsItsKernels) {
  const fs::path dir = fs::path(XSP_TEST_FIXTURES) / "profile" / "coexist";
  std::ifstream in(dir / "coexist.json");
  const nlohmann::json torch = nlohmann::json::parse(in);
  EXPECT_EQ(torch["kernels"], 0);
  EXPECT_EQ(torch["ops"], 2442);
  const Trace t = external::merge_parts(external::read_parts(dir), TraceLevel::kKernel);
  std::size_t kernels = 0;
  for (const Span& s : t.spans) kernels += is_kernel(s);
  EXPECT_GE(kernels, 3u * 232u);
}

#if defined(XSP_TEST_NVTX_PROGRAM) && defined(XSP_TEST_XSP_BINARY)

struct Ran {
  int status = -1;  // the shell's: code, or 128 + signal
  std::string out, err;
};

class ProfileCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xsp-profile-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `xsp --store DB profile ARGS` through the shell, stdout and stderr to files.
  Ran xsp(const std::string& args) {
    const fs::path out = dir_ / "out", err = dir_ / "err";
    const std::string cmd = std::string("XSP_INJECT_LIBRARY=") + XSP_TEST_INJECT_LIB + " " + XSP_TEST_XSP_BINARY +
                            " --store " + (dir_ / "x.db").string() + " " + args + " >" + out.string() + " 2>" +
                            err.string();
    const int raw = std::system(cmd.c_str());
    Ran r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read(out);
    r.err = read(err);
    return r;
  }
  static std::string read(const fs::path& f) {
    std::ifstream in(f);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // `xsp profile --signal -- nvtx_program ARGS` in the background, through a shell (its output in bg_out, bg_err):
  // the shell's pid, or -1.
  pid_t profile_in_background(const std::string& args) {
    const std::string cmd = std::string("XSP_INJECT_LIBRARY=") + XSP_TEST_INJECT_LIB + " exec " + XSP_TEST_XSP_BINARY +
                            " --store " + (dir_ / "x.db").string() + " profile --signal -- " + XSP_TEST_NVTX_PROGRAM +
                            " " + args + " >" + (dir_ / "bg_out").string() + " 2>" + (dir_ / "bg_err").string();
    const pid_t shell = ::fork();
    if (shell == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return shell;
  }
  // `xsp profile --start PID`, retried for 2 s until the program has loaded the library: its last exit status.
  int start_collection(pid_t pid) {
    int started = -1;
    for (int attempt = 0; attempt < 40 && started != 0; ++attempt) {
      ::usleep(50'000);
      started = xsp("profile --start " + std::to_string(pid)).status;
    }
    return started;
  }
  EvaluationRecord only_evaluation() {
    auto store = Store::open(dir_ / "x.db");
    const auto list = store->list();
    EXPECT_EQ(list.size(), 1u);
    return *store->load(list.front().id);
  }
  fs::path dir_;
};

const Span* find(const Trace& t, std::string_view name) {
  for (const Span& s : t.spans)
    if (s.name == name) return &s;
  return nullptr;
}

TEST_F(ProfileCommand, StoresNestedRangesOfTwoProcessesAndPassesTheProgramThrough) {
  const Ran r = xsp(std::string("profile --trace-level library -- ") + XSP_TEST_NVTX_PROGRAM + " --fork --exit 3");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "hello from the program\n") << "the program's stdout is its own";
  EXPECT_EQ(r.err.rfind("a line on stderr\n", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.err;

  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.kind(), RecordKind::kExternal);
  EXPECT_EQ(e.model_name, "xsp_nvtx_program");
  EXPECT_EQ(e.settings["exit"]["code"], 3);
  EXPECT_EQ(e.settings["command"].back(), "3");
  ASSERT_EQ(e.runs.size(), 1u);
  const Trace& t = e.runs[0].trace;
  ASSERT_EQ(t.processes.size(), 2u) << "the forked child writes its own part";
  EXPECT_NE(t.processes[0].pid, t.processes[1].pid);
  EXPECT_EQ(t.assembly.unparented, 0u);

  const Span* infer = find(t, "infer");
  const Span* linear = find(t, "aten::linear");
  const Span* gemm = find(t, "cublasSgemm_v2");
  const Span* worker = find(t, "worker step");
  const Span* child = find(t, "child range");
  ASSERT_TRUE(infer && linear && gemm && worker && child);
  EXPECT_EQ(infer->level, Level::kModel);
  EXPECT_EQ(linear->level, Level::kFramework);
  EXPECT_EQ(gemm->level, Level::kLibrary);
  EXPECT_EQ(linear->parent_id, infer->id);
  EXPECT_EQ(gemm->parent_id, infer->id);
  EXPECT_EQ(linear->tag("shapes"), std::optional<std::string_view>("[2,8],[4,8],[4]"));
  // Known sleeps inside: infer 40 ms, the op 10 ms, the GEMM 5 ms, the worker's step 15 ms.
  EXPECT_GE(infer->duration_ns(), 40'000'000);
  EXPECT_GE(linear->duration_ns(), 10'000'000);
  EXPECT_GE(gemm->duration_ns(), 5'000'000);
  EXPECT_GE(worker->duration_ns(), 15'000'000);
  EXPECT_NE(worker->track, infer->track);
  EXPECT_EQ(t.process_of_thread(worker->track.id), t.process_of_thread(infer->track.id));
  EXPECT_NE(t.process_of_thread(child->track.id), t.process_of_thread(infer->track.id));
  EXPECT_EQ(t.process_of_thread(child->track.id)->pid, static_cast<std::int64_t>(child->track.id));

  // The program's own ranges are the run's stages.
  EXPECT_EQ(e.runs[0].stage_latency_ns.at("infer").n, 1u);
  EXPECT_GE(e.runs[0].stage_latency_ns.at("infer").p50, 40e6);
  EXPECT_FALSE(e.runs[0].stage_latency_ns.contains("aten::linear"));
}

#ifdef XSP_TEST_TORCH_OPS_PROGRAM
// Spans of `name`, and whether each one's parent is named `parent`.
std::vector<const Span*> all_named(const Trace& t, std::string_view name) {
  std::vector<const Span*> out;
  for (const Span& s : t.spans)
    if (s.name == name) out.push_back(&s);
  return out;
}
const Span* parent_of(const Trace& t, const Span& s) {
  for (const Span& p : t.spans)
    if (p.id == s.parent_id) return &p;
  return nullptr;
}

// A LibTorch program with no emit_nvtx: its ops come from the RecordFunction observer, nested as they ran, under the
// program's steps; the program's output and status pass through.
TEST_F(ProfileCommand, PyTorchOpsComeFromTheObserverWithoutEmitNvtx) {
  const Ran r = xsp(std::string("profile --trace-level framework -- ") + XSP_TEST_TORCH_OPS_PROGRAM + " --exit 4");
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.out, "sum 12288\n") << "3 steps of relu(ones(8,32) @ ones(32,16)).sum() = 3 * 128 * 32";
  EXPECT_EQ(r.err.find("not observed"), std::string::npos) << r.err;
  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.settings["torch_ops"], "observer");
  const Trace& t = e.runs[0].trace;
  EXPECT_EQ(t.counters.at("profile.torch_ops_observed"), 1u);
  EXPECT_FALSE(t.counters.contains("profile.nvtx_op_ranges_replaced"));
  const auto steps = all_named(t, "step");
  const auto matmuls = all_named(t, "aten::matmul");
  const auto mms = all_named(t, "aten::mm");
  ASSERT_EQ(steps.size(), 3u);
  ASSERT_EQ(matmuls.size(), 3u) << "one per step, and none before the first NVTX call loaded the library";
  ASSERT_EQ(mms.size(), 3u);
  EXPECT_EQ(all_named(t, "aten::relu").size(), 3u);
  for (const Span* mm : mms) {
    EXPECT_EQ(mm->level, Level::kFramework);
    EXPECT_EQ(mm->tag("domain"), std::optional<std::string_view>("torch.ops"));
    EXPECT_TRUE(mm->tag_int("sequence").has_value()) << "x requires grad: aten::mm has an autograd sequence number";
    EXPECT_FALSE(mm->tag("shapes").has_value()) << "shapes only with --op-shapes";
    const Span* matmul = parent_of(t, *mm);
    ASSERT_NE(matmul, nullptr);
    EXPECT_EQ(matmul->name, "aten::matmul") << "aten::matmul calls aten::mm";
    const Span* step = parent_of(t, *matmul);
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(step->name, "step");
    EXPECT_EQ(step->level, Level::kModel);
    EXPECT_GE(step->duration_ns(), 5'000'000);
    EXPECT_GE(mm->start_ns, matmul->start_ns);
    EXPECT_LE(mm->end_ns, matmul->end_ns);
  }
  // The program's steps are its samples; ops are no stages.
  EXPECT_EQ(e.runs[0].stage_latency_ns.at("step").n, 3u);
  EXPECT_FALSE(e.runs[0].stage_latency_ns.contains("aten::mm"));
}

TEST_F(ProfileCommand, OpShapesAreTheInputsSizes) {
  const Ran r =
      xsp(std::string("profile --trace-level framework --op-shapes -- ") + XSP_TEST_TORCH_OPS_PROGRAM + " --steps 1");
  ASSERT_EQ(r.status, 0) << r.err;
  const EvaluationRecord e = only_evaluation();
  const Trace& t = e.runs[0].trace;
  const auto mms = all_named(t, "aten::mm");
  ASSERT_EQ(mms.size(), 1u);
  EXPECT_EQ(mms[0]->tag("shapes"), std::optional<std::string_view>("[8,32],[32,16]"));
  const auto relus = all_named(t, "aten::relu");
  ASSERT_EQ(relus.size(), 1u);
  EXPECT_EQ(relus[0]->tag("shapes"), std::optional<std::string_view>("[8,16]"));
}

// Under emit_nvtx a program has each op twice, as an NVTX range and through the observer: the NVTX copy is refused and
// counted. With --torch-ops nvtx only the NVTX ranges are the ops.
TEST_F(ProfileCommand, EmitNvtxOpRangesGiveWayToTheObserverOrAreTheOpsWithTorchOpsNvtx) {
  Ran r = xsp(std::string("profile --trace-level framework -- ") + XSP_TEST_TORCH_OPS_PROGRAM + " --emit-nvtx");
  ASSERT_EQ(r.status, 0) << r.err;
  {
    const EvaluationRecord e = only_evaluation();
    const Trace& t = e.runs[0].trace;
    EXPECT_EQ(all_named(t, "aten::matmul").size(), 3u) << "each op once";
    EXPECT_EQ(all_named(t, "aten::mm").size(), 3u);
    EXPECT_EQ(t.counters.at("profile.nvtx_op_ranges_replaced"), 3u);
  }
  fs::remove(dir_ / "x.db");
  r = xsp(std::string("profile --trace-level framework --torch-ops nvtx -- ") + XSP_TEST_TORCH_OPS_PROGRAM +
          " --emit-nvtx");
  ASSERT_EQ(r.status, 0) << r.err;
  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.settings["torch_ops"], "nvtx");
  const Trace& t = e.runs[0].trace;
  const auto matmuls = all_named(t, "aten::matmul");
  ASSERT_EQ(matmuls.size(), 3u);
  EXPECT_EQ(matmuls[0]->tag_int("sequence"), std::optional<std::int64_t>(100));
  EXPECT_FALSE(matmuls[0]->tag("domain").has_value()) << "emit_nvtx's ranges are in the default domain";
  EXPECT_TRUE(all_named(t, "aten::mm").empty()) << "the program's NVTX ranges only";
  EXPECT_FALSE(t.counters.contains("profile.torch_ops_observed"));
}

// Training: autograd's backward nodes are FRAMEWORK spans paired with their forward op by sequence number, and a
// record_function scope is the program's own (MODEL) range, nesting what ran inside it.
TEST_F(ProfileCommand, BackwardNodesAndRecordFunctionScopesAreObservedToo) {
  const Ran r = xsp(std::string("profile --trace-level framework -- ") + XSP_TEST_TORCH_OPS_PROGRAM + " --train");
  ASSERT_EQ(r.status, 0) << r.err;
  const EvaluationRecord e = only_evaluation();
  const Trace& t = e.runs[0].trace;
  const auto scopes = all_named(t, "backward_pass");
  // The engine's "evaluate_function" op around each node, then the node itself (BACKWARD_FUNCTION).
  const auto evaluations = all_named(t, "autograd::engine::evaluate_function: MmBackward0");
  const auto nodes = all_named(t, "MmBackward0");
  ASSERT_EQ(scopes.size(), 3u);
  ASSERT_EQ(evaluations.size(), 3u);
  ASSERT_EQ(nodes.size(), 3u);
  std::set<std::int64_t> forward_sequences;
  for (const Span* mm : all_named(t, "aten::mm"))
    if (parent_of(t, *mm)->name == "aten::matmul") forward_sequences.insert(mm->tag_int("sequence").value_or(-1));
  ASSERT_EQ(forward_sequences.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(scopes[i]->level, Level::kModel);
    EXPECT_EQ(parent_of(t, *scopes[i])->name, "step");
    EXPECT_EQ(nodes[i]->level, Level::kFramework);
    EXPECT_EQ(evaluations[i]->level, Level::kFramework) << "an observed op, though its name is no namespaced one";
    EXPECT_EQ(parent_of(t, *nodes[i]), evaluations[i]);
    EXPECT_TRUE(forward_sequences.contains(nodes[i]->tag_int("sequence").value_or(-2)))
        << "a backward node carries its forward op's sequence number";
    const Span* up = nodes[i];
    while (up != nullptr && up->name != "backward_pass") up = parent_of(t, *up);
    EXPECT_NE(up, nullptr) << "the backward pass ran inside the scope, on the same thread";
  }
  EXPECT_EQ(e.runs[0].stage_latency_ns.at("step").n, 3u);
}

TEST_F(ProfileCommand, AtModelLevelNoOpIsObserved) {
  const Ran r = xsp(std::string("profile --trace-level model -- ") + XSP_TEST_TORCH_OPS_PROGRAM);
  ASSERT_EQ(r.status, 0) << r.err;
  const EvaluationRecord e = only_evaluation();
  const Trace& t = e.runs[0].trace;
  EXPECT_EQ(all_named(t, "step").size(), 3u);
  for (const Span& s : t.spans) EXPECT_NE(s.level, Level::kFramework) << s.name;
  EXPECT_FALSE(t.counters.contains("profile.torch_ops_observed"));
}
#endif

TEST_F(ProfileCommand, AnExecutedChildIsASecondProcessOfTheSameEvaluation) {
  const Ran r = xsp(std::string("profile -- ") + XSP_TEST_NVTX_PROGRAM + " --spawn " + XSP_TEST_NVTX_PROGRAM);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello from the program\nhello from the program\n");
  const EvaluationRecord e = only_evaluation();
  const Trace& t = e.runs[0].trace;
  ASSERT_EQ(t.processes.size(), 2u);
  std::size_t infers = 0;
  for (const Span& s : t.spans) infers += s.name == "infer";
  EXPECT_EQ(infers, 2u);
  EXPECT_EQ(e.runs[0].stage_latency_ns.at("infer").n, 2u);
}

TEST_F(ProfileCommand, TraceLevelModelKeepsOnlyTheProgramsRanges) {
  const Ran r = xsp(std::string("profile --trace-level model -- ") + XSP_TEST_NVTX_PROGRAM);
  EXPECT_EQ(r.status, 0) << r.err;
  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.trace_level, TraceLevel::kModel);
  const Trace& t = e.runs[0].trace;
  EXPECT_NE(find(t, "infer"), nullptr);
  EXPECT_EQ(find(t, "aten::linear"), nullptr);
  EXPECT_EQ(find(t, "cublasSgemm_v2"), nullptr);
  EXPECT_EQ(t.counters.at("profile.spans_below_trace_level"), 2u);
}

TEST_F(ProfileCommand, ACrashedProgramLeavesWhatItHadAndTheEvaluationSaysWhichSignal) {
  const Ran r = xsp(std::string("profile -- ") + XSP_TEST_NVTX_PROGRAM + " --abort");
  EXPECT_EQ(r.status, 128 + SIGABRT) << r.err;
  EXPECT_NE(r.err.find("ended by signal 6 (SIGABRT)"), std::string::npos) << r.err;
  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.settings["exit"]["signal"], SIGABRT);
  const Trace& t = e.runs[0].trace;
  const Span* doomed = find(t, "doomed");
  ASSERT_NE(doomed, nullptr) << "written from the signal handler";
  EXPECT_EQ(doomed->tag("open_at_end"), std::optional<std::string_view>("true"));
  EXPECT_NE(find(t, "infer"), nullptr);
  EXPECT_EQ(t.counters.at("nvtx.open_at_end"), 1u);
}

TEST_F(ProfileCommand, ACommandThatCannotRunExitsAsAShellWouldAndStoresNothing) {
  const Ran r = xsp("profile -- /nonexistent/program --flag");
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("/nonexistent/program"), std::string::npos) << r.err;
  auto store = Store::open(dir_ / "x.db");
  EXPECT_TRUE(store->list().empty());
  EXPECT_EQ(xsp("profile --repeat 0 -- true").status, 2);
  EXPECT_EQ(xsp("profile --trace-level kernels -- true").status, 2);
  EXPECT_EQ(xsp("profile").status, 2);
  EXPECT_EQ(xsp("list -- x").status, 2);
}

// At system and kernel level the CUDA driver is given the library too (CUDA_INJECTION64_PATH: the CUPTI part); at
// every level the library is told the level (it refuses deeper ranges), and a variable the caller had set for another
// tool is not passed on.
TEST_F(ProfileCommand, KernelLevelNamesTheLibraryToTheCudaDriverToo) {
  const fs::path seen = dir_ / "seen";
  const std::string print =
      "-- sh -c 'echo \"$NVTX_INJECTION64_PATH|$CUDA_INJECTION64_PATH|$XSP_PROFILE_TRACE_LEVEL\" >" + seen.string() +
      "'";
  const std::string lib = fs::weakly_canonical(XSP_TEST_INJECT_LIB).string();
  if (external::have_cuda_part()) {
    ASSERT_EQ(xsp("profile " + print).status, 0);
    EXPECT_EQ(read(seen), lib + "|" + lib + "|kernel\n");
    ASSERT_EQ(xsp("profile --trace-level system " + print).status, 0);
    EXPECT_EQ(read(seen), lib + "|" + lib + "|system\n");
  }
  // At framework and library level the driver loads the library too, for PyTorch's ops alone (--torch-ops observer).
  ASSERT_EQ(xsp("profile --trace-level library " + print).status, 0);
  EXPECT_EQ(read(seen), lib + "|" + lib + "|library\n");
  ASSERT_EQ(xsp("profile --trace-level library --torch-ops nvtx " + print).status, 0);
  EXPECT_EQ(read(seen), lib + "||library\n");
  ASSERT_EQ(
      std::system(("CUDA_INJECTION64_PATH=/other/tool.so " + std::string(XSP_TEST_XSP_BINARY) + " --store " +
                   (dir_ / "x.db").string() + " profile --inject-library " + lib + " --trace-level model " + print)
                      .c_str()),
      0);
  EXPECT_EQ(read(seen), lib + "||model\n");
}

// Capture control (docs/profile.md "Capture"): inside the ranges of one name; a window; on demand.
TEST_F(ProfileCommand, CaptureInsideTheRangesOfOneName) {
  const Ran r = xsp(std::string("profile --capture nvtx:infer -- ") + XSP_TEST_NVTX_PROGRAM);
  EXPECT_EQ(r.status, 0) << r.err;
  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.settings["capture"]["range"], "infer");
  const Trace& t = e.runs[0].trace;
  for (const char* inside : {"infer", "aten::linear", "cublasSgemm_v2"}) EXPECT_NE(find(t, inside), nullptr) << inside;
  // "request" began before infer opened, "plugin range" after it closed.
  for (const char* outside : {"request", "plugin range"}) EXPECT_EQ(find(t, outside), nullptr) << outside;
  EXPECT_EQ(xsp("profile --trace-level library --capture cuda-profiler-api -- true").status, 2);
  EXPECT_EQ(xsp("profile --capture nvtx: -- true").status, 2);
}

TEST_F(ProfileCommand, CaptureWindowsCountFromTheStart) {
  Ran r = xsp(std::string("profile --delay-s 30 -- ") + XSP_TEST_NVTX_PROGRAM);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no range was captured"), std::string::npos) << r.err;
  {
    const EvaluationRecord e = only_evaluation();
    EXPECT_EQ(e.settings["capture"]["delay_s"], 30.0);
    EXPECT_EQ(e.runs[0].trace.counters.at("nvtx.ranges"), 0u);
    auto store = Store::open(dir_ / "x.db");
    store->remove(e.id);
  }
  r = xsp(std::string("profile --duration-s 30 -- ") + XSP_TEST_NVTX_PROGRAM);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(only_evaluation().runs[0].trace.counters.at("nvtx.ranges"), 6u);
  EXPECT_EQ(xsp("profile --duration-s 0 -- true").status, 2);
  EXPECT_EQ(xsp("profile --delay-s -1 -- true").status, 2);
}

TEST_F(ProfileCommand, OnDemandCaptureStartsFromAnotherProcess) {
  // The profiled program sleeps 3 s after loading the library, then opens its ranges; `xsp profile --start` is
  // sent to the shell that runs `xsp profile --signal`, and reaches the program through its descendants.
  const pid_t shell = profile_in_background("--sleep-first-ms 3000");
  ASSERT_GE(shell, 0);
  const int started = start_collection(shell);
  int status = 0;
  ::waitpid(shell, &status, 0);
  ASSERT_EQ(started, 0) << "the program never had the library loaded";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const EvaluationRecord e = only_evaluation();
  EXPECT_TRUE(e.settings["capture"]["on_demand"].get<bool>());
  EXPECT_NE(find(e.runs[0].trace, "infer"), nullptr);
  EXPECT_EQ(e.runs[0].trace.counters.at("nvtx.ranges"), 6u);
  EXPECT_EQ(xsp("profile --stop 999999999").status, 1) << "no such process";
}

// A server's window (docs/profile.md "Capture"): `--stop` stores what the window collected as an evaluation while the
// program runs on; the evaluation made at exit holds only what came after, so no range is in both.
TEST_F(ProfileCommand, AStopStoresTheWindowWhileTheProgramRunsOn) {
  const pid_t shell = profile_in_background("--loop-ms 8000");
  ASSERT_GE(shell, 0);
  const int started = start_collection(shell);
  ::usleep(500'000);
  const Ran stopped = xsp("profile --stop " + std::to_string(shell));
  const bool running_after_stop = ::waitpid(shell, nullptr, WNOHANG) == 0;
  ::usleep(300'000);
  const Ran restarted = xsp("profile --start " + std::to_string(shell));
  int status = 0;
  ::waitpid(shell, &status, 0);
  ASSERT_EQ(started, 0) << "the program never had the library loaded";
  ASSERT_EQ(stopped.status, 0) << stopped.err;
  EXPECT_NE(stopped.out.find("window evaluation "), std::string::npos) << stopped.out;
  EXPECT_TRUE(running_after_stop) << "the program went on after the stop";
  EXPECT_EQ(restarted.status, 0) << restarted.err;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read(dir_ / "bg_err");
  auto store = Store::open(dir_ / "x.db");
  const auto list = store->list();
  ASSERT_EQ(list.size(), 2u);
  std::vector<EvaluationRecord> e;
  for (const auto& item : list) e.push_back(*store->load(item.id));
  std::stable_partition(e.begin(), e.end(),
                        [](const EvaluationRecord& r) { return r.settings["exit"].value("running", false); });
  const EvaluationRecord& window = e[0];
  const EvaluationRecord& rest = e[1];
  ASSERT_TRUE(window.settings["exit"].value("running", false)) << window.settings.dump();
  EXPECT_EQ(window.settings["exit"]["text"], "was still running");
  EXPECT_FALSE(rest.settings["exit"].value("running", false));
  auto steps = [](const EvaluationRecord& r) {
    std::vector<const Span*> out;
    for (const Span& s : r.runs.at(0).trace.spans)
      if (s.name == "step") out.push_back(&s);
    return out;
  };
  const auto in_window = steps(window), after = steps(rest);
  // 500 ms and more (the stop's own start-up) of 10 ms steps in the window, no more than fit in its wall time, and
  // the rest of the 8 s loop after the restart (300 ms off between); the bounds are loose, as a loaded machine
  // starts each `xsp` late.
  EXPECT_GE(in_window.size(), 10u);
  const std::int64_t window_ns = window.settings["wall_ns"].get<std::int64_t>();
  EXPECT_LE(static_cast<std::int64_t>(in_window.size()) * 10'000'000, window_ns + 20'000'000) << window_ns;
  EXPECT_GE(after.size(), 10u);
  ASSERT_FALSE(in_window.empty());
  ASSERT_FALSE(after.empty());
  std::int64_t window_end = 0, after_start = INT64_MAX;
  for (const Span* s : in_window) window_end = std::max(window_end, s->end_ns);
  for (const Span* s : after) after_start = std::min(after_start, s->start_ns);
  EXPECT_LT(window_end, after_start) << "a range in both evaluations";
  EXPECT_GE(after_start - window_end, 200'000'000) << "the 300 ms between stop and start were not collected";
  EXPECT_EQ(window.runs.at(0).trace.counters.at("nvtx.unmatched_pops"), 0u);
  EXPECT_EQ(rest.runs.at(0).trace.counters.at("nvtx.unmatched_pops"), 0u);
  EXPECT_NE(find(rest.runs.at(0).trace, "infer"), nullptr) << "the ranges after the loop are in the last evaluation";
  // Stopping a program that is not under `xsp profile --signal`: an error naming it.
  EXPECT_EQ(xsp("profile --stop " + std::to_string(::getpid())).status, 1);
}

TEST_F(ProfileCommand, OnDemandCaptureStaysOffWithoutAStart) {
  ASSERT_EQ(xsp(std::string("profile --signal -- ") + XSP_TEST_NVTX_PROGRAM).status, 0);
  EXPECT_EQ(only_evaluation().runs[0].trace.counters.at("nvtx.ranges"), 0u);
}

// --leveled --repeat 2 at framework level: M, M/F, M/F, M, each its own process; the M runs refuse the op and library
// ranges as they are made, and the evaluation holds one run per level and the overhead of M/F over M.
TEST_F(ProfileCommand, LeveledRunsOfTheCommandGiveEachLevelItsOwnRunAndTheOverhead) {
  const Ran r = xsp(std::string("profile --leveled --repeat 2 --trace-level framework -- ") + XSP_TEST_NVTX_PROGRAM);
  EXPECT_EQ(r.status, 0) << r.err;
  std::string four;
  for (int i = 0; i < 4; ++i) four += "hello from the program\n";
  EXPECT_EQ(r.out, four) << "the program ran four times, its output its own";
  for (const char* line : {"xsp: run 1 of 4: M, round 1", "xsp: run 3 of 4: M/F, round 2", "xsp: M/F over M: "})
    EXPECT_NE(r.err.find(line), std::string::npos) << line << " in " << r.err;
  const EvaluationRecord e = only_evaluation();
  EXPECT_TRUE(e.leveled);
  EXPECT_EQ(e.settings["repeat"], 2);
  EXPECT_EQ(e.settings["sample_range"], "infer");
  ASSERT_EQ(e.settings["executions"].size(), 4u);
  std::vector<std::string> order;
  for (const auto& x : e.settings["executions"]) order.push_back(x["run"].get<std::string>());
  EXPECT_EQ(order, (std::vector<std::string>{"M", "M/F", "M/F", "M"}));
  ASSERT_EQ(e.runs.size(), 2u);
  const Trace& m = e.runs[0].trace;
  const Trace& f = e.runs[1].trace;
  EXPECT_EQ(e.runs[0].trace_level, TraceLevel::kModel);
  EXPECT_NE(find(m, "infer"), nullptr);
  EXPECT_EQ(find(m, "aten::linear"), nullptr);
  EXPECT_EQ(m.counters.at("profile.spans_below_trace_level"), 2u) << "the op and the GEMM, refused by the library";
  EXPECT_EQ(m.counters.at("nvtx.ranges"), 4u) << "request, infer, worker step, plugin range";
  EXPECT_NE(find(f, "aten::linear"), nullptr);
  EXPECT_EQ(find(f, "cublasSgemm_v2"), nullptr);
  EXPECT_EQ(f.counters.at("profile.spans_below_trace_level"), 1u);
  for (const RunRecord& run : e.runs) {
    EXPECT_EQ(run.predict_latency_ns.size(), 2u) << "one infer range per run";
    EXPECT_EQ(run.measurement.blocks.size(), 2u);
    for (double d : run.predict_latency_ns) EXPECT_GE(d, 40e6) << "known sleeps inside infer";
  }
  ASSERT_EQ(e.level_overheads.size(), 1u);
  EXPECT_EQ(e.level_overheads[0].level, TraceLevel::kFramework);
  EXPECT_EQ(e.level_overheads[0].overhead.rounds, 2u);
  const Ran show = xsp("show 1");
  EXPECT_EQ(show.status, 0) << show.err;
  for (const char* part : {"M/F", "infer", "overhead"}) EXPECT_NE(show.out.find(part), std::string::npos) << show.out;
  EXPECT_EQ(xsp(std::string("profile --repeat 0 -- true")).status, 2);
  EXPECT_EQ(xsp(std::string("profile --signal --leveled -- true")).status, 2);
}

// A run that fails ends the sequence and gives xsp profile its status.
TEST_F(ProfileCommand, ARepeatedCommandThatFailsStopsAtTheFirstFailure) {
  const Ran r = xsp(std::string("profile --repeat 3 --trace-level model -- ") + XSP_TEST_NVTX_PROGRAM + " --exit 4");
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.out, "hello from the program\n");
  const EvaluationRecord e = only_evaluation();
  EXPECT_EQ(e.settings["executions"].size(), 1u);
  EXPECT_EQ(e.settings["exit"]["code"], 4);
}

// A process holds at most XSP_PROFILE_MAX_RANGES ranges until it writes its part: the program's six ranges with a cap
// of two give two spans and four counted drops, and the evaluation says so.
TEST_F(ProfileCommand, PastTheRangeCapRangesAreDroppedAndCounted) {
  const std::string cmd = std::string("XSP_PROFILE_MAX_RANGES=2 XSP_INJECT_LIBRARY=") + XSP_TEST_INJECT_LIB + " " +
                          XSP_TEST_XSP_BINARY + " --store " + (dir_ / "x.db").string() +
                          " profile --trace-level library -- " + XSP_TEST_NVTX_PROGRAM + " >/dev/null 2>" +
                          (dir_ / "err").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read(dir_ / "err");
  const EvaluationRecord e = only_evaluation();
  const Trace& t = e.runs[0].trace;
  EXPECT_EQ(t.counters.at("nvtx.ranges"), 2u);
  EXPECT_EQ(t.counters.at("nvtx.dropped_ranges"), 4u);
  EXPECT_EQ(t.assembly.unparented, 0u);
  const Ran show = xsp("show 1");
  EXPECT_NE(show.out.find("nvtx.dropped_ranges = 4"), std::string::npos) << show.out;
}

TEST_F(ProfileCommand, ShowAndExportReadTheEvaluation) {
  ASSERT_EQ(xsp(std::string("profile -- ") + XSP_TEST_NVTX_PROGRAM + " --fork").status, 0);
  const Ran show = xsp("show 1");
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("profiled command xsp_nvtx_program"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("infer"), std::string::npos) << show.out;
  const Ran exported = xsp("trace export 1 --format chrome --output " + (dir_ / "t.json").string());
  EXPECT_EQ(exported.status, 0) << exported.err;
  const nlohmann::json doc = nlohmann::json::parse(read(dir_ / "t.json"));
  std::set<std::string> processes;
  for (const auto& ev : doc["traceEvents"])
    if (ev["ph"] == "M" && ev["name"] == "process_name") processes.insert(ev["args"]["name"].get<std::string>());
  std::size_t named_processes = 0;
  for (const std::string& p : processes) named_processes += p.rfind("process ", 0) == 0;
  EXPECT_EQ(named_processes, 2u);
}

#endif

}  // namespace
}  // namespace xsp
