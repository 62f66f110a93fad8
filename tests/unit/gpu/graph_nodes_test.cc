// GraphNodeIndex on hand-made chains and on what CUPTI reported on an H200 (tests/fixtures/cuda_graphs/).
#include "xsp/profilers/graph_nodes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "xsp/profilers/gpu_activity.h"
#include "xsp/trace/assembler.h"

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

// The whole path on the H200 recording: the probe's records as the CUPTI layer would hand them over (API calls,
// kernels, memsets, graph nodes), with a FRAMEWORK span for each op the probe had open, through append_spans() and
// assemble(): every replayed record of a graph captured under profiling lands under its capture's op.
TEST(GraphReplayAttribution, ProbeRecordingLandsUnderTheCaptureOps) {
  const std::string path = std::string(XSP_TEST_FIXTURES) + "/cuda_graphs/probe_h200.jsonl";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  GpuActivityLog log;
  std::vector<std::pair<std::uint32_t, std::string>> calls;  // (correlation, op open), in call order
  std::map<std::uint64_t, std::string> op_of_node;           // captured node → op open at its capture
  std::map<std::uint32_t, std::string> op_of_call;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    const std::string cb = j.value("cb", ""), act = j.value("act", "");
    auto u32 = [&j](const char* k) { return j.at(k).get<std::uint32_t>(); };
    auto u64 = [&j](const char* k) { return j.at(k).get<std::uint64_t>(); };
    auto i64 = [&j](const char* k) { return j.at(k).get<std::int64_t>(); };
    if (cb == "runtime_enter") {
      calls.emplace_back(u32("correlation"), j.at("op").get<std::string>());
      op_of_call[u32("correlation")] = j.at("op").get<std::string>();
    }
    if (cb == "node_created") {
      log.graph_nodes.push_back({u32("graph"), u64("node"), 0, 0, u32("in_correlation"), 1, 0});
      op_of_node[u64("node")] = op_of_call[u32("in_correlation")];
    }
    if (cb == "node_cloned") {
      log.graph_nodes.push_back(
          {u32("graph"), u64("node"), u64("original_node"), u32("original_graph"), u32("in_correlation"), 1, 0});
    }
    if (act == "runtime") {
      ApiRecord a;
      a.name = j.at("name").get<std::string>();
      a.name = a.name.substr(0, a.name.rfind("_v"));
      a.start_ns = i64("start");
      a.end_ns = i64("end");
      a.thread_id = 1;
      a.correlation_id = u32("correlation");
      log.apis.push_back(a);
    }
    if (act == "kernel") {
      KernelRecord k;
      k.name = j.at("name").get<std::string>();
      k.start_ns = i64("start");
      k.end_ns = i64("end");
      k.stream = u32("stream");
      k.correlation_id = u32("correlation");
      k.graph_id = u32("graph");
      k.graph_node_id = u64("node");
      log.kernels.push_back(k);
    }
    if (act == "memset") {
      MemsetRecord m;
      m.start_ns = i64("start");
      m.end_ns = i64("end");
      m.stream = u32("stream");
      m.correlation_id = u32("correlation");
      m.graph_id = u32("graph");
      m.graph_node_id = u64("node");
      log.memsets.push_back(m);
    }
  }
  ASSERT_EQ(gpu_activity_log_from_json(to_json(log)), log);  // graph nodes survive the fixture format

  TraceRecorder recorder;
  GraphNodeIndex nodes;
  append_spans(log, recorder, nodes);
  Trace trace = recorder.take();
  // One op span per run of calls made under the same op, around them.
  std::map<std::uint32_t, const ApiRecord*> api;
  for (const ApiRecord& a : log.apis) api[a.correlation_id] = &a;
  SpanId next = 1'000'000;
  for (std::size_t i = 0; i < calls.size();) {
    std::size_t j = i;
    while (j + 1 < calls.size() && calls[j + 1].second == calls[i].second) ++j;
    if (calls[i].second != "(none)") {
      Span op;
      op.id = next++;
      op.level = Level::kFramework;
      op.name = calls[i].second;
      op.track = Track::host_thread(1);
      op.start_ns = api.at(calls[i].first)->start_ns - 1;
      op.end_ns = api.at(calls[j].first)->end_ns + 1;
      trace.spans.push_back(op);
    }
    i = j + 1;
  }
  Span app;
  app.id = next++;
  app.level = Level::kApplication;
  app.name = "probe";
  app.track = Track::host_thread(1);
  app.start_ns = std::numeric_limits<std::int64_t>::max();
  app.end_ns = std::numeric_limits<std::int64_t>::min();
  for (const Span& s : trace.spans) {
    app.start_ns = std::min(app.start_ns, s.start_ns);
    app.end_ns = std::max(app.end_ns, s.end_ns);
  }
  trace.spans.push_back(app);
  assemble(trace);

  std::map<SpanId, const Span*> by_id;
  for (const Span& s : trace.spans) by_id[s.id] = &s;
  std::size_t attributed = 0, launch_only = 0;
  std::map<std::string, std::size_t> replayed_ops;
  std::map<std::string, std::set<Track>> branch_tracks;
  for (const Span& s : trace.spans) {
    if (s.tag("replayed_from") == "cuda-graph") {
      ++replayed_ops[s.name];
      if (s.name.starts_with("branch")) branch_tracks[s.name].insert(s.track);
      continue;
    }
    if (s.level != Level::kKernel || !s.find_tag("graph_id")) continue;
    const Span& parent = *by_id.at(s.parent_id);
    if (s.tag("attribution") == "graph-node") {
      ++attributed;
      // The op open when its node was captured, placed as eager kernels are.
      EXPECT_EQ(parent.name, op_of_node.at(static_cast<std::uint64_t>(*s.tag_int("graph_capture_node_id"))));
      EXPECT_EQ(parent.level, Level::kFramework);
      EXPECT_TRUE(parent.track.is_device());
      EXPECT_LE(parent.start_ns, s.start_ns);
      EXPECT_GE(parent.end_ns, s.end_ns);
    } else {
      ++launch_only;
      EXPECT_EQ(s.tag("graph_capture"), "before-profiling");
      EXPECT_EQ(s.tag_int("graph_id"), 2);
      EXPECT_EQ(parent.name, "cudaGraphLaunch");
    }
  }
  EXPECT_EQ(attributed, 5u * 5 + 2 * 2);
  EXPECT_EQ(launch_only, 2u * 5);
  // 5 replays of the model's 3 ops, 2 of the two-stream graph's 2 branches.
  EXPECT_EQ(replayed_ops, (std::map<std::string, std::size_t>{
                              {"branchA", 2}, {"branchB", 2}, {"layer1.conv", 5}, {"layer2.relu", 5}, {"layer3", 5}}));
  ASSERT_EQ(branch_tracks.size(), 2u);
  EXPECT_NE(branch_tracks["branchA"], branch_tracks["branchB"]);  // each branch on the stream it ran on
  EXPECT_EQ(trace.counters.at("cuda_graph.replayed_activities"), 39u);
  EXPECT_EQ(trace.counters.at("cuda_graph.attributed_activities"), 29u);
  EXPECT_EQ(trace.counters.at("cuda_graph.captured_before_profiling"), 10u);
  // The eager launch at the end: under its op, through its launch, as always.
  for (const Span& s : trace.spans) {
    if (s.level != Level::kKernel || s.find_tag("graph_id")) continue;
    const Span& launch = *by_id.at(s.parent_id);
    EXPECT_EQ(launch.name, "cudaLaunchKernel");
    EXPECT_EQ(by_id.at(launch.parent_id)->name, "eager.op");
  }
  // The captured launches carry the nodes they created.
  std::size_t captured = 0;
  for (const Span& s : trace.spans)
    if (const Tag* t = s.find_tag("graph_captured_node_ids")) captured += t->as_int_list().size();
  EXPECT_EQ(captured, 5u + 2);
}

// API records from activity buffers: no correlation id in the callback, so the call is the one running on the node's
// thread at the node's time (and none when no call was).
TEST(GraphReplayAttribution, NodesWithoutACorrelationIdTakeTheCallRunningOnTheirThread) {
  GpuActivityLog log;
  auto api = [&](std::uint32_t correlation, std::uint64_t thread, std::int64_t start, std::int64_t end) {
    ApiRecord a;
    a.name = "cudaLaunchKernel";
    a.correlation_id = correlation;
    a.thread_id = thread;
    a.start_ns = start;
    a.end_ns = end;
    log.apis.push_back(a);
  };
  api(1, 7, 100, 200);
  api(2, 7, 300, 400);
  api(3, 8, 300, 400);  // another thread at the same time
  log.graph_nodes = {{4, 41, 0, 0, 0, 7, 350}, {4, 42, 0, 0, 0, 8, 310}, {4, 43, 0, 0, 0, 7, 250}};
  TraceRecorder recorder;
  GraphNodeIndex nodes;
  append_spans(log, recorder, nodes);
  std::map<std::uint64_t, std::vector<std::int64_t>> tagged;
  for (const Span& s : recorder.take().spans)
    if (const Tag* t = s.find_tag("graph_captured_node_ids")) tagged[s.correlation_id] = t->as_int_list();
  EXPECT_EQ(tagged, (std::map<std::uint64_t, std::vector<std::int64_t>>{{2, {41}}, {3, {42}}}));  // 43: between calls
}

}  // namespace
}  // namespace xsp
