// `xsp profile -- CMD` as a library (include/xsp/profile/external.h, docs/profile.md).
#include "xsp/profile/external.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "xsp/profilers/nvtx_capture.h"
#include "xsp/stats/stats.h"
#include "xsp/system/machine_state.h"
#include "xsp/system/system_info.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/run_statistics.h"
#include "xsp/trace/serialize.h"
#include "xsp/util/time.h"

extern char** environ;

namespace xsp::external {
namespace {

namespace fs = std::filesystem;

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// The child's pid for the forwarding handler; 0 when none runs.
std::atomic<pid_t> g_child{0};
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// A signal the terminal sent (Ctrl-C, Ctrl-\\, a hang-up) went to the whole foreground process group, the command
// included: forwarding it would deliver it twice. Only one sent to this process alone (kill, a job scheduler's
// SIGTERM) is passed on.
void forward(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child.load();
  if (child > 0 && (info == nullptr || info->si_code == SI_USER || info->si_code == SI_QUEUE)) ::kill(child, sig);
}

// Forwards kForwarded to the child while alive; puts the previous handlers back after.
class ForwardSignals {
 public:
  explicit ForwardSignals(pid_t child) {
    g_child.store(child);
    struct sigaction sa {};
    sa.sa_sigaction = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &sa, &previous_[i]);
  }
  ~ForwardSignals() {
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &previous_[i], nullptr);
    g_child.store(0);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  struct sigaction previous_[std::size(kForwarded)];
};

bool looks_secret(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (std::string_view word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "KEY"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

// The program a command runs: argv[0]'s file name, or for an interpreter the first argument that is not an option
// (the script). "-m module" names the module.
std::string program_name(const std::vector<std::string>& argv) {
  const std::string first = fs::path(argv.front()).filename().string();
  const bool interpreter = first.rfind("python", 0) == 0 || first == "bash" || first == "sh" || first == "node" ||
                           first == "perl" || first == "ruby";
  if (!interpreter) return first;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if ((argv[i] == "-m" || argv[i] == "-c") && i + 1 < argv.size())
      return argv[i] == "-m" ? argv[i + 1] : first + " -c";
    if (!argv[i].empty() && argv[i][0] != '-') return fs::path(argv[i]).filename().string();
  }
  return first;
}

}  // namespace

std::string ProcessExit::describe() const {
  if (!signaled) return "exited with status " + std::to_string(code);
  return "ended by signal " + std::to_string(signal) + " (" + signal_name(signal) + ")" +
         (core_dumped ? ", core dumped" : "");
}

nlohmann::json ProcessExit::to_json() const {
  nlohmann::json j = {
      {"signaled", signaled},           {"code", code},      {"signal", signal}, {"core_dumped", core_dumped},
      {"shell_status", shell_status()}, {"text", describe()}};
  if (signaled) j["signal_name"] = signal_name(signal);
  return j;
}

bool have_cuda_part() {
#ifdef XSP_INJECT_HAS_CUPTI
  return true;
#else
  return false;
#endif
}

TraceLevel default_trace_level() { return have_cuda_part() ? TraceLevel::kKernel : TraceLevel::kLibrary; }

void parse_capture(std::string_view text, CommandOptions& options) {
  if (text == "all") {
    options.capture_range.clear();
    options.capture_profiler_api = false;
    return;
  }
  if (text == "cuda-profiler-api") {
    options.capture_range.clear();
    options.capture_profiler_api = true;
    return;
  }
  if (text.rfind("nvtx:", 0) == 0 && text.size() > 5) {
    options.capture_range = std::string(text.substr(5));
    options.capture_profiler_api = false;
    return;
  }
  throw std::invalid_argument("--capture " + std::string(text) +
                              ": expected all, nvtx:NAME (inside the ranges named NAME) or cuda-profiler-api "
                              "(between cudaProfilerStart and cudaProfilerStop)");
}

std::vector<std::int64_t> signal_capture(std::int64_t pid, bool start) {
  if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0)
    throw std::runtime_error("xsp profile: no process " + std::to_string(pid));
  // Children by parent, from /proc/*/stat (field 4 after the parenthesized command, which may hold spaces).
  std::map<std::int64_t, std::vector<std::int64_t>> children;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    std::int64_t parent = 0;
    if (rest >> state >> parent) children[parent].push_back(std::stoll(name));
  }
  auto has_library = [](std::int64_t p) {
    std::ifstream maps("/proc/" + std::to_string(p) + "/maps");
    for (std::string line; std::getline(maps, line);)
      if (line.find("libxsp_inject.so") != std::string::npos) return true;
    return false;
  };
  std::vector<std::int64_t> signalled, todo{pid};
  const int sig = start ? nvtx::capture_start_signal() : nvtx::capture_stop_signal();
  while (!todo.empty()) {
    const std::int64_t p = todo.back();
    todo.pop_back();
    for (std::int64_t c : children[p]) todo.push_back(c);
    if (has_library(p) && ::kill(static_cast<pid_t>(p), sig) == 0) signalled.push_back(p);
  }
  if (signalled.empty())
    throw std::runtime_error("xsp profile: neither process " + std::to_string(pid) +
                             " nor any of its descendants runs with the injection library (run it under `xsp profile "
                             "--signal`; a process loads the library at its first NVTX call)");
  std::sort(signalled.begin(), signalled.end());
  return signalled;
}

void validate(const CommandOptions& options) {
  if (options.argv.empty() || options.argv.front().empty())
    throw std::invalid_argument("xsp profile: no command given (expected: xsp profile [OPTIONS] -- COMMAND [ARGS...])");
  const std::string level(to_string(options.trace_level));
  if (options.trace_level == TraceLevel::kHardware)
    throw std::invalid_argument(
        "xsp profile: --trace-level hardware: hardware counters of a program XSP does not run "
        "are not collected yet (kernel replay inside the injected process is not built; "
        "user replay needs control of the program's batches): use --trace-level kernel, or "
        "`xsp evaluate --trace-level hardware` for a model XSP loads");
  if (static_cast<int>(options.trace_level) > static_cast<int>(TraceLevel::kLibrary) && !have_cuda_part())
    throw std::invalid_argument("xsp profile: --trace-level " + level +
                                ": this build's injection library has no CUPTI part (built without CUPTI), so it "
                                "records NVTX ranges only: use --trace-level library");
  if (options.capture_profiler_api && static_cast<int>(options.trace_level) < static_cast<int>(TraceLevel::kSystem))
    throw std::invalid_argument("xsp profile: --capture cuda-profiler-api at --trace-level " + level +
                                ": cudaProfilerStart/Stop are seen by the CUPTI part, which runs at --trace-level "
                                "system or kernel");
  auto check_seconds = [](const char* option, const std::optional<double>& v, bool zero_allowed) {
    if (v && (!std::isfinite(*v) || *v < 0 || (!zero_allowed && *v == 0)))
      throw std::invalid_argument(std::string("xsp profile: ") + option + " " + std::to_string(*v) +
                                  ": expected a finite number of seconds" +
                                  (zero_allowed ? ", 0 or more" : " above 0"));
  };
  check_seconds("--delay-s", options.delay_s, true);
  check_seconds("--duration-s", options.duration_s, false);
  std::error_code ec;
  if (!fs::is_regular_file(options.inject_library, ec) || ::access(options.inject_library.c_str(), R_OK) != 0)
    throw std::invalid_argument("xsp profile: injection library " + options.inject_library.string() +
                                ": not a readable file (expected libxsp_inject.so; set XSP_INJECT_LIBRARY)");
}

fs::path find_inject_library() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("XSP_INJECT_LIBRARY"); env != nullptr && *env != '\0') {
    const fs::path p(env);
    if (fs::is_regular_file(p)) return fs::absolute(p);
    throw std::runtime_error("XSP_INJECT_LIBRARY=" + p.string() + ": no such file (expected libxsp_inject.so)");
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    tried.push_back(exe.parent_path() / "libxsp_inject.so");
    tried.push_back(exe.parent_path() / ".." / "lib" / "xsp" / "libxsp_inject.so");
  }
#ifdef XSP_INJECT_BUILD_PATH
  tried.emplace_back(XSP_INJECT_BUILD_PATH);
#endif
  std::string where;
  for (const fs::path& p : tried) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p);
    where += (where.empty() ? "" : ", ") + p.string();
  }
  throw std::runtime_error("the injection library libxsp_inject.so was not found (looked at: " +
                           (where.empty() ? std::string("nowhere") : where) +
                           "); it is built where the CUDA toolkit's NVTX headers are found, or set XSP_INJECT_LIBRARY");
}

ProcessExit run_command(const CommandOptions& options) {
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.rfind("NVTX_INJECTION64_PATH=", 0) == 0 || entry.rfind("XSP_PROFILE_DIR=", 0) == 0 ||
        entry.rfind("XSP_CAPTURE_", 0) == 0 || entry.rfind("CUDA_INJECTION64_PATH=", 0) == 0 ||
        entry.rfind("XSP_PROFILE_TRACE_LEVEL=", 0) == 0)
      continue;
    env_strings.emplace_back(entry);
  }
  env_strings.push_back("NVTX_INJECTION64_PATH=" + options.inject_library.string());
  if (static_cast<int>(options.trace_level) >= static_cast<int>(TraceLevel::kSystem)) {
    env_strings.push_back("CUDA_INJECTION64_PATH=" + options.inject_library.string());
    env_strings.push_back("XSP_PROFILE_TRACE_LEVEL=" + std::string(to_string(options.trace_level)));
  }
  if (options.capture_profiler_api) env_strings.push_back(std::string(nvtx::kCaptureProfilerApiVariable) + "=1");
  env_strings.push_back("XSP_PROFILE_DIR=" + options.parts_dir.string());
  if (!options.capture_range.empty())
    env_strings.push_back(std::string(nvtx::kCaptureRangeVariable) + "=" + options.capture_range);
  const std::int64_t now = now_ns();
  const std::int64_t window_start = now + static_cast<std::int64_t>(options.delay_s.value_or(0) * 1e9);
  if (options.delay_s)
    env_strings.push_back(std::string(nvtx::kCaptureStartVariable) + "=" + std::to_string(window_start));
  if (options.duration_s)
    env_strings.push_back(std::string(nvtx::kCaptureEndVariable) + "=" +
                          std::to_string(window_start + static_cast<std::int64_t>(*options.duration_s * 1e9)));
  if (options.on_demand) env_strings.push_back(std::string(nvtx::kCaptureOnDemandVariable) + "=1");
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The child starts with default dispositions for the signals we forward, whatever ours are then.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : kForwarded) sigaddset(&defaults, sig);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw CommandNotStarted("xsp profile: cannot run " + options.argv.front() + ": " + std::strerror(rc) +
                                (options.argv.front().find('/') == std::string::npos ? " (looked up in PATH)" : ""),
                            rc);
  ForwardSignals forwarding(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("xsp profile: waitpid: ") + std::strerror(errno));
  }
  ProcessExit exit;
  if (WIFSIGNALED(status)) {
    exit.signaled = true;
    exit.signal = WTERMSIG(status);
    exit.core_dumped = WCOREDUMP(status);
  } else {
    exit.code = WEXITSTATUS(status);
  }
  return exit;
}

std::vector<TracePart> read_parts(const fs::path& dir) {
  std::vector<TracePart> parts;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".xsptrace") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read trace part " + entry.path().string());
    try {
      parts.push_back({entry.path(), decode_trace(bytes)});
    } catch (const std::exception& e) {
      throw std::runtime_error("trace part " + entry.path().string() + ": " + e.what());
    }
  }
  if (ec) throw std::runtime_error("cannot list trace parts in " + dir.string() + ": " + ec.message());
  auto pid_of = [](const TracePart& p) { return p.trace.processes.empty() ? 0 : p.trace.processes.front().pid; };
  std::sort(parts.begin(), parts.end(), [&](const TracePart& a, const TracePart& b) {
    return pid_of(a) != pid_of(b) ? pid_of(a) < pid_of(b) : a.file < b.file;
  });
  return parts;
}

Trace merge_parts(std::vector<TracePart> parts, TraceLevel level) {
  Trace out;
  SpanId offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Trace& t = parts[i].trace;
    if (i == 0) out.clock = t.clock;
    SpanId max_id = 0;
    // CUPTI's correlation ids count from 1 in every process: the part's index above bit 32 keeps them apart.
    const std::uint64_t correlation_offset = static_cast<std::uint64_t>(i) << 32;
    for (Span& s : t.spans) {
      max_id = std::max(max_id, s.id);
      s.id += offset;
      if (s.parent_id != kNoSpan) s.parent_id += offset;
      if (s.correlation_id != 0) s.correlation_id += correlation_offset;
      out.spans.push_back(std::move(s));
    }
    offset += max_id;
    for (const auto& [name, value] : t.counters) out.counters[name] += value;
    for (TraceProcess& p : t.processes) out.processes.push_back(std::move(p));
  }
  // Drop the levels not enabled; a kept span whose parent was dropped takes the nearest kept ancestor.
  std::unordered_map<SpanId, SpanId> parent_of;
  std::unordered_map<SpanId, bool> kept;
  for (const Span& s : out.spans) {
    parent_of.emplace(s.id, s.parent_id);
    kept.emplace(s.id, enables(level, s.level));
  }
  auto kept_ancestor = [&](SpanId id) {
    for (int guard = 0; id != kNoSpan && guard < 1 << 20; ++guard) {
      const auto k = kept.find(id);
      if (k == kept.end() || k->second) return id;
      id = parent_of[id];
    }
    return kNoSpan;
  };
  std::uint64_t dropped = 0;
  std::vector<Span> spans;
  spans.reserve(out.spans.size());
  for (Span& s : out.spans) {
    if (!enables(level, s.level)) {
      ++dropped;
      continue;
    }
    if (s.parent_id != kNoSpan) {
      s.parent_id = kept_ancestor(s.parent_id);
      if (s.parent_id == kNoSpan) s.parent_rule = ParentRule::kNone;
    }
    spans.push_back(std::move(s));
  }
  out.spans = std::move(spans);
  if (dropped > 0) out.counters[stat::kProfileSpansBelowTraceLevel] = dropped;
  assemble(out);
  // A CUDA call made outside every NVTX range of its thread has no range to nest in: it belongs to its process.
  std::unordered_map<std::int64_t, SpanId> process_span;  // pid → its APPLICATION span
  for (const Span& s : out.spans)
    if (s.level == Level::kApplication && s.parent_id == kNoSpan && !s.track.is_device())
      process_span.try_emplace(static_cast<std::int64_t>(s.track.id), s.id);
  for (Span& s : out.spans) {
    if (s.parent_id != kNoSpan || s.level == Level::kApplication || s.track.is_device()) continue;
    const TraceProcess* p = out.process_of_thread(s.track.id);
    const auto root = p != nullptr ? process_span.find(p->pid) : process_span.end();
    if (root == process_span.end()) continue;
    s.parent_id = root->second;
    s.parent_rule = ParentRule::kContext;
    --out.assembly.unparented;
    ++out.assembly.by_context;
  }
  return out;
}

nlohmann::json recorded_environment(const std::vector<std::string>& entries) {
  std::map<std::string, std::string> sorted;
  for (const std::string& e : entries) {
    const std::size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = e.substr(0, eq);
    sorted[name] = looks_secret(name) ? "(redacted)" : e.substr(eq + 1);
  }
  nlohmann::json j = nlohmann::json::object();
  for (auto& [name, value] : sorted) j[name] = value;
  return j;
}

EvaluationRecord external_record(const CommandOptions& options, const CommandRun& run, Trace trace) {
  EvaluationRecord record;
  record.created_at = run.created_at;
  record.model_name = program_name(options.argv);
  record.framework_name = "external";
  record.device = "cpu";
  record.scenario = "external";
  record.batch_sizes = {1};
  record.trace_level = options.trace_level;
  record.settings["command"] = options.argv;
  record.settings["exit"] = run.exit.to_json();
  record.settings["wall_ns"] = run.end_ns - run.start_ns;
  record.settings["environment"] = run.environment;
  record.settings["working_directory"] = run.working_directory;
  nlohmann::json capture = {{"range", options.capture_range},
                            {"on_demand", options.on_demand},
                            {"cuda_profiler_api", options.capture_profiler_api}};
  capture["delay_s"] = options.delay_s ? nlohmann::json(*options.delay_s) : nlohmann::json(nullptr);
  capture["duration_s"] = options.duration_s ? nlohmann::json(*options.duration_s) : nlohmann::json(nullptr);
  record.settings["capture"] = std::move(capture);

  // Spans per process, and the program's own ranges (its MODEL spans) as the run's stages.
  std::map<std::string, std::vector<double>> model_ranges;
  std::map<std::uint64_t, std::size_t> spans_per_thread;
  // The program's outermost ranges (no MODEL range above them) are its samples: the analyses group the ops,
  // kernels and counters under each as under a batch's predict span.
  std::unordered_map<SpanId, Level> level_of;
  for (const Span& s : trace.spans) level_of.emplace(s.id, s.level);
  for (Span& s : trace.spans) {
    if (s.level != Level::kModel) continue;
    const auto parent = level_of.find(s.parent_id);
    if (parent == level_of.end() || parent->second != Level::kModel) s.tags.emplace_back("sample", true);
  }
  for (const Span& s : trace.spans) {
    if (!s.track.is_device()) ++spans_per_thread[s.track.id];
    if (s.level == Level::kModel) model_ranges[s.name].push_back(static_cast<double>(s.duration_ns()));
  }
  nlohmann::json processes = nlohmann::json::array();
  for (const TraceProcess& p : trace.processes) {
    std::size_t n = 0;
    for (std::uint64_t t : p.thread_ids) n += spans_per_thread[t];
    processes.push_back({{"pid", p.pid}, {"name", p.name}, {"threads", p.thread_ids.size()}, {"spans", n}});
  }
  record.settings["processes"] = std::move(processes);

  RunRecord r;
  r.batch_size = 1;
  r.trace_level = options.trace_level;
  std::size_t iterations = 0;
  for (auto& [name, durations] : model_ranges) {
    iterations += durations.size();
    r.stage_latency_ns[name] = summarize(durations);
  }
  r.iterations = static_cast<int>(iterations);
  r.machine_state = run.machine_state;
  r.warnings = run.machine_warnings;
  if (run.exit.signaled || run.exit.code != 0)
    r.warnings.push_back("the command " + run.exit.describe() +
                         ": its trace holds what its processes recorded until then");
  if (trace.processes.empty())
    r.warnings.push_back(
        "no process of the command made an NVTX call, so nothing was traced: annotate the program with NVTX ranges "
        "or run PyTorch under torch.autograd.profiler.emit_nvtx() (docs/profile.md)");
  else if (const auto n = trace.counters.find(stat::kNvtxRanges); n != trace.counters.end() && n->second == 0)
    r.warnings.push_back(
        "no range was captured: the capture (settings.capture) never opened while the program's "
        "ranges began");
  else if (model_ranges.empty())
    r.warnings.push_back(
        "the program opened no range of its own (no MODEL-level span): the run has no stage "
        "latencies; wrap each step or request in an NVTX range (docs/profile.md)");
  r.measurement.design = "external";
  r.trace = std::move(trace);
  record.runs.push_back(std::move(r));
  return record;
}

ProfileResult profile_command(CommandOptions options, bool record_machine_state) {
  validate(options);
  std::string templ = (fs::temp_directory_path() / "xsp-profile-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::runtime_error("xsp profile: cannot make a folder for the trace parts under " +
                             fs::temp_directory_path().string() + ": " + std::strerror(errno));
  options.parts_dir = templ;

  CommandRun run;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  run.environment = recorded_environment(env);
  std::error_code ec;
  run.working_directory = fs::current_path(ec).string();
  std::optional<MachineMonitor> monitor;
  if (record_machine_state) {
    monitor.emplace(system_nvml());
    monitor->start();
  }
  run.created_at = utc_now_iso8601();
  run.start_ns = now_ns();
  try {
    run.exit = run_command(options);
  } catch (...) {
    fs::remove_all(options.parts_dir, ec);
    throw;
  }
  run.end_ns = now_ns();
  if (monitor) {
    monitor->finish();
    run.machine_state = monitor->to_json();
    run.machine_warnings = monitor->warnings();
  }
  std::vector<TracePart> parts;
  try {
    parts = read_parts(options.parts_dir);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " (the parts are kept in " + options.parts_dir.string() + ")");
  }
  Trace trace = merge_parts(std::move(parts), options.trace_level);
  ProfileResult result{external_record(options, run, std::move(trace)), run.exit};
  result.record.system = describe_system();
  result.record.system["framework"] = {{"name", "external"}, {"version", ""}};
  fs::remove_all(options.parts_dir, ec);
  return result;
}

}  // namespace xsp::external
