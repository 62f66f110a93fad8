// Layer extraction and aggregation (SPEC §4 A2–A7 read FRAMEWORK spans; SPEC §3 trimmed mean across batches).
//
// Traces reach a million spans, so everything here is linear apart from one sort of the layers: span ids are
// resolved through a flat vector when they are dense (the recorder hands them out from 1 upwards), and parent
// chains are walked once with memoisation.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "internal.h"
#include "xsp/analysis/analyses.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

using detail::IdIndex;
using detail::kNoIndex;
using detail::kOnPath;
using detail::kUnresolved;

// States of the per-span "which layer am I under" memo.

struct LayerTags {
  std::string_view module, shapes;
  std::optional<std::int64_t> allocated_bytes;
};

LayerTags read_tags(const Span& s) {
  LayerTags t;
  for (const Tag& tag : s.tags) {
    if (tag.key == "module") {
      if (t.module.empty()) t.module = tag.value;
    } else if (tag.key == "shapes") {
      if (t.shapes.empty()) t.shapes = tag.value;
    } else if (tag.key == "allocated_bytes" && !t.allocated_bytes) {
      std::int64_t v = 0;
      const char* b = tag.value.data();
      const char* e = b + tag.value.size();
      auto [p, ec] = std::from_chars(b, e, v);
      if (ec == std::errc() && p == e) t.allocated_bytes = v;
    }
  }
  return t;
}

}  // namespace

std::vector<Layer> extract_layers(const Trace& trace, LayerExtractionReport* report) {
  const std::vector<Span>& spans = trace.spans;
  const std::size_t n = spans.size();
  if (n >= kOnPath) throw std::length_error("extract_layers: trace too large");
  IdIndex ids(spans);

  LayerExtractionReport rep;
  // top[i] for a FRAMEWORK span: the position of the layer it belongs to (itself for a layer), or kNoIndex.
  std::vector<std::uint32_t> top(n, kUnresolved);
  std::vector<std::uint32_t> path;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Span& s = spans[i];
    if (detail::is_sample_span(s)) ++rep.predict_spans;
    if (s.level != Level::kFramework) continue;
    ++rep.framework_spans;
    if (top[i] != kUnresolved) continue;
    path.clear();
    std::uint32_t cur = i;
    std::uint32_t result = kNoIndex;
    for (;;) {
      if (top[cur] != kUnresolved) {
        result = top[cur] == kOnPath ? kNoIndex : top[cur];
        break;
      }
      top[cur] = kOnPath;
      path.push_back(cur);
      const std::uint32_t p = ids.find(spans[cur].parent_id);
      if (p == kNoIndex) break;
      const Span& ps = spans[p];
      if (detail::is_sample_span(ps)) {
        result = cur;
        break;
      }
      if (ps.level != Level::kFramework) break;
      cur = p;
    }
    for (std::uint32_t k : path) top[k] = result;
  }

  // Collect layers with their sort key: predict span (start, id), then layer (start, id).
  struct Key {
    std::int64_t predict_start;
    SpanId predict_id;
    std::int64_t start;
    SpanId id;
    std::uint32_t pos;
  };
  std::vector<Key> keys;
  std::vector<std::uint32_t> nested(n, 0);
  // Predict spans whose layers ran as a CUDA graph replay.
  std::unordered_set<SpanId> replaying;
  for (std::uint32_t i = 0; i < n; ++i)
    if (top[i] == i && spans[i].tag("replayed_from") == "cuda-graph") replaying.insert(spans[i].parent_id);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (spans[i].level != Level::kFramework) continue;
    const std::uint32_t t = top[i];
    if (t == kNoIndex) {
      ++rep.outside_predict;
    } else if (t == i) {
      const Span& pr = spans[ids.find(spans[i].parent_id)];
      if (replaying.contains(pr.id) && spans[i].tag("replayed_from") != "cuda-graph") {
        ++rep.host_ops_beside_replays;
        continue;
      }
      keys.push_back({pr.start_ns, pr.id, spans[i].start_ns, spans[i].id, i});
    } else {
      ++nested[t];
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.predict_start != b.predict_start) return a.predict_start < b.predict_start;
    if (a.predict_id != b.predict_id) return a.predict_id < b.predict_id;
    if (a.start != b.start) return a.start < b.start;
    return a.id < b.id;
  });

  std::vector<Layer> layers;
  layers.reserve(keys.size());
  SpanId current_predict = kNoSpan;
  std::size_t index = 0;
  for (const Key& k : keys) {
    if (k.predict_id != current_predict) {
      current_predict = k.predict_id;
      index = 0;
    }
    const Span& s = spans[k.pos];
    const LayerTags tags = read_tags(s);
    Layer& l = layers.emplace_back();
    l.index = index++;
    l.type = s.name;
    l.name = tags.module.empty() ? s.name : std::string(tags.module);
    l.shapes = std::string(tags.shapes);
    l.latency_ns = s.duration_ns();
    l.allocated_bytes = tags.allocated_bytes;
    l.span_id = s.id;
    l.predict_span_id = k.predict_id;
    l.nested_ops = nested[k.pos];
  }
  if (report) *report = rep;
  return layers;
}

LayerStats aggregate_layers(const std::vector<Layer>& layers) {
  LayerStats out;
  std::vector<std::vector<double>> latencies;  // by index, one sample per batch
  std::vector<double> bytes_sum, nested_sum;
  std::vector<std::size_t> bytes_n;
  // The first batch is the reference sequence of layer types.
  std::size_t ref_begin = 0, ref_size = 0;
  bool have_ref = false;

  std::size_t i = 0;
  while (i < layers.size()) {
    std::size_t j = i;
    while (j < layers.size() && layers[j].predict_span_id == layers[i].predict_span_id) ++j;
    const std::size_t batch = out.batches++;
    const std::size_t size = j - i;
    if (!have_ref) {
      have_ref = true;
      ref_begin = i;
      ref_size = size;
    } else if (out.consistent) {
      bool same = size == ref_size;
      std::size_t first_diff = std::min(size, ref_size);
      for (std::size_t k = 0; same && k < size; ++k) {
        if (layers[i + k].type != layers[ref_begin + k].type) {
          same = false;
          first_diff = k;
        }
      }
      if (!same) {
        out.consistent = false;
        out.notes.push_back("batch " + std::to_string(batch) + " (predict span " +
                            std::to_string(layers[i].predict_span_id) + ") has a different sequence of layer types (" +
                            std::to_string(size) + " layers vs " + std::to_string(ref_size) +
                            " in batch 0, first difference at layer index " + std::to_string(first_diff) +
                            "): per-index values mix different layers");
      }
    }
    if (latencies.size() < size) {
      latencies.resize(size);
      bytes_sum.resize(size, 0.0);
      bytes_n.resize(size, 0);
      nested_sum.resize(size, 0.0);
      for (std::size_t k = out.layers.size(); k < size; ++k) {
        const Layer& l = layers[i + k];
        LayerStat& st = out.layers.emplace_back();
        st.index = k;
        st.name = l.name;
        st.type = l.type;
        st.shapes = l.shapes;
      }
    }
    for (std::size_t k = 0; k < size; ++k) {
      const Layer& l = layers[i + k];
      latencies[k].push_back(static_cast<double>(l.latency_ns));
      nested_sum[k] += static_cast<double>(l.nested_ops);
      if (l.allocated_bytes) {
        bytes_sum[k] += static_cast<double>(*l.allocated_bytes);
        ++bytes_n[k];
        out.any_allocated_bytes = true;
      }
    }
    i = j;
  }
  for (std::size_t k = 0; k < out.layers.size(); ++k) {
    LayerStat& st = out.layers[k];
    st.samples = latencies[k].size();
    st.latency_ns = trimmed_mean(std::move(latencies[k]));
    st.nested_ops = nested_sum[k] / static_cast<double>(st.samples);
    if (bytes_n[k] > 0) {
      st.allocated_bytes = static_cast<std::int64_t>(std::llround(bytes_sum[k] / static_cast<double>(bytes_n[k])));
    }
  }
  return out;
}

LayerStats layer_stats(const Trace& trace) {
  LayerExtractionReport rep;
  LayerStats stats = aggregate_layers(extract_layers(trace, &rep));
  if (rep.predict_spans > stats.batches) {
    stats.notes.push_back(std::to_string(rep.predict_spans - stats.batches) + " of " +
                          std::to_string(rep.predict_spans) +
                          " predict spans have no layers (lost FRAMEWORK spans?); they are not counted");
  }
  if (rep.outside_predict > 0) {
    stats.notes.push_back(std::to_string(rep.outside_predict) + " of " + std::to_string(rep.framework_spans) +
                          " FRAMEWORK spans are not under a predict span; they are not layers and not counted");
  }
  return stats;
}

}  // namespace xsp
