// Shared pieces of the CLI commands: global options, the store, rendering, files. No command logic here.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/table.h"
#include "xsp/eval/runner.h"
#include "xsp/record/record.h"
#include "xsp/store/store.h"

namespace xsp::cli {

/// Options every command takes (before or after the command name).
struct Globals {
  std::string store_path;  ///< --store, env XSP_STORE
  std::string zoo_path;    ///< --zoo, env XSP_ZOO
  bool verbose = false;    ///< -v: debug log of the measurement's decisions on stderr
  CliEnvironment env;
  /// The arguments after the first "--", taken out before parsing: a command to run (`xsp profile -- CMD ARGS`),
  /// whose own options are not xsp's. Only commands that set Command::takes_command accept them.
  std::vector<std::string> command_after_dashes;
};

/// A registered command: its CLI11 subcommand and what runs when it was given.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  bool takes_command = false;  ///< accepts Globals::command_after_dashes
};
using Commands = std::vector<Command>;

// One per command file.
void add_models_command(CLI::App& app, Globals& g, Commands& out);
void add_evaluate_command(CLI::App& app, Globals& g, Commands& out);
void add_list_command(CLI::App& app, Globals& g, Commands& out);
void add_show_command(CLI::App& app, Globals& g, Commands& out);
void add_analyze_command(CLI::App& app, Globals& g, Commands& out);
void add_compare_command(CLI::App& app, Globals& g, Commands& out);
void add_machine_command(CLI::App& app, Globals& g, Commands& out);
void add_trace_command(CLI::App& app, Globals& g, Commands& out);
void add_import_command(CLI::App& app, Globals& g, Commands& out);
void add_report_command(CLI::App& app, Globals& g, Commands& out);
void add_serve_command(CLI::App& app, Globals& g, Commands& out);
void add_profile_command(CLI::App& app, Globals& g, Commands& out);
void add_bench_serve_command(CLI::App& app, Globals& g, Commands& out);  ///< cmd_bench_serve.cc
/// submit, jobs (show, cancel, retry, delete), agents, agent (cmd_jobs.cc).
void add_queue_commands(CLI::App& app, Globals& g, Commands& out);
void add_label_command(CLI::App& app, Globals& g, Commands& out);   ///< cmd_label.cc
void add_delete_command(CLI::App& app, Globals& g, Commands& out);  ///< cmd_delete.cc

std::filesystem::path default_store();   ///< $XSP_STORE, else $XDG_DATA_HOME/xsp/xsp.db, else ~/.local/share/xsp/xsp.db
std::filesystem::path default_zoo();     ///< $XSP_ZOO, else the source tree's models/
std::filesystem::path default_images();  ///< the source tree's data/images
/// The folder of Slurm submissions (`xsp submit --engine slurm`, `xsp jobs`, `xsp serve`): $XSP_SLURM_DIR, else
/// $XDG_DATA_HOME/xsp/slurm, else ~/.local/share/xsp/slurm, else "xsp-slurm".
std::string default_slurm_dir();

/// Opens the store of --store: kRead for commands that only read (they never wait for a running evaluation's
/// write lock). Saves wait up to `save_wait_s` seconds for another writer's lock, with a spdlog warning about every
/// 5 s ("store FILE is locked by another writer; waited 10 s of 120 s"). Throws CLI::ValidationError for an empty
/// path (SQLite would silently open a temporary database and lose every result) and StoreError as Store::open.
std::unique_ptr<Store> open_store(const Globals& g, StoreAccess access = StoreAccess::kReadWrite,
                                  int save_wait_s = 120);

/// Renders tables in `format`: the terminal a section per table; CSV and JSON (one array of all tables) one table
/// per analysis, the per-batch-size tables merged with a batch_size column (merge_batch_tables()).
void print_tables(const std::vector<Table>& tables, TableFormat format);
/// Prints one line of free text (no '\n' needed) wrapped to the terminal (terminal_width()), the continuation lines
/// indented by `indent`: the lines beside the tables fit as the tables do. Piped (width 0), the line as it is.
void print_wrapped(const std::string& line, const std::string& indent);
/// Write-then-rename, so that an interrupted export never leaves a half-written file under the final name.
void write_file_atomically(const std::filesystem::path& file, const std::string& content);
/// The measured ceilings of the evaluation's machine from the store (the analyses never read the store):
/// service::analysis_options(), as every command and the server select them.
AnalysisOptions analysis_options_for(const EvaluationRecord& record, Store& store);
/// "A1,A2" -> {"A1","A2"} (empty items dropped).
std::vector<std::string> split_ids(const std::string& text);
/// Exit statuses of `xsp` (README "Exit codes"; --help's footer prints exit_codes_help()).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,       ///< the work failed: an evaluation failed, an input file is bad, no such evaluation
  kExitUsage = 2,         ///< bad option or value, unknown command, missing argument
  kExitIo = 3,            ///< the store or a file could not be opened, read or written
  kExitInterrupted = 130  ///< SIGINT (128 + 2); SIGTERM gives 143 (128 + 15)
};
std::string exit_codes_help();

// Option checks, the one place their messages come from ("must be at least 1, got 0"). CLI11 prefixes the option's
// name; run_cli() prints "xsp: error: --repetitions: must be at least 1, got 0" and exits kExitUsage.
/// An integer >= `min` (also refuses text that is not an integer).
CLI::Validator integer_at_least(long long min);
/// An integer from `min` to `max` inclusive (also refuses text that is not an integer).
CLI::Validator integer_in_range(long long min, long long max);
/// A finite number >= 0 (NaN, inf and negative values refused).
CLI::Validator finite_non_negative();
/// A whole number >= 0 for an unsigned option (CLI11 would read "-1" as 2^64 - 1).
CLI::Validator unsigned_integer();
/// A comma-separated list with at least one item.
CLI::Validator non_empty_list(const std::string& what);
/// Adds finite_non_negative() to every floating-point option and unsigned_integer() to every unsigned one of `app`
/// and its subcommands (by CLI11's type names FLOAT and UINT), so that no numeric option takes NaN, inf, a negative
/// duration or a wrapped-around seed.
void check_numeric_options(CLI::App& app);

/// "1,2,4" -> {1,2,4}; CLI::ValidationError naming `flag` when an item is not an integer. Ranges are the library's.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag);
/// The evaluation summary (xsp/analysis/summary.h) and accuracy line, as `evaluate` and `show` print them.
void print_summary(const EvaluationRecord& record, TableFormat format);

/// Progress of an evaluation on stderr. On a terminal: a one-line bar redrawn in place. Otherwise (stderr piped or
/// in a file), so that a long run is not silent: a line when each stage (a batch size at a trace level, "NAME bs 4
/// M") starts and one when it finishes, with its elapsed wall-clock seconds:
///   xsp: progress: ResNet18 bs 4 M: started
///   xsp: progress: ResNet18 bs 4 M: done in 12.3 s
class ProgressBar {
 public:
  /// `enabled` false (--no-progress): prints nothing. `tty`: whether stderr is a terminal (nullopt: ask isatty()).
  explicit ProgressBar(bool enabled, std::optional<bool> tty = std::nullopt);
  void update(const Progress& p);
  /// Ends the progress output before anything else is printed: the bar's line is cleared; the stage in progress is
  /// reported done. Idempotent; the destructor calls it (an evaluation that throws leaves no half-drawn line).
  void finish();
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

 private:
  void stage_done();
  bool enabled_;
  bool tty_;
  bool drawn_ = false;
  std::string stage_;  // the stage in progress (non-terminal output)
  std::chrono::steady_clock::time_point stage_start_;
};

/// --format's check for commands printing tables: table, text, csv or json (parse_table_format() then cannot fail),
/// refusing anything else as a usage error "--format: expected table, csv or json, got 'yaml'".
CLI::Validator table_format_check();

}  // namespace xsp::cli
