// GPU analyses A8, A10, A11, A13, A15 (SPEC §4), GPU idle time and kernel launch statistics (HTA), and their
// dispatch for run_analyses().
#include "xsp/analysis/gpu_analyses.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal.h"
#include "xsp/analysis/registry.h"
#include "xsp/profilers/hardware_counters.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

using detail::ms_cell;
using detail::percent_cell;

constexpr const char* kGpuWork =
    "GPU work = every KERNEL-level span (kernels, memcpy, memset), placed in layers through its launching API call";

Cell int_cell(std::size_t v) { return Cell{static_cast<std::int64_t>(v)}; }

// A per-batch-size table: the registry's empty table with run and matching notes (no rows without a kernel run).
Table start(const std::string& id, const GpuRuns& runs, bool with_model, bool with_layers) {
  Table t = empty_table(table_spec(id), runs.batch_size);
  if (!runs.kernel_run) {
    t.notes.push_back(kNoKernelRun);
    return t;
  }
  t.notes.push_back(runs.kernel_note);
  if (with_layers) t.notes.push_back(runs.layer_note);
  if (with_model) t.notes.push_back(runs.model_run ? runs.model_note : "no MODEL-level run: model latency unknown");
  t.notes.insert(t.notes.end(), runs.notes.begin(), runs.notes.end());
  return t;
}

// Layer name for index i. `prefer_framework`: the M/F run names the layers whose latency a row shows (A11, A13);
// kernel-only tables take the M/F/K run's, where the kernels ran.
std::string layer_name(const GpuRuns& runs, std::size_t i, bool prefer_framework) {
  if (i == kNoLayer) return "(outside layers)";
  const auto& f = runs.layers.layers;
  const auto& k = runs.kernels.layers.layers;
  if (prefer_framework && i < f.size()) return f[i].name;
  if (i < k.size()) return k[i].name;
  if (i < f.size()) return f[i].name;
  return "";
}
std::string layer_type(const GpuRuns& runs, std::size_t i) {
  const auto& f = runs.layers.layers;
  const auto& k = runs.kernels.layers.layers;
  if (i < f.size()) return f[i].type;
  if (i < k.size()) return k[i].type;
  return "";
}

Cell layer_index_cell(std::size_t i) { return i == kNoLayer ? Cell{} : int_cell(i); }

// Per layer index: the per-batch sums of kernel durations and the kernel occurrences (M/F/K run). Slot
// `layers` (the last) holds the work launched outside layers.
struct LayerGpu {
  std::size_t layers = 0;
  std::vector<std::vector<double>> per_batch;  // [slot][batch], ns
  std::vector<std::size_t> occurrences;        // [slot]
  std::size_t slot(std::size_t layer_index) const { return layer_index == kNoLayer ? layers : layer_index; }
  double latency_ns(std::size_t s) const { return trimmed_mean(per_batch[s]); }
};

LayerGpu layer_gpu(const GpuRuns& runs) {
  LayerGpu g;
  g.layers = std::max(runs.layers.layers.size(), runs.kernels.layers.layers.size());
  for (const GpuKernel& k : runs.kernels.kernels) {
    if (k.layer_index != kNoLayer) g.layers = std::max(g.layers, k.layer_index + 1);
  }
  g.per_batch.assign(g.layers + 1, std::vector<double>(runs.kernels.batches(), 0.0));
  g.occurrences.assign(g.layers + 1, 0);
  for (const GpuKernel& k : runs.kernels.kernels) {
    const std::size_t s = g.slot(k.layer_index);
    g.per_batch[s][k.batch] += static_cast<double>(k.duration_ns());
    ++g.occurrences[s];
  }
  return g;
}

// Per-batch-size run notes merged for a table over several batch sizes: one note when they agree, otherwise one
// per batch size.
void add_run_notes(Table& t, const std::vector<std::pair<int, std::string>>& notes) {
  if (notes.empty()) return;
  const bool same = std::all_of(notes.begin(), notes.end(), [&](const auto& p) { return p.second == notes[0].second; });
  if (same) {
    t.notes.push_back(notes[0].second);
    return;
  }
  for (const auto& [b, n] : notes) t.notes.push_back("batch size " + std::to_string(b) + ": " + n);
}

void add_missing_note(Table& t, const std::vector<int>& missing, bool any) {
  if (!any) {
    t.notes.push_back(kNoKernelRun);
  } else if (!missing.empty()) {
    std::string s = "batch sizes without a KERNEL-level run (left out):";
    for (int b : missing) s += " " + std::to_string(b);
    t.notes.push_back(s);
  }
}

/// Calls body(batch_size, runs) for each batch size that has an M/F/K run; the others are appended to `missing`.
template <class Body>
void for_each_kernel_run(GpuRunsCache& cache, const std::vector<int>& batch_sizes, std::vector<int>& missing,
                         Body&& body) {
  for (int b : batch_sizes) {
    const GpuRuns& runs = cache.get(b);
    if (runs.kernel_run)
      body(b, runs);
    else
      missing.push_back(b);
  }
}

void add_batch_notes(Table& t, const std::vector<std::pair<int, std::vector<std::string>>>& per_batch) {
  for (const auto& [b, notes] : per_batch) {
    for (const std::string& n : notes) t.notes.push_back("batch size " + std::to_string(b) + ": " + n);
  }
}

// run_note() speaks of latencies and their trimmed mean; the idle and launch tables are means and percentiles
// of a timeline, so their run note says that instead.
std::string timeline_note(std::string note, const char* what) {
  const std::string lat = "kernel latencies from", tm = ", trimmed mean";
  if (note.rfind(lat, 0) == 0) note.replace(0, lat.size(), what);
  if (auto pos = note.find(tm); pos != std::string::npos) note.erase(pos, tm.size());
  return note;
}

std::vector<int> all_batches(const EvaluationRecord& record) { return detail::measured_batch_sizes(record); }

// ---- hardware counter cells and notes ----

Cell opt_cell(std::optional<double> v) { return v && std::isfinite(*v) ? Cell{*v} : Cell{}; }
Cell value_cell(const CounterValues& c, std::string_view name) {
  auto it = c.find(std::string(name));
  return it != c.end() && std::isfinite(it->second) ? Cell{it->second} : Cell{};
}
Cell gflops_cell(std::optional<double> flops) { return flops ? opt_cell(*flops / 1e9) : Cell{}; }
Cell bound_cell(std::optional<Bound> b) { return b ? Cell{std::string(to_string(*b))} : Cell{}; }
// The hierarchical verdict (roofline.h hierarchical_bound()) of a point: memory|compute, and its binding level.
Cell bound_cell(const RooflinePoint& p) { return p.binding ? bound_cell(p.binding->bound) : Cell{}; }
Cell binding_cell(const RooflinePoint& p) {
  return p.binding ? Cell{std::string(to_string(p.binding->level))} : Cell{};
}
Cell attainable_cell(const RooflinePoint& p) { return p.binding ? Cell{p.binding->attainable_flops_per_s} : Cell{}; }
Cell text_cell(const std::optional<std::string>& s) { return s ? Cell{*s} : Cell{}; }

std::string format_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Which precisions the table's points used, and those without a measured ceiling.
struct PrecisionUse {
  std::set<std::string> used, unmeasured;
  void add(const RooflinePoint& p) {
    if (!p.precision) return;
    used.insert(*p.precision);
    if (!p.peak_flops_per_s) unmeasured.insert(*p.precision);
  }
};

// Counter-run notes, then the ceilings: which machine, the ridge point of every precision used against every
// memory level, and the precisions the machine has no ceiling for.
void add_counter_notes(Table& t, const GpuRuns& runs, const PrecisionUse* precisions) {
  t.notes.push_back(runs.counter_note);
  if (!runs.has_counters()) return;
  t.notes.insert(t.notes.end(), runs.counter_notes.begin(), runs.counter_notes.end());
  if (precisions == nullptr) return;
  if (runs.ceilings == nullptr) {
    t.notes.push_back(runs.ceilings_note);
    return;
  }
  t.notes.push_back(runs.ceilings_note);
  std::string ridges;
  for (const std::string& p : precisions->used) {
    const Ceiling* peak = runs.ceilings->find(p);
    if (peak == nullptr || !(peak->value > 0)) continue;
    std::string levels;
    for (MemoryLevel l : {MemoryLevel::kDram, MemoryLevel::kL2, MemoryLevel::kL1}) {
      const Ceiling* bw = runs.ceilings->find(std::string(to_string(l)));
      if (bw == nullptr || !(bw->value > 0)) continue;
      levels += (levels.empty() ? "" : ", ") + std::string(to_string(l)) + " " +
                format_g(ridge_point(peak->value, bw->value));
    }
    ridges += (ridges.empty() ? "" : "; ") + p + " (peak " + format_g(peak->value / 1e12) + " T" + peak->unit +
              "): " + (levels.empty() ? "no bandwidth measured" : levels);
  }
  if (!ridges.empty()) t.notes.push_back("ridge points (FLOP/byte) = peak / bandwidth: " + ridges);
  if (!precisions->unmeasured.empty()) {
    std::string names;
    for (const auto& p : precisions->unmeasured) names += (names.empty() ? "" : ", ") + p;
    t.notes.push_back("no measured ceiling for precision " + names +
                      ": the bound and roofline cells of those "
                      "rows are empty");
  }
  t.notes.push_back(
      "precision = compute ceiling of the FLOP counter with the most FLOPs (roofline.h); bound and "
      "binding level by the hierarchical roofline rule (Yang, Kurth, Williams 2020; roofline.h "
      "hierarchical_bound()): attainable = min(peak, AI_L1 × BW_L1, AI_L2 × BW_L2, AI_DRAM × BW_DRAM), "
      "the tightest of L1, L2, DRAM and compute binds; memory-bound when a memory level binds");
}

// The M/F/K occurrence latency of each joined counter position (the weight of its occupancy in a mean).
std::map<const KernelCounters*, double> joined_latency(const GpuRuns& runs) {
  std::map<const KernelCounters*, double> out;
  for (const KernelOccurrence& o : runs.occurrences)
    if (o.counters != nullptr) out[o.counters] = o.latency_ns;
  return out;
}

// Counter aggregates per layer slot of the counter run (kNoLayer in the last slot, index `layers`).
struct LayerCounters {
  std::size_t layers = 0;
  std::vector<CounterAggregate> agg;  // [slot]
  std::size_t slot(std::size_t layer_index) const { return layer_index == kNoLayer ? layers : layer_index; }
};

LayerCounters layer_counters(const GpuRuns& runs) {
  LayerCounters lc;
  lc.layers = std::max(runs.counter_timeline.layers.layers.size(), runs.kernels.layers.layers.size());
  for (const KernelCounters& k : runs.counters)
    if (k.layer_index != kNoLayer) lc.layers = std::max(lc.layers, k.layer_index + 1);
  lc.agg.resize(lc.layers + 1);
  const auto latency = joined_latency(runs);
  for (const KernelCounters& k : runs.counters) {
    auto it = latency.find(&k);
    lc.agg[lc.slot(k.layer_index)].add(k.counters,
                                       it == latency.end() ? std::nullopt : std::optional<double>(it->second));
  }
  return lc;
}

std::string counter_layer_name(const GpuRuns& runs, std::size_t i) {
  if (i == kNoLayer) return "(outside layers)";
  const auto& k = runs.kernels.layers.layers;
  const auto& c = runs.counter_timeline.layers.layers;
  if (i < k.size()) return k[i].name;
  if (i < c.size()) return c[i].name;
  return "";
}
std::string counter_layer_type(const GpuRuns& runs, std::size_t i) {
  if (i == kNoLayer) return "";
  const auto& k = runs.kernels.layers.layers;
  const auto& c = runs.counter_timeline.layers.layers;
  if (i < k.size()) return k[i].type;
  if (i < c.size()) return c[i].type;
  return "";
}

// A layer slot's compute-kernel latency (ns) from the M/F/K run; NaN when the M/F/K run has no such slot.
double layer_compute_latency(const GpuRuns& runs, const LayerCounters& lc, std::size_t slot) {
  const auto& v = runs.compute_latency_by_layer;
  if (v.empty()) return std::nan("");
  const std::size_t own_layers = v.size() - 1;  // the M/F/K slots: `own_layers` layers, then outside
  const std::size_t i = slot == lc.layers ? own_layers : slot;
  return i < v.size() && (slot == lc.layers || slot < own_layers) ? v[i] : std::nan("");
}

// The columns that name a kernel occurrence and its latency, shared by A8 and A9. A kernel that Inductor generated
// runs under no framework op (an AOTInductor package or torch.compile launches it itself): its name is what says
// which ops it does.
void kernel_cells(RowBuilder& row, const GpuRuns& runs, const KernelOccurrence& o) {
  std::string layer = layer_name(runs, o.layer_index, false);
  if (o.layer_index == kNoLayer)
    if (auto inductor = parse_inductor_kernel_name(o.name))
      layer = "(Inductor " + inductor->kind + ": " + inductor->fused_ops + ")";
  row.set("layer_index", layer_index_cell(o.layer_index))
      .set("kernel_index", int_cell(o.kernel_index))
      .set("layer_name", layer)
      .set("kernel_name", std::string(o.name))
      .set("latency_ms", ms_cell(o.latency_ns));
}

// The roofline columns A9 and A14 share, from one point.
void roofline_cells(RowBuilder& row, const RooflinePoint& p) {
  row.set("gflops", gflops_cell(p.flops))
      .set("precision", text_cell(p.precision))
      .set("ai_dram", opt_cell(p.at(MemoryLevel::kDram).ai))
      .set("ai_l2", opt_cell(p.at(MemoryLevel::kL2).ai))
      .set("ai_l1", opt_cell(p.at(MemoryLevel::kL1).ai))
      .set("achieved_flops_per_s", opt_cell(p.achieved_flops_per_s))
      .set("peak_flops_per_s", opt_cell(p.peak_flops_per_s))
      .set("attainable_flops_per_s", attainable_cell(p))
      .set("percent_of_roofline", opt_cell(p.percent_of_roofline))
      .set("bound", bound_cell(p))
      .set("binding_level", binding_cell(p));
}

void note_unweighted(Table& t, std::size_t unweighted) {
  if (unweighted > 0)
    t.notes.push_back(std::to_string(unweighted) +
                      " kernels of the counter run have no joined M/F/K latency: "
                      "left out of the latency-weighted occupancy");
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Per batch size
// ---------------------------------------------------------------------------------------------------------

Table a8_kernel_information(const GpuRuns& runs) {
  Table t = start("A8", runs, false, false);
  if (!runs.kernel_run) return t;
  t.rows.reserve(runs.occurrences.size());
  PrecisionUse precisions;
  std::size_t with_bound = 0;
  for (const KernelOccurrence& o : runs.occurrences) {
    RowBuilder row(t);
    kernel_cells(row, runs, o);
    if (o.counters != nullptr) {
      const CounterValues& c = o.counters->counters;
      const RooflinePoint p = roofline_point(c, runs.ceilings, o.latency_ns);
      precisions.add(p);
      with_bound += p.binding.has_value();
      row.set("gflops", gflops_cell(p.flops))
          .set("dram_read_bytes", value_cell(c, hw::kDramReadBytes))
          .set("dram_write_bytes", value_cell(c, hw::kDramWriteBytes))
          .set("achieved_occupancy", value_cell(c, hw::kAchievedOccupancyPercent))
          .set("arithmetic_intensity", opt_cell(p.at(MemoryLevel::kDram).ai))
          .set("achieved_flops_per_s", opt_cell(p.achieved_flops_per_s))
          .set("bound", bound_cell(p))
          .set("l2_bytes", value_cell(c, hw::kL2Bytes))
          .set("l1_bytes", value_cell(c, hw::kL1Bytes))
          .set("sm_throughput_percent", value_cell(c, hw::kSmThroughputPercent))
          .set("precision", text_cell(p.precision));
    }
    t.rows.push_back(row.take());
  }
  t.notes.push_back(
      "one row per kernel occurrence (layer index, kernel index in the layer by start time); "
      "latency is the trimmed mean over the batches that have it");
  if (runs.renamed > 0) {
    t.notes.push_back(std::to_string(runs.renamed) +
                      " kernel occurrences have a different kernel name than in the "
                      "first batch at the same position (the kernel sequence varies between batches); the row shows "
                      "the first batch's name");
  }
  add_counter_notes(t, runs, &precisions);
  if (runs.has_counters()) {
    t.notes.push_back(
        "achieved FLOP/s = FLOPs (counter run) / latency (M/F/K run); AI = FLOPs / DRAM read+write "
        "bytes; occupancy and SM throughput in percent; memcpy/memset have no counters");
  }
  return t;
}

Table a9_kernel_roofline(const GpuRuns& runs) {
  Table t = start("A9", runs, false, false);
  if (!runs.kernel_run) return t;
  PrecisionUse precisions;
  for (const KernelOccurrence& o : runs.occurrences) {
    if (o.counters == nullptr) continue;
    const RooflinePoint p = roofline_point(o.counters->counters, runs.ceilings, o.latency_ns);
    precisions.add(p);
    RowBuilder row(t);
    kernel_cells(row, runs, o);
    roofline_cells(row, p);
    t.rows.push_back(row.take());
  }
  add_counter_notes(t, runs, &precisions);
  if (runs.has_counters()) {
    t.notes.push_back(
        "one row per compute kernel with counters (A8 order); attainable = the tightest roof, "
        "min(peak, bandwidth × AI) over L1, L2 and DRAM (Williams, Waterman, Patterson, CACM 2009, per "
        "level as in Yang, Kurth, Williams 2020); binding level = the level (or compute) giving it; "
        "% of roof = achieved / attainable; achieved FLOP/s from the M/F/K latency");
  }
  return t;
}

Table a12_counters_by_layer(const GpuRuns& runs) {
  Table t = start("A12", runs, false, false);
  if (!runs.kernel_run) return t;
  if (!runs.has_counters()) {
    add_counter_notes(t, runs, nullptr);
    return t;
  }
  const LayerCounters lc = layer_counters(runs);
  PrecisionUse precisions;
  std::size_t unweighted = 0;
  for (std::size_t s = 0; s <= lc.layers; ++s) {
    const bool outside = s == lc.layers;
    const CounterAggregate& a = lc.agg[s];
    if (outside && a.kernels() == 0) break;
    const std::size_t index = outside ? kNoLayer : s;
    const CounterValues v = a.values();
    const RooflinePoint p = roofline_point(v, runs.ceilings, std::nullopt);
    precisions.add(p);
    unweighted += a.unweighted();
    RowBuilder row(t);
    row.set("layer_index", layer_index_cell(index))
        .set("layer_name", counter_layer_name(runs, index))
        .set("layer_type", counter_layer_type(runs, index))
        .set("kernels", int_cell(a.kernels()))
        .set("gflops", gflops_cell(p.flops))
        .set("dram_read_bytes", value_cell(v, hw::kDramReadBytes))
        .set("dram_write_bytes", value_cell(v, hw::kDramWriteBytes))
        .set("l2_bytes", value_cell(v, hw::kL2Bytes))
        .set("l1_bytes", value_cell(v, hw::kL1Bytes))
        .set("achieved_occupancy", value_cell(v, hw::kAchievedOccupancyPercent))
        .set("arithmetic_intensity", opt_cell(p.at(MemoryLevel::kDram).ai))
        .set("precision", text_cell(p.precision))
        .set("bound", bound_cell(p));
    t.rows.push_back(row.take());
  }
  add_counter_notes(t, runs, &precisions);
  note_unweighted(t, unweighted);
  t.notes.push_back(
      "per layer of the counter run: FLOPs and bytes summed over its kernels, occupancy weighted by "
      "each kernel's M/F/K latency, AI = summed FLOPs / summed DRAM bytes (SPEC §4)");
  return t;
}

Table a14_layer_roofline(const GpuRuns& runs) {
  Table t = start("A14", runs, false, false);
  if (!runs.kernel_run) return t;
  if (!runs.has_counters()) {
    add_counter_notes(t, runs, nullptr);
    return t;
  }
  const LayerCounters lc = layer_counters(runs);
  PrecisionUse precisions;
  for (std::size_t s = 0; s <= lc.layers; ++s) {
    const bool outside = s == lc.layers;
    const CounterAggregate& a = lc.agg[s];
    if (a.kernels() == 0) {
      if (outside) break;
      continue;  // a layer without counted kernels (CPU-only op) has no point on the roofline
    }
    const std::size_t index = outside ? kNoLayer : s;
    const double latency = layer_compute_latency(runs, lc, s);
    const RooflinePoint p = roofline_point(a.values(), runs.ceilings, latency);
    precisions.add(p);
    RowBuilder row(t);
    row.set("layer_index", layer_index_cell(index))
        .set("layer_name", counter_layer_name(runs, index))
        .set("layer_type", counter_layer_type(runs, index))
        .set("kernel_latency_ms", ms_cell(latency));
    roofline_cells(row, p);
    t.rows.push_back(row.take());
  }
  add_counter_notes(t, runs, &precisions);
  t.notes.push_back(
      "per layer: FLOPs and bytes summed over its kernels in the counter run; achieved FLOP/s = FLOPs "
      "/ kernel latency, the trimmed mean of the per-batch sum of the layer's compute-kernel (kind "
      "kernel) latencies in the M/F/K run (memcpy/memset excluded: they have no counters)");
  return t;
}

Table roofline_hierarchical(const GpuRuns& runs) {
  Table t = start("roofline-hier", runs, false, false);
  if (!runs.kernel_run) return t;
  if (!runs.has_counters()) {
    add_counter_notes(t, runs, nullptr);
    return t;
  }
  PrecisionUse precisions;
  auto level_cells = [](const RooflinePoint& p, RowBuilder& row) {
    for (MemoryLevel l : kMemoryLevels) {
      row.set("ai_" + std::string(to_string(l)), opt_cell(p.at(l).ai));
      row.set("bound_" + std::string(to_string(l)), bound_cell(p.at(l).bound));
    }
    // The same verdict as A9/A14's binding_level (roofline.h hierarchical_bound()).
    row.set("limiting", binding_cell(p))
        .set("attainable_flops_per_s", attainable_cell(p))
        .set("achieved_flops_per_s", opt_cell(p.achieved_flops_per_s));
  };
  for (const KernelOccurrence& o : runs.occurrences) {
    if (o.counters == nullptr) continue;
    const RooflinePoint p = roofline_point(o.counters->counters, runs.ceilings, o.latency_ns);
    precisions.add(p);
    RowBuilder row(t);
    row.set("scope", std::string("kernel"))
        .set("layer_index", layer_index_cell(o.layer_index))
        .set("kernel_index", int_cell(o.kernel_index))
        .set("name", std::string(o.name))
        .set("precision", text_cell(p.precision));
    level_cells(p, row);
    t.rows.push_back(row.take());
  }
  const LayerCounters lc = layer_counters(runs);
  for (std::size_t s = 0; s <= lc.layers; ++s) {
    if (lc.agg[s].kernels() == 0) continue;
    const std::size_t index = s == lc.layers ? kNoLayer : s;
    const RooflinePoint p = roofline_point(lc.agg[s].values(), runs.ceilings, layer_compute_latency(runs, lc, s));
    precisions.add(p);
    RowBuilder row(t);
    row.set("scope", std::string("layer"))
        .set("layer_index", layer_index_cell(index))
        .set("name", counter_layer_name(runs, index))
        .set("precision", text_cell(p.precision));
    level_cells(p, row);
    t.rows.push_back(row.take());
  }
  add_counter_notes(t, runs, &precisions);
  t.notes.push_back(
      "hierarchical roofline (Yang, Kurth, Williams 2020): AI and bound at each memory level against "
      "that level's measured bandwidth; limiting = the level whose roof (bandwidth × AI) is lowest, or "
      "compute when the peak is below every roof (roofline.h hierarchical_bound(), the binding_level of "
      "A9 and A14); attainable = that lowest roof");
  return t;
}

Table a10_kernels_by_name(const GpuRuns& runs) {
  Table t = start("A10", runs, true, false);
  if (!runs.kernel_run) return t;
  const std::size_t batches = runs.kernels.batches();
  struct Agg {
    std::vector<double> per_batch;
    double sum = 0;
    std::size_t n = 0;
  };
  std::unordered_map<std::string_view, Agg> by_name;
  for (const GpuKernel& k : runs.kernels.kernels) {
    Agg& a = by_name[k.name];
    if (a.per_batch.empty()) a.per_batch.assign(batches, 0.0);
    const auto d = static_cast<double>(k.duration_ns());
    a.per_batch[k.batch] += d;
    a.sum += d;
    ++a.n;
  }
  struct Row {
    std::string_view name;
    double total_ns;  // per batch
    const Agg* agg;
  };
  std::vector<Row> rows;
  double all = 0;
  for (const auto& [name, a] : by_name) {
    rows.push_back({name, trimmed_mean(a.per_batch), &a});
    all += rows.back().total_ns;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  for (const Row& r : rows) {
    RowBuilder row(t);
    row.set("kernel_name", std::string(r.name))
        .set("count", static_cast<double>(r.agg->n) / static_cast<double>(batches))
        .set("total_latency_ms", ms_cell(r.total_ns))
        .set("mean_latency_us", r.agg->sum / static_cast<double>(r.agg->n) / 1e3)
        .set("percent_of_model_latency", percent_cell(r.total_ns, runs.model_latency_ns))
        .set("percent_of_kernel_time", percent_cell(r.total_ns, all));
    t.rows.push_back(row.take());
  }
  t.notes.push_back(
      "count = occurrences / batches; total = trimmed mean over batches of the per-batch sum; "
      "mean = sum of durations / occurrences; % of model = total / model latency of the M run");
  t.notes.push_back(kGpuWork);
  return t;
}

Table a11_kernels_by_layer(const GpuRuns& runs) {
  Table t = start("A11", runs, false, true);
  if (!runs.kernel_run) return t;
  const LayerGpu g = layer_gpu(runs);
  const auto batches = static_cast<double>(runs.kernels.batches());
  const auto& f = runs.layers.layers;
  for (std::size_t s = 0; s <= g.layers; ++s) {
    const bool outside = s == g.layers;
    if (outside && g.occurrences[s] == 0) break;
    // An index the M/F/K run never reached has no kernel numbers (rather than 0, which would claim none ran).
    const bool reached = outside || s < runs.kernels.layers.layers.size();
    const double gpu = reached ? g.latency_ns(s) : std::nan("");
    const double layer = !outside && s < f.size() ? f[s].latency_ns : std::nan("");
    RowBuilder row(t);
    row.set("layer_index", outside ? Cell{} : int_cell(s))
        .set("layer_name", layer_name(runs, outside ? kNoLayer : s, true))
        .set("layer_type", outside ? std::string() : layer_type(runs, s))
        .set("kernel_count", reached ? Cell{static_cast<double>(g.occurrences[s]) / batches} : Cell{})
        .set("kernel_latency_ms", ms_cell(gpu))
        .set("layer_latency_ms", ms_cell(layer))
        .set("gpu_percent", percent_cell(gpu, layer));
    t.rows.push_back(row.take());
  }
  t.notes.push_back(
      "kernels per batch = occurrences / batches; kernel latency = trimmed mean over batches of the "
      "per-batch sum; GPU % = kernel latency (M/F/K run) / layer latency (M/F run), above 100 when "
      "kernels overlap on several streams or outlast the layer's host-side call");
  t.notes.push_back(kGpuWork);
  return t;
}

Table a13_gpu_vs_non_gpu(const GpuRuns& runs) {
  Table t = start("A13", runs, false, true);
  if (!runs.kernel_run) return t;
  const LayerGpu g = layer_gpu(runs);
  const auto& f = runs.layers.layers;
  // Kernels only carry layer indexes of the M/F/K run's layers, so this bounds every index they can have.
  const std::size_t kernel_layers = runs.kernels.layers.layers.size();
  std::size_t negative = 0;
  for (std::size_t i = 0; i < g.layers; ++i) {
    const double layer = i < f.size() ? f[i].latency_ns : std::nan("");
    // A layer index the M/F/K run never reached has no GPU latency (rather than 0, which would claim none ran).
    const double gpu = i < kernel_layers ? g.latency_ns(i) : std::nan("");
    const double non_gpu = layer - gpu;
    if (non_gpu < 0) ++negative;
    RowBuilder row(t);
    row.set("layer_index", int_cell(i))
        .set("layer_name", layer_name(runs, i, true))
        .set("layer_latency_ms", ms_cell(layer))
        .set("gpu_latency_ms", ms_cell(gpu))
        .set("non_gpu_latency_ms", ms_cell(non_gpu));
    t.rows.push_back(row.take());
  }
  t.notes.push_back("non-GPU latency = layer latency (M/F run) − sum of its kernels' latency (M/F/K run), SPEC §3");
  if (negative > 0) {
    t.notes.push_back(std::to_string(negative) + (negative == 1 ? " layer has" : " layers have") +
                      " a negative non-GPU latency: its kernels add up to more than the layer's host-side latency, "
                      "because they overlap on several streams or run after the op returned (asynchronous "
                      "launches); the values are kept as computed");
  }
  if (g.occurrences[g.layers] > 0) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.4g", g.latency_ns(g.layers) / 1e6);
    t.notes.push_back(std::string("GPU work launched outside layers (") + ms + " ms per batch) is in no row");
  }
  t.notes.push_back(kGpuWork);
  return t;
}

Table kernel_launch_delay_top(const GpuRuns& runs, std::size_t top) {
  Table t = start("launch-top", runs, false, false);
  if (!runs.kernel_run) return t;
  t.notes.front() = timeline_note(t.notes.front(), "kernel launches from");
  std::vector<const GpuKernel*> ks;
  for (const GpuKernel& k : runs.kernels.kernels) {
    if (k.has_launch()) ks.push_back(&k);
  }
  const auto by_delay = [](const GpuKernel* a, const GpuKernel* b) {
    if (a->launch_delay_ns() != b->launch_delay_ns()) return a->launch_delay_ns() > b->launch_delay_ns();
    if (a->batch != b->batch) return a->batch < b->batch;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->span_id < b->span_id;
  };
  const std::size_t n = std::min(top, ks.size());
  std::partial_sort(ks.begin(), ks.begin() + static_cast<std::ptrdiff_t>(n), ks.end(), by_delay);
  for (std::size_t i = 0; i < n; ++i) {
    const GpuKernel& k = *ks[i];
    RowBuilder row(t);
    row.set("batch", int_cell(k.batch))
        .set("layer_index", layer_index_cell(k.layer_index))
        .set("layer_name", layer_name(runs, k.layer_index, false))
        .set("kernel_name", std::string(k.name))
        .set("launch_api", std::string(k.launch_api))
        .set("launch_delay_us", static_cast<double>(k.launch_delay_ns()) / 1e3)
        .set("duration_us", static_cast<double>(k.duration_ns()) / 1e3);
    t.rows.push_back(row.take());
  }
  t.notes.push_back(
      "launch delay = kernel start − start of its launching API call (the KERNEL span's SYSTEM "
      "parent); batch = 0-based measured batch");
  return t;
}

Table a8_kernel_information(const EvaluationRecord& r, int b) { return a8_kernel_information(gpu_runs(r, b)); }
Table a10_kernels_by_name(const EvaluationRecord& r, int b) { return a10_kernels_by_name(gpu_runs(r, b)); }
Table a11_kernels_by_layer(const EvaluationRecord& r, int b) { return a11_kernels_by_layer(gpu_runs(r, b)); }
Table a13_gpu_vs_non_gpu(const EvaluationRecord& r, int b) { return a13_gpu_vs_non_gpu(gpu_runs(r, b)); }
Table kernel_launch_delay_top(const EvaluationRecord& r, int b, std::size_t top) {
  return kernel_launch_delay_top(gpu_runs(r, b), top);
}

// ---------------------------------------------------------------------------------------------------------
// Across batch sizes
// ---------------------------------------------------------------------------------------------------------

Table a15_kernels_by_model(GpuRunsCache& cache, const std::vector<int>& batch_sizes) {
  Table t = empty_table(table_spec("A15"));
  std::vector<int> missing;
  std::vector<std::pair<int, std::string>> model_notes, kernel_notes, counter_notes;
  PrecisionUse precisions;
  std::optional<std::string> ceilings_note;
  bool any_counters = false;
  std::vector<std::pair<int, std::vector<std::string>>> batch_notes;
  for_each_kernel_run(cache, batch_sizes, missing, [&](int b, const GpuRuns& runs) {
    const KernelTimeline& kt = runs.kernels;
    const std::size_t batches = kt.batches();
    std::vector<double> kernel_sum(batches, 0.0), busy(batches, 0.0);
    std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
    // Kernels are sorted by batch, so each batch is one contiguous run of them.
    for (std::size_t i = 0; i < kt.kernels.size();) {
      const std::size_t batch = kt.kernels[i].batch;
      intervals.clear();
      for (; i < kt.kernels.size() && kt.kernels[i].batch == batch; ++i) {
        kernel_sum[batch] += static_cast<double>(kt.kernels[i].duration_ns());
        intervals.emplace_back(kt.kernels[i].start_ns, kt.kernels[i].end_ns);
      }
      busy[batch] = static_cast<double>(union_length_ns(intervals));
    }
    const double per_batch = batches ? static_cast<double>(kt.kernels.size()) / static_cast<double>(batches) : 0;
    RowBuilder row(t);
    row.set("batch_size", static_cast<std::int64_t>(b))
        .set("model_latency_ms", ms_cell(runs.model_latency_ns))
        .set("kernel_latency_ms", ms_cell(trimmed_mean(kernel_sum)))
        .set("kernel_count", per_batch)
        .set("gpu_busy_ms", ms_cell(trimmed_mean(busy)));
    if (runs.has_counters()) {
      // The whole model: every kernel position of the counter run (SPEC §4 aggregation rules).
      CounterAggregate a;
      const auto latency = joined_latency(runs);
      for (const KernelCounters& k : runs.counters) {
        auto it = latency.find(&k);
        a.add(k.counters, it == latency.end() ? std::nullopt : std::optional<double>(it->second));
      }
      const CounterValues v = a.values();
      const RooflinePoint p = roofline_point(v, runs.ceilings, runs.compute_latency_ns);
      precisions.add(p);
      row.set("gflops", gflops_cell(p.flops))
          .set("dram_read_bytes", value_cell(v, hw::kDramReadBytes))
          .set("dram_write_bytes", value_cell(v, hw::kDramWriteBytes))
          .set("achieved_occupancy", value_cell(v, hw::kAchievedOccupancyPercent))
          .set("bound", bound_cell(p))
          .set("l2_bytes", value_cell(v, hw::kL2Bytes))
          .set("l1_bytes", value_cell(v, hw::kL1Bytes))
          .set("arithmetic_intensity", opt_cell(p.at(MemoryLevel::kDram).ai))
          .set("achieved_flops_per_s", opt_cell(p.achieved_flops_per_s))
          .set("precision", text_cell(p.precision));
      std::vector<std::string> cn = runs.counter_notes;
      if (a.unweighted() > 0)
        cn.push_back(std::to_string(a.unweighted()) +
                     " kernels of the counter run have no joined M/F/K latency: "
                     "left out of the latency-weighted occupancy");
      counter_notes.emplace_back(b, runs.counter_note);
      if (!cn.empty()) batch_notes.emplace_back(b, std::move(cn));
      if (!ceilings_note) ceilings_note = runs.ceilings_note;
      any_counters = true;
    } else {
      counter_notes.emplace_back(b, runs.counter_note);
    }
    t.rows.push_back(row.take());
    model_notes.emplace_back(b, runs.model_run ? runs.model_note : "no MODEL-level run: model latency unknown");
    kernel_notes.emplace_back(b, runs.kernel_note);
    if (!runs.notes.empty()) batch_notes.emplace_back(b, runs.notes);
  });
  add_run_notes(t, model_notes);
  add_run_notes(t, kernel_notes);
  add_missing_note(t, missing, !kernel_notes.empty());
  if (!kernel_notes.empty()) {
    t.notes.push_back(
        "kernel latency = trimmed mean over batches of the per-batch sum of durations; GPU busy = "
        "trimmed mean of the per-batch union of kernel intervals over all streams (overlap counted "
        "once); kernels / batch = occurrences / batches");
    t.notes.push_back(kGpuWork);
    add_run_notes(t, counter_notes);
    add_batch_notes(t, batch_notes);
    if (any_counters) {
      t.notes.push_back(*ceilings_note);
      if (!precisions.unmeasured.empty()) {
        std::string names;
        for (const auto& p : precisions.unmeasured) names += (names.empty() ? "" : ", ") + p;
        t.notes.push_back("no measured ceiling for precision " + names + ": bound empty");
      }
      t.notes.push_back(
          "counters summed over every kernel of the counter run, occupancy weighted by M/F/K latency, "
          "AI and achieved FLOP/s (FLOPs / per-batch compute-kernel latency) from the sums (SPEC §4)");
    }
  }
  return t;
}

Table gpu_idle_time(GpuRunsCache& cache, const std::vector<int>& batch_sizes) {
  Table t = empty_table(table_spec("gpu-idle"));
  std::vector<int> missing;
  std::vector<std::pair<int, std::string>> kernel_notes;
  std::vector<std::pair<int, std::vector<std::string>>> batch_notes;
  for_each_kernel_run(cache, batch_sizes, missing, [&](int b, const GpuRuns& runs) {
    const KernelTimeline& kt = runs.kernels;
    IdleBreakdown sum;
    std::vector<GpuInterval> intervals;
    std::size_t i = 0;
    for (std::size_t batch = 0; batch < kt.batches(); ++batch) {
      intervals.clear();
      for (; i < kt.kernels.size() && kt.kernels[i].batch == batch; ++i) {
        const GpuKernel& k = kt.kernels[i];
        intervals.push_back(
            {k.start_ns, k.end_ns, k.has_launch() ? std::optional<std::int64_t>(k.launch_start_ns) : std::nullopt});
      }
      const PredictWindow& w = kt.predicts[batch];
      const IdleBreakdown r = idle_breakdown(w.start_ns, w.end_ns, intervals);
      sum.window_ns += r.window_ns;
      sum.busy_ns += r.busy_ns;
      sum.idle_ns += r.idle_ns;
      sum.host_wait_ns += r.host_wait_ns;
      sum.launch_latency_ns += r.launch_latency_ns;
      sum.before_first_ns += r.before_first_ns;
      sum.after_last_ns += r.after_last_ns;
      sum.unattributed_ns += r.unattributed_ns;
    }
    const auto n = static_cast<double>(kt.batches());
    auto mean_ms = [&](std::int64_t v) { return n > 0 ? Cell{static_cast<double>(v) / n / 1e6} : Cell{}; };
    RowBuilder row(t);
    row.set("batch_size", static_cast<std::int64_t>(b))
        .set("predict_ms", mean_ms(sum.window_ns))
        .set("gpu_busy_ms", mean_ms(sum.busy_ns))
        .set("idle_ms", mean_ms(sum.idle_ns))
        .set("idle_percent", percent_cell(static_cast<double>(sum.idle_ns), static_cast<double>(sum.window_ns)))
        .set("host_wait_ms", mean_ms(sum.host_wait_ns))
        .set("launch_latency_ms", mean_ms(sum.launch_latency_ns))
        .set("before_first_kernel_ms", mean_ms(sum.before_first_ns))
        .set("after_last_kernel_ms", mean_ms(sum.after_last_ns))
        .set("unattributed_ms", mean_ms(sum.unattributed_ns));
    t.rows.push_back(row.take());
    kernel_notes.emplace_back(b, timeline_note(runs.kernel_note, "GPU timeline from"));
    std::vector<std::string> notes = runs.notes;
    if (kt.without_launch > 0) {
      notes.push_back(std::to_string(kt.without_launch) +
                      " kernels have no SYSTEM parent: gaps before them are unattributed");
    }
    if (!notes.empty()) batch_notes.emplace_back(b, std::move(notes));
  });
  add_run_notes(t, kernel_notes);
  add_missing_note(t, missing, !kernel_notes.empty());
  if (!kernel_notes.empty()) {
    t.notes.push_back(
        "per predict span of the M/F/K run (mean over its batches, so the parts add up): busy = union "
        "of GPU work on all streams; idle gaps are host-bound when the next kernel's launch call "
        "started after the GPU went idle, launch latency when it started before (after HTA's idle-time "
        "breakdown)");
    t.notes.push_back(kGpuWork);
    add_batch_notes(t, batch_notes);
  }
  return t;
}

Table kernel_launch_statistics(GpuRunsCache& cache, const std::vector<int>& batch_sizes) {
  Table t = empty_table(table_spec("launch-stats"));
  std::vector<int> missing;
  std::vector<std::pair<int, std::string>> kernel_notes;
  std::vector<std::pair<int, std::vector<std::string>>> batch_notes;
  for_each_kernel_run(cache, batch_sizes, missing, [&](int b, const GpuRuns& runs) {
    const KernelTimeline& kt = runs.kernels;
    std::vector<double> delays;
    std::vector<std::pair<SpanId, double>> calls;  // distinct launching calls (a graph launch starts many kernels)
    std::size_t under10 = 0, under2 = 0, in_layer = 0;
    delays.reserve(kt.kernels.size());
    for (const GpuKernel& k : kt.kernels) {
      if (k.has_launch()) {
        delays.push_back(static_cast<double>(k.launch_delay_ns()) / 1e3);
        calls.emplace_back(k.launch_span_id, static_cast<double>(k.launch_end_ns - k.launch_start_ns) / 1e3);
      }
      under10 += k.duration_ns() < 10'000;
      under2 += k.duration_ns() < 2'000;
      in_layer += k.layer_index != kNoLayer;  // a layer is a framework op, so the kernel has an op ancestor
    }
    std::sort(delays.begin(), delays.end());
    std::sort(calls.begin(), calls.end());
    calls.erase(
        std::unique(calls.begin(), calls.end(), [](const auto& a, const auto& c) { return a.first == c.first; }),
        calls.end());
    std::vector<double> api;
    api.reserve(calls.size());
    for (const auto& c : calls) api.push_back(c.second);
    std::sort(api.begin(), api.end());
    const auto batches = static_cast<double>(kt.batches());
    const auto total = static_cast<double>(kt.kernels.size());
    auto pct = [](const std::vector<double>& v, double p) {
      return v.empty() ? Cell{} : Cell{percentile_sorted(v, p)};
    };
    auto per_batch = [&](double v) { return batches > 0 ? Cell{v / batches} : Cell{}; };
    RowBuilder row(t);
    row.set("batch_size", static_cast<std::int64_t>(b))
        .set("launches_per_batch", per_batch(total))
        .set("launch_api_calls_per_batch", per_batch(static_cast<double>(calls.size())))
        .set("launch_delay_p50_us", pct(delays, 50))
        .set("launch_delay_p90_us", pct(delays, 90))
        .set("launch_delay_p99_us", pct(delays, 99))
        .set("launch_api_p50_us", pct(api, 50))
        .set("launch_api_p99_us", pct(api, 99))
        .set("kernels_under_10us", per_batch(static_cast<double>(under10)))
        .set("kernels_under_10us_percent", percent_cell(static_cast<double>(under10), total))
        .set("kernels_under_2us", per_batch(static_cast<double>(under2)))
        .set("kernels_under_2us_percent", percent_cell(static_cast<double>(under2), total))
        .set("with_framework_op_percent", percent_cell(static_cast<double>(in_layer), total));
    t.rows.push_back(row.take());
    kernel_notes.emplace_back(b, timeline_note(runs.kernel_note, "kernel launches from"));
    std::vector<std::string> notes = runs.notes;
    if (kt.without_launch > 0) {
      notes.push_back(std::to_string(kt.without_launch) + " of " + std::to_string(kt.kernels.size()) +
                      " kernels have no SYSTEM parent (launch call unknown): not in the delay and API percentiles");
    }
    if (kt.graph_launched > 0) {
      notes.push_back(std::to_string(kt.graph_launched) +
                      " kernels were replayed from CUDA graphs: their launch delay is measured from the graph launch");
    }
    if (!notes.empty()) batch_notes.emplace_back(b, std::move(notes));
  });
  add_run_notes(t, kernel_notes);
  add_missing_note(t, missing, !kernel_notes.empty());
  if (!kernel_notes.empty()) {
    t.notes.push_back(
        "launch delay = kernel start − start of its launching API call (the KERNEL span's SYSTEM "
        "parent), percentiles over all kernels of the measured batches; API = duration of the distinct "
        "launching calls; short-kernel shares are of all GPU work (after HTA's launch statistics)");
    t.notes.push_back(kGpuWork);
    add_batch_notes(t, batch_notes);
  }
  return t;
}

Table a15_kernels_by_model(const EvaluationRecord& record) {
  GpuRunsCache cache(record);
  return a15_kernels_by_model(cache, all_batches(record));
}
Table gpu_idle_time(const EvaluationRecord& record) {
  GpuRunsCache cache(record);
  return gpu_idle_time(cache, all_batches(record));
}
Table kernel_launch_statistics(const EvaluationRecord& record) {
  GpuRunsCache cache(record);
  return kernel_launch_statistics(cache, all_batches(record));
}

}  // namespace xsp
