// A2–A7, layer analyses (SPEC §4); run_analyses() is in run_analyses.cc.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "internal.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"

namespace xsp {
namespace {

using detail::percent_cell;

Cell int_cell(std::int64_t v) { return Cell{v}; }
Cell opt_int_cell(const std::optional<std::int64_t>& v) { return v ? Cell{*v} : Cell{}; }

// What a layer table's values are: run_note() speaks of latencies and their trimmed mean; memory and count tables
// say what they really show.
enum class Shows { kLatency, kBytes, kCount };

std::string adapt_note(std::string note, Shows shows) {
  if (shows == Shows::kLatency) return note;
  const std::string lat = "latencies from", tm = ", trimmed mean";
  if (note.rfind(lat, 0) == 0)
    note.replace(0, lat.size(), shows == Shows::kCount ? "layers from" : "allocated bytes from");
  if (auto pos = note.find(tm); pos != std::string::npos) {
    if (shows == Shows::kCount) {
      note.erase(pos, tm.size());
    } else {
      note.replace(pos, tm.size(), ", mean");
    }
  }
  return note;
}

// The empty table of analysis `id` (A2..A7) for `batch_size`, with the run note and the aggregation's notes.
Table start(const char* id, Shows shows, const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = empty_table(analysis_spec(id), batch_size);
  if (!note.empty()) t.notes.push_back(adapt_note(note, shows));
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

using StatsFn = Table (*)(const LayerStats&, int, const std::string&);

Table from_record(const EvaluationRecord& record, int batch_size, StatsFn fn) {
  const FrameworkLayers fl = framework_layers(record, batch_size);
  return fn(fl.stats, batch_size, fl.note);
}

}  // namespace

const RunRecord* layers_run(const EvaluationRecord& record, int batch_size) {
  const auto request = record.settings.find("request");
  const bool graphs = request != record.settings.end() && request->is_object() &&
                      request->value("cuda_graphs", nlohmann::json(false)) == true;
  if (graphs) {
    if (const RunRecord* kernel = record.run_for_level(batch_size, Level::kKernel)) return kernel;
  }
  return record.run_for_level(batch_size, Level::kFramework);
}

FrameworkLayers framework_layers(const EvaluationRecord& record, int batch_size) {
  FrameworkLayers fl;
  fl.run = layers_run(record, batch_size);
  if (fl.run) {
    fl.stats = layer_stats(fl.run->trace);
    if (fl.run != record.run_for_level(batch_size, Level::kFramework)) {
      // Replayed ops are device intervals: the kernel level's host overhead is not in them.
      fl.note = run_note(*fl.run, deepest_level(fl.run->trace_level), fl.stats.batches) +
                "; the model ran as a CUDA graph: its layers are the ops replayed on the GPU, each from its first "
                "kernel's start to its last kernel's end (docs/cuda-graphs.md)";
    } else {
      fl.note = run_note(*fl.run, Level::kFramework, fl.stats.batches);
    }
  } else {
    fl.note = kNoFrameworkRun;
  }
  return fl;
}

Table a2_layer_information(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start("A2", Shows::kLatency, stats, batch_size, note);
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
  Table t = start("A3", Shows::kLatency, stats, batch_size, note);
  t.rows.reserve(stats.layers.size());
  for (const LayerStat& l : stats.layers) {
    RowBuilder row(t);
    row.set("layer_index", int_cell(static_cast<std::int64_t>(l.index))).set("layer_name", l.name);
    t.rows.push_back(row.set("latency_ms", l.latency_ns / 1e6).take());
  }
  return t;
}

Table a4_layer_memory(const LayerStats& stats, int batch_size, const std::string& note) {
  Table t = start("A4", Shows::kBytes, stats, batch_size, note);
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
  Table t = start("A5", Shows::kCount, stats, batch_size, note);
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
  Table t = start("A6", Shows::kLatency, stats, batch_size, note);
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
  Table t = start("A7", Shows::kBytes, stats, batch_size, note);
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

Table a2_layer_information(const EvaluationRecord& r, int b) { return from_record(r, b, a2_layer_information); }
Table a3_layer_latency(const EvaluationRecord& r, int b) { return from_record(r, b, a3_layer_latency); }
Table a4_layer_memory(const EvaluationRecord& r, int b) { return from_record(r, b, a4_layer_memory); }
Table a5_layer_type_distribution(const EvaluationRecord& r, int b) {
  return from_record(r, b, a5_layer_type_distribution);
}
Table a6_layer_latency_by_type(const EvaluationRecord& r, int b) { return from_record(r, b, a6_layer_latency_by_type); }
Table a7_layer_memory_by_type(const EvaluationRecord& r, int b) { return from_record(r, b, a7_layer_memory_by_type); }

}  // namespace xsp
