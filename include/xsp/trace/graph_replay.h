// CUDA graph replay attribution (docs/cuda-graphs.md): puts every kernel, memcpy and memset replayed from a CUDA
// graph under the framework ops and NVTX ranges that were open on the capturing thread when its graph node was
// captured, as eager kernels are under the op that launched them. No CUDA here: the GPU layer (append_spans) tags
// the spans, this pass only reads tags.
//
// The tags it reads (written by append_spans, docs/spans.md):
//  - a SYSTEM span of a launch made during stream capture: "graph_captured_node_ids" (int list), the graph nodes
//    the call created. Its ancestors after assembly are the capture context of those nodes.
//  - a KERNEL span of a replay: "graph_id", "graph_node_id" (the replayed, instantiated node), and
//    "graph_capture_node_id" (the captured node it was cloned from), or "graph_capture" = "before-profiling" when
//    the node's creation was never seen (the graph was built before profiling started).
//
// What it writes: per graph launch and per captured op or range, one span of the op's level and name (tags copied
// from the captured span, plus "replayed_from" = "cuda-graph", "graph_launch_id" and "capture_span_id") on the
// stream of its first kernel, timed from its first kernel's start to its last kernel's end; the replayed kernels
// become its children (rule "context") with "attribution" = "graph-node". Spans above the replayed ops nest as they
// nested at capture; the outermost is a child of the span the graph launch is a child of (e.g. the predict stage),
// so that analyses walking up from a kernel find the captured op as they find an eager one. The outermost captured
// spans whose level and name are also open around the launch (the predict stage of the warm-up batch that captured,
// the profiled program itself) are not replayed: the replay already runs inside their like.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp {

/// What was open on the capturing thread when graph nodes were captured, learned from assembled traces and kept
/// across them: a graph is usually captured once (in a warm-up) and replayed in many later runs. Thread-safe.
class GraphCaptureContexts {
 public:
  /// One span that was open at capture, outermost first in a node's context.
  struct Frame {
    Level level = Level::kFramework;
    std::string name;
    std::vector<Tag> tags;
    std::uint64_t key = 0;  ///< unique per captured span: kernels of one replay sharing a key share a replayed span
    SpanId capture_span_id = kNoSpan;  ///< the span's id in the trace that held the capture
  };

  /// Learns from `trace` (assembled): every SYSTEM span tagged "graph_captured_node_ids" gives its nodes, as context,
  /// its MODEL, FRAMEWORK and LIBRARY ancestors (outermost first; tags "sample" and "batch" left out, so that a
  /// replayed range never counts as a batch). A node learned again takes the newer context.
  void learn(const Trace& trace);
  /// The capture context of `node_id` (outermost first), or nullptr when no learned trace captured it. The pointer
  /// stays valid until the object is destroyed.
  const std::vector<const Frame*>* context(std::uint64_t node_id) const;
  std::size_t nodes() const;

  /// The registry assemble() uses: one per process.
  static GraphCaptureContexts& process();

 private:
  mutable std::mutex mu_;
  // Append-only, so that pointers handed out stay valid when a node is learned again.
  std::vector<std::unique_ptr<Frame>> frames_;
  std::vector<std::unique_ptr<std::vector<const Frame*>>> contexts_;
  std::unordered_map<std::uint64_t, const std::vector<const Frame*>*> nodes_;
  std::uint64_t next_key_ = 1;
};

/// What attribute_graph_replays() did.
struct GraphReplayReport {
  std::size_t replayed = 0;          ///< KERNEL spans with a graph id (replayed from a CUDA graph)
  std::size_t attributed = 0;        ///< of them, placed under their captured op or range ("graph-node")
  std::size_t before_profiling = 0;  ///< of them, whose node was created before profiling started
  std::size_t unknown_context = 0;   ///< of them, whose captured node's context no learned trace holds
  std::size_t replayed_spans = 0;    ///< replayed op and range spans added
};

/// Learns `contexts` from `trace`, then attributes its replayed KERNEL spans (see the file comment) and adds the
/// counters "cuda_graph.replayed_activities", "cuda_graph.attributed_activities",
/// "cuda_graph.captured_before_profiling" and "cuda_graph.unknown_capture_context" when any span was replayed.
/// Idempotent: kernels already attributed are left as they are. Run by assemble() after its rules and before its
/// ordering, with GraphCaptureContexts::process(): the replayed spans are appended to trace.spans, and assemble()
/// sorts them in with the rest. Never throws on malformed tags (they are ignored).
GraphReplayReport attribute_graph_replays(Trace& trace, GraphCaptureContexts& contexts);

/// For a trace that is thrown away (a warm-up's) but may hold graph captures whose replays come later: assembles it
/// when it holds a captured launch, so that GraphCaptureContexts::process() learns them; a no-op otherwise.
void learn_graph_captures(Trace&& trace);

/// For a trace that is kept but may lose its spans below MODEL level before the run's trace is assembled (a
/// generation request outside the tail traces, whose first decode step captured its graph): when it holds a
/// captured launch, assembles a copy so that GraphCaptureContexts::process() learns the capture; a no-op otherwise
/// (no copy).
void learn_graph_captures_from_copy(const Trace& trace);

}  // namespace xsp
