#include "common.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "xsp/analysis/roofline.h"
#include "xsp/analysis/summary.h"
#include "xsp/eval/accuracy.h"
#include "xsp/eval/scenario_runner.h"
#include "xsp/service/service.h"
#include "xsp/store/trace_export.h"

namespace fs = std::filesystem;

namespace xsp::cli {

fs::path default_store() {
  if (const char* s = std::getenv("XSP_STORE")) return s;
  if (const char* d = std::getenv("XDG_DATA_HOME"); d && *d) return fs::path(d) / "xsp" / "xsp.db";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".local" / "share" / "xsp" / "xsp.db";
  return "xsp.db";
}

fs::path default_zoo() {
  if (const char* z = std::getenv("XSP_ZOO"); z && *z) return z;
  return fs::path(XSP_SOURCE_DIR) / "models";
}

fs::path default_images() { return fs::path(XSP_SOURCE_DIR) / "data" / "images"; }

std::unique_ptr<Store> open_store(const Globals& g, StoreAccess access, int save_wait_s) {
  if (g.store_path.empty())
    throw CLI::ValidationError("--store", "expected a file path, got an empty one (from --store or XSP_STORE)");
  StoreOptions options;
  options.save_wait.max_wait_ms = std::chrono::seconds(save_wait_s);
  options.save_wait.progress = [file = redact_location(g.store_path)](std::chrono::milliseconds waited,
                                                                      std::chrono::milliseconds max) {
    spdlog::warn("store {} is locked by another writer; waited {} s of {} s", file,
                 std::chrono::duration_cast<std::chrono::seconds>(waited).count(),
                 std::chrono::duration_cast<std::chrono::seconds>(max).count());
  };
  return Store::open(g.store_path, access, std::move(options));
}

void print_tables(const std::vector<Table>& tables, TableFormat format) {
  if (format == TableFormat::kText) {
    const std::size_t width = terminal_width();
    for (const auto& t : tables) std::cout << render_text(t, 3, width) << "\n";  // a section per batch size
    return;
  }
  // CSV and JSON: one table per analysis, with a batch_size column, so that a data frame reads it whole.
  const std::vector<Table> merged = merge_batch_tables(tables);
  if (format == TableFormat::kJson) {
    auto all = nlohmann::ordered_json::array();
    for (const auto& t : merged) all.push_back(to_json(t));
    std::cout << all.dump(2) << "\n";
    return;
  }
  for (const auto& t : merged) std::cout << render(t, format);
}

void write_file_atomically(const fs::path& file, const std::string& content) {
  xsp::write_file_atomically(file, content);  // the library's: every failure removes the temporary file
}

AnalysisOptions analysis_options_for(const EvaluationRecord& record, Store& store) {
  return service::analysis_options(store, record);
}

std::string exit_codes_help() {
  return "Exit codes:\n"
         "  0    success\n"
         "  1    the work failed (an evaluation failed, a bad input file, no such evaluation)\n"
         "  2    usage error (bad option or value, unknown command, missing argument)\n"
         "  3    I/O or store error (the store or a file could not be opened, read or written)\n"
         "  130  interrupted (SIGINT); 143: terminated (SIGTERM)\n";
}

namespace {

// The number in `text`, whole text only (strtod: also "nan", "inf", "1e3"); std::nullopt when it is not one.
std::optional<double> number_in(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

}  // namespace

CLI::Validator integer_at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        long long v = 0;
        try {
          std::size_t used = 0;
          v = std::stoll(text, &used);
          if (used != text.size()) throw std::invalid_argument(text);
        } catch (const std::exception&) {
          return "expected a whole number of at least " + std::to_string(min) + ", got " + in_quotes(text);
        }
        if (v < min) return "must be at least " + std::to_string(min) + ", got " + text;
        return "";
      },
      ">= " + std::to_string(min));
}

CLI::Validator integer_in_range(long long min, long long max) {
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        long long v = 0;
        try {
          std::size_t used = 0;
          v = std::stoll(text, &used);
          if (used != text.size()) throw std::invalid_argument(text);
        } catch (const std::exception&) {
          return "expected a whole number " + range + ", got " + in_quotes(text);
        }
        if (v < min || v > max) return "must be " + range + ", got " + text;
        return "";
      },
      std::to_string(min) + ".." + std::to_string(max));
}

CLI::Validator finite_non_negative() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = number_in(text);
        if (!v) return "expected a number, got " + in_quotes(text);
        if (!std::isfinite(*v)) return "must be a finite number, got " + text;
        if (*v < 0) return "must be at least 0, got " + text;
        return "";
      },
      "");
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t first = text.find_first_not_of(" \t");
        if (first != std::string::npos && text[first] == '-')
          return "must be a whole number of at least 0, got " + text;
        return "";
      },
      "");
}

CLI::Validator non_empty_list(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        return split_ids(text).empty() ? "expected a comma-separated list of " + what + ", got " + in_quotes(text) : "";
      },
      "");
}

void check_numeric_options(CLI::App& app) {
  for (CLI::Option* opt : app.get_options([](CLI::Option*) { return true; })) {
    const std::string type = opt->get_type_name();
    if (type == "FLOAT")
      opt->check(finite_non_negative());
    else if (type == "UINT")
      opt->check(unsigned_integer());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_numeric_options(*sub);
}

std::vector<std::string> split_ids(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw CLI::ValidationError(flag, "expected integers separated by commas, got '" + item + "'");
    }
  }
  if (out.empty()) throw CLI::ValidationError(flag, "expected at least one value");
  return out;
}

void print_wrapped(const std::string& line, const std::string& indent) {
  const std::size_t width = terminal_width();
  std::string text = line;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (width == 0) {  // piped: each fact stays on one line, for grep and scripts
    std::cout << text << "\n";
    return;
  }
  // wrap_text() drops leading spaces: the line's own indent goes in front of each wrapped line instead.
  const std::size_t lead = std::min(text.find_first_not_of(' '), text.size());
  const std::string pad(lead, ' ');
  const std::size_t room = std::max<std::size_t>(width, lead + 20) - lead;
  const std::string wrapped =
      wrap_text(text.substr(lead), room, indent.size() > lead ? indent.substr(lead) : std::string());
  std::istringstream lines(wrapped);
  for (std::string l; std::getline(lines, l);) std::cout << pad << l << "\n";
}

void print_summary(const EvaluationRecord& record, TableFormat format) {
  if (format == TableFormat::kText) {
    std::ostringstream head;
    if (record.kind() == RecordKind::kScenario) {
      // Lines of a fixed-width table already: printed as they are.
      std::cout << "evaluation " << record.id << ": " << format_scenario_record(record);
    } else if (record.kind() == RecordKind::kExternal) {
      head << "evaluation " << record.id << ": profiled command " << record.model_name << " (xsp profile), trace level "
           << to_string(record.trace_level);
    } else {
      head << "evaluation " << record.id << ": " << record.model_name << " " << record.model_version << " on "
           << record.framework_name << " " << record.framework_version << " (" << record.device << "), trace level "
           << to_string(record.trace_level) << (record.leveled ? " (leveled)" : "");
    }
    if (!head.str().empty()) print_wrapped(head.str(), "  ");
  }
  std::vector<Table> summary = evaluation_summary(record);
  // A negative overhead's reading points at the runs' warnings; with none, that pointer leads nowhere.
  const bool any_warning =
      std::any_of(record.runs.begin(), record.runs.end(), [](const RunRecord& r) { return !r.warnings.empty(); });
  if (!any_warning)
    for (Table& t : summary)
      for (auto& row : t.rows)
        for (Cell& cell : row)
          if (auto* text = std::get_if<std::string>(&cell))
            if (const auto at = text->find("; see the run's warnings)"); at != std::string::npos)
              text->replace(at, std::string_view("; see the run's warnings)").size(), ")");
  print_tables(summary, format);
  if (format == TableFormat::kText)
    if (const auto a = describe_accuracy(record.settings); !a.empty()) std::cout << a << "\n";
}

ProgressBar::ProgressBar(bool enabled, std::optional<bool> tty)
    : enabled_(enabled), tty_(tty.value_or(::isatty(STDERR_FILENO) != 0)) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::finish() {
  if (!enabled_) return;
  if (drawn_) std::fprintf(stderr, "\r\033[K");  // the summary starts on a clean line
  drawn_ = false;
  stage_done();
  std::fflush(stderr);
}

void ProgressBar::stage_done() {
  if (stage_.empty()) return;
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stage_start_).count();
  std::fprintf(stderr, "xsp: progress: %s: done in %.1f s\n", stage_.c_str(), elapsed_s);
  stage_.clear();
}

void ProgressBar::update(const Progress& p) {
  if (!enabled_) return;
  if (!tty_) {
    // "ResNet18 bs 4 M: warm-up" -> stage "ResNet18 bs 4 M"; a what without a phase is a stage of its own.
    const std::size_t colon = p.what.rfind(": ");
    const std::string stage = colon == std::string::npos ? p.what : p.what.substr(0, colon);
    if (stage == stage_) return;
    stage_done();
    stage_ = stage;
    stage_start_ = std::chrono::steady_clock::now();
    std::fprintf(stderr, "xsp: progress: %s: started\n", stage_.c_str());
    std::fflush(stderr);
    return;
  }
  if (p.total <= 0) return;
  const int width = 30;
  const int done = std::min(p.done, p.total);
  const int filled = done * width / p.total;
  std::fprintf(stderr, "\r[%s%s] %3d%% %-60.60s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done * 100 / p.total,
               p.what.c_str());
  drawn_ = true;
}

CLI::Validator table_format_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          (void)parse_table_format(text);
          return "";
        } catch (const std::invalid_argument&) {
          return "expected table, csv or json, got '" + text + "'";
        }
      },
      "table|csv|json");
}

// Beside the default store, and in the home directory, which a cluster's compute nodes mount too (each task writes
// its result file there).
std::string default_slurm_dir() {
  if (const char* d = std::getenv("XSP_SLURM_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_DATA_HOME"); d && *d)
    return (std::filesystem::path(d) / "xsp" / "slurm").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (std::filesystem::path(h) / ".local" / "share" / "xsp" / "slurm").string();
  return "xsp-slurm";
}

}  // namespace xsp::cli
