// The report's timelines: see include/xsp/report/report.h (timeline_chart, span_timeline_chart).
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "xsp/report/report.h"

namespace xsp {
namespace {

constexpr std::size_t kMaxFlows = 2000;  // launch → kernel arrows drawn at most (the browser slows beyond)
constexpr int kMaxDepth = 16;            // deeper spans share the deepest lane of their track
constexpr int kLaneHeightPx = 20;

// Every span whose parent chain reaches `root` (root included); cycles and broken chains tolerated.
std::vector<const Span*> spans_under(const std::vector<Span>& spans, const Span& root) {
  std::unordered_map<SpanId, const Span*> by_id;
  by_id.reserve(spans.size());
  for (const Span& s : spans) by_id.emplace(s.id, &s);
  std::unordered_map<SpanId, bool> under;  // memoised: a span's answer is its chain's
  under[root.id] = true;
  std::vector<const Span*> kept;
  std::vector<SpanId> chain;
  for (const Span& s : spans) {
    chain.clear();
    SpanId id = s.id;
    bool result = false;
    for (std::size_t guard = 0; guard <= spans.size(); ++guard) {
      if (auto it = under.find(id); it != under.end()) {
        result = it->second;
        break;
      }
      chain.push_back(id);
      auto p = by_id.find(id);
      if (p == by_id.end() || p->second->parent_id == kNoSpan) break;
      id = p->second->parent_id;
    }
    for (SpanId c : chain) under[c] = result;
    if (result) kept.push_back(&s);
  }
  return kept;
}

// The lane of each span: its track, and its nesting depth among the kept spans of that track (intervals, not parent
// links: a span inside another on the same thread is drawn under it whatever its level).
std::unordered_map<const Span*, int> depths(const std::vector<const Span*>& kept) {
  std::map<Track, std::vector<const Span*>> by_track;
  for (const Span* s : kept) by_track[s->track].push_back(s);
  std::unordered_map<const Span*, int> depth;
  for (auto& [track, list] : by_track) {
    std::sort(list.begin(), list.end(), [](const Span* a, const Span* b) {
      if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
      if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns;  // the enclosing one first
      return a->level < b->level;
    });
    std::vector<std::int64_t> open_ends;
    for (const Span* s : list) {
      while (!open_ends.empty() && open_ends.back() <= s->start_ns) open_ends.pop_back();
      depth[s] = std::min(static_cast<int>(open_ends.size()), kMaxDepth);
      open_ends.push_back(s->end_ns);
    }
  }
  return depth;
}

std::string lane_name(const Track& track, int depth, bool several_depths) {
  std::string name = to_string(track);
  if (several_depths) name += " · " + std::to_string(depth);
  return name;
}

// The timeline of `kept` (at most `max_spans` of them, the longest), x in ms from `origin_ns` ("time from the start of
// `origin_name`"), each box clipped to [clip_start_ns, clip_end_ns]; `first` (or nullptr) the track drawn first.
std::optional<ReportChart> draw_timeline(std::vector<const Span*> kept, std::int64_t origin_ns,
                                         std::int64_t clip_start_ns, std::int64_t clip_end_ns,
                                         const std::string& origin_name, const Track* first, const std::string& title,
                                         const std::string& element_id, std::size_t max_spans) {
  const std::size_t total = kept.size();
  if (kept.size() > max_spans) {
    std::sort(kept.begin(), kept.end(), [](const Span* a, const Span* b) {
      return a->duration_ns() != b->duration_ns() ? a->duration_ns() > b->duration_ns() : a->id < b->id;
    });
    kept.resize(max_spans);
  }
  const auto depth = depths(kept);
  std::map<Track, int> max_depth;
  for (const Span* s : kept) max_depth[s->track] = std::max(max_depth[s->track], depth.at(s));
  // Lanes in order: host threads (the root's first), then GPU streams; each track's depths from 0 down.
  std::vector<std::pair<Track, int>> lanes;
  auto add_track = [&](const Track& t) {
    for (int d = 0; d <= max_depth[t]; ++d) lanes.emplace_back(t, d);
  };
  if (first != nullptr && max_depth.count(*first)) add_track(*first);
  for (const auto& [t, d] : max_depth)
    if (!t.is_device() && (first == nullptr || t != *first)) add_track(t);
  for (const auto& [t, d] : max_depth)
    if (t.is_device() && (first == nullptr || t != *first)) add_track(t);
  nlohmann::json lane_order = nlohmann::json::array();
  for (const auto& [t, d] : lanes) lane_order.push_back(lane_name(t, d, max_depth[t] > 0));

  std::sort(kept.begin(), kept.end(), [](const Span* a, const Span* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->id < b->id;
  });
  auto lane_of = [&](const Span* s) { return lane_name(s->track, depth.at(s), max_depth[s->track] > 0); };
  nlohmann::json values = nlohmann::json::array();
  std::unordered_map<std::uint64_t, const Span*> launch_of;  // correlation id → the host span that launched it
  for (const Span* s : kept) {
    values.push_back({{"name", s->name},
                      {"level", std::string(to_string(s->level))},
                      {"lane", lane_of(s)},
                      {"start_ms", (std::max(s->start_ns, clip_start_ns) - origin_ns) / 1e6},
                      {"end_ms", (std::min(s->end_ns, clip_end_ns) - origin_ns) / 1e6},
                      {"duration_ms", s->duration_ns() / 1e6}});
    if (s->correlation_id != 0 && !s->track.is_device()) {
      auto [it, fresh] = launch_of.emplace(s->correlation_id, s);
      if (!fresh && s->level > it->second->level) it->second = s;  // the call itself, not an op carrying the id
    }
  }
  nlohmann::json flows = nlohmann::json::array();
  for (const Span* s : kept) {
    if (!s->track.is_device() || s->correlation_id == 0 || flows.size() >= kMaxFlows) continue;
    const auto it = launch_of.find(s->correlation_id);
    if (it == launch_of.end()) continue;
    flows.push_back({{"from_lane", lane_of(it->second)},
                     {"to_lane", lane_of(s)},
                     {"launch_ms", (std::max(it->second->start_ns, clip_start_ns) - origin_ns) / 1e6},
                     {"kernel_ms", (std::max(s->start_ns, clip_start_ns) - origin_ns) / 1e6},
                     {"name", s->name}});
  }

  const nlohmann::json x = {{"field", "start_ms"},
                            {"type", "quantitative"},
                            {"title", "time from the start of " + origin_name + " (ms)"},
                            {"axis", {{"grid", true}}}};
  const nlohmann::json y = {
      {"field", "lane"},    {"type", "nominal"},
      {"sort", lane_order}, {"scale", {{"domain", lane_order}}},  // layers' domains union; this keeps the order
      {"title", nullptr},   {"axis", {{"labelLimit", 240}}}};
  // Spans whose names do not contain the search text fade out; an empty search keeps every span.
  const std::string miss = "search && indexof(lower(datum.name), lower(search)) < 0";
  nlohmann::json boxes = {
      {"name", "main"},
      {"params", {{{"name", "zoom"}, {"select", {{"type", "interval"}, {"encodings", {"x"}}}}, {"bind", "scales"}}}},
      {"mark", {{"type", "rect"}, {"tooltip", true}, {"stroke", "white"}, {"strokeWidth", 0.5}}},
      {"encoding",
       {{"x", x},
        {"x2", {{"field", "end_ms"}}},
        {"y", y},
        {"color", {{"field", "level"}, {"type", "nominal"}, {"sort", nullptr}, {"title", "level"}}},
        {"opacity", {{"condition", {{"test", miss}, {"value", 0.15}}}, {"value", 1}}},
        {"tooltip",
         {{{"field", "name"}, {"type", "nominal"}},
          {{"field", "level"}, {"type", "nominal"}},
          {{"field", "lane"}, {"type", "nominal"}},
          {{"field", "start_ms"}, {"type", "quantitative"}, {"format", ".4f"}, {"title", "start (ms)"}},
          {{"field", "duration_ms"}, {"type", "quantitative"}, {"format", ".4f"}, {"title", "duration (ms)"}}}}}}};
  // The name inside each box, cut to the box's drawn width (per datum, so it follows zoom); hidden below 24 px.
  const std::string box_px = "(scale('x', datum.end_ms) - scale('x', datum.start_ms))";
  nlohmann::json names = {{"mark",
                           {{"type", "text"},
                            {"align", "left"},
                            {"baseline", "middle"},
                            {"dx", 3},
                            {"fontSize", 10},
                            {"clip", true},
                            {"color", "black"},
                            {"limit", {{"expr", "max(1, " + box_px + " - 6)"}}},
                            {"opacity", {{"expr", box_px + " > 24 && !(" + miss + ") ? 1 : 0"}}}}},
                          {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "name"}, {"type", "nominal"}}}}}};
  nlohmann::json layers = {boxes, names};
  if (!flows.empty()) {
    nlohmann::json fx = x, fy = y;
    fx["field"] = "launch_ms";
    fy["field"] = "from_lane";
    layers.push_back({{"data", {{"values", flows}}},
                      {"mark", {{"type", "rule"}, {"color", "#555"}, {"strokeWidth", 0.7}, {"opacity", 0.5}}},
                      {"encoding",
                       {{"x", fx},
                        {"x2", {{"field", "kernel_ms"}}},
                        {"y", fy},
                        {"y2", {{"field", "to_lane"}}},
                        {"tooltip", {{{"field", "name"}, {"type", "nominal"}, {"title", "launch → kernel"}}}}}}});
  }
  ReportChart c;
  c.element_id = element_id;
  c.title = title + " (" + std::to_string(kept.size()) + " spans" +
            (kept.size() < total ? " of " + std::to_string(total) + ", the longest" : "") + ", " +
            std::to_string(lanes.size()) + " lanes" +
            (flows.empty() ? "" : ", " + std::to_string(flows.size()) + " launch → kernel links") +
            "); drag to pan, scroll to zoom, type to search";
  c.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
            {"width", 1100},
            {"height", std::max<std::size_t>(1, lanes.size()) * kLaneHeightPx},
            {"data", {{"values", values}}},
            {"params",
             {{{"name", "search"},
               {"value", ""},
               {"bind", {{"input", "search"}, {"placeholder", "span name"}, {"name", "search "}}}}}},
            {"layer", layers}};
  c.expected_marks = static_cast<long>(values.size());
  c.timeline = true;
  return c;
}

}  // namespace

std::optional<ReportChart> span_timeline_chart(const Trace& trace, const Span& root, const std::string& title,
                                               const std::string& element_id, std::size_t max_spans) {
  std::vector<const Span*> kept = spans_under(trace.spans, root);
  if (kept.size() < 2) return std::nullopt;  // the root alone (a MODEL-level run) is a bar, not a timeline
  constexpr auto kNoClip = std::numeric_limits<std::int64_t>::max();
  return draw_timeline(std::move(kept), root.start_ns, -kNoClip, kNoClip, root.name, &root.track, title, element_id,
                       max_spans);
}

std::optional<ReportChart> window_timeline_chart(const Trace& trace, std::int64_t start_ns, std::int64_t end_ns,
                                                 const std::string& window_name, const std::string& title,
                                                 const std::string& element_id, std::size_t max_spans) {
  std::vector<const Span*> kept;
  for (const Span& s : trace.spans)
    if (s.end_ns > start_ns && s.start_ns < end_ns) kept.push_back(&s);
  if (kept.empty() || end_ns <= start_ns) return std::nullopt;
  return draw_timeline(std::move(kept), start_ns, start_ns, end_ns, window_name, nullptr, title, element_id, max_spans);
}

std::optional<ReportChart> timeline_chart(const RunRecord& run, const std::string& element_id, std::size_t max_spans) {
  const Span* predict = nullptr;
  for (const Span& s : run.trace.spans)
    if (s.level == Level::kModel && s.name == "predict" && (predict == nullptr || s.start_ns > predict->start_ns))
      predict = &s;
  if (predict == nullptr) return std::nullopt;
  return span_timeline_chart(run.trace, *predict,
                             "Timeline of the last measured batch (batch size " + std::to_string(run.batch_size) +
                                 ", trace level " + std::string(to_string(run.trace_level)) + ")",
                             element_id, max_spans);
}

}  // namespace xsp
