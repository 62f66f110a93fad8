// CUDA graph nodes as CUPTI's resource callbacks report them, and the walk from a replayed kernel's node back to
// the node that was captured, so that a replay can be attributed to the framework op that was open at capture
// (issue 25, docs in tests/fixtures/cuda_graphs/README.md until docs/cuda-graphs.md exists). No CUDA header: the
// CUPTI layer fills GraphNodeRecords in its callbacks, tests read them from recordings.
//
// What CUPTI reports (CUDA 13.0, recorded on an H200 in tests/fixtures/cuda_graphs/probe_h200.jsonl):
//  - a launch captured on a stream fires CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED inside that launch's runtime call,
//    on the capturing thread: the launch's correlation id (and so the op it ran under) is the node's capture context;
//  - cudaGraphInstantiate, cudaGraphClone and every further instantiation clone all nodes into a new graph
//    (GRAPHNODE_CREATED then GRAPHNODE_CLONED with the original's ids), so a chain leads back to the captured node;
//  - a replay's kernel, memcpy and memset records carry the instantiated graph's id and the cloned node's id
//    (CUpti_ActivityKernel10::graphId / graphNodeId), and the cudaGraphLaunch's correlation id.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace xsp {

/// One graph node: created (by stream capture or a cudaGraphAdd*Node call) or cloned from another node.
struct GraphNodeRecord {
  std::uint32_t graph_id = 0;  ///< the graph holding the node (cuptiGetGraphId)
  std::uint64_t node_id = 0;   ///< cuptiGetGraphNodeId; never 0 for a real node
  /// Cloned nodes (GRAPHNODE_CLONED): the node and graph it was cloned from; 0 for a created node.
  std::uint64_t original_node_id = 0;
  std::uint32_t original_graph_id = 0;
  /// The runtime or driver call the record's callback fired in, 0 = none: for a created node of a stream capture,
  /// the captured launch (its op is the node's capture context); for a cloned node, the cloning call.
  std::uint32_t capture_correlation_id = 0;
  /// The thread and host time (ns, trace clock) of the callback: where capture_correlation_id is 0 (API records from
  /// CUPTI's activity buffers rather than callbacks), the API call of the thread whose interval holds the time.
  std::uint64_t thread_id = 0;
  std::int64_t time_ns = 0;
  bool operator==(const GraphNodeRecord&) const = default;
};

/// The created node a replayed node comes from, and how it was found.
struct GraphNodeOrigin {
  const GraphNodeRecord* node = nullptr;  ///< the created node at the end of the clone chain
  std::uint32_t clone_steps = 0;          ///< clones between it and the replayed node (1 for a plain instantiation)
};

/// Node id → record, over every GraphNodeRecord of a run. Records of the same node id are merged (CUPTI reports a
/// cloned node twice: created, then cloned); the last non-zero value of each field wins.
class GraphNodeIndex {
 public:
  /// `nodes`: in the order CUPTI delivered them. Records with node_id 0 are ignored.
  GraphNodeIndex() = default;
  explicit GraphNodeIndex(const std::vector<GraphNodeRecord>& nodes) { add(nodes); }
  /// Merges more records (a later run's): graphs are captured once and replayed in later runs.
  void add(const std::vector<GraphNodeRecord>& nodes);

  /// The node with this id, or nullptr.
  const GraphNodeRecord* find(std::uint64_t node_id) const;
  /// Follows original_node_id from `node_id` to a node that was not cloned. std::nullopt when `node_id` or a node
  /// on the way is unknown (the graph was built before profiling started: only graph-level attribution is
  /// possible), or when the chain loops or is longer than the number of nodes (corrupt input).
  std::optional<GraphNodeOrigin> origin(std::uint64_t node_id) const;
  std::size_t size() const { return nodes_.size(); }

 private:
  std::vector<GraphNodeRecord> nodes_;
  std::unordered_map<std::uint64_t, std::size_t> by_id_;
};

}  // namespace xsp
