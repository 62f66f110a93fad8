#include "xsp/trace/assembler.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "id_index.h"
#include "xsp/trace/graph_replay.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {

namespace {

using trace_internal::IdIndex;
using trace_internal::kNotFound;

/// What the sweeps need of a span, packed so that sorting a million of them stays in cache-friendly memory.
struct Key {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint64_t group;   // track id for containment, correlation_id for correlation
  std::uint32_t device;  // track device for containment (Track::kHost for host threads), 0 for correlation
  SpanId id;
  std::uint32_t index;
  std::uint8_t level;
  bool placed;  // already has a parent, so only a candidate parent for others
};

std::uint8_t level_of(const Span& s) { return static_cast<std::uint8_t>(s.level); }

/// Sorts `spans` into the stable output order (start, level, -end, id) on packed keys, applied as one permutation so
/// that spans move only once. `keys` hold one entry per span with its position, rebuilt here when spans were added
/// since they were made (the graph replay pass appends).
void put_in_order(std::vector<Span>& spans, std::vector<Key>& keys) {
  if (spans.size() != keys.size()) {
    keys.clear();
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Span& s = spans[i];
      keys.push_back({s.start_ns, s.end_ns, 0, 0, s.id, static_cast<std::uint32_t>(i), level_of(s), true});
    }
  }

  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.level != b.level) return a.level < b.level;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    return a.id < b.id;
  });
  bool in_order = true;
  for (std::size_t i = 0; i < keys.size() && in_order; ++i) in_order = keys[i].index == i;
  if (!in_order) {
    std::vector<Span> sorted;
    sorted.reserve(spans.size());
    for (const Key& key : keys) sorted.push_back(std::move(spans[key.index]));
    spans = std::move(sorted);
  }
}

}  // namespace

AssemblyReport assemble(Trace& trace) {
  std::vector<Span>& spans = trace.spans;
  AssemblyReport report;

  std::uint64_t negative = 0;
  for (Span& s : spans) {
    if (s.end_ns < s.start_ns) {
      s.end_ns = s.start_ns;
      ++negative;
    }
  }
  if (negative > 0) trace.counters[stat::kAssemblerNegativeDuration] += negative;

  const IdIndex ids(spans);

  // (a) context. Parents set by an earlier assemble() are derived, not known from context: they are cleared
  // and derived again, so assembling twice gives the same result.
  for (Span& s : spans) {
    if (s.parent_rule == ParentRule::kCorrelation || s.parent_rule == ParentRule::kContainment) {
      s.parent_id = kNoSpan;
      s.parent_rule = ParentRule::kNone;
    }
    if (s.parent_id == kNoSpan) {
      s.parent_rule = ParentRule::kNone;
      continue;
    }
    // A span naming itself as parent would make a cycle: as good as absent.
    if (s.parent_id == s.id || ids.find(s.parent_id) == kNotFound) {
      ++report.dangling_parent_ids;
      s.parent_id = kNoSpan;
      s.parent_rule = ParentRule::kNone;
      continue;
    }
    s.parent_rule = ParentRule::kContext;
    ++report.by_context;
  }

  // Parents found by (b) and (c), by index into spans. The sweeps write here rather than into the spans so that
  // their random accesses stay within two small arrays; the spans are updated in one sequential pass.
  std::vector<SpanId> derived_parent(spans.size(), kNoSpan);
  std::vector<ParentRule> derived_rule(spans.size(), ParentRule::kNone);

  std::vector<Key> keys;
  keys.reserve(spans.size());

  // (b) correlation: within each correlation id, the shallowest span (earliest, then smallest id, among
  // equals) parents every unplaced span of a deeper level.
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (s.correlation_id != 0) {
      keys.push_back({s.start_ns, s.end_ns, s.correlation_id, 0, s.id, static_cast<std::uint32_t>(i), level_of(s),
                      s.parent_id != kNoSpan});
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.group != b.group) return a.group < b.group;
    if (a.level != b.level) return a.level < b.level;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.id < b.id;
  });
  for (auto group = keys.begin(); group != keys.end();) {
    const auto group_end = std::find_if(group, keys.end(), [&](const Key& k) { return k.group != group->group; });
    const Key& head = *group;
    for (auto k = group + 1; k != group_end; ++k) {
      if (!k->placed && k->level > head.level) {
        derived_parent[k->index] = head.id;
        derived_rule[k->index] = ParentRule::kCorrelation;
        ++report.by_correlation;
      }
    }
    group = group_end;
  }

  // (c) containment: one sweep per thread in (start asc, level asc, end desc, id desc) order. The stack holds
  // every span that may still contain a later one; walking it from the top visits candidates innermost first
  // by the header's tie-break (latest start, deeper level, shorter interval, smaller id — hence id desc).
  keys.clear();
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    keys.push_back({s.start_ns, s.end_ns, s.track.id, s.track.device, s.id, static_cast<std::uint32_t>(i), level_of(s),
                    s.parent_id != kNoSpan || derived_parent[i] != kNoSpan});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.group != b.group) return a.group < b.group;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.level != b.level) return a.level < b.level;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    return a.id > b.id;
  });
  std::vector<const Key*> stack;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const Key& key = keys[k];
    if (k == 0 || keys[k - 1].group != key.group || keys[k - 1].device != key.device) stack.clear();
    // Later spans start no earlier than this one, so a span that ended before it can contain none of them.
    while (!stack.empty() && stack.back()->end_ns < key.start_ns) stack.pop_back();
    if (!key.placed) {
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
        const Key& c = **it;
        // Everything on the stack starts no later than key; only level and end remain to check.
        if (c.level < key.level && key.end_ns <= c.end_ns) {
          derived_parent[key.index] = c.id;
          derived_rule[key.index] = ParentRule::kContainment;
          ++report.by_containment;
          break;
        }
      }
    }
    stack.push_back(&key);
  }

  for (std::size_t i = 0; i < spans.size(); ++i) {
    Span& s = spans[i];
    if (derived_parent[i] != kNoSpan) {
      s.parent_id = derived_parent[i];
      s.parent_rule = derived_rule[i];
    }
    if (s.parent_id != kNoSpan) continue;
    if (s.level == Level::kApplication) {
      ++report.roots;
    } else {
      ++report.unparented;
    }
  }

  trace.assembly = report;
  // Replayed CUDA graph kernels move from their graph launch to the ops they were captured under; the replayed
  // op and range spans it appends are ordered with the rest below.
  attribute_graph_replays(trace, GraphCaptureContexts::process());
  report = trace.assembly;
  put_in_order(spans, keys);

  return report;
}

}  // namespace xsp
