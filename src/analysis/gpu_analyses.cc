// GPU analyses A8, A10, A11, A13, A15 (SPEC §4), GPU idle time and kernel launch statistics (HTA), and their
// dispatch for run_analyses().
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

constexpr const char* kNoCounters =
    "hardware counters were not collected (no HARDWARE-level counter run): the counter columns are empty";
constexpr const char* kGpuWork =
    "GPU work = every KERNEL-level span (kernels, memcpy, memset), placed in layers through its launching API call";

Cell int_cell(std::size_t v) { return Cell{static_cast<std::int64_t>(v)}; }
Cell ms_cell(double ns) { return std::isfinite(ns) ? Cell{ns / 1e6} : Cell{}; }
Cell percent_cell(double part, double total) {
  return std::isfinite(part) && std::isfinite(total) && total > 0 ? Cell{100.0 * part / total} : Cell{};
}

std::string suffix(int batch_size) { return " (batch size " + std::to_string(batch_size) + ")"; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Title and columns of each analysis; shared by filled and empty tables.
Table skeleton(const std::string& id) {
  Table t;
  t.id = id;
  if (id == "A8") {
    t.title = "Kernel information";
    t.columns = {{"layer_index", "layer"},
                 {"kernel_index", "kernel"},
                 {"layer_name", "layer name"},
                 {"kernel_name", "kernel name"},
                 {"latency_ms", "latency (ms)"},
                 {"gflops", "GFLOPs"},
                 {"dram_read_bytes", "DRAM read (B)"},
                 {"dram_write_bytes", "DRAM write (B)"},
                 {"achieved_occupancy", "occupancy"},
                 {"arithmetic_intensity", "AI (FLOP/B)"},
                 {"achieved_flops_per_s", "FLOP/s"},
                 {"bound", "bound"}};
  } else if (id == "A10") {
    t.title = "Kernels by name";
    t.columns = {{"kernel_name", "kernel name"},
                 {"count", "count / batch"},
                 {"total_latency_ms", "total (ms / batch)"},
                 {"mean_latency_us", "mean (µs)"},
                 {"percent_of_model_latency", "% of model"},
                 {"percent_of_kernel_time", "% of kernels"}};
    t.bar_column = 2;
  } else if (id == "A11") {
    t.title = "Kernels by layer";
    t.columns = {{"layer_index", "layer"},
                 {"layer_name", "name"},
                 {"layer_type", "type"},
                 {"kernel_count", "kernels / batch"},
                 {"kernel_latency_ms", "kernels (ms)"},
                 {"layer_latency_ms", "layer (ms)"},
                 {"gpu_percent", "GPU %"}};
  } else if (id == "A13") {
    t.title = "GPU vs non-GPU latency per layer";
    t.columns = {{"layer_index", "layer"},
                 {"layer_name", "name"},
                 {"layer_latency_ms", "layer (ms)"},
                 {"gpu_latency_ms", "GPU (ms)"},
                 {"non_gpu_latency_ms", "non-GPU (ms)"}};
    t.bar_column = 4;
  } else if (id == "A15") {
    t.title = "Kernels by model";
    t.columns = {{"batch_size", "batch"},
                 {"model_latency_ms", "model (ms)"},
                 {"kernel_latency_ms", "kernels (ms)"},
                 {"kernel_count", "kernels / batch"},
                 {"gpu_busy_ms", "GPU busy (ms)"},
                 {"gflops", "GFLOPs"},
                 {"dram_read_bytes", "DRAM read (B)"},
                 {"dram_write_bytes", "DRAM write (B)"},
                 {"achieved_occupancy", "occupancy"},
                 {"bound", "bound"}};
  } else if (id == "gpu-idle") {
    t.title = "GPU idle time";
    t.columns = {{"batch_size", "batch"},
                 {"predict_ms", "predict (ms)"},
                 {"gpu_busy_ms", "busy (ms)"},
                 {"idle_ms", "idle (ms)"},
                 {"idle_percent", "idle %"},
                 {"host_wait_ms", "host-bound (ms)"},
                 {"launch_latency_ms", "launch latency (ms)"},
                 {"before_first_kernel_ms", "before first (ms)"},
                 {"after_last_kernel_ms", "after last (ms)"},
                 {"unattributed_ms", "unattributed (ms)"}};
    t.bar_column = 4;
  } else if (id == "launch-stats") {
    t.title = "Kernel launch statistics";
    t.columns = {{"batch_size", "batch"},
                 {"launches_per_batch", "kernels / batch"},
                 {"launch_api_calls_per_batch", "launch calls / batch"},
                 {"launch_delay_p50_us", "delay p50 (µs)"},
                 {"launch_delay_p90_us", "delay p90 (µs)"},
                 {"launch_delay_p99_us", "delay p99 (µs)"},
                 {"launch_api_p50_us", "API p50 (µs)"},
                 {"launch_api_p99_us", "API p99 (µs)"},
                 {"kernels_under_10us", "<10 µs / batch"},
                 {"kernels_under_10us_percent", "<10 µs %"},
                 {"kernels_under_2us", "<2 µs / batch"},
                 {"kernels_under_2us_percent", "<2 µs %"},
                 {"with_framework_op_percent", "under an op %"}};
  } else if (id == "launch-top") {
    t.id = "launch-stats";
    t.title = "Kernels with the largest launch delay";
    t.columns = {{"batch", "batch"},
                 {"layer_index", "layer"},
                 {"layer_name", "layer name"},
                 {"kernel_name", "kernel name"},
                 {"launch_api", "launch API"},
                 {"launch_delay_us", "delay (µs)"},
                 {"duration_us", "duration (µs)"}};
    t.bar_column = 5;
  } else {
    throw std::logic_error("gpu skeleton: unknown id " + id);
  }
  return t;
}

// A per-batch-size table: its skeleton with run and matching notes, or the empty table without a kernel run.
Table start(const std::string& id, const GpuRuns& runs, bool with_model, bool with_layers) {
  Table t = skeleton(id);
  t.title += suffix(runs.batch_size);
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
    if (runs.kernel_run) body(b, runs);
    else missing.push_back(b);
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

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Per batch size
// ---------------------------------------------------------------------------------------------------------

Table a8_kernel_information(const GpuRuns& runs) {
  Table t = start("A8", runs, false, false);
  if (!runs.kernel_run) return t;
  // Kernels come sorted by (batch, layer, start): group by (layer, kernel index) with one sample per batch.
  struct Occurrence {
    std::size_t layer_index, kernel_index;
    std::string_view name;
    std::vector<double> latencies;
  };
  std::vector<Occurrence> occ;
  std::unordered_map<std::size_t, std::vector<std::size_t>> by_layer;  // layer -> occ position by kernel index
  std::size_t renamed = 0;
  for (const GpuKernel& k : runs.kernels.kernels) {
    auto& slots = by_layer[k.layer_index];
    if (k.kernel_index >= slots.size()) {
      slots.push_back(occ.size());
      occ.push_back({k.layer_index, k.kernel_index, k.name, {}});
    }
    Occurrence& o = occ[slots[k.kernel_index]];
    if (o.name != k.name) ++renamed;
    o.latencies.push_back(static_cast<double>(k.duration_ns()));
  }
  std::sort(occ.begin(), occ.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.layer_index != b.layer_index ? a.layer_index < b.layer_index : a.kernel_index < b.kernel_index;
  });
  t.rows.reserve(occ.size());
  for (Occurrence& o : occ) {
    t.rows.push_back({layer_index_cell(o.layer_index), int_cell(o.kernel_index),
                      Cell{layer_name(runs, o.layer_index, false)}, Cell{std::string(o.name)},
                      ms_cell(trimmed_mean(std::move(o.latencies))), Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{},
                      Cell{}});
  }
  t.notes.push_back("one row per kernel occurrence (layer index, kernel index in the layer by start time); "
                    "latency is the trimmed mean over the batches that have it");
  if (renamed > 0) {
    t.notes.push_back(std::to_string(renamed) + " kernel occurrences have a different kernel name than in the first "
                      "batch at the same position (the kernel sequence varies between batches); the row shows the "
                      "first batch's name");
  }
  t.notes.push_back(kNoCounters);
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
    t.rows.push_back({Cell{std::string(r.name)}, Cell{static_cast<double>(r.agg->n) / static_cast<double>(batches)},
                      ms_cell(r.total_ns), Cell{r.agg->sum / static_cast<double>(r.agg->n) / 1e3},
                      percent_cell(r.total_ns, runs.model_latency_ns), percent_cell(r.total_ns, all)});
  }
  t.notes.push_back("count = occurrences / batches; total = trimmed mean over batches of the per-batch sum; "
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
    t.rows.push_back({outside ? Cell{} : int_cell(s), Cell{layer_name(runs, outside ? kNoLayer : s, true)},
                      Cell{outside ? std::string() : layer_type(runs, s)},
                      reached ? Cell{static_cast<double>(g.occurrences[s]) / batches} : Cell{}, ms_cell(gpu),
                      ms_cell(layer), percent_cell(gpu, layer)});
  }
  t.notes.push_back("kernels per batch = occurrences / batches; kernel latency = trimmed mean over batches of the "
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
    t.rows.push_back({int_cell(i), Cell{layer_name(runs, i, true)}, ms_cell(layer), ms_cell(gpu), ms_cell(non_gpu)});
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
    t.rows.push_back({int_cell(k.batch), layer_index_cell(k.layer_index), Cell{layer_name(runs, k.layer_index, false)},
                      Cell{std::string(k.name)}, Cell{std::string(k.launch_api)},
                      Cell{static_cast<double>(k.launch_delay_ns()) / 1e3},
                      Cell{static_cast<double>(k.duration_ns()) / 1e3}});
  }
  t.notes.push_back("launch delay = kernel start − start of its launching API call (the KERNEL span's SYSTEM "
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
  Table t = skeleton("A15");
  std::vector<int> missing;
  std::vector<std::pair<int, std::string>> model_notes, kernel_notes;
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
    t.rows.push_back({Cell{static_cast<std::int64_t>(b)}, ms_cell(runs.model_latency_ns),
                      ms_cell(trimmed_mean(kernel_sum)), Cell{per_batch}, ms_cell(trimmed_mean(busy)), Cell{}, Cell{},
                      Cell{}, Cell{}, Cell{}});
    model_notes.emplace_back(b, runs.model_run ? runs.model_note : "no MODEL-level run: model latency unknown");
    kernel_notes.emplace_back(b, runs.kernel_note);
    if (!runs.notes.empty()) batch_notes.emplace_back(b, runs.notes);
  });
  add_run_notes(t, model_notes);
  add_run_notes(t, kernel_notes);
  add_missing_note(t, missing, !kernel_notes.empty());
  if (!kernel_notes.empty()) {
    t.notes.push_back("kernel latency = trimmed mean over batches of the per-batch sum of durations; GPU busy = "
                      "trimmed mean of the per-batch union of kernel intervals over all streams (overlap counted "
                      "once); kernels / batch = occurrences / batches");
    t.notes.push_back(kGpuWork);
    add_batch_notes(t, batch_notes);
    t.notes.push_back(kNoCounters);
  }
  return t;
}

Table gpu_idle_time(GpuRunsCache& cache, const std::vector<int>& batch_sizes) {
  Table t = skeleton("gpu-idle");
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
        intervals.push_back({k.start_ns, k.end_ns,
                             k.has_launch() ? std::optional<std::int64_t>(k.launch_start_ns) : std::nullopt});
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
    t.rows.push_back({Cell{static_cast<std::int64_t>(b)}, mean_ms(sum.window_ns), mean_ms(sum.busy_ns),
                      mean_ms(sum.idle_ns),
                      percent_cell(static_cast<double>(sum.idle_ns), static_cast<double>(sum.window_ns)),
                      mean_ms(sum.host_wait_ns), mean_ms(sum.launch_latency_ns), mean_ms(sum.before_first_ns),
                      mean_ms(sum.after_last_ns), mean_ms(sum.unattributed_ns)});
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
    t.notes.push_back("per predict span of the M/F/K run (mean over its batches, so the parts add up): busy = union "
                      "of GPU work on all streams; idle gaps are host-bound when the next kernel's launch call "
                      "started after the GPU went idle, launch latency when it started before (after HTA's idle-time "
                      "breakdown)");
    t.notes.push_back(kGpuWork);
    add_batch_notes(t, batch_notes);
  }
  return t;
}

Table kernel_launch_statistics(GpuRunsCache& cache, const std::vector<int>& batch_sizes) {
  Table t = skeleton("launch-stats");
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
    calls.erase(std::unique(calls.begin(), calls.end(), [](const auto& a, const auto& c) { return a.first == c.first; }),
                calls.end());
    std::vector<double> api;
    api.reserve(calls.size());
    for (const auto& c : calls) api.push_back(c.second);
    std::sort(api.begin(), api.end());
    const auto batches = static_cast<double>(kt.batches());
    const auto total = static_cast<double>(kt.kernels.size());
    auto pct = [](const std::vector<double>& v, double p) { return v.empty() ? Cell{} : Cell{percentile_sorted(v, p)}; };
    auto per_batch = [&](double v) { return batches > 0 ? Cell{v / batches} : Cell{}; };
    t.rows.push_back({Cell{static_cast<std::int64_t>(b)}, per_batch(total),
                      per_batch(static_cast<double>(calls.size())), pct(delays, 50), pct(delays, 90), pct(delays, 99),
                      pct(api, 50), pct(api, 99), per_batch(static_cast<double>(under10)),
                      percent_cell(static_cast<double>(under10), total), per_batch(static_cast<double>(under2)),
                      percent_cell(static_cast<double>(under2), total),
                      percent_cell(static_cast<double>(in_layer), total)});
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
    t.notes.push_back("launch delay = kernel start − start of its launching API call (the KERNEL span's SYSTEM "
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

// ---------------------------------------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------------------------------------

const std::vector<std::string>& gpu_analysis_ids() {
  static const std::vector<std::string> ids = {"A8", "A10", "A11", "A13", "A15", "gpu-idle", "launch-stats"};
  return ids;
}

std::vector<Table> run_gpu_analysis(const std::string& id, const std::vector<int>& batch_sizes,
                                    GpuRunsCache& cache) {
  const std::string key = lower(id);
  std::vector<Table> out;
  using PerBatch = Table (*)(const GpuRuns&);
  PerBatch per_batch = nullptr;
  if (key == "a8") per_batch = a8_kernel_information;
  if (key == "a10") per_batch = a10_kernels_by_name;
  if (key == "a11") per_batch = a11_kernels_by_layer;
  if (key == "a13") per_batch = a13_gpu_vs_non_gpu;
  if (per_batch) {
    for (int b : batch_sizes) out.push_back(per_batch(cache.get(b)));
  } else if (key == "a15") {
    out.push_back(a15_kernels_by_model(cache, batch_sizes));
  } else if (key == "gpu-idle") {
    out.push_back(gpu_idle_time(cache, batch_sizes));
  } else if (key == "launch-stats") {
    out.push_back(kernel_launch_statistics(cache, batch_sizes));
    for (int b : batch_sizes) {
      const GpuRuns& runs = cache.get(b);
      if (runs.kernel_run) out.push_back(kernel_launch_delay_top(runs, 10));
    }
  } else {
    std::string msg = "unknown GPU analysis id '" + id + "'; valid ids:";
    for (const auto& v : gpu_analysis_ids()) msg += " " + v;
    throw std::invalid_argument(msg);
  }
  return out;
}

}  // namespace xsp
