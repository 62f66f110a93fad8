// GraphNodeIndex on hand-made chains and on what CUPTI reported on an H200 (tests/fixtures/cuda_graphs/).
#include "xsp/profilers/graph_nodes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xsp {
namespace {

GraphNodeRecord created(std::uint32_t graph, std::uint64_t node, std::uint32_t correlation) {
  return {graph, node, 0, 0, correlation};
}
GraphNodeRecord cloned(std::uint32_t graph, std::uint64_t node, std::uint32_t from_graph, std::uint64_t from_node) {
  return {graph, node, from_node, from_graph, 0};
}

TEST(GraphNodeIndex, FollowsClonesBackToTheCapturedNode) {
  // Captured node 40 (graph 4, in launch 2) → instantiated as 50 (graph 5) → cloned into 90 → instantiated as 100.
  const GraphNodeIndex index(
      {created(4, 40, 2), created(5, 50, 8), cloned(5, 50, 4, 40), cloned(9, 90, 4, 40), cloned(10, 100, 9, 90)});
  EXPECT_EQ(index.size(), 4u);  // 50's created and cloned records are one node
  const auto direct = index.origin(50);
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(direct->node->node_id, 40u);
  EXPECT_EQ(direct->node->capture_correlation_id, 2u);
  EXPECT_EQ(direct->clone_steps, 1u);
  const auto chain = index.origin(100);
  ASSERT_TRUE(chain.has_value());
  EXPECT_EQ(chain->node->node_id, 40u);
  EXPECT_EQ(chain->clone_steps, 2u);
  const auto itself = index.origin(40);
  ASSERT_TRUE(itself.has_value());
  EXPECT_EQ(itself->clone_steps, 0u);
}

TEST(GraphNodeIndex, UnknownNodesAndLoopsHaveNoOrigin) {
  // 70 was cloned from a node built before profiling started (60 never reported); 80 and 81 clone each other.
  const GraphNodeIndex index({cloned(7, 70, 6, 60), cloned(8, 80, 8, 81), cloned(8, 81, 8, 80), created(1, 0, 3)});
  EXPECT_EQ(index.size(), 3u);  // node id 0 is no node
  EXPECT_FALSE(index.origin(70).has_value());
  EXPECT_FALSE(index.origin(12345).has_value());
  EXPECT_FALSE(index.origin(80).has_value());
  EXPECT_EQ(index.find(12345), nullptr);
  ASSERT_NE(index.find(70), nullptr);
  EXPECT_EQ(index.find(70)->original_graph_id, 6u);
}

// The probe's recording: graph nodes from the resource callbacks, the op open at each runtime call, and the replayed
// kernel and memset records.
struct Recording {
  std::vector<GraphNodeRecord> nodes;
  std::map<std::uint32_t, std::string> op_of_call;  // correlation id → op open at that runtime call
  std::vector<nlohmann::json> replayed;             // activity records with a graph id, by start time
};

Recording read_probe() {
  const std::string path = std::string(XSP_TEST_FIXTURES) + "/cuda_graphs/probe_h200.jsonl";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  Recording r;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    const std::string cb = j.value("cb", ""), act = j.value("act", "");
    auto u32 = [&j](const char* k) { return j.at(k).get<std::uint32_t>(); };
    auto u64 = [&j](const char* k) { return j.at(k).get<std::uint64_t>(); };
    if (cb == "runtime_enter") r.op_of_call[u32("correlation")] = j.at("op").get<std::string>();
    if (cb == "node_created") r.nodes.push_back(created(u32("graph"), u64("node"), u32("in_correlation")));
    if (cb == "node_cloned")
      r.nodes.push_back(cloned(u32("graph"), u64("node"), u32("original_graph"), u64("original_node")));
    if ((act == "kernel" || act == "memset") && j["graph"] != 0) r.replayed.push_back(j);
  }
  std::sort(r.replayed.begin(), r.replayed.end(), [](const auto& a, const auto& b) {
    return a["start"].template get<std::uint64_t>() < b["start"].template get<std::uint64_t>();
  });
  return r;
}

TEST(GraphNodeIndex, ReplayedKernelsOnAnH200LeadToTheOpsOfTheirCapture) {
  const Recording r = read_probe();
  ASSERT_EQ(r.replayed.size(), 5u * 7 + 2 * 2);  // 5 nodes: g1 ×3, its second exec, its clone, the early graph ×2
  const GraphNodeIndex index(r.nodes);
  std::map<std::uint32_t, std::vector<std::string>> ops_by_launch;  // cudaGraphLaunch correlation → ops
  std::map<std::uint32_t, std::uint32_t> steps_by_graph;
  std::size_t unattributed = 0;
  for (const auto& rec : r.replayed) {
    const auto origin = index.origin(rec["node"].get<std::uint64_t>());
    if (!origin) {
      ++unattributed;
      EXPECT_EQ(rec["graph"], 2) << rec.dump();  // only the graph built before CUPTI was enabled
      continue;
    }
    ops_by_launch[rec["correlation"].get<std::uint32_t>()].push_back(
        r.op_of_call.at(origin->node->capture_correlation_id));
    steps_by_graph[rec["graph"].get<std::uint32_t>()] = origin->clone_steps;
  }
  EXPECT_EQ(unattributed, 2u * 5);
  const std::vector<std::string> model{"layer1.conv", "layer2.relu", "layer2.relu", "layer3", "layer3"};
  std::size_t model_replays = 0;
  for (const auto& [launch, ops] : ops_by_launch) {
    if (ops.size() == 2) {
      std::vector<std::string> sorted = ops;  // two streams: either may start first
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, (std::vector<std::string>{"branchA", "branchB"})) << launch;
      continue;
    }
    EXPECT_EQ(ops, model) << "cudaGraphLaunch " << launch;
    ++model_replays;
  }
  EXPECT_EQ(model_replays, 5u);
  // Instantiations clone once; instantiating a clone (graph 10 ← 9 ← 4) twice.
  EXPECT_EQ(steps_by_graph.at(5), 1u);
  EXPECT_EQ(steps_by_graph.at(7), 1u);
  EXPECT_EQ(steps_by_graph.at(10), 2u);
  EXPECT_EQ(steps_by_graph.at(13), 1u);
}

}  // namespace
}  // namespace xsp
