// xsp profile [--trace-level L] [--leveled] [--repeat N] -- COMMAND [ARGS...]: runs a program XSP did not load under
// the injection library (once, or once per level and round),
// stores what its processes recorded as one evaluation of kind "external" (docs/profile.md), and exits with the
// program's own status. The program's stdin, stdout and stderr are its own: XSP writes only to stderr, after it ended.
#include <chrono>
#include <iostream>
#include <optional>
#include <set>

#include "common.h"
#include "xsp/profile/external.h"
#include "xsp/stats/stability.h"

namespace xsp::cli {
namespace {

struct ProfileFlags {
  std::string trace_level{to_string(external::default_trace_level())};
  std::string inject_library;
  std::string capture = "all";
  std::optional<double> delay_s, duration_s;
  bool on_demand = false;
  bool leveled = false;
  int repeat = 1;
  std::string sample_range;
  std::string torch_ops = "observer";
  bool op_shapes = false;
  std::optional<std::int64_t> start_pid, stop_pid;
  std::vector<std::string> command;
};

// xsp profile --start PID / --stop PID: on-demand collection of a program running under `xsp profile --signal`. A stop
// ends a window: the processes write it while they run on, and it is stored at once as an evaluation of its own.
int run_capture_signal(const Globals& g, std::int64_t pid, bool start) {
  auto say = [](const char* what, const std::vector<std::int64_t>& pids) {
    std::string list;
    for (std::int64_t p : pids) list += (list.empty() ? "" : " ") + std::to_string(p);
    std::cout << what << " collection in " << pids.size() << (pids.size() == 1 ? " process: " : " processes: ") << list
              << "\n";
  };
  if (start) {
    say("started", external::signal_capture(pid, true));
    return 0;
  }
  // Opened first: a store that cannot take the window must not end it.
  auto store = open_store(g, StoreAccess::kReadWrite);
  // The processes settle for 200 ms, then flush and write: 30 s is far past what a window takes to write.
  external::Window window = external::stop_window(pid, std::chrono::seconds(30));
  say("stopped", window.pids);
  EvaluationRecord record = external::window_record(std::move(window));
  store->save(record);
  const std::size_t spans = record.runs.empty() ? 0 : record.runs.back().trace.spans.size();
  std::cout << "window evaluation " << record.id << " (" << spans << " spans; xsp show " << record.id << ")\n";
  for (const RunRecord& r : record.runs)
    for (const std::string& w : r.warnings) std::cerr << "xsp: warning: " << w << "\n";
  return 0;
}

int run_profile(const Globals& g, const ProfileFlags& f) {
  if (f.start_pid || f.stop_pid) {
    if (!f.command.empty() || (f.start_pid && f.stop_pid))
      throw CLI::ValidationError("xsp profile --start PID and --stop PID take no command and not each other");
    return run_capture_signal(g, f.start_pid ? *f.start_pid : *f.stop_pid, f.start_pid.has_value());
  }
  external::CommandOptions options;
  options.argv = f.command;
  options.delay_s = f.delay_s;
  options.duration_s = f.duration_s;
  options.on_demand = f.on_demand;
  options.leveled = f.leveled;
  options.repeat = f.repeat;
  options.sample_range = f.sample_range;
  options.torch_ops =
      f.torch_ops == "nvtx" ? external::CommandOptions::TorchOps::kNvtx : external::CommandOptions::TorchOps::kObserver;
  options.op_shapes = f.op_shapes;
  try {
    external::parse_capture(f.capture, options);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());
  }
  const auto level = parse_trace_level(f.trace_level);
  if (!level)
    throw CLI::ValidationError("--trace-level " + f.trace_level +
                               ": expected model, framework, library, system or kernel");
  options.trace_level = *level;
  // The store is opened before the program runs: a store that cannot take the result must not cost a run.
  auto store = open_store(g, StoreAccess::kReadWrite);
  try {
    options.inject_library =
        f.inject_library.empty() ? external::find_inject_library() : std::filesystem::path(f.inject_library);
    external::validate(options);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());
  } catch (const std::runtime_error& e) {
    throw CLI::ValidationError(std::string("xsp profile: ") + e.what());
  }
  external::ProfileResult result;
  try {
    result = external::profile_command(options, g.env.record_machine_state);
  } catch (const external::CommandNotStarted& e) {
    std::cerr << "xsp: error: " << e.what() << "\n";
    return e.shell_status();
  }
  EvaluationRecord& record = result.record;
  store->save(record);
  const nlohmann::json& processes = record.settings["processes"];
  const std::size_t spans = record.runs.empty() ? 0 : record.runs.back().trace.spans.size();
  std::cerr << "xsp: profiled `" << record.model_name << "`: " << result.exit.describe() << "; evaluation " << record.id
            << " in " << redact_location(g.store_path) << " (" << processes.size()
            << (processes.size() == 1 ? " process, " : " processes, ") << spans << " spans; xsp show " << record.id
            << ")\n";
  for (const LevelOverhead& o : record.level_overheads)
    std::cerr << "xsp: " << run_name(o.level) << " over " << run_name(o.baseline) << ": "
              << describe_overhead(o.overhead) << " (" << o.overhead.rounds
              << (o.overhead.rounds == 1 ? " round" : " rounds") << ")\n";
  std::set<std::string> said;  // the runs of a sequence share warnings (the machine's, a missing range)
  for (const RunRecord& r : record.runs)
    for (const std::string& w : r.warnings)
      if (said.insert(w).second) std::cerr << "xsp: warning: " << w << "\n";
  return result.exit.shell_status();
}

}  // namespace

void add_profile_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand(
      "profile",
      "run a program (any process: Python, C++, a server) with XSP injected, and store its trace as an evaluation "
      "(kind external); exits with the program's status. Usage: xsp profile [OPTIONS] -- COMMAND [ARGS...]");
  auto f = std::make_shared<ProfileFlags>();
  sub->add_option("--trace-level", f->trace_level,
                  "deepest level kept: model (the program's own NVTX ranges), framework (+ framework op ranges, e.g. "
                  "PyTorch's emit_nvtx), library (+ cuDNN/cuBLAS/NCCL ranges), system (+ CUDA calls), kernel (+ "
                  "kernels, copies, sets on the GPU)")
      ->capture_default_str();
  sub->add_option("--capture", f->capture,
                  "what to collect: all, nvtx:NAME (only while a range named NAME is open in a process), or "
                  "cuda-profiler-api (between the program's cudaProfilerStart and cudaProfilerStop)")
      ->capture_default_str();
  sub->add_option("--delay-s", f->delay_s, "collect only ranges that begin this many seconds after the start");
  sub->add_option("--duration-s", f->duration_s, "... and before this many seconds after the delay");
  sub->add_flag("--signal", f->on_demand,
                "start with collection off; turn it on and off with xsp profile --start PID / --stop PID");
  sub->add_option("--start", f->start_pid,
                  "turn collection on in PID (the program's or its xsp profile's pid) and its descendants");
  sub->add_option("--stop", f->stop_pid,
                  "turn collection off in PID and its descendants, and store what they collected since the start as "
                  "an evaluation of its own (the program runs on)");
  sub->add_flag("--leveled", f->leveled,
                "run the command once per level (M: its own ranges only; M/F; then the trace level when deeper), "
                "each level's latencies from its own run, and the overhead of each over the one before");
  sub->add_option("--repeat", f->repeat,
                  "rounds of runs (each runs every level once, the order alternating): intervals and a stability "
                  "verdict across processes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--sample-range", f->sample_range,
                  "the name of the program's ranges that are its samples (default: the most frequent outermost "
                  "range)");
  sub->add_option("--torch-ops", f->torch_ops,
                  "where PyTorch's ops come from at framework level and deeper: observer (a RecordFunction callback, "
                  "as torch.profiler's; no emit_nvtx needed) or nvtx (the program's emit_nvtx ranges only)")
      ->check(CLI::IsMember({"observer", "nvtx"}))
      ->capture_default_str();
  sub->add_flag("--op-shapes", f->op_shapes, "with --torch-ops observer, record each op's input shapes (costs more)");
  sub->add_option("--inject-library", f->inject_library,
                  "the injection library (default: $XSP_INJECT_LIBRARY, else libxsp_inject.so beside xsp)");
  // Everything after the first "--" (Globals::command_after_dashes) is the command's, its options too. Before it, a
  // command without options may stand alone (xsp profile ./prog); one that began there and goes on past a "--" (xsp
  // profile ./prog -- x) gets that "--" back.
  sub->add_option("command", f->command, "the command and its arguments; put them after -- when they have options");
  out.push_back({sub,
                 [&g, f] {
                   if (!f->command.empty() && !g.command_after_dashes.empty()) f->command.push_back("--");
                   for (const std::string& a : g.command_after_dashes) f->command.push_back(a);
                   return run_profile(g, *f);
                 },
                 true});
}

}  // namespace xsp::cli
