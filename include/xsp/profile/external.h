// Profiling a program XSP did not load (issue 23, docs/profile.md): `xsp profile -- CMD` runs the command with the
// injection library named in NVTX's environment variable, so that every process of the command that makes an NVTX
// call writes its ranges as one trace part (src/inject/nvtx_inject.cc); then it reads the parts, merges them into one
// trace with one track group per process, and makes an evaluation of kind "external" (RecordKind::kExternal) that
// the store, `xsp show`, `analyze`, `report` and `trace export` take like any other.
//
// Front ends (the CLI today) map their input onto profile_command(); the pieces are public for tests.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/record/record.h"
#include "xsp/trace/trace.h"

namespace xsp::external {

/// How a command's process ended, as waitpid(2) told it.
struct ProcessExit {
  /// Still running: the evaluation is a window of on-demand collection (stop_window()), stored while the program
  /// runs on; the other fields are unset.
  bool running = false;
  bool signaled = false;  ///< ended by a signal (WIFSIGNALED)
  int code = 0;           ///< its exit status (WEXITSTATUS) when not signaled
  int signal = 0;         ///< the signal that ended it (WTERMSIG) when signaled
  bool core_dumped = false;
  /// What a shell reports for it: `code`, or 128 + `signal`. `xsp profile` exits with it.
  int shell_status() const { return signaled ? 128 + signal : code; }
  /// "exited with status 3", "ended by signal 11 (SIGSEGV), core dumped", "was still running".
  std::string describe() const;
  /// {"signaled", "code", "signal", "signal_name", "core_dumped", "shell_status", "text"}, and "running" when true.
  nlohmann::json to_json() const;
  bool operator==(const ProcessExit&) const = default;
};

/// Whether this build's injection library has its CUPTI part (CUDA calls and kernels; built with CUPTI).
bool have_cuda_part();
/// kernel where the build has the CUPTI part, else library.
TraceLevel default_trace_level();

/// What to run and how deep to trace it.
struct CommandOptions {
  /// The command and its arguments; argv[0] is looked up in PATH as a shell would. Non-empty.
  std::vector<std::string> argv;
  /// Levels kept in the trace. The injection's NVTX part records MODEL, FRAMEWORK or LIBRARY spans
  /// (xsp/profilers/nvtx_ranges.h); at system and kernel its CUPTI part also records the CUDA calls (SYSTEM) and,
  /// at kernel, the kernels, copies and sets (KERNEL) of every process that initializes CUDA. hardware adds a counter
  /// run after the kernel run (command_levels()): its CUPTI part replays each kernel inside the capture once per
  /// metric pass and records HARDWARE spans instead of the CUDA calls and kernels. system, kernel and hardware are
  /// refused by validate() where the build has no CUPTI part (have_cuda_part()).
  TraceLevel trace_level = default_trace_level();
  /// The injection library, libxsp_inject.so (find_inject_library()).
  std::filesystem::path inject_library;
  /// Where the processes write their parts: an existing, empty folder (profile_command() makes a fresh one under
  /// the temporary directory and removes it once the evaluation is made).
  std::filesystem::path parts_dir;
  /// Capture control (docs/profile.md "Capture"; xsp/profilers/nvtx_capture.h). `capture_range` non-empty: only
  /// inside the push/pop ranges of that name (--capture nvtx:NAME).
  std::string capture_range;
  /// Ranges that begin in [command start + delay_s, + duration_s) are recorded (--delay-s, --duration-s); seconds,
  /// finite and >= 0 (duration > 0); nullopt: from the start, to the end.
  std::optional<double> delay_s, duration_s;
  /// Collection starts off; `xsp profile --start PID` / `--stop PID` (signal_capture()) turn it on and off.
  bool on_demand = false;
  /// Only between the program's cudaProfilerStart and cudaProfilerStop (--capture cuda-profiler-api; needs the
  /// CUPTI part: trace level system or kernel).
  bool capture_profiler_api = false;
  /// --leveled: the command runs once per level of command_levels() (M: the program's own ranges only, no CUPTI;
  /// M/F; then trace_level when deeper), each in its own process, so that each level's latencies come from the run
  /// that traced nothing deeper and the overhead of each level over the shallower one is measured (SPEC §3).
  bool leveled = false;
  /// --repeat N: rounds of runs, >= 1. Each round runs every level once; the order alternates between rounds (M,
  /// M/F, M/F/K then M/F/K, M/F, M) so that a linear drift of the machine cancels over two rounds. Each run of the
  /// command is one block: the median of its samples; intervals and verdicts come from the blocks.
  int repeat = 1;
  /// Where PyTorch's ops come from at framework level and deeper (docs/profile.md "PyTorch ops without emit_nvtx").
  /// kObserver: in a process that has LibTorch mapped, libxsp_torch_ops.so (beside the injection library) registers
  /// a global RecordFunction callback, as torch.profiler does, so the program needs no emit_nvtx, and emit_nvtx's op
  /// ranges are then refused as the same ops twice (profile.nvtx_op_ranges_replaced); a process whose LibTorch the
  /// companion cannot serve (absent, another PyTorch MAJOR.MINOR) says so on stderr and keeps its emit_nvtx ranges.
  /// kNvtx: the ops are emit_nvtx's ranges only.
  enum class TorchOps { kObserver, kNvtx };
  TorchOps torch_ops = TorchOps::kObserver;
  /// With kObserver, each op's input shapes too (tag "shapes"; PyTorch then keeps every op's inputs: costs more).
  bool op_shapes = false;
  /// The name of the program's ranges that are its samples (outermost MODEL ranges of that name, e.g. "step");
  /// "" picks the most frequent outermost MODEL range name over every run (sample_range_of()). The sample ranges are
  /// tagged "sample": the analyses time them and group the ops and kernels under each, as under a batch's predict.
  std::string sample_range;
};

/// The trace levels a command runs at, in order: {trace_level}, or when leveled M, then M/F when trace_level is
/// framework or deeper, then trace_level when it is deeper than framework. Trace level hardware runs kernel, then
/// hardware (the counter run, whose durations kernel replay distorts, joined with the kernel run's kernels), and
/// when leveled M, M/F, M/F/K, then hardware.
std::vector<TraceLevel> command_levels(const CommandOptions& options);

/// The (round, level) of every run of the command, in the order they run: for round r, command_levels() forwards
/// when r is even and backwards when it is odd. options.repeat rounds. The counter run (trace level hardware) gives
/// no timings and takes no part in the alternation: it runs once, last, as round 0.
std::vector<std::pair<int, TraceLevel>> run_order(const CommandOptions& options);

/// Parses --capture: "all" (the default: nothing to set), "nvtx:NAME" (sets options.capture_range to NAME) or
/// "cuda-profiler-api" (sets options.capture_profiler_api). Throws std::invalid_argument naming the value and the
/// forms expected.
void parse_capture(std::string_view text, CommandOptions& options);

/// Turns on-demand collection on (`start`) or off in process `pid` and in every descendant of it that runs with the
/// injection library, ready (its memory maps name libxsp_inject.so and it catches the signal, /proc/PID/status
/// SigCgt; a process without the handler would die of the signal), by the
/// signals of nvtx::capture_start_signal(). `pid` may be the program's or `xsp profile`'s own (which ignores them).
/// Returns the pids signalled. Throws std::runtime_error when `pid` does not exist or none of them has the library.
std::vector<std::int64_t> signal_capture(std::int64_t pid, bool start);

/// Refuses what cannot be run: an empty command, a repeat below 1, --signal with --leveled or --repeat (on-demand
/// collection is one window of one run), trace level system, kernel or hardware without the CUPTI part,
/// cuda-profiler-api capture below trace level system (the message says why), an
/// injection library that is not a readable file, a negative or non-finite delay or duration, a zero duration.
/// Throws std::invalid_argument naming the option and the value.
void validate(const CommandOptions& options);

/// libxsp_inject.so: $XSP_INJECT_LIBRARY when set; else beside the running executable, or in ../lib/xsp from it
/// (an installed tree); else where the build put it (a compile-time path). Throws std::runtime_error naming every
/// place looked at when none has it.
std::filesystem::path find_inject_library();

/// The command could not be started (posix_spawnp failed): `error` is the errno (ENOENT: no such program).
struct CommandNotStarted : std::runtime_error {
  CommandNotStarted(const std::string& what, int error_number) : std::runtime_error(what), error(error_number) {}
  int error = 0;
  /// What a shell exits with then: 127 for a program not found, 126 for one that cannot be executed.
  int shell_status() const { return error == ENOENT ? 127 : 126; }
};

/// Runs the command with NVTX_INJECTION64_PATH = options.inject_library, XSP_PROFILE_TRACE_LEVEL = options.trace_level
/// (the library refuses ranges of deeper levels as they are made), at trace level system or kernel
/// CUDA_INJECTION64_PATH = options.inject_library too, XSP_PROFILE_DIR = options.parts_dir and the
/// capture variables of nvtx_capture.h (the window counted from now) added to the caller's environment (every other
/// variable passed unchanged), with the caller's stdin, stdout and
/// stderr, and waits for it. While it runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to the caller alone (kill(2))
/// are forwarded to the command, whose own exit then tells what it did with them; those the terminal sent reached the
/// command already (its process group) and are not sent twice. The caller's previous handlers are restored after.
/// Throws std::runtime_error when the command cannot be started (its message names argv[0] and the reason, e.g. "no
/// such file or directory in PATH").
ProcessExit run_command(const CommandOptions& options);

/// One process's part as written by the injection library.
struct TracePart {
  std::filesystem::path file;
  Trace trace;
};
/// Every part in `dir` (files named "*.xsptrace"; the temporary "*.tmp" of a process killed while writing are
/// skipped), sorted by the first process's pid, the parts of one process folded into one (fold_parts()). Throws
/// std::runtime_error naming the file that cannot be read or decoded.
std::vector<TracePart> read_parts(const std::filesystem::path& dir);
/// Reads the parts in `files` as read_parts() does.
std::vector<TracePart> read_part_files(const std::vector<std::filesystem::path>& files);

/// Folds the parts of one process into one: the on-demand windows a process wrote while it ran
/// ("nvtx-PID-wN.xsptrace") that `xsp profile --stop` did not collect, and its part written at exit. Parts are of one
/// process when their first TraceProcess has the same pid; the injection library numbers the spans of all of a
/// process's parts from one counter, and gives each part the same APPLICATION span, which is kept once, over the
/// union of their intervals. Spans concatenated, counters summed, thread ids united; the first part's clock and
/// file. Order and the relative order of processes are kept.
std::vector<TracePart> fold_parts(std::vector<TracePart> parts);

/// The parts as one assembled trace: each part's span ids shifted past the previous parts' (parents with them), so
/// ids are unique and every process keeps its own nesting; CUPTI correlation ids offset by the part's index above
/// bit 32 and, with several parts, each part's GPU streams given its process (Track::stream(): process k's stream 7
/// is not process j's); counters summed; processes concatenated (one track group each); the clock of the first
/// part. Spans of levels `level` does not enable are dropped, their children given
/// to the nearest kept ancestor. Then assemble() (xsp/trace/assembler.h).
Trace merge_parts(std::vector<TracePart> parts, TraceLevel level);

/// Environment variables as the evaluation stores them ("NAME=value" entries of environ(7)): values of names that
/// look secret (containing TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH or KEY, any case) replaced by
/// "(redacted)". A JSON object, names sorted.
nlohmann::json recorded_environment(const std::vector<std::string>& entries);

/// What the command's run measured, for external_record().
struct CommandRun {
  ProcessExit exit;
  std::int64_t start_ns = 0;                              ///< host clock (now_ns()) before the command started
  std::int64_t end_ns = 0;                                ///< host clock after it ended
  std::string created_at;                                 ///< ISO 8601 UTC
  nlohmann::json environment = nlohmann::json::object();  ///< recorded_environment() of the command's environment
  std::string working_directory;
  nlohmann::json machine_state = nlohmann::json::object();  ///< MachineMonitor::to_json() around the run
  std::vector<std::string> machine_warnings;
};

/// One run of the command at one level (a block of a leveled or repeated sequence).
struct Execution {
  int round = 0;
  TraceLevel level = TraceLevel::kModel;
  CommandRun run;
  Trace trace;  ///< merge_parts() at `level`
};

/// The samples of a run of the command: the durations (ns) of its outermost MODEL ranges (no MODEL range above them)
/// named `name`, in start order.
std::vector<double> samples_of(const Trace& trace, std::string_view name);
/// `requested` when non-empty; else the name of the outermost MODEL ranges that occur most often over the traces (on
/// a tie the one whose ranges hold the most time together, then the first in byte order); "" when no trace has a
/// MODEL range.
std::string sample_range_of(const std::vector<Execution>& executions, const std::string& requested);

/// The evaluation of a sequence of runs of the command (profile_command() with --leveled or --repeat): one RunRecord
/// per level of command_levels(), in that order, each holding the stage latencies of the MODEL ranges over all of its
/// level's runs, the samples (sample_range_of()) as predict_latency_ns in run order, one measurement block per run
/// (median of its samples), the stability of the blocks (assess_windows(), with the blocks as windows; a single run
/// is split into 3 windows in time instead), and the trace of the run whose block median is the median one. With
/// several levels, level_overheads: each level over the one before it, paired by round (paired_overhead(), design
/// "interleaved"), from rounds where both runs had samples; never the counter run's (its durations are replays).
/// settings.executions lists every run (round, level, exit, wall_ns, samples, median_ns); settings.exit is the first
/// failed run's exit, else the last one's. Throws std::invalid_argument when `executions` is empty.
EvaluationRecord external_record(const CommandOptions& options, std::vector<Execution> executions);

/// The evaluation of one profiled command (scenario "external"): model_name the program (argv[0]'s file name, or
/// for an interpreter such as python3 the script it runs), framework "external", one run at options.trace_level
/// holding `trace`, whose stage latencies are, per name of the MODEL spans (the program's own ranges: a step, a
/// request), the summary of their durations (ns); settings.command, settings.exit, settings.wall_ns,
/// settings.environment, settings.working_directory and settings.processes (pid, name, spans per process). Warnings
/// say when the command failed and when no process wrote a part (nothing made an NVTX call).
EvaluationRecord external_record(const CommandOptions& options, const CommandRun& run, Trace trace);

/// A window of on-demand collection that `xsp profile --stop PID` ended: what the processes wrote for it.
struct Window {
  std::vector<std::int64_t> pids;     ///< the processes signalled (signal_capture())
  std::vector<std::int64_t> missing;  ///< those that wrote no window part within the timeout
  CommandOptions options;             ///< argv, trace level and capture as the program runs them
  CommandRun run;                     ///< exit.running; start_ns/end_ns the window's (host clock)
  Trace trace;                        ///< merge_parts() of the window parts, at options.trace_level
};
/// Ends on-demand collection in `pid` and its descendants (signal_capture(pid, false)) and collects the window that
/// ended: each process signalled writes it as "nvtx-PID-wN.xsptrace" in its XSP_PROFILE_DIR (read from
/// /proc/PID/environ, as are its trace level and capture settings, and its command line from /proc/PID/cmdline); this
/// waits for a part from every one of them, at most `timeout`, reads the parts, removes them (so the evaluation made
/// when the program exits holds only what came after) and merges them. Throws std::runtime_error as signal_capture()
/// does, when no process has a parts folder (not run by `xsp profile --signal`), and when no part came within
/// `timeout` (naming the folder).
Window stop_window(std::int64_t pid, std::chrono::milliseconds timeout);
/// The evaluation of a window: external_record() of its run and trace, with a warning naming the processes that wrote
/// nothing.
EvaluationRecord window_record(Window window);

/// What profile_command() gives back.
struct ProfileResult {
  EvaluationRecord record;
  ProcessExit exit;
};
/// Everything between the command line and the store: validate(), then for each run of run_order() a fresh parts
/// folder, run_command(), read_parts(), merge_parts(); machine-state samples around the whole sequence (when
/// `record_machine_state`); external_record() with describe_system(). Each parts folder is removed after its run;
/// when reading the parts fails, the error names it and it is kept. A run that fails (non-zero exit, signal) ends the
/// sequence: the record holds the runs made, and `exit` is that run's. Between runs of a sequence one line on stderr
/// says which comes next. Throws what those throw.
ProfileResult profile_command(CommandOptions options, bool record_machine_state = true);

}  // namespace xsp::external
