// Kernel extraction and timeline arithmetic for the GPU analyses (SPEC §3, §4; docs/spans.md).
//
// Traces reach a million spans, so the placement of kernels is one memoised walk up the parent chains (each span
// resolved once), and the only super-linear steps are sorts of kernels and layers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xsp/analysis/gpu_analyses.h"
#include "xsp/stats/stats.h"

#include "internal.h"

namespace xsp {
namespace {

using detail::IdIndex;
using detail::kNoIndex;

constexpr std::uint32_t kUnresolved = kNoIndex - 1;
constexpr std::uint32_t kOnPath = kNoIndex - 2;  // being resolved: meeting it again means a parent cycle


bool is_predict(const Span& s) { return s.level == Level::kModel && s.name == kStagePredict; }

// Where a span sits: its batch (predict ordinal) and layer index (kNoLayer directly under predict).
struct Placement {
  std::size_t batch;
  std::size_t layer_index;
};

// Trimmed mean of the run's predict latency (SPEC §3), from the stored summary when there is one; older or
// hand-made records fall back to the raw samples, then to the trace's predict spans. `n` gets the sample count.
double predict_latency_ns(const RunRecord& run, std::size_t& n) {
  auto it = run.stage_latency_ns.find(kStagePredict);
  if (it != run.stage_latency_ns.end() && it->second.n > 0) {
    n = it->second.n;
    return it->second.trimmed_mean;
  }
  std::vector<double> samples = run.predict_latency_ns;
  if (samples.empty()) {
    for (const Span& s : run.trace.spans) {
      if (is_predict(s)) samples.push_back(static_cast<double>(s.duration_ns()));
    }
  }
  n = samples.size();
  return samples.empty() ? std::nan("") : trimmed_mean(std::move(samples));
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

KernelTimeline extract_kernels(const Trace& trace) {
  const std::vector<Span>& spans = trace.spans;
  const std::size_t n = spans.size();
  if (n >= kOnPath) throw std::length_error("extract_kernels: trace too large");
  IdIndex ids(spans);
  KernelTimeline out;

  // Predict spans in time order: their ordinal is the batch.
  std::vector<std::uint32_t> predict_pos;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (is_predict(spans[i])) predict_pos.push_back(i);
  }
  std::sort(predict_pos.begin(), predict_pos.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (spans[a].start_ns != spans[b].start_ns) return spans[a].start_ns < spans[b].start_ns;
    return spans[a].id < spans[b].id;
  });

  // res[i]: the placement of span i (index into `places`), kNoIndex for "in no predict span". Predict and layer
  // spans are seeded; every other span inherits its parent's placement.
  std::vector<Placement> places;
  std::vector<std::uint32_t> res(n, kUnresolved);
  out.predicts.reserve(predict_pos.size());
  for (std::uint32_t p : predict_pos) {
    res[p] = static_cast<std::uint32_t>(places.size());
    places.push_back({out.predicts.size(), kNoLayer});
    out.predicts.push_back({spans[p].id, spans[p].start_ns, spans[p].end_ns});
  }
  std::vector<Layer> layers = extract_layers(trace);
  for (const Layer& l : layers) {
    const std::uint32_t pos = ids.find(l.span_id);
    const std::uint32_t pred = ids.find(l.predict_span_id);
    if (pos == kNoIndex || pred == kNoIndex || res[pred] >= kOnPath) continue;  // cannot happen for a well-formed id
    res[pos] = static_cast<std::uint32_t>(places.size());
    places.push_back({places[res[pred]].batch, l.index});
  }
  out.layers = aggregate_layers(layers);

  std::vector<std::uint32_t> path;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Span& s = spans[i];
    if (s.level != Level::kKernel) continue;
    ++out.kernel_spans;
    path.clear();
    std::uint32_t cur = i;
    std::uint32_t result = kNoIndex;
    for (;;) {
      if (res[cur] != kUnresolved) {
        result = res[cur] == kOnPath ? kNoIndex : res[cur];
        break;
      }
      res[cur] = kOnPath;
      path.push_back(cur);
      const std::uint32_t p = ids.find(spans[cur].parent_id);
      if (p == kNoIndex) break;
      cur = p;
    }
    for (std::uint32_t k : path) res[k] = result;
    if (result == kNoIndex) {
      ++out.outside_predict;
      continue;
    }
    GpuKernel& k = out.kernels.emplace_back();
    k.batch = places[result].batch;
    k.layer_index = places[result].layer_index;
    k.name = s.name;
    k.start_ns = s.start_ns;
    k.end_ns = s.end_ns;
    k.stream = s.thread_id;
    k.span_id = s.id;
    // docs/spans.md: a KERNEL span's parent is the SYSTEM span of its launch (same correlation id).
    const std::uint32_t p = ids.find(s.parent_id);
    if (p != kNoIndex && spans[p].level == Level::kSystem) {
      k.launch_span_id = spans[p].id;
      k.launch_api = spans[p].name;
      k.launch_start_ns = spans[p].start_ns;
      k.launch_end_ns = spans[p].end_ns;
    } else {
      ++out.without_launch;
    }
    if (auto a = s.tag("attribution"); a && *a == "graph-launch") {
      k.graph_launch = true;
      ++out.graph_launched;
    }
  }

  std::sort(out.kernels.begin(), out.kernels.end(), [](const GpuKernel& a, const GpuKernel& b) {
    if (a.batch != b.batch) return a.batch < b.batch;
    if (a.layer_index != b.layer_index) return a.layer_index < b.layer_index;  // kNoLayer sorts last
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.span_id < b.span_id;
  });
  for (std::size_t i = 0; i < out.kernels.size(); ++i) {
    const bool same_group = i > 0 && out.kernels[i - 1].batch == out.kernels[i].batch &&
                            out.kernels[i - 1].layer_index == out.kernels[i].layer_index;
    out.kernels[i].kernel_index = same_group ? out.kernels[i - 1].kernel_index + 1 : 0;
  }
  return out;
}

std::int64_t union_length_ns(std::vector<std::pair<std::int64_t, std::int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::int64_t total = 0;
  bool open = false;
  std::int64_t seg_start = 0, seg_end = 0;
  for (const auto& [s, e] : intervals) {
    if (e <= s) continue;
    if (!open || s > seg_end) {
      if (open) total += seg_end - seg_start;
      seg_start = s;
      seg_end = e;
      open = true;
    } else {
      seg_end = std::max(seg_end, e);
    }
  }
  if (open) total += seg_end - seg_start;
  return total;
}

IdleBreakdown idle_breakdown(std::int64_t window_start_ns, std::int64_t window_end_ns,
                             std::vector<GpuInterval> kernels) {
  IdleBreakdown r;
  if (window_end_ns <= window_start_ns) return r;
  r.window_ns = window_end_ns - window_start_ns;
  // Clip to the window: only GPU time inside the predict span is being broken down.
  std::erase_if(kernels, [&](GpuInterval& k) {
    k.start_ns = std::max(k.start_ns, window_start_ns);
    k.end_ns = std::min(k.end_ns, window_end_ns);
    return k.end_ns <= k.start_ns;
  });
  // Among kernels starting at the same time, the earliest-launched first: it is the one the gap waited for.
  std::sort(kernels.begin(), kernels.end(), [](const GpuInterval& a, const GpuInterval& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.launch_start_ns.has_value() != b.launch_start_ns.has_value()) return a.launch_start_ns.has_value();
    return a.launch_start_ns.value_or(0) < b.launch_start_ns.value_or(0);
  });
  if (kernels.empty()) {
    r.idle_ns = r.unattributed_ns = r.window_ns;
    return r;
  }
  r.before_first_ns = kernels.front().start_ns - window_start_ns;
  std::int64_t busy_until = kernels.front().end_ns;  // end of all work seen so far (the GPU's idle point)
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    const GpuInterval& k = kernels[i];
    if (k.start_ns > busy_until) {
      const std::int64_t gap = k.start_ns - busy_until;
      ++r.gaps;
      if (!k.launch_start_ns) {
        r.unattributed_ns += gap;
      } else if (*k.launch_start_ns >= busy_until) {
        r.host_wait_ns += gap;  // the host had not even called the launch when the GPU ran dry
      } else {
        r.launch_latency_ns += gap;  // launched in time, still started late
      }
    }
    busy_until = std::max(busy_until, k.end_ns);
  }
  r.after_last_ns = window_end_ns - busy_until;
  r.idle_ns = r.before_first_ns + r.after_last_ns + r.host_wait_ns + r.launch_latency_ns + r.unattributed_ns;
  r.busy_ns = r.window_ns - r.idle_ns;
  return r;
}

GpuRuns gpu_runs(const EvaluationRecord& record, int batch_size) {
  GpuRuns r;
  r.batch_size = batch_size;
  r.kernel_run = record.run_for_level(batch_size, Level::kKernel);
  if (!r.kernel_run) return r;
  r.model_run = record.run_for_level(batch_size, Level::kModel);
  r.framework_run = record.run_for_level(batch_size, Level::kFramework);
  r.kernels = extract_kernels(r.kernel_run->trace);
  // Without a separate M/F run, run_for_level() hands back the kernel run itself: reuse its layers.
  r.layers = r.framework_run == r.kernel_run ? r.kernels.layers : layer_stats(r.framework_run->trace);

  std::size_t model_n = 0;
  r.model_latency_ns = r.model_run ? predict_latency_ns(*r.model_run, model_n) : std::nan("");
  if (r.model_run) r.model_note = "model " + run_note(*r.model_run, Level::kModel, model_n);
  r.layer_note = "layer " + run_note(*r.framework_run, Level::kFramework, r.layers.batches);
  r.kernel_note = "kernel " + run_note(*r.kernel_run, Level::kKernel, r.kernels.batches());

  // Layers are paired by index (same model, same op sequence); say so when the two runs disagree.
  if (r.framework_run != r.kernel_run) {
    const auto& f = r.layers.layers;
    const auto& k = r.kernels.layers.layers;
    std::size_t diff = std::min(f.size(), k.size());
    for (std::size_t i = 0; i < std::min(f.size(), k.size()); ++i) {
      if (f[i].type != k[i].type) {
        diff = i;
        break;
      }
    }
    if (diff < f.size() || diff < k.size()) {
      std::string note;
      if (diff < std::min(f.size(), k.size())) {
        note = "the M/F and M/F/K runs differ in layer types: first difference at layer index " +
               std::to_string(diff) + " (" + f[diff].type + " in M/F, " + k[diff].type + " in M/F/K)";
      } else {
        note = "the M/F run has " + plural(f.size(), "layer", "layers") + " and the M/F/K run " +
               std::to_string(k.size());
      }
      r.notes.push_back(note + ": layers are matched by index, so some rows pair different layers");
    }
    for (const std::string& s : r.layers.notes) r.notes.push_back("M/F run: " + s);
  }
  for (const std::string& s : r.kernels.layers.notes) r.notes.push_back("M/F/K run: " + s);

  if (r.kernels.outside_predict > 0) {
    r.notes.push_back(std::to_string(r.kernels.outside_predict) + " of " + std::to_string(r.kernels.kernel_spans) +
                      " KERNEL spans are not under a predict span (unparented, or outside the measured batches); "
                      "they are not counted");
  }
  std::vector<bool> has_kernel(r.kernels.batches(), false);
  for (const GpuKernel& k : r.kernels.kernels) has_kernel[k.batch] = true;
  const auto empty = static_cast<std::size_t>(std::count(has_kernel.begin(), has_kernel.end(), false));
  if (empty > 0) {
    r.notes.push_back(std::to_string(empty) + " of " + std::to_string(r.kernels.batches()) +
                      " predict spans of the M/F/K run have no GPU work (lost CUPTI records?); they count as "
                      "batches with zero kernel time");
  }
  return r;
}

const GpuRuns& GpuRunsCache::get(int batch_size) {
  auto it = runs_.find(batch_size);
  if (it == runs_.end()) it = runs_.emplace(batch_size, std::make_unique<GpuRuns>(gpu_runs(record_, batch_size))).first;
  return *it->second;
}

}  // namespace xsp
