// libxsp_inject.so, the NVTX part (docs/profile.md "How injection works"): a program's NVTX calls land here when it
// runs with NVTX_INJECTION64_PATH naming this library. NVTX v3 is header-only: the first NVTX call of the program
// dlopens the library and calls InitializeInjectionNvtx2(), which fills NVTX's function tables (core and domain
// modules) with the functions below. Each range becomes a span through nvtx::RangeRecorder; when the process exits,
// its spans are written as one trace part, "<XSP_PROFILE_DIR>/nvtx-<pid>.xsptrace" (encode_trace(), written to a
// temporary name and renamed, so a reader never sees half a part). Without XSP_PROFILE_DIR nothing is written.
//
// The calls run on the program's threads: they take one mutex and never do I/O. A forked child starts empty (its
// parent's open ranges are not its own) and writes its own part under its own pid.
//
// With on-demand collection (`xsp profile --signal`), each stop signal ends a window: a thread of this library writes
// what the window recorded as a part of its own, "nvtx-<pid>-w<N>.xsptrace", while the program runs on (`xsp profile
// --stop` stores it as an evaluation); the part written at exit holds what came after the last window. Between
// windows the CUPTI part is paused (no activity kinds, no API records), so a server left running pays little and
// holds nothing.
//
// The part also holds the process: one APPLICATION span (its command line, from the first NVTX call to the write)
// that parents the ranges that have none, and a TraceProcess entry naming its threads, so that `xsp profile` draws one
// track group per process. A process ended by a fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, and SIGTERM,
// SIGINT, SIGHUP, SIGQUIT where the program left them at their default) writes what it had on the way out, then dies
// of the same signal: best effort, as a crashed program's locks may be held (the write gives up after 200 ms).
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <link.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "torch_ops_abi.h"
#include "xsp/profilers/host_ticks.h"
#include "xsp/profilers/nvtx_capture.h"
#include "xsp/profilers/nvtx_ranges.h"
#include "xsp/trace/run_statistics.h"
#include "xsp/trace/serialize.h"
#include "xsp/trace/trace.h"
#ifdef XSP_INJECT_CUPTI
#include "cupti_profiler.h"
#include "injected_counters.h"
#endif

namespace xsp::inject {
namespace {

// Interned strings: domain names and registered strings. NVTX hands their addresses back to us as handles, so they
// live as long as the process (a deque never moves its elements).
class Strings {
 public:
  const std::string* intern(std::string s) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = index_.try_emplace(s, nullptr);
    if (fresh) it->second = &store_.emplace_back(std::move(s));
    return it->second;
  }

 private:
  std::mutex mu_;
  std::deque<std::string> store_;
  std::unordered_map<std::string, const std::string*> index_;
};

// What to capture (docs/profile.md "Capture"), read once from the environment `xsp profile` set.
nvtx::CaptureSettings g_capture;
// The run's trace level (XSP_PROFILE_TRACE_LEVEL, read once): at model or framework level the ranges of deeper levels
// are refused when they are made and counted (profile.spans_below_trace_level).
TraceLevel g_trace_level = TraceLevel::kKernel;
// The most ranges a process holds until its part is written (XSP_PROFILE_MAX_RANGES): past it they are dropped and
// counted (nvtx.dropped_ranges), so that a long-running program's memory stays bounded.
std::size_t g_max_ranges = 2'000'000;
bool g_keeps_every_range = true;
std::atomic<std::uint64_t> g_below_trace_level{0};
// PyTorch's ops come from libxsp_torch_ops.so's RecordFunction callback (install_torch_ops()): emit_nvtx's op ranges
// would then be the same ops twice, so they are refused and counted (profile.nvtx_op_ranges_replaced).
std::atomic<bool> g_torch_ops_observed{false};
std::atomic<std::uint64_t> g_nvtx_ops_replaced{0};

// What the op and range paths keep per thread, in one thread_local: in a dlopened library each thread_local access
// is a __tls_get_addr call.
struct OpThread {
  // This thread's ranges in the collector `owner` (a forked child's collector is another), looked up once.
  nvtx::RangeRecorder::Thread* ranges = nullptr;
  const void* owner = nullptr;
  // PyTorch's name pointer → the interned name, direct-mapped (a hash map's lookup was a division and a probe per
  // op). A pointer seen again is checked against its name (a string PyTorch freed, e.g. a backward node's, may be
  // reused for another op's).
  struct NameSlot {
    const char* pointer = nullptr;
    const std::string* name = nullptr;
  };
  static constexpr std::size_t kNameSlots = 512;
  std::array<NameSlot, kNameSlots> names{};
  // Per open op: bit 0 recorded, bit 1 opened the capture (--capture nvtx:NAME naming an op).
  std::vector<std::uint8_t> open;
  std::uint64_t thread_id = 0;  // 0 until the first range; reset in a forked child
};
thread_local OpThread t_ops;

struct Collector {
  Collector()
      : ranges([this] { return recorder.next_id(); }, g_max_ranges,
               [this](std::size_t n) { return recorder.reserve_ids(n); }),
        process_span(recorder.next_id()),
        start_ns(now_ns()),
        gate(g_capture) {}
  TraceRecorder recorder;  // ids; the spans go through `ranges`
  // The ranges' clock: `ranges` holds its ticks, made CLOCK_MONOTONIC ns when a part is written (to_ns()).
  HostTicks ticks;
  nvtx::RangeRecorder ranges;
  SpanId process_span;    // the APPLICATION span of this process
  std::int64_t start_ns;  // its first NVTX call (or its fork)
  nvtx::CaptureGate gate;
  Strings domains, registered, op_names;
#ifdef XSP_INJECT_CUPTI
  // The CUPTI part: started by InitializeInjection when CUDA initializes, stopped when the part is written. The
  // activity profiler (CUDA calls and kernels), or at hardware level the counter profiler.
  std::unique_ptr<DeviceProfiler> cupti;
  bool cupti_failed = false;
#endif
  // On-demand switches (time, on), appended from the signal handler: lock-free, the first kMaxSwitches kept.
  static constexpr unsigned kMaxSwitches = 4096;
  struct Switch {
    std::atomic<std::int64_t> ns{0};
    std::atomic<bool> on{false};
  };
  Switch switches[kMaxSwitches];
  std::atomic<unsigned> switch_count{0};
};

// Made before NVTX's tables point here, never destroyed: a program's static destructors may still call NVTX after
// exit() began.
std::atomic<Collector*> g_collector{nullptr};
std::string g_out_dir;

Collector& collector() { return *g_collector.load(std::memory_order_acquire); }

// The gate's delay and duration are CLOCK_MONOTONIC ns: the clock is read for it only when one is set.
std::int64_t gate_ns(const Collector& c) { return c.gate.timed() ? now_ns() : 0; }

// Ranges taken from the recorder: their ticks as ns.
void to_ns(std::vector<Span>& spans, const TickMapping& mapping) {
  for (Span& s : spans) {
    s.start_ns = mapping.to_ns(s.start_ns);
    s.end_ns = std::max(mapping.to_ns(s.end_ns), s.start_ns);
  }
}

// This thread's ranges in `c`: push and pop then take this thread's lock alone (RangeRecorder::thread()).
nvtx::RangeRecorder::Thread& thread_ranges(OpThread& t, Collector& c) {
  if (t.owner != &c) {
    if (t.thread_id == 0) t.thread_id = current_thread_id();
    t.ranges = &c.ranges.thread(t.thread_id);
    t.owner = &c;
  }
  return *t.ranges;
}

// The command line of this process, arguments joined by spaces.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text.empty() ? "pid " + std::to_string(::getpid()) : text;
}

// A signal of a crashed process (as opposed to a stop signal): its CUPTI state is not flushed, which could hang it.
[[maybe_unused]] bool is_crash_signal(int sig) {
  return sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

// What the CUPTI part recorded: its SYSTEM, KERNEL and HARDWARE spans and its counters.
struct CudaTaken {
  std::vector<Span> spans;
  std::map<std::string, std::uint64_t> counters;
};

// Takes what the CUPTI part recorded; `flush`: stops it first (the exit's part), else it was paused (a window's).
CudaTaken take_cuda(Collector& c, [[maybe_unused]] bool flush, [[maybe_unused]] int fatal_signal) {
  CudaTaken out;
#ifdef XSP_INJECT_CUPTI
  if (c.cupti_failed) out.counters[stat::kProfileCuptiUnavailable] = 1;
  if (c.cupti != nullptr && !is_crash_signal(fatal_signal)) {
    if (flush) {
      try {
        c.cupti->stop();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "xsp inject: pid %d: CUDA activity: %s\n", static_cast<int>(::getpid()), e.what());
      }
    }
    Trace recorded = c.recorder.take();
    out.spans = std::move(recorded.spans);
    out.counters.insert(recorded.counters.begin(), recorded.counters.end());
  } else if (c.cupti != nullptr) {
    out.counters[stat::kProfileCuptiNotFlushed] = 1;
  }
#endif
  return out;
}

// One part of this process: the ranges and the CUPTI part's spans, cut to the capture, under one APPLICATION span
// over [root_start_ns, end_ns) that parents the ranges with no parent, and a TraceProcess naming its threads.
// `window` > 0: the part of that on-demand window (its APPLICATION span says so).
Trace make_part(Collector& c, std::vector<Span> spans,
                const std::vector<std::pair<std::string, std::uint64_t>>& counters, CudaTaken cuda,
                std::int64_t root_start_ns, std::int64_t end_ns, int fatal_signal, unsigned window) {
  std::vector<Span>& cuda_spans = cuda.spans;
  // At hardware level the counter profiler followed the capture itself (its HARDWARE spans are all inside it).
  if (g_capture.restricts() && !cuda_spans.empty() && g_trace_level != TraceLevel::kHardware) {
    // CUPTI ran the whole time, or the whole window: keep what lies inside the capture (nvtx_capture.h).
    std::vector<std::pair<std::int64_t, bool>> switches;
    const unsigned n = std::min(c.switch_count.load(), Collector::kMaxSwitches);
    for (unsigned i = 0; i < n; ++i) switches.emplace_back(c.switches[i].ns.load(), c.switches[i].on.load());
    const auto windows = nvtx::capture_windows(g_capture, c.start_ns, end_ns, switches, spans, cuda_spans);
    std::uint64_t cut = nvtx::keep_captured(cuda_spans, windows, false);
    if (g_capture.profiler_api) cut += nvtx::keep_captured(spans, windows, true);
    cuda.counters[stat::kProfileSpansOutsideCapture] = cut;
  }
  Trace trace;
  TraceProcess process{::getpid(), command_line(), {}};
  Span root;
  root.id = c.process_span;
  root.level = Level::kApplication;
  root.name = process.name;
  root.start_ns = std::min(root_start_ns, spans.empty() ? root_start_ns : spans.front().start_ns);
  root.end_ns = end_ns;
  root.track = Track::host_thread(static_cast<std::uint64_t>(process.pid));
  root.tags = {Tag("pid", static_cast<std::int64_t>(process.pid))};
  if (fatal_signal != 0) root.tags.emplace_back("fatal_signal", static_cast<std::int64_t>(fatal_signal));
  if (window != 0) root.tags.emplace_back("window", static_cast<std::int64_t>(window));
  process.thread_ids.push_back(root.track.id);
  for (Span& s : spans) {
    if (s.parent_id == kNoSpan) {
      s.parent_id = root.id;
      s.parent_rule = ParentRule::kContext;
    }
    process.thread_ids.push_back(s.track.id);
  }
  for (const Span& s : cuda_spans)
    if (!s.track.is_device()) process.thread_ids.push_back(s.track.id);
  std::sort(process.thread_ids.begin(), process.thread_ids.end());
  process.thread_ids.erase(std::unique(process.thread_ids.begin(), process.thread_ids.end()), process.thread_ids.end());
  trace.spans.push_back(std::move(root));
  for (Span& s : spans) trace.spans.push_back(std::move(s));
  for (Span& s : cuda_spans) trace.spans.push_back(std::move(s));
  for (const auto& [key, value] : counters) trace.counters[key] = value;
  for (const auto& [key, value] : cuda.counters) trace.counters[key] += value;
  trace.processes.push_back(std::move(process));
  trace.clock.unix_offset_ns = unix_offset_now_ns();
  return trace;
}

// Writes `trace` as "<XSP_PROFILE_DIR>/<name>.xsptrace", through a temporary name and a rename, so that a reader never
// sees half a part. An error is said on stderr, where `xsp profile` shows it: the program's own run must go on.
void write_part_file(const Trace& trace, const std::string& name) {
  const std::filesystem::path dir(g_out_dir);
  const std::filesystem::path tmp = dir / (name + ".xsptrace.tmp");
  const std::filesystem::path out = dir / (name + ".xsptrace");
  try {
    const std::vector<std::uint8_t> bytes = encode_trace(trace);
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!f) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xsp inject: pid %d: %s not written: %s\n", static_cast<int>(::getpid()), name.c_str(),
                 e.what());
  }
}

// One part is made at a time: a window's (on the window thread) or the exit's.
// Never destroyed; a forked child gets a fresh one (its parent's may have been held by the window thread at fork).
std::atomic<std::timed_mutex*> g_part_mu{new std::timed_mutex()};
std::timed_mutex& part_mutex() { return *g_part_mu.load(std::memory_order_acquire); }
// On-demand windows: the capture signals' handler wakes the window thread through `g_edges`.
sem_t g_edges;
std::atomic<unsigned> g_stops{0};                 // stop signals received
std::atomic<std::int64_t> g_window_start_ns{0};   // the last start signal's time
std::atomic<std::int64_t> g_window_end_ns{0};     // the last stop signal's time
std::atomic<std::int64_t> g_window_end_ticks{0};  // the same on the ranges' clock (HostTicks)
std::atomic<bool> g_window_thread{false};

// Writes this process's spans as its trace part, once (at exit, or on a fatal signal, whichever comes first).
// `fatal_signal` != 0: from the signal handler, where a lock held by the crashed thread must not hang the exit.
std::atomic<bool> g_written{false};
void write_part_once(int fatal_signal) {
  if (g_out_dir.empty() || g_written.exchange(true)) return;
  // A window being written finishes first (bounded: a crashed process does not wait).
  std::unique_lock part(part_mutex(), std::defer_lock);
  if (!part.try_lock_for(fatal_signal == 0 ? std::chrono::seconds(5) : std::chrono::seconds(0)) && fatal_signal == 0)
    std::fprintf(stderr, "xsp inject: pid %d: a window is still being written; writing the last part beside it\n",
                 static_cast<int>(::getpid()));
  Collector& c = collector();
  const std::int64_t end = now_ns();
  const std::int64_t end_ticks = c.ticks.ticks();
  std::pair<std::vector<Span>, std::vector<std::pair<std::string, std::uint64_t>>> taken;
  if (fatal_signal == 0) {
    taken = c.ranges.take(end_ticks);
    to_ns(taken.first, c.ticks.mapping());
  } else if (auto t = c.ranges.try_take(end_ticks, std::chrono::milliseconds(200))) {
    taken = std::move(*t);
    to_ns(taken.first, c.ticks.mapping_within(200));
  } else {
    std::fprintf(stderr, "xsp inject: pid %d: NVTX ranges not written: a thread holds the recorder's lock\n",
                 static_cast<int>(::getpid()));
    return;
  }
  auto& [spans, counters] = taken;
  CudaTaken cuda = take_cuda(c, true, fatal_signal);
  Trace trace = make_part(c, std::move(spans), counters, std::move(cuda), c.start_ns, end, fatal_signal, 0);
  if (const std::uint64_t n = g_below_trace_level.load(); n > 0)
    trace.counters[stat::kProfileSpansBelowTraceLevel] += n;
  if (const std::uint64_t n = g_nvtx_ops_replaced.load(); n > 0) trace.counters[stat::kProfileNvtxOpsReplaced] += n;
  if (g_torch_ops_observed.load()) trace.counters[stat::kProfileTorchOpsObserved] = 1;
  write_part_file(trace, "nvtx-" + std::to_string(::getpid()));
}

void write_part() { write_part_once(0); }

// The forked child's ranges start empty: its parent's open ranges are the parent's. The parent's copy is left as is
// (its mutexes may be held by threads that do not exist in the child); glibc's malloc is safe to call here.
void after_fork_in_child() {
  g_collector.store(new Collector(), std::memory_order_release);
  // The forking thread's ops were the parent's; the names interned stay valid (the parent's collector is kept).
  t_ops.open.clear();
  t_ops.thread_id = 0;
  t_ops.owner = nullptr;
  g_written.store(false);
  g_part_mu.store(new std::timed_mutex(), std::memory_order_release);
  sem_init(&g_edges, 0, 0);
  g_stops.store(0);
  g_window_start_ns.store(0);
  g_window_end_ns.store(0);
  g_window_end_ticks.store(0);
  g_window_thread.store(false);
}

// Fatal signals: write the part, then die of the same signal with its default action (so the exit status, a core
// dump, and the parent's view of it are what they would have been).
void die_of(int sig) {
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
}

// A stop signal's write also flushes CUPTI, which waits on CUPTI's and the driver's locks: if the interrupted thread
// holds one, the alarm ends the wait after kWriteTimeoutS and the process dies of its signal all the same.
constexpr unsigned kWriteTimeoutS = 5;
volatile sig_atomic_t g_dying_of = 0;
void on_write_timeout(int) { die_of(g_dying_of); }

void on_fatal_signal(int sig) {
  if (!is_crash_signal(sig)) {
    g_dying_of = sig;
    ::signal(SIGALRM, on_write_timeout);
    ::alarm(kWriteTimeoutS);
  }
  write_part_once(sig);
  die_of(sig);
}

void install_fatal_signal_handlers() {
  // Crashes always; the stop signals only where the program has no handler of its own (a program that handles
  // SIGTERM exits through exit() and atexit writes the part).
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) continue;
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, nullptr);
  }
}

// ---- On-demand windows (--signal) ------------------------------------------------------------------------------

// Another process (xsp profile --start/--stop PID) turns collection on and off by signals. The handler only flips the
// gate, notes the switch and wakes the window thread (sem_post is async-signal-safe), which does the rest.

void on_capture_signal(int sig) {
  Collector& c = collector();
  const bool on = sig == nvtx::capture_start_signal();
  const std::int64_t now = now_ns();
  c.gate.set_on(on);
  const unsigned i = c.switch_count.fetch_add(1);
  if (i < Collector::kMaxSwitches) {
    c.switches[i].ns.store(now);
    c.switches[i].on.store(on);
  }
  (on ? g_window_start_ns : g_window_end_ns).store(now);
  if (!on) g_window_end_ticks.store(c.ticks.ticks());
  if (!on) g_stops.fetch_add(1);
  sem_post(&g_edges);
}

// Work in flight when a window ends is given this long to finish on the device before CUPTI's buffers are flushed.
constexpr auto kWindowSettle = std::chrono::milliseconds(200);

// The part of window `n`: the ranges recorded since the last part (open ones cut at the stop), and the CUPTI part's
// spans, flushed after kWindowSettle and paused.
void write_window(unsigned n) {
  Collector& c = collector();
  const std::int64_t end = std::max(g_window_end_ns.load(), c.start_ns);
#ifdef XSP_INJECT_CUPTI
  if (auto* activity = dynamic_cast<cupti::CuptiProfiler*>(c.cupti.get()); activity != nullptr) {
    try {
      activity->pause(kWindowSettle);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "xsp inject: pid %d: CUDA activity of window %u: %s\n", static_cast<int>(::getpid()), n,
                   e.what());
    }
  }
#endif
  auto [spans, counters] = c.ranges.take_window(g_window_end_ticks.load());
  to_ns(spans, c.ticks.mapping());
  CudaTaken cuda = take_cuda(c, false, 0);
  const std::int64_t start = g_window_start_ns.load();
  Trace trace = make_part(c, std::move(spans), counters, std::move(cuda), start > 0 ? start : c.start_ns, end, 0, n);
  write_part_file(trace, "nvtx-" + std::to_string(::getpid()) + "-w" + std::to_string(n));
}

// The window thread: at each stop writes the window's part, at each start resumes the CUPTI part.
void window_loop() {
  unsigned written = 0;
  for (;;) {
    if (sem_wait(&g_edges) != 0) continue;  // EINTR
    std::unique_lock part(part_mutex());
    if (g_written.load()) return;  // the process is exiting: its last part holds the rest
    for (const unsigned stops = g_stops.load(); written < stops;) write_window(++written);
#ifdef XSP_INJECT_CUPTI
    Collector& c = collector();
    if (auto* activity = dynamic_cast<cupti::CuptiProfiler*>(c.cupti.get()); activity != nullptr && c.gate.on()) {
      try {
        activity->resume();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "xsp inject: pid %d: CUDA activity: %s\n", static_cast<int>(::getpid()), e.what());
      }
    }
#endif
  }
}

// Started on the first call into the library of a process (or of a forked child: a thread cannot be started safely
// in the fork handler itself), when collection is on demand and parts are written.
void ensure_window_thread() {
  if (!g_capture.on_demand || g_out_dir.empty() || g_window_thread.load(std::memory_order_relaxed)) return;
  if (g_window_thread.exchange(true)) return;
  try {
    std::thread(window_loop).detach();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xsp inject: pid %d: no window thread (%s): windows are written at exit only\n",
                 static_cast<int>(::getpid()), e.what());
  }
}

void install_capture_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_capture_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(nvtx::capture_start_signal(), &sa, nullptr);
  sigaction(nvtx::capture_stop_signal(), &sa, nullptr);
}

std::string text_of(const wchar_t* w) {
  std::mbstate_t state{};
  const std::size_t n = std::wcsrtombs(nullptr, &w, 0, &state);
  if (n == static_cast<std::size_t>(-1)) return "(unconvertible wide string)";
  std::string out(n, '\0');
  std::wcsrtombs(out.data(), &w, n, &state);
  return out;
}

// The message of a range as a view: ASCII and registered strings are the program's or ours and outlive the call; a
// wide string is converted into `storage`, which the caller keeps for the call.
std::string_view message_of(const nvtxEventAttributes_t* a, std::string& storage) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii != nullptr ? std::string_view(a->message.ascii) : std::string_view();
    case NVTX_MESSAGE_TYPE_UNICODE:
      if (a->message.unicode == nullptr) return {};
      storage = text_of(a->message.unicode);
      return storage;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered != nullptr
                 ? std::string_view(*reinterpret_cast<const std::string*>(a->message.registered))
                 : std::string_view();
    default:
      return {};
  }
}
std::uint32_t category_of(const nvtxEventAttributes_t* a) { return a != nullptr ? a->category : 0; }
std::string_view domain_of(nvtxDomainHandle_t d) {
  return d != nullptr ? std::string_view(*reinterpret_cast<const std::string*>(d)) : std::string_view();
}

// ---- The NVTX entry points -------------------------------------------------------------------------------------

// Per thread and domain, whether each open push/pop range was recorded and whether it opened the capture: the pop of
// a range the gate refused must not close a recorded one. Keyed by the domain's interned name (nullptr: default).
struct Pushed {
  bool recorded;
  bool opens_capture;
};
thread_local std::unordered_map<const void*, std::vector<Pushed>> t_pushed;

// Whether a range of this level is kept at the run's trace level (XSP_PROFILE_TRACE_LEVEL): a leveled M or M/F run
// (--leveled) must not pay for storing the ranges it does not keep, so they are refused here, not at the merge.
bool level_admits(std::string_view domain, std::string_view message) {
  if (g_keeps_every_range) return true;
  // At framework level only a library domain is refused, which the domain alone tells: the op text is parsed only at
  // model level, where an op range must be told from the program's own.
  const std::string_view text = g_trace_level == TraceLevel::kFramework ? std::string_view() : message;
  if (enables(g_trace_level, nvtx::range_level(domain, text))) return true;
  g_below_trace_level.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// Whether an NVTX range is one of emit_nvtx's op ranges while the same ops come from the op callback.
bool replaced_by_observer(std::string_view domain, std::string_view message) {
  if (!domain.empty() || !g_torch_ops_observed.load(std::memory_order_relaxed) || !nvtx::parse_torch_op_range(message))
    return false;
  g_nvtx_ops_replaced.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int gated_push(const void* key, std::string_view domain, std::string_view message, std::uint32_t category) {
  ensure_window_thread();
  Collector& c = collector();
  const std::int64_t now = c.ticks.ticks();
  c.ticks.anchor_if_due(now);
  bool opens = false;
  const bool admitted = c.gate.admit_push(message, gate_ns(c), &opens);
  const bool recorded = admitted && level_admits(domain, message) && !replaced_by_observer(domain, message);
  std::vector<Pushed>& stack = t_pushed[key];
  stack.push_back({recorded, opens});
  if (!recorded) return static_cast<int>(stack.size()) - 1;
  return c.ranges.push(thread_ranges(t_ops, c), domain, std::string(message), category, now);
}
int gated_pop(const void* key, std::string_view domain) {
  Collector& c = collector();
  std::vector<Pushed>& stack = t_pushed[key];
  if (stack.empty()) return c.ranges.pop(thread_ranges(t_ops, c), domain, c.ticks.ticks());  // counted as unmatched
  const Pushed top = stack.back();
  stack.pop_back();
  // A range refused for its level may still have opened the capture (--capture nvtx:NAME of a deeper range).
  const int level =
      top.recorded ? c.ranges.pop(thread_ranges(t_ops, c), domain, c.ticks.ticks()) : static_cast<int>(stack.size());
  if (top.opens_capture) c.gate.close_capture();
  return level;
}
// Id 0 is no range: its end is ignored (the recorder's ids start at 1).
nvtxRangeId_t gated_start(std::string_view domain, std::string_view message, std::uint32_t category) {
  ensure_window_thread();
  Collector& c = collector();
  const std::int64_t now = c.ticks.ticks();
  c.ticks.anchor_if_due(now);
  if (!c.gate.admit_start(gate_ns(c)) || !level_admits(domain, message)) return 0;
  return c.ranges.start(current_thread_id(), domain, std::string(message), category, now);
}
void gated_end(nvtxRangeId_t id) {
  if (id == 0) return;
  Collector& c = collector();
  c.ranges.end(id, c.ticks.ticks());
}

int push_a(const char* message) { return gated_push(nullptr, "", message != nullptr ? message : "", 0); }
int push_w(const wchar_t* message) { return gated_push(nullptr, "", message != nullptr ? text_of(message) : "", 0); }
int push_ex(const nvtxEventAttributes_t* a) {
  std::string storage;
  return gated_push(nullptr, "", message_of(a, storage), category_of(a));
}
int pop() { return gated_pop(nullptr, ""); }
nvtxRangeId_t start_a(const char* message) { return gated_start("", message != nullptr ? message : "", 0); }
nvtxRangeId_t start_w(const wchar_t* message) { return gated_start("", message != nullptr ? text_of(message) : "", 0); }
nvtxRangeId_t start_ex(const nvtxEventAttributes_t* a) {
  std::string storage;
  return gated_start("", message_of(a, storage), category_of(a));
}
void end(nvtxRangeId_t id) { gated_end(id); }

// libxsp_torch_ops.so's sink (docs/profile.md "PyTorch ops without emit_nvtx"): an op is a push/pop range of its own
// domain, so that its pairing never mixes with the program's default-domain ranges. This is the per-op path of a
// profiled PyTorch program (a ResNet-50 step runs 814 ops): no op text is built here (RangeRecorder::push_op()), the
// op name is interned once per name pointer and thread, and no map is looked up but the recorder's own.
constexpr std::string_view kTorchOpsDomain = "torch.ops";

const std::string* op_name(OpThread& t, const char* name) {
  const auto bits = reinterpret_cast<std::uintptr_t>(name);
  OpThread::NameSlot& slot = t.names[((bits >> 4) ^ (bits >> 13)) % OpThread::kNameSlots];
  if (slot.pointer != name || std::strcmp(slot.name->c_str(), name) != 0) {
    slot.pointer = name;
    slot.name = collector().op_names.intern(name);
  }
  return slot.name;
}

// A user scope (record_function) is the program's own range: MODEL, as its NVTX ranges, in the ops' domain.
void torch_op_push(int kind, const char* name, std::int64_t sequence, const char* shapes, std::size_t shapes_length) {
  ensure_window_thread();
  OpThread& t = t_ops;
  Collector& c = collector();
  const std::int64_t now = c.ticks.ticks();
  c.ticks.anchor_if_due(now);
  bool opens = false;
  const bool recorded = c.gate.admit_push(name, gate_ns(c), &opens);
  t.open.push_back(static_cast<std::uint8_t>((recorded ? 1 : 0) | (opens ? 2 : 0)));
  if (!recorded) return;
  if (kind == XSP_TORCH_USER_SCOPE) {
    c.ranges.push(thread_ranges(t, c), kTorchOpsDomain, name, 0, now);
    return;
  }
  c.ranges.push_op(thread_ranges(t, c), kTorchOpsDomain, op_name(t, name), sequence,
                   shapes != nullptr ? std::string(shapes, shapes_length) : std::string(), now);
}
void torch_op_pop() {
  OpThread& t = t_ops;
  if (t.open.empty()) return;  // an op that began before the callback was registered ends without its start
  const std::uint8_t top = t.open.back();
  t.open.pop_back();
  Collector& c = collector();
  if ((top & 1) != 0) c.ranges.pop(thread_ranges(t, c), kTorchOpsDomain, c.ticks.ticks());
  if ((top & 2) != 0) c.gate.close_capture();
}

int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  std::string storage;
  return gated_push(d, domain_of(d), message_of(a, storage), category_of(a));
}
int domain_pop(nvtxDomainHandle_t d) { return gated_pop(d, domain_of(d)); }
nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  std::string storage;
  return gated_start(domain_of(d), message_of(a, storage), category_of(a));
}
void domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { gated_end(id); }
nvtxDomainHandle_t domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(
      const_cast<std::string*>(collector().domains.intern(name != nullptr ? name : "")));
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(
      const_cast<std::string*>(collector().domains.intern(name != nullptr ? text_of(name) : "")));
}
void domain_destroy(nvtxDomainHandle_t) {}  // handles stay valid: ranges may still name the domain
nvtxStringHandle_t register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(
      const_cast<std::string*>(collector().registered.intern(s != nullptr ? s : "")));
}
nvtxStringHandle_t register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(
      const_cast<std::string*>(collector().registered.intern(s != nullptr ? text_of(s) : "")));
}

template <typename F>
void set(NvtxFunctionTable table, unsigned int size, unsigned int id, F* f) {
  // Slot 0 is unused; a table older than this library may lack later ids.
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

bool fill(const NvtxExportTableCallbacks* cb) {
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 || core == nullptr) return false;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0 || core2 == nullptr) return false;
  set(core, core_size, NVTX_CBID_CORE_RangePushA, push_a);
  set(core, core_size, NVTX_CBID_CORE_RangePushW, push_w);
  set(core, core_size, NVTX_CBID_CORE_RangePushEx, push_ex);
  set(core, core_size, NVTX_CBID_CORE_RangePop, pop);
  set(core, core_size, NVTX_CBID_CORE_RangeStartA, start_a);
  set(core, core_size, NVTX_CBID_CORE_RangeStartW, start_w);
  set(core, core_size, NVTX_CBID_CORE_RangeStartEx, start_ex);
  set(core, core_size, NVTX_CBID_CORE_RangeEnd, end);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_push_ex);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_start_ex);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domain_end);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, register_string_a);
  set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, register_string_w);
  return true;
}

// The collector, the exit handler and the signal handlers, made once for the process by whichever entry point comes
// first (NVTX's or the CUDA driver's).
void initialize_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* dir = std::getenv("XSP_PROFILE_DIR"); dir != nullptr) g_out_dir = dir;
    try {
      g_capture = nvtx::CaptureSettings::from_environment();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "xsp inject: pid %d: %s; capturing the whole run\n", static_cast<int>(::getpid()), e.what());
    }
    if (const char* max = std::getenv("XSP_PROFILE_MAX_RANGES"); max != nullptr) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(max, &end, 10);
      if (end != max && *end == '\0' && n > 0)
        g_max_ranges = static_cast<std::size_t>(n);
      else
        std::fprintf(stderr, "xsp inject: pid %d: XSP_PROFILE_MAX_RANGES=%s is no positive count; keeping %zu\n",
                     static_cast<int>(::getpid()), max, g_max_ranges);
    }
    if (const char* level = std::getenv("XSP_PROFILE_TRACE_LEVEL"); level != nullptr) {
      if (const auto l = parse_trace_level(level)) {
        g_trace_level = *l;
        g_keeps_every_range = enables(*l, Level::kLibrary);
      } else {
        std::fprintf(stderr, "xsp inject: pid %d: XSP_PROFILE_TRACE_LEVEL=%s is no trace level; keeping every range\n",
                     static_cast<int>(::getpid()), level);
      }
    }
    g_collector.store(new Collector(), std::memory_order_release);
    sem_init(&g_edges, 0, 0);
    if (g_capture.on_demand) install_capture_signal_handlers();
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    std::atexit(write_part);
    install_fatal_signal_handlers();
  });
}

// ---- PyTorch's ops through libxsp_torch_ops.so --------------------------------------------------------------------

// The mapped libtorch_cpu.so's path, "" when the process has none (yet).
std::string mapped_libtorch() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string_view base = name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
        if (base.rfind("libtorch_cpu.so", 0) != 0) return 0;
        *static_cast<std::string*>(out) = std::string(name);
        return 1;
      },
      &path);
  return path;
}

// The version of the mapped PyTorch, "" when it cannot be told: a versioned file name (Debian's
// libtorch_cpu.so.1.13) or, in a wheel's layout (torch/lib/libtorch_cpu.so), torch/version.py's __version__.
std::string mapped_torch_version(const std::string& libtorch) {
  const std::filesystem::path lib(libtorch);
  constexpr std::string_view kVersioned = "libtorch_cpu.so.";
  const std::string base = lib.filename().string();
  if (base.size() > kVersioned.size()) return base.substr(kVersioned.size());
  std::ifstream in(lib.parent_path().parent_path() / "version.py");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("__version__", 0) != 0) continue;
    const auto open = line.find_first_of("'\"");
    const auto close = line.find_first_of("'\"", open + 1);
    if (open != std::string::npos && close != std::string::npos) return line.substr(open + 1, close - open - 1);
  }
  return "";
}

// "2.11.0+cu130" and "2.11.0" are the same MAJOR.MINOR; "" (unknown) agrees with anything.
bool same_minor(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return true;
  auto minor = [](const std::string& v) {
    const auto first = v.find('.');
    return first == std::string::npos ? v : v.substr(0, v.find_first_not_of("0123456789", first + 1));
  };
  return minor(a) == minor(b);
}

// Where the companion is: XSP_PROFILE_TORCH_OPS_LIBRARY, else beside this library.
std::string torch_ops_library() {
  if (const char* env = std::getenv("XSP_PROFILE_TORCH_OPS_LIBRARY"); env != nullptr && *env != '\0') return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&torch_op_pop), &info) == 0 || info.dli_fname == nullptr)
    return "libxsp_torch_ops.so";
  return (std::filesystem::path(info.dli_fname).parent_path() / "libxsp_torch_ops.so").string();
}

// At framework level and deeper, a process that has LibTorch mapped gets its ops from a global RecordFunction
// callback (docs/profile.md "PyTorch ops without emit_nvtx") unless XSP_PROFILE_TORCH_OPS=nvtx. Tried from each entry
// point (NVTX's first call, CUDA's initialization) until LibTorch is there; a failure is said once on stderr and the
// program's emit_nvtx ranges stay its ops.
void install_torch_ops() {
  static std::mutex mu;
  static bool settled = false;
  std::lock_guard lock(mu);
  if (settled) return;
  const char* mode = std::getenv("XSP_PROFILE_TORCH_OPS");
  if ((mode != nullptr && std::string_view(mode) == "nvtx") || !enables(g_trace_level, Level::kFramework)) {
    settled = true;
    return;
  }
  const std::string libtorch = mapped_libtorch();
  if (libtorch.empty()) return;
  settled = true;
  const int pid = static_cast<int>(::getpid());
  const std::string path = torch_ops_library();
  void* companion = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (companion == nullptr) {
    std::fprintf(stderr, "xsp inject: pid %d: PyTorch ops not observed (%s); ops come only from emit_nvtx ranges\n",
                 pid, dlerror());
    return;
  }
  using BuiltFor = const char* (*)();
  using Install = int (*)(const XspTorchOpSink*, char*, std::size_t);
  auto built_for = reinterpret_cast<BuiltFor>(dlsym(companion, "xsp_torch_ops_built_for"));
  auto install = reinterpret_cast<Install>(dlsym(companion, "xsp_torch_ops_install"));
  const std::string running = mapped_torch_version(libtorch);
  if (built_for == nullptr || install == nullptr || !same_minor(built_for(), running)) {
    std::fprintf(stderr,
                 "xsp inject: pid %d: PyTorch ops not observed: %s was built for PyTorch %s, the program runs %s "
                 "(%s); ops come only from emit_nvtx ranges\n",
                 pid, path.c_str(), built_for != nullptr ? built_for() : "(unknown)",
                 running.empty() ? "(unknown)" : running.c_str(), libtorch.c_str());
    return;
  }
  const char* shapes = std::getenv("XSP_PROFILE_OP_SHAPES");
  const XspTorchOpSink sink{XSP_TORCH_OP_SINK_VERSION, torch_op_push, torch_op_pop,
                            shapes != nullptr && std::string_view(shapes) == "1" ? 1 : 0};
  char error[512] = "";
  if (install(&sink, error, sizeof error) != 1) {
    std::fprintf(stderr, "xsp inject: pid %d: PyTorch ops not observed: %s\n", pid, error);
    return;
  }
  g_torch_ops_observed.store(true);
}

#ifdef XSP_INJECT_CUPTI
// Kernels a counter session holds before it is decoded and re-armed (XSP_COUNTER_MAX_RANGES overrides it).
constexpr std::size_t kInjectedMaxRanges = 128;

// The CUPTI part (docs/profile.md "CUDA calls and kernels"): CUDA API calls (SYSTEM) and, with
// XSP_PROFILE_TRACE_LEVEL=kernel, kernels, copies and sets (KERNEL), with the in-process profiler's collector; paused
// while on-demand collection is off. At hardware level, the counter profiler instead (docs/profile.md "Hardware
// counters"): kernel replay, inside the capture only, its options from the XSP_COUNTER_* variables.
std::unique_ptr<DeviceProfiler> make_cuda_profiler() {
  if (g_trace_level == TraceLevel::kHardware) {
    cupti::InjectedCounterOptions options;
    // Sessions rotate cheaply, and a larger counter data image slows the replays (a one-step ResNet-50 program took
    // 0.56 of the time at 128 ranges as at 2048; BENCHMARKS.md), so the default is small; XSP_COUNTER_MAX_RANGES
    // overrides it.
    options.counters.max_ranges = kInjectedMaxRanges;
    CuptiOptions unused;
    apply_env_overrides(unused, options.counters);
    options.collecting = [](std::int64_t now) { return collector().gate.admit_start(now); };
    options.follow_profiler_api = g_capture.profiler_api;
    return cupti::make_injected_counter_profiler(options);
  }
  auto profiler = std::make_unique<cupti::CuptiProfiler>(CuptiOptions{});
  profiler->set_inside_driver_initialization(true);
  // Off until a start signal (which may have come before CUDA's initialization); the window thread resumes it.
  profiler->set_start_paused(g_capture.on_demand && !collector().gate.on());
  return profiler;
}

void start_cupti() {
  Collector& c = collector();
  if (c.cupti != nullptr || c.cupti_failed) return;
  DeviceProfilerOptions options;
  options.system = true;
  options.kernel = g_trace_level != TraceLevel::kSystem;
  options.library = false;  // NVTX ranges come through this library's own NVTX part
  try {
    std::unique_ptr<DeviceProfiler> profiler = make_cuda_profiler();
    profiler->start(c.recorder, options);
    std::lock_guard part(part_mutex());  // the window thread reads it
    c.cupti = std::move(profiler);
  } catch (const std::exception& e) {
    c.cupti_failed = true;
    std::fprintf(stderr, "xsp inject: pid %d: CUDA calls and kernels not recorded: %s\n", static_cast<int>(::getpid()),
                 e.what());
  }
  // A start signal that came while CUPTI was being set up: the window thread resumes it.
  if (g_capture.on_demand) sem_post(&g_edges);
}
#endif

}  // namespace
}  // namespace xsp::inject

/// The CUDA driver's entry point into a tool (CUDA_INJECTION64_PATH; CUPTI's injection samples): called once, inside
/// the first cuInit of the process, on the thread that initializes CUDA. Starts the CUPTI part. Returns 1 (0 would
/// make the driver report the injection as failed; CUPTI's own failure is reported on stderr and counted instead).
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  using namespace xsp::inject;
  initialize_once();
  install_torch_ops();
#ifdef XSP_INJECT_CUPTI
  // At framework level the driver loads this library for PyTorch's ops only (install_torch_ops()).
  if (enables(g_trace_level, xsp::Level::kSystem)) start_cupti();
#endif
  ensure_window_thread();
  return 1;
}

/// NVTX's entry point into a tool (nvtx3/nvtxDetail/nvtxInit.h): called on the first NVTX call of each NVTX
/// instance of the program (NVTX v3 is header-only: the program and each library that includes the headers, cuBLAS or
/// PyTorch's, has its own function tables and calls this once for them). The collector and the exit handler are made
/// once for all of them. Returns 1 when the tables are filled, 0 to leave that instance's calls as no-ops.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  using namespace xsp::inject;
  initialize_once();
  install_torch_ops();
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  return cb != nullptr && fill(cb) ? 1 : 0;
}
