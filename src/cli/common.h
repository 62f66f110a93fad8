// Shared pieces of the CLI commands: global options, the store, rendering, files. No command logic here.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
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
};

/// A registered command: its CLI11 subcommand and what runs when it was given.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
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

std::filesystem::path default_store();  ///< $XSP_STORE, else $XDG_DATA_HOME/xsp/xsp.db, else ~/.local/share/xsp/xsp.db
std::filesystem::path default_zoo();    ///< $XSP_ZOO, else the source tree's models/
std::filesystem::path default_images(); ///< the source tree's data/images

/// Opens the store of --store. Throws CLI::ValidationError for an empty path (SQLite would silently open a
/// temporary database and lose every result) and StoreError as Store::open.
std::unique_ptr<Store> open_store(const Globals& g);
/// The evaluation, or std::runtime_error "no evaluation N in store PATH".
EvaluationRecord load_or_fail(Store& store, std::int64_t id, const Globals& g);

/// Renders tables in `format`: the terminal a section per table; CSV and JSON (one array of all tables) one table
/// per analysis, the per-batch-size tables merged with a batch_size column (merge_batch_tables()).
void print_tables(const std::vector<Table>& tables, TableFormat format);
/// Write-then-rename, so that an interrupted export never leaves a half-written file under the final name.
void write_file_atomically(const std::filesystem::path& file, const std::string& content);
/// The measured ceilings of the evaluation's machine from the store (the analyses never read the store).
AnalysisOptions analysis_options_for(const EvaluationRecord& record, Store& store);
/// "A1,A2" -> {"A1","A2"} (empty items dropped).
std::vector<std::string> split_ids(const std::string& text);
/// "1,2,4" -> {1,2,4}; CLI::ValidationError naming `flag` when an item is not an integer. Ranges are the library's.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag);
/// The evaluation summary (xsp/analysis/summary.h) and accuracy line, as `evaluate` and `show` print them.
void print_summary(const EvaluationRecord& record, TableFormat format);

/// A one-line progress bar on stderr when it is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled);
  void update(const Progress& p);
  ~ProgressBar();

 private:
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace xsp::cli
