// `xsp profile -- CMD` as a library (include/xsp/profile/external.h, docs/profile.md).
#include "xsp/profile/external.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "xsp/profilers/nvtx_capture.h"
#include "xsp/stats/stability.h"
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
  if (running) return "was still running";
  if (!signaled) return "exited with status " + std::to_string(code);
  return "ended by signal " + std::to_string(signal) + " (" + signal_name(signal) + ")" +
         (core_dumped ? ", core dumped" : "");
}

nlohmann::json ProcessExit::to_json() const {
  nlohmann::json j = {
      {"signaled", signaled},           {"code", code},      {"signal", signal}, {"core_dumped", core_dumped},
      {"shell_status", shell_status()}, {"text", describe()}};
  if (signaled) j["signal_name"] = signal_name(signal);
  if (running) j["running"] = true;
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
  const int sig = start ? nvtx::capture_start_signal() : nvtx::capture_stop_signal();
  // The library is mapped before it installs its handlers, and the signal's default action ends a process: only one
  // that catches it (SigCgt of /proc/PID/status, a hexadecimal mask, bit sig - 1) is signalled.
  auto has_library = [sig](std::int64_t p) {
    bool mapped = false;
    std::ifstream maps("/proc/" + std::to_string(p) + "/maps");
    for (std::string line; !mapped && std::getline(maps, line);) mapped = line.find("libxsp_inject.so") != line.npos;
    if (!mapped) return false;
    std::ifstream status("/proc/" + std::to_string(p) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (!line.starts_with("SigCgt:")) continue;
      const std::string mask = line.substr(line.find_first_not_of(" \t", 7));
      const std::size_t digit = mask.size() - 1 - static_cast<std::size_t>((sig - 1) / 4);  // from the right
      if (digit >= mask.size()) return false;
      const int value = std::stoi(std::string(1, mask[digit]), nullptr, 16);
      return (value >> ((sig - 1) % 4) & 1) != 0;
    }
    return false;
  };
  std::vector<std::int64_t> signalled, todo{pid};
  while (!todo.empty()) {
    const std::int64_t p = todo.back();
    todo.pop_back();
    for (std::int64_t c : children[p]) todo.push_back(c);
    if (has_library(p) && ::kill(static_cast<pid_t>(p), sig) == 0) signalled.push_back(p);
  }
  if (signalled.empty())
    throw std::runtime_error(
        "xsp profile: neither process " + std::to_string(pid) +
        " nor any of its descendants runs with the injection library ready for on-demand "
        "collection (run it under `xsp profile --signal`; a process loads the library at its first "
        "NVTX or CUDA call)");
  std::sort(signalled.begin(), signalled.end());
  return signalled;
}

void validate(const CommandOptions& options) {
  if (options.argv.empty() || options.argv.front().empty())
    throw std::invalid_argument("xsp profile: no command given (expected: xsp profile [OPTIONS] -- COMMAND [ARGS...])");
  const std::string level(to_string(options.trace_level));
  if (options.repeat < 1)
    throw std::invalid_argument("xsp profile: --repeat " + std::to_string(options.repeat) +
                                ": expected a number of rounds, 1 or more");
  if (options.on_demand && (options.leveled || options.repeat > 1))
    throw std::invalid_argument(
        "xsp profile: --signal with --leveled or --repeat: on-demand collection is one window of one run, turned on "
        "and off by hand; run the command once, or capture by --capture, --delay-s or --duration-s");
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
        entry.rfind("XSP_PROFILE_TRACE_LEVEL=", 0) == 0 || entry.rfind("XSP_PROFILE_TORCH_OPS=", 0) == 0 ||
        entry.rfind("XSP_PROFILE_OP_SHAPES=", 0) == 0)
      continue;
    env_strings.emplace_back(entry);
  }
  env_strings.push_back("NVTX_INJECTION64_PATH=" + options.inject_library.string());
  env_strings.push_back("XSP_PROFILE_TRACE_LEVEL=" + std::string(to_string(options.trace_level)));
  const bool observes_ops =
      options.torch_ops == CommandOptions::TorchOps::kObserver && enables(options.trace_level, Level::kFramework);
  env_strings.push_back(std::string("XSP_PROFILE_TORCH_OPS=") + (observes_ops ? "observer" : "nvtx"));
  if (observes_ops && options.op_shapes) env_strings.emplace_back("XSP_PROFILE_OP_SHAPES=1");
  // At framework level the driver loads the library only to observe PyTorch's ops: a program that never calls NVTX
  // still gets them when it initializes CUDA.
  if (static_cast<int>(options.trace_level) >= static_cast<int>(TraceLevel::kSystem) || observes_ops)
    env_strings.push_back("CUDA_INJECTION64_PATH=" + options.inject_library.string());
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

std::vector<TracePart> read_part_files(const std::vector<fs::path>& files) {
  std::vector<TracePart> parts;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open trace part " + file.string());
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read trace part " + file.string());
    try {
      parts.push_back({file, decode_trace(bytes)});
    } catch (const std::exception& e) {
      throw std::runtime_error("trace part " + file.string() + ": " + e.what());
    }
  }
  auto pid_of = [](const TracePart& p) { return p.trace.processes.empty() ? 0 : p.trace.processes.front().pid; };
  // A process's windows ("nvtx-PID-wN") sort before its part written at exit ("nvtx-PID.xsptrace").
  std::sort(parts.begin(), parts.end(), [&](const TracePart& a, const TracePart& b) {
    return pid_of(a) != pid_of(b) ? pid_of(a) < pid_of(b) : a.file < b.file;
  });
  return fold_parts(std::move(parts));
}

std::vector<TracePart> read_parts(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".xsptrace") files.push_back(entry.path());
  if (ec) throw std::runtime_error("cannot list trace parts in " + dir.string() + ": " + ec.message());
  return read_part_files(files);
}

std::vector<TracePart> fold_parts(std::vector<TracePart> parts) {
  std::vector<TracePart> out;
  std::map<std::int64_t, std::size_t> index_of;  // pid → its part in `out`
  for (TracePart& p : parts) {
    if (p.trace.processes.empty()) {
      out.push_back(std::move(p));
      continue;
    }
    const std::int64_t pid = p.trace.processes.front().pid;
    const auto [it, fresh] = index_of.try_emplace(pid, out.size());
    if (fresh) {
      out.push_back(std::move(p));
      continue;
    }
    Trace& into = out[it->second].trace;
    std::unordered_map<SpanId, std::size_t> applications;  // the folded part's APPLICATION spans by id
    for (std::size_t i = 0; i < into.spans.size(); ++i)
      if (into.spans[i].level == Level::kApplication) applications.emplace(into.spans[i].id, i);
    for (Span& s : p.trace.spans) {
      const auto same = s.level == Level::kApplication ? applications.find(s.id) : applications.end();
      if (same == applications.end()) {
        into.spans.push_back(std::move(s));
        continue;
      }
      Span& root = into.spans[same->second];
      root.start_ns = std::min(root.start_ns, s.start_ns);
      root.end_ns = std::max(root.end_ns, s.end_ns);
    }
    for (const auto& [key, value] : p.trace.counters) into.counters[key] += value;
    std::vector<std::uint64_t>& threads = into.processes.front().thread_ids;
    for (std::uint64_t t : p.trace.processes.front().thread_ids) threads.push_back(t);
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  }
  return out;
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
    // Streams are numbered per process too: a part's streams carry its process (Track::stream()).
    const std::uint32_t process =
        parts.size() > 1 && !t.processes.empty() ? static_cast<std::uint32_t>(out.processes.size() + 1) : 0;
    for (Span& s : t.spans) {
      max_id = std::max(max_id, s.id);
      s.id += offset;
      if (s.parent_id != kNoSpan) s.parent_id += offset;
      if (s.correlation_id != 0) s.correlation_id += correlation_offset;
      if (s.track.is_device() && process != 0)
        s.track = Track::stream(s.track.device, s.track.stream_number(), process);
      out.spans.push_back(std::move(s));
    }
    offset += max_id;
    for (const auto& [name, value] : t.counters) out.counters[name] += value;
    for (TraceProcess& p : t.processes) out.processes.push_back(std::move(p));
  }
  // Drop the levels not enabled; a kept span whose parent was dropped takes the nearest kept ancestor.
  struct Node {
    SpanId parent;
    bool kept;
  };
  std::unordered_map<SpanId, Node> nodes;
  nodes.reserve(out.spans.size());
  for (const Span& s : out.spans) nodes.emplace(s.id, Node{s.parent_id, enables(level, s.level)});
  auto kept_ancestor = [&](SpanId id) {
    for (int guard = 0; id != kNoSpan && guard < 1 << 20; ++guard) {
      const auto n = nodes.find(id);
      if (n == nodes.end() || n->second.kept) return id;
      id = n->second.parent;
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
  // The library refused most of them as they were made (its own count is in the parts' counters).
  if (dropped > 0) out.counters[stat::kProfileSpansBelowTraceLevel] += dropped;
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

std::vector<TraceLevel> command_levels(const CommandOptions& options) {
  return level_sequence(options.trace_level, options.leveled);
}

std::vector<std::pair<int, TraceLevel>> run_order(const CommandOptions& options) {
  std::vector<TraceLevel> levels = command_levels(options);
  // The counter run gives no timings, so it takes no part in the alternation: it runs once, after the rounds.
  const bool counters = levels.back() == TraceLevel::kHardware;
  if (counters) levels.pop_back();
  std::vector<std::pair<int, TraceLevel>> order;
  for (int r = 0; r < options.repeat; ++r) {
    if (r % 2 == 0)
      for (TraceLevel l : levels) order.emplace_back(r, l);
    else
      for (auto l = levels.rbegin(); l != levels.rend(); ++l) order.emplace_back(r, *l);
  }
  if (counters) order.emplace_back(0, TraceLevel::kHardware);
  return order;
}

namespace {

// The MODEL spans with no MODEL span above them: the program's outermost ranges (a step, a request), its samples.
std::vector<const Span*> outermost_model_spans(const Trace& trace) {
  std::unordered_map<SpanId, Level> level_of;
  for (const Span& s : trace.spans) level_of.emplace(s.id, s.level);
  std::vector<const Span*> out;
  for (const Span& s : trace.spans) {
    if (s.level != Level::kModel) continue;
    const auto parent = level_of.find(s.parent_id);
    if (parent == level_of.end() || parent->second != Level::kModel) out.push_back(&s);
  }
  std::stable_sort(out.begin(), out.end(), [](const Span* a, const Span* b) { return a->start_ns < b->start_ns; });
  return out;
}

}  // namespace

std::vector<double> samples_of(const Trace& trace, std::string_view name) {
  std::vector<double> out;
  for (const Span* s : outermost_model_spans(trace))
    if (s->name == name) out.push_back(static_cast<double>(s->duration_ns()));
  return out;
}

std::string sample_range_of(const std::vector<Execution>& executions, const std::string& requested) {
  if (!requested.empty()) return requested;
  // Per name: how many, and their time together (a tie goes to the range that holds most of the run's time, e.g.
  // "infer" over "load" when each comes once; then to the first in byte order).
  std::map<std::string, std::pair<std::size_t, std::int64_t>> count;
  for (const Execution& e : executions)
    for (const Span* s : outermost_model_spans(e.trace)) {
      auto& [n, total_ns] = count[s->name];
      ++n;
      total_ns += s->duration_ns();
    }
  std::string best;
  std::pair<std::size_t, std::int64_t> most{0, 0};
  for (const auto& [name, c] : count)
    if (c > most) {
      best = name;
      most = c;
    }
  return best;
}

namespace {

// What one level of a sequence made: its runs' samples (one block each), in run order.
struct LevelBlocks {
  std::vector<Execution*> executions;
  std::vector<std::vector<double>> samples;  // per run
  std::vector<double> medians;               // per run, NaN without samples
};

// The level's run record; the trace of run `kept` is moved into it.
RunRecord level_run(TraceLevel level, const LevelBlocks& blocks, std::size_t kept, std::vector<std::string> warnings) {
  RunRecord r;
  r.batch_size = 1;
  r.trace_level = level;
  std::map<std::string, std::vector<double>> model_ranges;
  for (const Execution* e : blocks.executions)
    for (const Span& s : e->trace.spans)
      if (s.level == Level::kModel) model_ranges[s.name].push_back(static_cast<double>(s.duration_ns()));
  for (auto& [name, durations] : model_ranges) r.stage_latency_ns[name] = summarize(durations);
  std::vector<std::vector<double>> windows;
  for (std::size_t i = 0; i < blocks.executions.size(); ++i) {
    const Execution& e = *blocks.executions[i];
    const std::vector<double>& samples = blocks.samples[i];
    r.predict_latency_ns.insert(r.predict_latency_ns.end(), samples.begin(), samples.end());
    BlockSummary b;
    b.round = static_cast<std::size_t>(e.round);
    b.start_ns = e.run.start_ns;
    b.duration_ns = e.run.end_ns - e.run.start_ns;
    b.batches = samples.size();
    b.median_ns = blocks.medians[i];
    r.measurement.blocks.push_back(b);
    if (!samples.empty()) windows.push_back(samples);
  }
  r.iterations = static_cast<int>(r.predict_latency_ns.size());
  r.measurement.design = "external";
  // Several runs: each is a window (the verdict says whether the processes agree); one run: windows in its time.
  if (windows.size() >= 2) {
    r.measurement.rule.windows = std::min<int>(3, static_cast<int>(windows.size()));
    r.measurement.stability = assess_windows(windows, r.measurement.rule);
  } else if (!r.predict_latency_ns.empty()) {
    r.measurement.stability = assess_series(r.predict_latency_ns, r.measurement.rule);
  }
  r.warnings = std::move(warnings);
  r.trace = std::move(blocks.executions[kept]->trace);
  return r;
}

// The run of a level whose block median is the median one (the lower middle for an even count), or the first.
std::size_t representative(const LevelBlocks& blocks) {
  std::vector<std::pair<double, std::size_t>> with;
  for (std::size_t i = 0; i < blocks.medians.size(); ++i)
    if (!std::isnan(blocks.medians[i])) with.emplace_back(blocks.medians[i], i);
  if (with.empty()) return 0;
  std::sort(with.begin(), with.end());
  return with[(with.size() - 1) / 2].second;
}

}  // namespace

EvaluationRecord external_record(const CommandOptions& options, const CommandRun& run, Trace trace) {
  std::vector<Execution> one(1);
  one[0].level = options.trace_level;
  one[0].run = run;
  one[0].trace = std::move(trace);
  CommandOptions single = options;
  single.leveled = false;
  single.repeat = 1;
  return external_record(single, std::move(one));
}

EvaluationRecord external_record(const CommandOptions& options, std::vector<Execution> executions) {
  if (executions.empty()) throw std::invalid_argument("external_record: no run of the command");
  const CommandRun& first = executions.front().run;
  EvaluationRecord record;
  record.created_at = first.created_at;
  record.model_name = program_name(options.argv);
  record.framework_name = "external";
  record.device = "cpu";
  record.scenario = "external";
  record.batch_sizes = {1};
  record.trace_level = options.trace_level;
  record.leveled = options.leveled;
  record.settings["command"] = options.argv;
  const Execution* failed = nullptr;
  std::int64_t wall_ns = 0;
  for (const Execution& e : executions) {
    wall_ns += e.run.end_ns - e.run.start_ns;
    if (failed == nullptr && (e.run.exit.signaled || e.run.exit.code != 0)) failed = &e;
  }
  record.settings["exit"] = (failed != nullptr ? failed->run.exit : executions.back().run.exit).to_json();
  record.settings["wall_ns"] = wall_ns;
  record.settings["environment"] = first.environment;
  record.settings["working_directory"] = first.working_directory;
  nlohmann::json capture = {{"range", options.capture_range},
                            {"on_demand", options.on_demand},
                            {"cuda_profiler_api", options.capture_profiler_api}};
  capture["delay_s"] = options.delay_s ? nlohmann::json(*options.delay_s) : nlohmann::json(nullptr);
  capture["duration_s"] = options.duration_s ? nlohmann::json(*options.duration_s) : nlohmann::json(nullptr);
  record.settings["capture"] = std::move(capture);
  record.settings["repeat"] = options.repeat;
  record.settings["torch_ops"] = options.torch_ops == CommandOptions::TorchOps::kObserver ? "observer" : "nvtx";
  record.settings["op_shapes"] = options.op_shapes;
  const std::string sample_name = sample_range_of(executions, options.sample_range);
  record.settings["sample_range"] = sample_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(sample_name);

  // The sample ranges are to the analyses what a batch's predict span is: they group the ops, kernels and counters
  // under each, and time them (predict_latency_ns).
  for (Execution& e : executions) {
    std::unordered_set<SpanId> samples;
    for (const Span* s : outermost_model_spans(e.trace))
      if (s->name == sample_name) samples.insert(s->id);
    for (Span& s : e.trace.spans)
      if (samples.contains(s.id)) s.tags.emplace_back("sample", true);
  }
  const std::vector<TraceLevel> levels = command_levels(options);
  const bool sequence = run_order(options).size() > 1;
  std::map<TraceLevel, LevelBlocks> by_level;
  nlohmann::json runs = nlohmann::json::array();
  for (Execution& e : executions) {
    LevelBlocks& b = by_level[e.level];
    b.executions.push_back(&e);
    b.samples.push_back(sample_name.empty() ? std::vector<double>{} : samples_of(e.trace, sample_name));
    b.medians.push_back(b.samples.back().empty() ? std::nan("") : median(b.samples.back()));
    runs.push_back({{"round", e.round},
                    {"level", std::string(to_string(e.level))},
                    {"run", std::string(run_name(e.level))},
                    {"exit", e.run.exit.to_json()},
                    {"wall_ns", e.run.end_ns - e.run.start_ns},
                    {"samples", b.samples.back().size()},
                    {"median_ns", number_or_null(b.medians.back())}});
  }
  record.settings["executions"] = std::move(runs);

  for (TraceLevel level : levels) {
    const auto found = by_level.find(level);
    if (found == by_level.end()) continue;  // the sequence ended before this level ran
    LevelBlocks& blocks = found->second;
    const std::size_t rep = representative(blocks);
    const Trace& trace = blocks.executions[rep]->trace;
    std::vector<std::string> warnings = level == levels.front() ? first.machine_warnings : std::vector<std::string>{};
    for (const Execution* e : blocks.executions)
      if (e->run.exit.signaled || e->run.exit.code != 0)
        warnings.push_back("the command " + e->run.exit.describe() +
                           (sequence ? " (round " + std::to_string(e->round + 1) + ")" : std::string()) +
                           ": its trace holds what its processes recorded until then" +
                           (sequence ? "; the runs after it were not made" : ""));
    if (level == TraceLevel::kHardware)
      warnings.push_back(
          "counter run: every kernel was replayed once per metric pass, so its ranges' durations are not latencies; "
          "its HARDWARE spans are joined with the kernels of the kernel run");
    if (trace.processes.empty())
      warnings.push_back(
          "no process of the command made an NVTX call, so nothing was traced: annotate the program with NVTX "
          "ranges or run PyTorch under torch.autograd.profiler.emit_nvtx() (docs/profile.md)");
    else if (const auto n = trace.counters.find(stat::kNvtxRanges); n != trace.counters.end() && n->second == 0)
      warnings.push_back(
          "no range was captured: the capture (settings.capture) never opened while the program's "
          "ranges began");
    else if (blocks.samples[rep].empty() && sample_name.empty())
      warnings.push_back(
          "the program opened no range of its own (no MODEL-level span): the run has no stage "
          "latencies; wrap each step or request in an NVTX range (docs/profile.md)");
    else if (blocks.samples[rep].empty())
      warnings.push_back("no outermost range is named \"" + sample_name +
                         "\" (the sample range): the run has no samples; name one of the program's "
                         "outermost ranges with --sample-range");
    if (level == levels.back()) {
      nlohmann::json processes = nlohmann::json::array();
      std::map<std::uint64_t, std::size_t> spans_per_thread;
      for (const Span& s : trace.spans)
        if (!s.track.is_device()) ++spans_per_thread[s.track.id];
      for (const TraceProcess& p : trace.processes) {
        std::size_t n = 0;
        for (std::uint64_t t : p.thread_ids) n += spans_per_thread[t];
        processes.push_back({{"pid", p.pid}, {"name", p.name}, {"threads", p.thread_ids.size()}, {"spans", n}});
      }
      record.settings["processes"] = std::move(processes);
    }
    record.runs.push_back(level_run(level, blocks, rep, std::move(warnings)));
  }
  if (!record.settings.contains("processes")) record.settings["processes"] = nlohmann::json::array();
  // One sample of the machine around the whole sequence: it belongs to the first run, not to each.
  if (!record.runs.empty()) record.runs.front().machine_state = first.machine_state;

  // Each level over the one before it, from the rounds in which both ran with samples.
  for (std::size_t i = 1; i < levels.size(); ++i) {
    if (levels[i] == TraceLevel::kHardware) continue;  // a counter run's timings are not compared (SPEC §3)
    const auto deeper = by_level.find(levels[i]), shallower = by_level.find(levels[i - 1]);
    if (deeper == by_level.end() || shallower == by_level.end()) continue;
    std::map<int, double> base;
    for (std::size_t k = 0; k < shallower->second.executions.size(); ++k)
      if (!std::isnan(shallower->second.medians[k]))
        base[shallower->second.executions[k]->round] = shallower->second.medians[k];
    std::vector<double> d, b;
    for (std::size_t k = 0; k < deeper->second.executions.size(); ++k) {
      const auto other = base.find(deeper->second.executions[k]->round);
      if (std::isnan(deeper->second.medians[k]) || other == base.end()) continue;
      d.push_back(deeper->second.medians[k]);
      b.push_back(other->second);
    }
    if (d.empty()) continue;
    LevelOverhead o;
    o.batch_size = 1;
    o.level = levels[i];
    o.baseline = levels[i - 1];
    o.design = "interleaved";
    o.latency_ns = median(d);
    o.baseline_latency_ns = median(b);
    o.overhead = paired_overhead(d, b);
    o.note = "each block is one run of the command (the median of its \"" + sample_name +
             "\" ranges); rounds alternate the order of the levels";
    record.level_overheads.push_back(std::move(o));
  }
  return record;
}

namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

// Removes a parts folder and what is in it, depth first. Not std::filesystem::remove_all: PyTorch's libtorch.so
// exports its own copy of it, which the dynamic linker binds in a build linked with LibTorch, and that copy jumps to
// a null address on a non-empty folder (seen with torch 2.11 on the lent H200).
void remove_parts_dir(const fs::path& dir) { ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

}  // namespace

ProfileResult profile_command(CommandOptions options, bool record_machine_state) {
  validate(options);
  CommandRun shared;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  shared.environment = recorded_environment(env);
  std::error_code ec;
  shared.working_directory = fs::current_path(ec).string();
  std::optional<MachineMonitor> monitor;
  if (record_machine_state) {
    monitor.emplace(system_nvml());
    monitor->start();
  }
  shared.created_at = utc_now_iso8601();
  const auto order = run_order(options);
  std::vector<Execution> executions;
  for (std::size_t k = 0; k < order.size(); ++k) {
    CommandOptions one = options;
    one.trace_level = order[k].second;
    if (order.size() > 1)
      std::fprintf(stderr, "xsp: run %zu of %zu: %s, round %d\n", k + 1, order.size(), run_name(one.trace_level),
                   order[k].first + 1);
    std::string templ = (fs::temp_directory_path() / "xsp-profile-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr)
      throw std::runtime_error("xsp profile: cannot make a folder for the trace parts under " +
                               fs::temp_directory_path().string() + ": " + std::strerror(errno));
    one.parts_dir = templ;
    Execution e;
    e.round = order[k].first;
    e.level = one.trace_level;
    e.run = shared;
    e.run.start_ns = now_ns();
    try {
      e.run.exit = run_command(one);
    } catch (...) {
      remove_parts_dir(one.parts_dir);
      throw;
    }
    e.run.end_ns = now_ns();
    std::vector<TracePart> parts;
    try {
      parts = read_parts(one.parts_dir);
    } catch (const std::exception& err) {
      throw std::runtime_error(std::string(err.what()) + " (the parts are kept in " + one.parts_dir.string() + ")");
    }
    e.trace = merge_parts(std::move(parts), one.trace_level);
    remove_parts_dir(one.parts_dir);
    const bool failed = e.run.exit.signaled || e.run.exit.code != 0;
    executions.push_back(std::move(e));
    if (failed) break;
  }
  if (monitor) {
    monitor->finish();
    executions.front().run.machine_state = monitor->to_json();
    executions.front().run.machine_warnings = monitor->warnings();
  }
  ProcessExit exit = executions.back().run.exit;
  ProfileResult result{external_record(options, std::move(executions)), exit};
  result.record.system = describe_system();
  result.record.system["framework"] = {{"name", "external"}, {"version", ""}};
  return result;
}

namespace {

// The NUL-separated strings of /proc/PID/<file> (environ, cmdline); empty when unreadable (another user's process).
std::vector<std::string> proc_strings(std::int64_t pid, const char* file) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file, std::ios::binary);
  std::vector<std::string> out;
  for (std::string item; std::getline(in, item, '\0');)
    if (!item.empty()) out.push_back(std::move(item));
  return out;
}

std::string value_of(const std::vector<std::string>& environment, std::string_view name) {
  for (const std::string& e : environment)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  return {};
}

// The window parts "nvtx-PID-w<N>.xsptrace" of `pid` in `dir`.
std::vector<fs::path> window_files(const fs::path& dir, std::int64_t pid) {
  const std::string prefix = "nvtx-" + std::to_string(pid) + "-w";
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && e.path().extension() == ".xsptrace") out.push_back(e.path());
  }
  return out;
}

}  // namespace

Window stop_window(std::int64_t pid, std::chrono::milliseconds timeout) {
  Window w;
  w.run.start_ns = now_ns();
  w.pids = signal_capture(pid, false);
  w.run.end_ns = now_ns();
  w.run.created_at = utc_now_iso8601();
  w.run.exit.running = true;
  // The program's settings, from the first process signalled that has them (the one `xsp profile` started).
  fs::path dir;
  for (std::int64_t p : w.pids) {
    const std::vector<std::string> environment = proc_strings(p, "environ");
    const std::string parts = value_of(environment, "XSP_PROFILE_DIR");
    if (parts.empty()) continue;
    dir = parts;
    w.options.argv = proc_strings(p, "cmdline");
    if (const auto level = parse_trace_level(value_of(environment, "XSP_PROFILE_TRACE_LEVEL")))
      w.options.trace_level = *level;
    w.options.on_demand = true;
    w.options.capture_range = value_of(environment, nvtx::kCaptureRangeVariable);
    w.options.capture_profiler_api = value_of(environment, nvtx::kCaptureProfilerApiVariable) == "1";
    if (value_of(environment, "XSP_PROFILE_TORCH_OPS") == "nvtx") w.options.torch_ops = CommandOptions::TorchOps::kNvtx;
    w.options.op_shapes = value_of(environment, "XSP_PROFILE_OP_SHAPES") == "1";
    w.run.environment = recorded_environment(environment);
    std::error_code ec;
    w.run.working_directory = fs::read_symlink("/proc/" + std::to_string(p) + "/cwd", ec).string();
    break;
  }
  if (dir.empty())
    throw std::runtime_error("xsp profile --stop " + std::to_string(pid) +
                             ": collection was stopped, but no process signalled has a parts folder "
                             "(XSP_PROFILE_DIR): run the program under `xsp profile --signal`");
  // Each process writes its window after a short settle (work in flight on the GPU), then renames it into place.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<fs::path> files;
  for (;;) {
    files.clear();
    w.missing.clear();
    for (std::int64_t p : w.pids) {
      std::vector<fs::path> mine = window_files(dir, p);
      if (mine.empty() && ::kill(static_cast<pid_t>(p), 0) == 0) w.missing.push_back(p);
      files.insert(files.end(), mine.begin(), mine.end());
    }
    if (w.missing.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (files.empty())
    throw std::runtime_error("xsp profile --stop " + std::to_string(pid) + ": collection was stopped, but no window " +
                             "part came into " + dir.string() + " within " + std::to_string(timeout.count()) +
                             " ms (the program keeps what it recorded and writes it when it exits)");
  std::vector<TracePart> parts = read_part_files(files);
  for (const fs::path& f : files) ::unlink(f.c_str());
  // The window's interval: from the earliest start of what it holds to the stop.
  for (const TracePart& part : parts)
    for (const Span& sp : part.trace.spans)
      if (sp.level == Level::kApplication) w.run.start_ns = std::min(w.run.start_ns, sp.start_ns);
  w.trace = merge_parts(std::move(parts), w.options.trace_level);
  return w;
}

EvaluationRecord window_record(Window window) {
  const std::vector<std::int64_t> missing = window.missing;
  EvaluationRecord record = external_record(window.options, window.run, std::move(window.trace));
  record.system = describe_system();
  record.system["framework"] = {{"name", "external"}, {"version", ""}};
  if (!missing.empty() && !record.runs.empty()) {
    std::string list;
    for (std::int64_t p : missing) list += (list.empty() ? "" : ", ") + std::to_string(p);
    record.runs.back().warnings.push_back("no window part from process(es) " + list +
                                          " in time: their ranges of this window are in the evaluation made when "
                                          "the program exits");
  }
  return record;
}

}  // namespace xsp::external
