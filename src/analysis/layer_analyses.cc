// A2–A7, layer analyses (SPEC §4), and run_analyses(), the entry point the CLI and the report use.
#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "internal.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/registry.h"

namespace xsp {
namespace {

constexpr const char* kNoFrameworkRun = "no FRAMEWORK-level run in this evaluation (use --trace-level framework)";

Cell int_cell(std::int64_t v) { return Cell{v}; }
Cell opt_int_cell(const std::optional<std::int64_t>& v) { return v ? Cell{*v} : Cell{}; }

// The registry entry of layer analysis A<which> (2..7): analysis_ids() lists A1..A7 first, in order.
const AnalysisSpec& layer_spec(int which) { return analysis_spec(analysis_ids()[static_cast<std::size_t>(which - 1)]); }

// run_note() speaks of latencies and their trimmed mean; memory and count tables say what they really show.
std::string adapt_note(std::string note, int which) {
  if (which != 4 && which != 5 && which != 7) return note;
  const std::string lat = "latencies from", tm = ", trimmed mean";
  if (note.rfind(lat, 0) == 0) note.replace(0, lat.size(), which == 5 ? "layers from" : "allocated bytes from");
  if (auto pos = note.find(tm); pos != std::string::npos) {
    if (which == 5) {
      note.erase(pos, tm.size());
    } else {
      note.replace(pos, tm.size(), ", mean");
    }
  }
  return note;
}

Table start(int which, const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = empty_table(layer_spec(which), batch_size);
  if (!note.empty()) t.notes.push_back(adapt_note(note, which));
  t.notes.insert(t.notes.end(), stats.notes.begin(), stats.notes.end());
  return t;
}

void note_no_bytes(Table& t, const LayerStats& stats) {
  if (!stats.layers.empty() && !stats.any_allocated_bytes) {
    t.notes.push_back("the framework profiler reported no allocated_bytes for any layer");
  }
}

// Per-type totals, sorted by value descending then type name (SPEC §4 A5–A7 are distributions).
template <typename V>
std::vector<std::pair<std::string, V>> by_type(const LayerStats& stats, V (*value)(const LayerStat&)) {
  std::map<std::string, V> sums;
  for (const LayerStat& l : stats.layers) sums[l.type] += value(l);
  std::vector<std::pair<std::string, V>> out(sums.begin(), sums.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;  // map order is by name, and stable_sort keeps it among equal values
}

Cell percent_cell(double part, double total) { return total > 0 ? Cell{100.0 * part / total} : Cell{}; }

// Looks up the M/F run and aggregates it; nullptr when there is none.
struct FrameworkRun {
  const RunRecord* run = nullptr;
  LayerStats stats;
  std::string note;
};

FrameworkRun framework_run(const EvaluationRecord& record, int batch_size) {
  FrameworkRun fr;
  fr.run = record.run_for_level(batch_size, Level::kFramework);
  if (fr.run) {
    fr.stats = layer_stats(fr.run->trace);
    fr.note = run_note(*fr.run, Level::kFramework, fr.stats.batches);
  }
  return fr;
}

Table no_run_table(int which, int batch_size) {
  Table t = empty_table(layer_spec(which), batch_size);
  t.notes.push_back(kNoFrameworkRun);
  return t;
}

using StatsFn = Table (*)(const LayerStats&, int, const std::string&);

Table from_record(const EvaluationRecord& record, int batch_size, int which, StatsFn fn) {
  FrameworkRun fr = framework_run(record, batch_size);
  if (!fr.run) return no_run_table(which, batch_size);
  return fn(fr.stats, batch_size, fr.note);
}

}  // namespace

Table a2_layer_information(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start(2, stats, batch_size, note);
  t.rows.reserve(stats.layers.size());
  for (const LayerStat& l : stats.layers) {
    RowBuilder row(t);
    row.set("layer_index", int_cell(static_cast<std::int64_t>(l.index)))
        .set("layer_name", l.name)
        .set("layer_type", l.type)
        .set("shapes", l.shapes)
        .set("latency_ms", l.latency_ns / 1e6)
        .set("allocated_bytes", opt_int_cell(l.allocated_bytes));
    t.rows.push_back(row.take());
  }
  note_no_bytes(t, stats);
  return t;
}

Table a3_layer_latency(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start(3, stats, batch_size, note);
  t.rows.reserve(stats.layers.size());
  for (const LayerStat& l : stats.layers) {
    RowBuilder row(t);
    row.set("layer_index", int_cell(static_cast<std::int64_t>(l.index))).set("layer_name", l.name);
    t.rows.push_back(row.set("latency_ms", l.latency_ns / 1e6).take());
  }
  return t;
}

Table a4_layer_memory(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start(4, stats, batch_size, note);
  t.rows.reserve(stats.layers.size());
  for (const LayerStat& l : stats.layers) {
    RowBuilder row(t);
    row.set("layer_index", int_cell(static_cast<std::int64_t>(l.index))).set("layer_name", l.name);
    t.rows.push_back(row.set("allocated_bytes", opt_int_cell(l.allocated_bytes)).take());
  }
  note_no_bytes(t, stats);
  return t;
}

Table a5_layer_type_distribution(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start(5, stats, batch_size, note);
  const auto counts = by_type<std::int64_t>(stats, [](const LayerStat&) -> std::int64_t { return 1; });
  const double total = static_cast<double>(stats.layers.size());
  for (const auto& [type, count] : counts) {
    RowBuilder row(t);
    row.set("layer_type", type).set("count", count).set("percent", percent_cell(static_cast<double>(count), total));
    t.rows.push_back(row.take());
  }
  return t;
}

Table a6_layer_latency_by_type(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start(6, stats, batch_size, note);
  const auto sums = by_type<double>(stats, [](const LayerStat& l) { return l.latency_ns; });
  double total = 0;
  for (const auto& s : sums) total += s.second;
  for (const auto& [type, ns] : sums) {
    RowBuilder row(t);
    row.set("layer_type", type).set("latency_ms", ns / 1e6).set("percent", percent_cell(ns, total));
    t.rows.push_back(row.take());
  }
  return t;
}

Table a7_layer_memory_by_type(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start(7, stats, batch_size, note);
  const auto sums = by_type<std::int64_t>(stats, [](const LayerStat& l) { return l.allocated_bytes.value_or(0); });
  std::int64_t total = 0;
  for (const auto& s : sums) total += s.second;
  for (const auto& [type, bytes] : sums) {
    RowBuilder row(t);
    row.set("layer_type", type).set("allocated_bytes", bytes);
    row.set("percent", percent_cell(static_cast<double>(bytes), static_cast<double>(total)));
    t.rows.push_back(row.take());
  }
  note_no_bytes(t, stats);
  return t;
}

Table a2_layer_information(const EvaluationRecord& r, int b) { return from_record(r, b, 2, a2_layer_information); }
Table a3_layer_latency(const EvaluationRecord& r, int b) { return from_record(r, b, 3, a3_layer_latency); }
Table a4_layer_memory(const EvaluationRecord& r, int b) { return from_record(r, b, 4, a4_layer_memory); }
Table a5_layer_type_distribution(const EvaluationRecord& r, int b) {
  return from_record(r, b, 5, a5_layer_type_distribution);
}
Table a6_layer_latency_by_type(const EvaluationRecord& r, int b) {
  return from_record(r, b, 6, a6_layer_latency_by_type);
}
Table a7_layer_memory_by_type(const EvaluationRecord& r, int b) {
  return from_record(r, b, 7, a7_layer_memory_by_type);
}

const std::vector<std::string>& analysis_ids() {
  // A1–A7 first (their position + 1 is their number, which run_analyses() relies on), then the GPU analyses.
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> v = {"A1", "A2", "A3", "A4", "A5", "A6", "A7"};
    v.insert(v.end(), gpu_analysis_ids().begin(), gpu_analysis_ids().end());
    v.insert(v.end(), generation_analysis_ids().begin(), generation_analysis_ids().end());
    return v;
  }();
  return ids;
}

std::vector<std::string> default_analysis_ids(const EvaluationRecord& record) {
  // A generation's ops run under its prefill and decode spans, not under predict spans: A2..A7 would find no layer,
  // and G2 is their generation counterpart.
  if (is_generation_evaluation(record)) {
    std::vector<std::string> v{analysis_ids().front()};
    v.insert(v.end(), generation_analysis_ids().begin(), generation_analysis_ids().end());
    return v;
  }
  return {analysis_ids().begin(), analysis_ids().begin() + 7};
}

std::vector<Table> run_analyses(const EvaluationRecord& record, const std::vector<std::string>& ids,
                                std::optional<int> batch_size, std::optional<double> latency_bound_ms) {
  AnalysisOptions options;
  options.batch_size = batch_size;
  options.latency_bound_ms = latency_bound_ms;
  return run_analyses(record, ids, options);
}

std::vector<Table> run_analyses(const EvaluationRecord& record, const std::vector<std::string>& ids,
                                const AnalysisOptions& options) {
  const std::optional<int>& batch_size = options.batch_size;
  const std::optional<double>& latency_bound_ms = options.latency_bound_ms;
  // Validate every id before computing anything, so a typo fails fast.
  std::vector<int> which;
  for (const std::string& id : ids) {
    // Case-insensitive: ids are upper case ("A2") or lower case ("gpu-idle").
    auto same = [&](const std::string& v) {
      return v.size() == id.size() && std::equal(v.begin(), v.end(), id.begin(), [](char a, char b) {
               return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
             });
    };
    const auto& valid = analysis_ids();
    auto it = std::find_if(valid.begin(), valid.end(), same);
    if (it == valid.end()) {
      std::string msg = "unknown analysis id '" + id + "'; valid ids:";
      for (const auto& v : valid) msg += " " + v;
      throw std::invalid_argument(msg);
    }
    which.push_back(static_cast<int>(it - valid.begin()) + 1);
  }

  const std::vector<int> measured = detail::measured_batch_sizes(record);
  std::vector<int> batches = measured;
  if (batch_size) {
    if (std::find(measured.begin(), measured.end(), *batch_size) == measured.end()) {
      std::string msg = "batch size " + std::to_string(*batch_size) + " was not measured in this evaluation; measured:";
      for (int b : measured) msg += " " + std::to_string(b);
      throw std::invalid_argument(msg);
    }
    batches = {*batch_size};
  }

  // One aggregation per batch size, shared by A2–A7 (the trace walk dominates the cost).
  std::map<int, FrameworkRun> cache;
  auto get = [&](int b) -> const FrameworkRun& {
    auto it = cache.find(b);
    if (it == cache.end()) it = cache.emplace(b, framework_run(record, b)).first;
    return it->second;
  };
  static constexpr StatsFn kFns[] = {a2_layer_information, a3_layer_latency,         a4_layer_memory,
                                     a5_layer_type_distribution, a6_layer_latency_by_type, a7_layer_memory_by_type};

  GpuRunsCache gpu_cache(record);  // likewise one kernel extraction per batch size for the GPU analyses
  if (options.ceilings || !options.ceilings_note.empty()) gpu_cache.set_ceilings(options.ceilings, options.ceilings_note);

  std::vector<Table> out;
  for (int w : which) {
    if (w > 7 + static_cast<int>(gpu_analysis_ids().size())) {  // the generation analyses come last
      for (Table& t : run_generation_analysis(analysis_ids()[static_cast<std::size_t>(w - 1)], record, batches)) {
        out.push_back(std::move(t));
      }
      continue;
    }
    if (w > 7) {
      for (Table& t : run_gpu_analysis(analysis_ids()[static_cast<std::size_t>(w - 1)], batches, gpu_cache)) {
        out.push_back(std::move(t));
      }
      continue;
    }
    if (w == 1) {
      out.push_back(a1_model_information(record, latency_bound_ms));
      continue;
    }
    for (int b : batches) {
      const FrameworkRun& fr = get(b);
      out.push_back(fr.run ? kFns[w - 2](fr.stats, b, fr.note) : no_run_table(w, b));
    }
  }
  return out;
}

}  // namespace xsp
