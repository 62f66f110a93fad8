// Keeps the traces of a scenario run's slowest queries: see include/xsp/eval/tail_traces.h.
#include "xsp/eval/tail_traces.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "xsp/trace/run_statistics.h"

namespace xsp {

namespace {

// Which of the run's n measured queries keep their traces: the `tail` slowest (rank 1 = slowest) and the median one.
TailTraceSelection select_queries(const loadgen::Result& result, std::size_t tail, std::size_t n) {
  TailTraceSelection sel;
  sel.traced_queries = n;
  // Slowest first; equal latencies keep issue order so that the choice is deterministic.
  std::vector<std::uint64_t> by_latency(n);
  std::iota(by_latency.begin(), by_latency.end(), 0);
  std::stable_sort(by_latency.begin(), by_latency.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return result.latency_ns[a] > result.latency_ns[b]; });
  auto make = [&](std::size_t position, const char* kind) {
    KeptQuery k;
    k.query = by_latency[position];
    k.latency_ns = result.latency_ns[k.query];
    k.rank = position + 1;
    k.percentile = 100.0 * static_cast<double>(n - position) / static_cast<double>(n);
    k.kind = kind;
    return k;
  };
  for (std::size_t i = 0; i < std::min(tail, n); ++i) sel.kept.push_back(make(i, "tail"));
  if (n > 0) {
    // The median query sits at ascending position floor((n-1)/2), i.e. descending position n-1-that.
    const std::size_t median_position = n - 1 - (n - 1) / 2;
    if (median_position >= tail) sel.kept.push_back(make(median_position, "median"));
  }
  sel.dropped_query_traces = n - sel.kept.size();
  return sel;
}

}  // namespace

TailTraceSelection keep_tail_query_traces(Trace& trace, const loadgen::Result& result, std::size_t tail,
                                          const std::string& app_name) {
  if (tail == 0) throw std::invalid_argument("tail query traces: the number of queries to keep must be >= 1");
  const auto n = static_cast<std::size_t>(result.query_count);
  if (result.latency_ns.size() < n || result.issue_ns.size() < n || result.complete_ns.size() < n)
    throw std::invalid_argument("tail query traces: result holds fewer per-query times than its query count");

  TailTraceSelection sel = select_queries(result, tail, n);

  std::unordered_map<std::uint64_t, std::size_t> kept_index;  // query id -> index into sel.kept
  for (std::size_t i = 0; i < sel.kept.size(); ++i) kept_index[sel.kept[i].query] = i;

  // Predict spans of the measured queries, and which kept query owns each.
  const std::uint64_t warmup = result.settings.warmup_queries;
  std::unordered_map<SpanId, std::size_t> owner;  // span id -> index into sel.kept (kept spans only)
  struct Node {
    SpanId parent;
    std::int64_t start, end;
    Level level;
  };
  std::unordered_map<SpanId, Node> nodes;
  struct Predict {
    SpanId id;
    std::int64_t start, end;
    Track thread;
  };
  std::vector<std::vector<Predict>> predicts(sel.kept.size());
  SpanId max_id = 0;
  for (const Span& s : trace.spans) {
    max_id = std::max(max_id, s.id);
    nodes[s.id] = {s.parent_id, s.start_ns, s.end_ns, s.level};
    if (s.level != Level::kModel || s.name != "predict") continue;
    const auto seq = s.tag_int("sequence"), q = s.tag_int("query");
    if (!seq || !q || static_cast<std::uint64_t>(*seq) < warmup) continue;
    auto it = kept_index.find(static_cast<std::uint64_t>(*q));
    if (it == kept_index.end()) continue;
    owner[s.id] = it->second;
    predicts[it->second].push_back({s.id, s.start_ns, s.end_ns, s.track});
  }
  // Kept predict intervals, sorted, for the parentless spans of helper threads.
  struct Interval {
    std::int64_t start, end;
    std::size_t kept;
  };
  std::vector<Interval> intervals;
  for (std::size_t k = 0; k < predicts.size(); ++k)
    for (const Predict& p : predicts[k]) intervals.push_back({p.start, p.end, k});
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });

  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::unordered_map<SpanId, std::size_t> memo;
  // The kept query a span belongs to (kNone: dropped): up its parent chain to a kept predict span; when the
  // chain ends in a parentless span below MODEL level (an op of a helper thread), by interval containment of
  // that span in a kept predict span.
  auto resolve = [&](SpanId start) {
    std::vector<SpanId> path;
    SpanId id = start;
    std::size_t found = kNone;
    for (std::size_t depth = 0; depth < 4096; ++depth) {
      if (auto m = memo.find(id); m != memo.end()) {
        found = m->second;
        break;
      }
      if (auto o = owner.find(id); o != owner.end()) {
        found = o->second;
        break;
      }
      path.push_back(id);
      const auto node = nodes.find(id);
      if (node == nodes.end()) break;  // dangling parent id: nothing to attach it to
      if (node->second.parent == kNoSpan) {
        const Node& root = node->second;
        if (root.level > Level::kModel) {
          auto it = std::upper_bound(intervals.begin(), intervals.end(), root.start,
                                     [](std::int64_t t, const Interval& i) { return t < i.start; });
          if (it != intervals.begin() && root.end <= std::prev(it)->end) found = std::prev(it)->kept;
        }
        break;
      }
      id = node->second.parent;
    }
    for (SpanId p : path) memo[p] = found;
    return found;
  };

  std::vector<Span> kept_spans;
  std::vector<std::size_t> span_count(sel.kept.size(), 0);
  for (Span& s : trace.spans) {
    const std::size_t k = resolve(s.id);
    if (k == kNone) {
      ++sel.dropped_spans;
      continue;
    }
    ++span_count[k];
    kept_spans.push_back(std::move(s));
  }

  // The query spans and the root over them.
  const SpanId app_id = max_id + 1;
  std::int64_t app_start = std::numeric_limits<std::int64_t>::max(), app_end = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 0; i < n; ++i) {
    app_start = std::min(app_start, result.issue_ns[i]);
    app_end = std::max(app_end, result.complete_ns[i]);
  }
  std::unordered_map<SpanId, SpanId> predict_parent;  // predict span id -> its query span id
  for (std::size_t k = 0; k < sel.kept.size(); ++k) {
    KeptQuery& kq = sel.kept[k];
    Span q;
    q.id = app_id + 1 + k;
    q.parent_id = app_id;
    q.parent_rule = ParentRule::kContext;
    q.level = Level::kModel;
    q.name = "query";
    q.start_ns = result.issue_ns[kq.query];
    q.end_ns = result.complete_ns[kq.query];
    std::int64_t first_predict = q.end_ns;
    for (const Predict& p : predicts[k]) {
      first_predict = std::min(first_predict, p.start);
      q.track = p.thread;
      predict_parent[p.id] = q.id;
    }
    q.tags = {{"query", kq.query}, {"latency_ns", kq.latency_ns},
              {"rank", kq.rank},   {"percentile", kq.percentile},
              {"kept", kq.kind},   {"queue_ns", first_predict - q.start_ns}};
    kq.spans = span_count[k] + 1;
    kept_spans.push_back(std::move(q));
  }
  for (Span& s : kept_spans)
    if (auto it = predict_parent.find(s.id); it != predict_parent.end()) {
      s.parent_id = it->second;
      s.parent_rule = ParentRule::kContext;
    }
  if (!sel.kept.empty()) {
    Span app;
    app.id = app_id;
    app.level = Level::kApplication;
    app.name = app_name;
    app.start_ns = app_start;
    app.end_ns = app_end;
    app.tags = {{"traced_queries", n}, {"kept_query_traces", sel.kept.size()}};
    kept_spans.push_back(std::move(app));
  }
  trace.spans = std::move(kept_spans);
  trace.counters[stat::kScenarioTracedQueries] = sel.traced_queries;
  trace.counters[stat::kScenarioKeptQueryTraces] = sel.kept.size();
  trace.counters[stat::kScenarioDroppedQueryTraces] = sel.dropped_query_traces;
  trace.counters[stat::kScenarioDroppedSpans] = sel.dropped_spans;
  return sel;
}

}  // namespace xsp
