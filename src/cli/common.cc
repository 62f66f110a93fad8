#include "common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "xsp/analysis/roofline.h"
#include "xsp/analysis/summary.h"
#include "xsp/eval/accuracy.h"
#include "xsp/eval/scenario_runner.h"

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

std::unique_ptr<Store> open_store(const Globals& g) {
  if (g.store_path.empty())
    throw CLI::ValidationError("--store", "expected a file path, got an empty one (from --store or XSP_STORE)");
  return Store::open(g.store_path);
}

EvaluationRecord load_or_fail(Store& store, std::int64_t id, const Globals& g) {
  auto record = store.load(id);
  if (!record) throw std::runtime_error("no evaluation " + std::to_string(id) + " in store " + g.store_path);
  return std::move(*record);
}

void print_tables(const std::vector<Table>& tables, TableFormat format) {
  if (format == TableFormat::kText) {
    for (const auto& t : tables) std::cout << render(t, format) << "\n";  // a section per batch size
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
  const fs::path tmp = file.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp);
    throw std::runtime_error("cannot write " + file.string() + ": " + ec.message());
  }
}

AnalysisOptions analysis_options_for(const EvaluationRecord& record, Store& store) {
  AnalysisOptions options;
  const std::vector<MachineCeilings> stored = store.list_ceilings();
  std::string note;
  if (const MachineCeilings* c = select_ceilings(stored, evaluation_machine(record), &note)) options.ceilings = *c;
  options.ceilings_note = note;
  return options;
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

void print_summary(const EvaluationRecord& record, TableFormat format) {
  if (format == TableFormat::kText) {
    if (is_scenario_record(record)) {
      std::cout << "evaluation " << record.id << ": " << format_scenario_record(record);
    } else {
      std::cout << "evaluation " << record.id << ": " << record.model_name << " " << record.model_version << " on "
                << record.framework_name << " " << record.framework_version << " (" << record.device
                << "), trace level " << to_string(record.trace_level) << (record.leveled ? " (leveled)" : "") << "\n";
    }
  }
  print_tables(evaluation_summary(record), format);
  if (format == TableFormat::kText)
    if (const auto a = describe_accuracy(record.settings); !a.empty()) std::cout << a << "\n";
}

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO)) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fprintf(stderr, "\n");
}

void ProgressBar::update(const Progress& p) {
  if (!enabled_ || p.total <= 0) return;
  const int width = 30;
  const int done = std::min(p.done, p.total);
  const int filled = done * width / p.total;
  std::fprintf(stderr, "\r[%s%s] %3d%% %-60.60s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done * 100 / p.total,
               p.what.c_str());
  drawn_ = true;
}

}  // namespace xsp::cli
