// GraphNodeIndex: see include/xsp/profilers/graph_nodes.h.
#include "xsp/profilers/graph_nodes.h"

namespace xsp {

void GraphNodeIndex::add(const std::vector<GraphNodeRecord>& nodes) {
  for (const GraphNodeRecord& n : nodes) {
    if (n.node_id == 0) continue;
    const auto [it, added] = by_id_.try_emplace(n.node_id, nodes_.size());
    if (added) {
      nodes_.push_back(n);
      continue;
    }
    // CUPTI reports a cloned node as created and then as cloned: one node, with both records' facts.
    GraphNodeRecord& into = nodes_[it->second];
    if (n.graph_id != 0) into.graph_id = n.graph_id;
    if (n.original_node_id != 0) into.original_node_id = n.original_node_id;
    if (n.original_graph_id != 0) into.original_graph_id = n.original_graph_id;
    if (n.capture_correlation_id != 0) into.capture_correlation_id = n.capture_correlation_id;
    if (n.thread_id != 0) into.thread_id = n.thread_id;
    if (n.time_ns != 0) into.time_ns = n.time_ns;
  }
}

const GraphNodeRecord* GraphNodeIndex::find(std::uint64_t node_id) const {
  const auto it = by_id_.find(node_id);
  return it == by_id_.end() ? nullptr : &nodes_[it->second];
}

std::optional<GraphNodeOrigin> GraphNodeIndex::origin(std::uint64_t node_id) const {
  GraphNodeOrigin out;
  out.node = find(node_id);
  // A chain has at most one step per known node; more means a loop.
  while (out.node != nullptr && out.node->original_node_id != 0) {
    if (out.clone_steps >= nodes_.size()) return std::nullopt;
    out.node = find(out.node->original_node_id);
    ++out.clone_steps;
  }
  if (out.node == nullptr) return std::nullopt;
  return out;
}

}  // namespace xsp
