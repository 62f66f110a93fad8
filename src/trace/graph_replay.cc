// CUDA graph replay attribution: see include/xsp/trace/graph_replay.h.
#include "xsp/trace/graph_replay.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "id_index.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {

namespace {

using trace_internal::IdIndex;
using trace_internal::kNotFound;

constexpr std::string_view kCapturedNodesTag = "graph_captured_node_ids";
constexpr std::string_view kCaptureNodeTag = "graph_capture_node_id";

// Whether a trace holds a launch made during stream capture (what learn() learns from).
bool holds_captures(const Trace& trace) {
  return std::any_of(trace.spans.begin(), trace.spans.end(), [](const Span& s) {
    return s.level == Level::kSystem && s.find_tag(kCapturedNodesTag) != nullptr;
  });
}

void set_tag(Span& s, std::string_view key, std::string value) {
  for (Tag& t : s.tags) {
    if (t.key == key) {
      t = Tag(std::string(key), std::move(value));
      return;
    }
  }
  s.tags.emplace_back(std::string(key), std::move(value));
}

}  // namespace

GraphCaptureContexts& GraphCaptureContexts::process() {
  static auto* contexts = new GraphCaptureContexts();  // never destroyed: used until the process ends
  return *contexts;
}

void GraphCaptureContexts::learn(const Trace& trace) {
  if (!holds_captures(trace)) return;  // most traces capture nothing: look before indexing
  const IdIndex by_id(trace.spans);
  std::lock_guard lock(mu_);
  std::unordered_map<SpanId, const Frame*> frame_of;  // this trace's captured spans, one frame each
  for (const Span& s : trace.spans) {
    const Tag* nodes = s.level == Level::kSystem ? s.find_tag(kCapturedNodesTag) : nullptr;
    if (nodes == nullptr) continue;
    auto context = std::make_unique<std::vector<const Frame*>>();
    // Walk up; a parent cycle in a malformed trace ends after as many steps as there are spans.
    SpanId up = s.parent_id;
    for (std::size_t steps = 0; up != kNoSpan && steps < trace.spans.size(); ++steps) {
      const std::uint32_t at = by_id.find(up);
      if (at == kNotFound) break;
      const Span& a = trace.spans[at];
      if (a.level == Level::kModel || a.level == Level::kFramework || a.level == Level::kLibrary) {
        auto [f, added] = frame_of.try_emplace(a.id, nullptr);
        if (added) {
          auto frame = std::make_unique<Frame>();
          frame->level = a.level;
          frame->name = a.name;
          // A captured window's marks would make its replay count as a batch of its own.
          for (const Tag& t : a.tags)
            if (t.key != "sample" && t.key != "batch") frame->tags.push_back(t);
          frame->key = next_key_++;
          frame->capture_span_id = a.id;
          f->second = frame.get();
          frames_.push_back(std::move(frame));
        }
        context->push_back(f->second);
      }
      up = a.parent_id;
    }
    std::reverse(context->begin(), context->end());
    const std::vector<const Frame*>* learned = context.get();
    contexts_.push_back(std::move(context));
    for (std::int64_t node : nodes->as_int_list()) {
      if (node != 0) nodes_[static_cast<std::uint64_t>(node)] = learned;
    }
  }
}

const std::vector<const GraphCaptureContexts::Frame*>* GraphCaptureContexts::context(std::uint64_t node_id) const {
  std::lock_guard lock(mu_);
  const auto it = nodes_.find(node_id);
  return it == nodes_.end() ? nullptr : it->second;
}

std::size_t GraphCaptureContexts::nodes() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

GraphReplayReport attribute_graph_replays(Trace& trace, GraphCaptureContexts& contexts) {
  GraphReplayReport report;
  std::vector<Span>& spans = trace.spans;
  // A capture is learned also from a trace without replays (a warm-up): its replays come in later traces.
  contexts.learn(trace);
  const bool any = std::any_of(spans.begin(), spans.end(), [](const Span& s) {
    return s.level == Level::kKernel && s.find_tag("graph_id") != nullptr;
  });
  if (!any) return report;

  const IdIndex by_id(spans);
  SpanId next = 1;
  for (const Span& s : spans) next = std::max(next, s.id + 1);

  // (graph launch span, frame key) → index of its replayed span in `added`.
  std::map<std::pair<SpanId, std::uint64_t>, std::size_t> replayed;
  std::vector<Span> added;
  std::size_t moved_from_correlation = 0;
  std::map<SpanId, std::set<std::pair<Level, std::string>>> open_at_launch;  // launch → (level, name) above it

  for (Span& k : spans) {
    if (k.level != Level::kKernel || k.find_tag("graph_id") == nullptr) continue;
    ++report.replayed;
    if (k.tag("attribution") == "graph-node") {
      ++report.attributed;
      continue;
    }
    if (k.tag("graph_capture") == "before-profiling") {
      ++report.before_profiling;
      continue;
    }
    const auto node = k.tag_int(kCaptureNodeTag);
    const std::vector<const GraphCaptureContexts::Frame*>* context =
        node ? contexts.context(static_cast<std::uint64_t>(*node)) : nullptr;
    if (context == nullptr || context->empty()) {
      ++report.unknown_context;
      continue;
    }
    // The launch the kernel was joined to; the replayed spans hang from the launch's own parent.
    const SpanId launch = k.parent_id;
    SpanId parent = kNoSpan;
    if (const std::uint32_t at = by_id.find(launch); at != kNotFound) parent = spans[at].parent_id;
    // What was open at capture and is open again around the replay (the predict stage of another batch, the
    // program itself) is context the replay already has: only the frames inside it are replayed.
    auto [open, fresh_launch] = open_at_launch.try_emplace(launch);
    if (fresh_launch) {
      SpanId up = parent;
      for (std::size_t steps = 0; up != kNoSpan && steps < spans.size(); ++steps) {
        const std::uint32_t at = by_id.find(up);
        if (at == kNotFound) break;
        open->second.emplace(spans[at].level, spans[at].name);
        up = spans[at].parent_id;
      }
    }
    std::size_t first = 0;
    while (first < context->size() && open->second.contains({(*context)[first]->level, (*context)[first]->name}))
      ++first;
    if (first == context->size()) {
      ++report.unknown_context;
      continue;
    }
    for (std::size_t i = first; i < context->size(); ++i) {
      const GraphCaptureContexts::Frame* f = (*context)[i];
      auto [it, fresh] = replayed.try_emplace({launch, f->key}, added.size());
      if (fresh) {
        Span r;
        r.id = next++;
        r.parent_id = parent;
        r.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
        r.level = f->level;
        r.name = f->name;
        r.track = k.track;
        r.start_ns = k.start_ns;
        r.end_ns = k.end_ns;
        r.tags = f->tags;
        set_tag(r, "replayed_from", "cuda-graph");
        if (const auto g = k.tag_int("graph_id")) r.tags.emplace_back("graph_id", *g);
        r.tags.emplace_back("graph_launch_id", launch);
        r.tags.emplace_back("capture_span_id", f->capture_span_id);
        added.push_back(std::move(r));
      } else {
        Span& r = added[it->second];
        r.start_ns = std::min(r.start_ns, k.start_ns);
        r.end_ns = std::max(r.end_ns, k.end_ns);
      }
      parent = added[it->second].id;
    }
    if (k.parent_rule == ParentRule::kCorrelation) ++moved_from_correlation;
    k.parent_id = parent;
    k.parent_rule = ParentRule::kContext;
    set_tag(k, "attribution", "graph-node");
    ++report.attributed;
  }

  report.replayed_spans = added.size();
  if (!added.empty()) {
    for (const Span& r : added) {
      if (r.parent_id != kNoSpan) {
        ++trace.assembly.by_context;
      } else {
        ++trace.assembly.unparented;
      }
    }
    trace.assembly.by_context += moved_from_correlation;
    trace.assembly.by_correlation -= std::min(trace.assembly.by_correlation, moved_from_correlation);
    // Appended: assemble() puts them in its order with the rest.
    spans.insert(spans.end(), std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
  }
  // Absolute values, so that assembling twice counts once.
  trace.counters[stat::kCudaGraphReplayedActivities] = report.replayed;
  trace.counters[stat::kCudaGraphAttributedActivities] = report.attributed;
  trace.counters[stat::kCudaGraphCapturedBeforeProfiling] = report.before_profiling;
  trace.counters[stat::kCudaGraphUnknownCaptureContext] = report.unknown_context;
  return report;
}

void learn_graph_captures(Trace&& trace) {
  if (holds_captures(trace)) assemble(trace);
}

void learn_graph_captures_from_copy(const Trace& trace) {
  if (!holds_captures(trace)) return;
  Trace copy = trace;
  assemble(copy);
}

}  // namespace xsp
