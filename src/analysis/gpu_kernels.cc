// Kernel extraction and timeline arithmetic for the GPU analyses (SPEC §3, §4; docs/spans.md).
//
// Traces reach a million spans, so the placement of kernels is one memoised walk up the parent chains (each span
// resolved once), and the only super-linear steps are sorts of kernels and layers.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/profilers/hardware_counters.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

using detail::plural;

using detail::IdIndex;
using detail::kNoIndex;
using detail::kOnPath;
using detail::kUnresolved;

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
      if (detail::is_sample_span(s)) samples.push_back(static_cast<double>(s.duration_ns()));
    }
  }
  n = samples.size();
  return samples.empty() ? std::nan("") : trimmed_mean(std::move(samples));
}

}  // namespace

namespace {

// A span of the wanted level placed in a predict span (batch) and layer.
struct Placed {
  std::uint32_t pos;  // index into trace.spans
  std::size_t batch, layer_index;
};

struct Placement {
  std::vector<PredictWindow> predicts;
  LayerStats layers;
  std::vector<Placed> placed;
  std::size_t spans = 0;            // spans of the level
  std::size_t outside_predict = 0;  // of them, not under a predict span
};

// Places every span of `level` by walking its parent chain (memoised: each span is visited once; parent cycles
// and dangling ids end the walk). KERNEL spans reach their layer through the launching API call, HARDWARE spans
// directly (docs/spans.md); both stop at the first layer or predict span on the way up.
// `is_window` picks the MODEL spans that stand for the batches (predict spans, or the steps of a generation
// request); layers are seeded only for predict windows (a layer's parent is a predict span).
Placement place_spans(const Trace& trace, const IdIndex& ids, Level level,
                      const std::function<bool(const Span&)>& is_window = detail::is_sample_span) {
  const std::vector<Span>& spans = trace.spans;
  const std::size_t n = spans.size();
  if (n >= kOnPath) throw std::length_error("extract_kernels: trace too large");
  Placement out;

  // Predict spans in time order: their ordinal is the batch.
  std::vector<std::uint32_t> predict_pos;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (is_window(spans[i])) predict_pos.push_back(i);
  }
  std::sort(predict_pos.begin(), predict_pos.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (spans[a].start_ns != spans[b].start_ns) return spans[a].start_ns < spans[b].start_ns;
    return spans[a].id < spans[b].id;
  });

  // res[i]: the placement of span i (index into `places`), kNoIndex for "in no predict span". Predict and layer
  // spans are seeded; every other span inherits its parent's placement.
  struct Where {
    std::size_t batch;
    std::size_t layer_index;
  };
  std::vector<Where> places;
  std::vector<std::uint32_t> res(n, kUnresolved);
  out.predicts.reserve(predict_pos.size());
  for (std::uint32_t p : predict_pos) {
    res[p] = static_cast<std::uint32_t>(places.size());
    places.push_back({out.predicts.size(), kNoLayer});
    out.predicts.push_back({spans[p].id, spans[p].start_ns, spans[p].end_ns});
  }
  std::vector<Layer> layers;
  if (predict_pos.empty() || detail::is_sample_span(spans[predict_pos.front()])) layers = extract_layers(trace);
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
    if (spans[i].level != level) continue;
    ++out.spans;
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
    out.placed.push_back({i, places[result].batch, places[result].layer_index});
  }
  return out;
}

// docs/spans.md: "kind" = kernel|memcpy|memset; spans without the tag are judged by their name.
bool is_compute_kernel(const Span& s) {
  if (auto kind = s.tag("kind")) return *kind == "kernel";
  return s.name.rfind("Memcpy", 0) != 0 && s.name.rfind("Memset", 0) != 0;
}

}  // namespace

KernelTimeline extract_kernels(const Trace& trace) { return extract_kernels(trace, detail::is_sample_span); }

std::optional<InductorKernelName> parse_inductor_kernel_name(std::string_view name) {
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  if (auto paren = name.find('('); paren != std::string_view::npos) name = name.substr(0, paren);
  static constexpr std::pair<std::string_view, std::string_view> kPrefixes[] = {
      {"triton_poi_fused_", "pointwise"},
      {"triton_red_fused_", "reduction"},
      {"triton_per_fused_", "persistent reduction"},
      {"triton_tem_fused_", "template"},
      {"cpp_fused_", "C++"}};
  for (const auto& [prefix, kind] : kPrefixes) {
    if (name.rfind(prefix, 0) != 0) continue;
    std::string_view ops = name.substr(prefix.size());
    // The trailing counter: "_<digits>".
    const std::size_t last = ops.rfind('_');
    if (last == std::string_view::npos || last + 1 == ops.size()) return std::nullopt;
    for (std::size_t i = last + 1; i < ops.size(); ++i)
      if (ops[i] < '0' || ops[i] > '9') return std::nullopt;
    ops = ops.substr(0, last);
    if (ops.empty()) return std::nullopt;
    return InductorKernelName{std::string(kind), std::string(ops)};
  }
  return std::nullopt;
}

std::vector<std::size_t> detail::spans_per_window(const Trace& trace, Level level,
                                                  const std::function<bool(const Span&)>& is_window) {
  IdIndex ids(trace.spans);
  Placement pl = place_spans(trace, ids, level, is_window);
  std::vector<std::size_t> out(pl.predicts.size(), 0);
  for (const Placed& p : pl.placed) ++out[p.batch];
  return out;
}

KernelTimeline extract_kernels(const Trace& trace, const std::function<bool(const Span&)>& is_window) {
  const std::vector<Span>& spans = trace.spans;
  IdIndex ids(spans);
  Placement pl = place_spans(trace, ids, Level::kKernel, is_window);
  KernelTimeline out;
  out.predicts = std::move(pl.predicts);
  out.layers = std::move(pl.layers);
  out.kernel_spans = pl.spans;
  out.outside_predict = pl.outside_predict;
  out.kernels.reserve(pl.placed.size());
  std::unordered_map<std::uint64_t, std::uint32_t> launches;  // correlation id → SYSTEM span, built when needed
  for (const Placed& where : pl.placed) {
    const Span& s = spans[where.pos];
    GpuKernel& k = out.kernels.emplace_back();
    k.batch = where.batch;
    k.layer_index = where.layer_index;
    k.name = s.name;
    k.start_ns = s.start_ns;
    k.end_ns = s.end_ns;
    k.stream = s.track.id;
    k.span_id = s.id;
    k.compute = is_compute_kernel(s);
    // docs/spans.md: a KERNEL span's parent is the SYSTEM span of its launch (same correlation id), except for a
    // graph replay attributed to its capture's op: its launch (cudaGraphLaunch) is found by the correlation id.
    std::uint32_t p = ids.find(s.parent_id);
    if ((p == kNoIndex || spans[p].level != Level::kSystem) && s.correlation_id != 0) {
      if (launches.empty()) {
        for (std::uint32_t j = 0; j < spans.size(); ++j)
          if (spans[j].level == Level::kSystem && spans[j].correlation_id != 0)
            launches.try_emplace(spans[j].correlation_id, j);
      }
      if (const auto it = launches.find(s.correlation_id); it != launches.end()) p = it->second;
    }
    if (p != kNoIndex && spans[p].level == Level::kSystem) {
      k.launch_span_id = spans[p].id;
      k.launch_api = spans[p].name;
      k.launch_start_ns = spans[p].start_ns;
      k.launch_end_ns = spans[p].end_ns;
    } else {
      ++out.without_launch;
    }
    if (auto a = s.tag("attribution"); a && (*a == "graph-launch" || *a == "graph-node")) {
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
  std::vector<GpuKernel*> group;
  for (std::size_t i = 0; i < out.kernels.size(); ++i) {
    const bool same_group = i > 0 && out.kernels[i - 1].batch == out.kernels[i].batch &&
                            out.kernels[i - 1].layer_index == out.kernels[i].layer_index;
    out.kernels[i].kernel_index = same_group ? out.kernels[i - 1].kernel_index + 1 : 0;
    // Compute kernels of a finished group are numbered in launch order, the order in which the counter
    // profiler sees them (on several streams the device order can differ).
    if (!same_group) group.clear();
    if (out.kernels[i].compute) group.push_back(&out.kernels[i]);
    const bool group_ends = i + 1 == out.kernels.size() || out.kernels[i + 1].batch != out.kernels[i].batch ||
                            out.kernels[i + 1].layer_index != out.kernels[i].layer_index;
    if (group_ends) {
      std::stable_sort(group.begin(), group.end(), [](const GpuKernel* a, const GpuKernel* b) {
        const std::int64_t ta = a->has_launch() ? a->launch_start_ns : a->start_ns;
        const std::int64_t tb = b->has_launch() ? b->launch_start_ns : b->start_ns;
        return ta < tb;
      });
      for (std::size_t j = 0; j < group.size(); ++j) group[j]->compute_index = j;
    }
  }
  return out;
}

CounterTimeline extract_counters(const Trace& trace) {
  const std::vector<Span>& spans = trace.spans;
  IdIndex ids(spans);
  Placement pl = place_spans(trace, ids, Level::kHardware);
  CounterTimeline out;
  out.predicts = std::move(pl.predicts);
  out.layers = std::move(pl.layers);
  out.hardware_spans = pl.spans;
  out.outside_predict = pl.outside_predict;
  out.ranges.reserve(pl.placed.size());
  for (const Placed& where : pl.placed) {
    const Span& s = spans[where.pos];
    HardwareRange& r = out.ranges.emplace_back();
    r.batch = where.batch;
    r.layer_index = where.layer_index;
    r.name = s.name;
    r.start_ns = s.start_ns;
    r.span_id = s.id;
    if (auto ri = s.tag_int("range_index")) r.range_index = *ri;
    for (const Tag& t : s.tags) {
      if (t.key == "collection_note") {
        ++out.partial;
        if (out.first_collection_note.empty())
          out.first_collection_note = "span " + std::to_string(s.id) + " (" + s.name + "): " + t.value;
        continue;
      }
      if (hw::find_counter(t.key) == nullptr) continue;  // range_index, replay, ...
      double v = 0;
      const char* b = t.value.data();
      const char* e = b + t.value.size();
      const auto [p, ec] = std::from_chars(b, e, v);
      if (ec != std::errc() || p != e || !std::isfinite(v)) {
        ++out.unparsed_values;
        if (out.first_unparsed.empty())
          out.first_unparsed = "span " + std::to_string(s.id) + " (" + s.name + ") tag " + t.key + " = '" + t.value +
                               "' (expected a decimal number)";
        continue;
      }
      r.counters[t.key] = v;
    }
  }
  constexpr std::int64_t kNoRange = std::numeric_limits<std::int64_t>::max();
  std::sort(out.ranges.begin(), out.ranges.end(), [&](const HardwareRange& a, const HardwareRange& b) {
    if (a.batch != b.batch) return a.batch < b.batch;
    if (a.layer_index != b.layer_index) return a.layer_index < b.layer_index;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    const std::int64_t ra = a.range_index.value_or(kNoRange), rb = b.range_index.value_or(kNoRange);
    if (ra != rb) return ra < rb;
    return a.span_id < b.span_id;
  });
  for (std::size_t i = 0; i < out.ranges.size(); ++i) {
    const bool same_group = i > 0 && out.ranges[i - 1].batch == out.ranges[i].batch &&
                            out.ranges[i - 1].layer_index == out.ranges[i].layer_index;
    out.ranges[i].kernel_index = same_group ? out.ranges[i - 1].kernel_index + 1 : 0;
  }
  return out;
}

std::vector<KernelCounters> counters_by_occurrence(const CounterTimeline& timeline, std::size_t* renamed) {
  std::vector<KernelCounters> occ;
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> at;
  std::vector<std::map<std::string, std::pair<double, std::size_t>>> sums;  // counter -> (sum, n)
  std::size_t diff = 0;
  for (const HardwareRange& r : timeline.ranges) {
    auto [it, fresh] = at.emplace(std::make_pair(r.layer_index, r.kernel_index), occ.size());
    if (fresh) {
      occ.push_back({r.layer_index, r.kernel_index, r.name, {}, 0});
      sums.emplace_back();
    }
    KernelCounters& o = occ[it->second];
    if (o.name != r.name) ++diff;
    ++o.samples;
    for (const auto& [name, v] : r.counters) {
      auto& s = sums[it->second][name];
      s.first += v;
      ++s.second;
    }
  }
  for (std::size_t i = 0; i < occ.size(); ++i)
    for (const auto& [name, s] : sums[i]) occ[i].counters[name] = s.first / static_cast<double>(s.second);
  std::sort(occ.begin(), occ.end(), [](const KernelCounters& a, const KernelCounters& b) {
    return a.layer_index != b.layer_index ? a.layer_index < b.layer_index : a.kernel_index < b.kernel_index;
  });
  if (renamed != nullptr) *renamed = diff;
  return occ;
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

namespace {

// GpuRuns::occurrences, compute_latency_by_layer and compute_latency_ns from the M/F/K run's kernels.
void kernel_occurrences(GpuRuns& r) {
  const KernelTimeline& kt = r.kernels;
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> at;
  std::vector<std::vector<double>> samples;
  for (const GpuKernel& k : kt.kernels) {
    auto [it, fresh] = at.emplace(std::make_pair(k.layer_index, k.kernel_index), r.occurrences.size());
    if (fresh) {
      KernelOccurrence o;
      o.layer_index = k.layer_index;
      o.kernel_index = k.kernel_index;
      o.compute_index = k.compute_index;
      o.name = k.name;
      r.occurrences.push_back(o);
      samples.emplace_back();
    }
    if (r.occurrences[it->second].name != k.name) ++r.renamed;
    samples[it->second].push_back(static_cast<double>(k.duration_ns()));
  }
  for (std::size_t i = 0; i < r.occurrences.size(); ++i) {
    r.occurrences[i].samples = samples[i].size();
    r.occurrences[i].latency_ns = trimmed_mean(std::move(samples[i]));
  }
  std::sort(r.occurrences.begin(), r.occurrences.end(), [](const KernelOccurrence& a, const KernelOccurrence& b) {
    return a.layer_index != b.layer_index ? a.layer_index < b.layer_index : a.kernel_index < b.kernel_index;
  });

  // Per-batch sums of compute-kernel latency per layer slot (kNoLayer -> the last slot) and over the model.
  std::size_t layers = std::max(r.layers.layers.size(), kt.layers.layers.size());
  for (const GpuKernel& k : kt.kernels)
    if (k.layer_index != kNoLayer) layers = std::max(layers, k.layer_index + 1);
  std::vector<std::vector<double>> per_batch(layers + 1, std::vector<double>(kt.batches(), 0.0));
  std::vector<double> model(kt.batches(), 0.0);
  for (const GpuKernel& k : kt.kernels) {
    if (!k.compute) continue;
    const std::size_t slot = k.layer_index == kNoLayer ? layers : k.layer_index;
    per_batch[slot][k.batch] += static_cast<double>(k.duration_ns());
    model[k.batch] += static_cast<double>(k.duration_ns());
  }
  r.compute_latency_by_layer.reserve(layers + 1);
  for (auto& v : per_batch) r.compute_latency_by_layer.push_back(trimmed_mean(std::move(v)));
  r.compute_latency_ns = trimmed_mean(std::move(model));
}

std::string position(std::size_t layer, std::size_t kernel) {
  return (layer == kNoLayer ? std::string("outside layers") : "layer " + std::to_string(layer)) + " kernel " +
         std::to_string(kernel);
}

// The counter run of the batch size, placed and joined to the M/F/K run's compute kernels by position; a position
// whose names disagree is not joined (a shifted kernel sequence would otherwise pair every later kernel with its
// neighbour's counters).
void join_counters(const EvaluationRecord& record, GpuRuns& r) {
  r.counter_run = record.run_for_level(r.batch_size, Level::kHardware);
  if (!r.counter_run) {
    r.counter_note = kNoCounterRun;
    return;
  }
  r.counter_timeline = extract_counters(r.counter_run->trace);
  const CounterTimeline& ct = r.counter_timeline;
  std::size_t renamed = 0;
  r.counters = counters_by_occurrence(ct, &renamed);
  // Batches that hold counters: with user replay (metric passes rotated over batches) only the first pass's batch
  // carries HARDWARE spans, however many batches the run had.
  std::set<std::size_t> counted_batches;
  for (const auto& range : ct.ranges) counted_batches.insert(range.batch);
  r.counter_note = "counters from the counter run (trace level " + std::string(to_string(r.counter_run->trace_level)) +
                   "), " + plural(counted_batches.size(), "batch", "batches") + " with counters" +
                   (counted_batches.size() > 1 ? ", averaged per kernel" : "") +
                   "; its timings are never used (SPEC §3): latencies, achieved FLOP/s and occupancy weights come "
                   "from the M/F/K run";
  auto& notes = r.counter_notes;
  if (r.counter_run == r.kernel_run)
    notes.push_back(
        "the counter run is also the run kernel latencies come from (no separate M/F/K run): kernel "
        "replay distorts those latencies; evaluate with --leveled");
  if (ct.hardware_spans == 0) notes.push_back("the counter run has no HARDWARE spans: no counters to show");
  if (ct.outside_predict > 0)
    notes.push_back(std::to_string(ct.outside_predict) + " of " + std::to_string(ct.hardware_spans) +
                    " HARDWARE spans are not under a predict span; they are not counted");
  if (ct.unparsed_values > 0)
    notes.push_back(std::to_string(ct.unparsed_values) +
                    " counter values are not numbers and were left out (first: " + ct.first_unparsed + ")");
  if (ct.partial > 0)
    notes.push_back(std::to_string(ct.partial) + " HARDWARE spans carry a collection note (partial values; first: " +
                    ct.first_collection_note + ")");
  if (renamed > 0)
    notes.push_back(std::to_string(renamed) +
                    " HARDWARE spans of later counter-run batches differ in name from the "
                    "first batch's at the same position; values are averaged by position");
  // Layer sequences of the counter and M/F/K runs: positions are only comparable when the layers agree.
  if (r.counter_run != r.kernel_run) {
    const auto& c = ct.layers.layers;
    const auto& k = r.kernels.layers.layers;
    for (std::size_t i = 0; i < std::max(c.size(), k.size()); ++i) {
      if (i >= c.size() || i >= k.size() || c[i].type != k[i].type) {
        notes.push_back(i < std::min(c.size(), k.size())
                            ? "the counter and M/F/K runs differ in layer types: first difference at layer index " +
                                  std::to_string(i) + " (" + c[i].type + " in the counter run, " + k[i].type +
                                  " in M/F/K)"
                            : "the counter run has " + plural(c.size(), "layer", "layers") + " and the M/F/K run " +
                                  std::to_string(k.size()));
        break;
      }
    }
  }

  std::map<std::pair<std::size_t, std::size_t>, const KernelCounters*> by_position;
  for (const KernelCounters& kc : r.counters) by_position.emplace(std::make_pair(kc.layer_index, kc.kernel_index), &kc);
  std::set<const KernelCounters*> used;
  std::size_t compute = 0, missing = 0;
  std::string first_mismatch, first_missing;
  for (KernelOccurrence& o : r.occurrences) {
    if (o.compute_index == kNoKernelIndex) continue;
    ++compute;
    auto it = by_position.find({o.layer_index, o.compute_index});
    if (it == by_position.end()) {
      if (++missing == 1) first_missing = position(o.layer_index, o.compute_index) + " (" + std::string(o.name) + ")";
      continue;
    }
    used.insert(it->second);
    if (it->second->name != o.name) {
      if (++r.name_mismatches == 1)
        first_mismatch = position(o.layer_index, o.compute_index) + ": '" + std::string(o.name) + "' in M/F/K, '" +
                         std::string(it->second->name) + "' in the counter run";
      continue;
    }
    o.counters = it->second;
    ++r.joined;
  }
  if (r.name_mismatches > 0)
    notes.push_back(std::to_string(r.name_mismatches) + " of " + std::to_string(compute) +
                    " compute-kernel positions have a different kernel name in the counter run than in the M/F/K run "
                    "(first: " +
                    first_mismatch + "); they are not joined and their counter columns are empty");
  if (missing > 0)
    notes.push_back(std::to_string(missing) + " of " + std::to_string(compute) +
                    " compute-kernel positions of the M/F/K run have no HARDWARE span at the same position (first: " +
                    first_missing + "); their counter columns are empty");
  const std::size_t orphans = r.counters.size() - used.size();
  if (orphans > 0)
    notes.push_back(std::to_string(orphans) +
                    " kernel positions of the counter run have no compute kernel at the same "
                    "position in the M/F/K run; they count in the layer and model sums (A12, A14, A15) but in no "
                    "kernel row, and without a latency they are left out of occupancy means");
}

}  // namespace

GpuRuns gpu_runs(const EvaluationRecord& record, int batch_size, const MachineCeilings* ceilings,
                 const std::string& ceilings_note) {
  GpuRuns r;
  r.batch_size = batch_size;
  r.ceilings = ceilings;
  if (!ceilings_note.empty())
    r.ceilings_note = ceilings_note;
  else if (ceilings != nullptr)
    r.ceilings_note =
        "ceilings of " + ceilings->gpu_name + " on host " + ceilings->hostname + ", measured " + ceilings->measured_at;
  else
    r.ceilings_note = no_ceilings_note(evaluation_machine(record));
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
        note = "the M/F and M/F/K runs differ in layer types: first difference at layer index " + std::to_string(diff) +
               " (" + f[diff].type + " in M/F, " + k[diff].type + " in M/F/K)";
      } else {
        note =
            "the M/F run has " + plural(f.size(), "layer", "layers") + " and the M/F/K run " + std::to_string(k.size());
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
  kernel_occurrences(r);
  join_counters(record, r);
  return r;
}

void GpuRunsCache::set_ceilings(std::optional<MachineCeilings> ceilings, std::string note) {
  ceilings_ = std::move(ceilings);
  ceilings_note_ = std::move(note);
  runs_.clear();  // runs made before point at the old ceilings
}

const GpuRuns& GpuRunsCache::get(int batch_size) {
  auto it = runs_.find(batch_size);
  if (it == runs_.end())
    it = runs_.emplace(batch_size, std::make_unique<GpuRuns>(gpu_runs(record_, batch_size, ceilings(), ceilings_note_)))
             .first;
  return *it->second;
}

}  // namespace xsp
