// CUDA graph replay attribution (xsp/trace/graph_replay.h) on hand-made traces with known answers: nested ops at
// capture, two graphs, two streams, replays in a later trace, a graph built before profiling, idempotence.
#include "xsp/trace/graph_replay.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/export.h"

namespace xsp {
namespace {

using testing::by_id;
using testing::make_span;

Span named(Span s, std::string name) {
  s.name = std::move(name);
  return s;
}

// A launch captured into a graph: a SYSTEM span that created `nodes`.
Span captured_launch(SpanId id, std::int64_t start, std::int64_t end, std::vector<std::int64_t> nodes) {
  Span s = named(make_span(id, Level::kSystem, start, end, 1, kNoSpan, id), "cudaLaunchKernel");
  s.tags.emplace_back("graph_captured_node_ids", nodes);
  return s;
}

// A kernel replayed from node `node` (cloned from captured node `captured`; 0 = before profiling) under the graph
// launch with correlation id `launch`.
Span replayed_kernel(SpanId id, std::int64_t start, std::int64_t end, std::uint64_t launch, std::int64_t node,
                     std::int64_t captured, std::uint64_t stream = 7) {
  Span s = named(make_span(id, Level::kKernel, start, end, 0, kNoSpan, launch), "kernel#" + std::to_string(id));
  s.track = Track::stream(0, stream);
  s.tags.emplace_back("graph_id", 5);
  s.tags.emplace_back("graph_node_id", node);
  s.tags.emplace_back("attribution", "graph-launch");
  if (captured != 0) {
    s.tags.emplace_back("graph_capture_node_id", captured);
  } else {
    s.tags.emplace_back("graph_capture", "before-profiling");
  }
  return s;
}

Span graph_launch(SpanId id, std::int64_t start, std::int64_t end) {
  return named(make_span(id, Level::kSystem, start, end, 1, kNoSpan, id), "cudaGraphLaunch");
}

// The replayed ancestors of a span, innermost first, by name.
std::vector<std::string> op_path(const Trace& t, const Span& s) {
  std::vector<std::string> out;
  for (SpanId up = s.parent_id; up != kNoSpan;) {
    const Span& p = testing::by_id(t, up);
    if (p.tag("replayed_from") == "cuda-graph") out.push_back(p.name);
    up = p.parent_id;
  }
  return out;
}

const Span* find_kernel(const Trace& t, const std::string& name) {
  for (const Span& s : t.spans)
    if (s.name == name) return &s;
  return nullptr;
}

// Capture: predict ⊃ aten::linear ⊃ aten::addmm ⊃ launch (node 1001) and a memset node (1002) in the same call;
// predict ⊃ aten::relu ⊃ launch (node 1003). Replay (same trace): two launches of the instantiated graph (nodes
// 2001..2003 cloned from 1001..1003).
Trace capture_and_replay() {
  Trace t;
  t.spans.push_back(named(make_span(1, Level::kApplication, 0, 10'000), "run"));
  // The warm-up batch that captured: a predict stage, as the measured batches that replay (so not replayed).
  t.spans.push_back(named(make_span(2, Level::kModel, 10, 400), "predict"));
  t.spans.push_back(named(make_span(3, Level::kFramework, 20, 200), "aten::linear"));
  // Nested ops have their parent from the framework profiler (context), as in real traces.
  t.spans.push_back(named(make_span(4, Level::kFramework, 30, 190, 1, 3), "aten::addmm"));
  t.spans.push_back(captured_launch(5, 40, 50, {1001, 1002}));
  t.spans.push_back(named(make_span(6, Level::kFramework, 210, 300), "aten::relu"));
  t.spans.push_back(captured_launch(7, 220, 230, {1003}));
  t.spans.push_back(named(make_span(10, Level::kModel, 1000, 9000), "predict"));
  t.spans.push_back(graph_launch(11, 1100, 1150));
  t.spans.push_back(replayed_kernel(12, 1200, 1300, 11, 2001, 1001));
  t.spans.push_back(replayed_kernel(13, 1300, 1350, 11, 2002, 1001));
  t.spans.push_back(replayed_kernel(14, 1360, 1500, 11, 2003, 1003));
  t.spans.push_back(graph_launch(15, 5100, 5150));
  t.spans.push_back(replayed_kernel(16, 5200, 5290, 15, 2001, 1001));
  t.spans.push_back(replayed_kernel(17, 5290, 5330, 15, 2002, 1001));
  t.spans.push_back(replayed_kernel(18, 5340, 5480, 15, 2003, 1003));
  return t;
}

TEST(GraphReplay, ReplayedKernelsGoUnderTheOpsOpenAtCapture) {
  Trace t = capture_and_replay();
  GraphCaptureContexts contexts;
  assemble(t);  // with the process's registry, learning the capture from the trace itself
  Trace u = capture_and_replay();
  const AssemblyReport base = [&] {
    Trace v = u;
    // Rules only, to compare the counts with: strip the graph tags so the pass does nothing.
    for (Span& s : v.spans) std::erase_if(s.tags, [](const Tag& g) { return g.key == "graph_id"; });
    return assemble(v);
  }();
  const GraphReplayReport report = attribute_graph_replays(t, contexts);
  EXPECT_EQ(report.replayed, 6u);
  EXPECT_EQ(report.attributed, 6u);  // already done by assemble(): idempotent
  EXPECT_EQ(report.replayed_spans, 0u);

  // Each kernel under the op it was captured in, nested as at capture, then the predict stage that launched it.
  for (const char* k : {"kernel#12", "kernel#13", "kernel#16", "kernel#17"}) {
    const Span* s = find_kernel(t, k);
    ASSERT_NE(s, nullptr) << k;
    EXPECT_EQ(op_path(t, *s), (std::vector<std::string>{"aten::addmm", "aten::linear"})) << k;
    EXPECT_EQ(s->tag("attribution"), "graph-node");
    EXPECT_EQ(s->parent_rule, ParentRule::kContext);
  }
  for (const char* k : {"kernel#14", "kernel#18"}) {
    EXPECT_EQ(op_path(t, *find_kernel(t, k)), (std::vector<std::string>{"aten::relu"})) << k;
  }
  // One replayed span per (launch, captured op): 2 launches × 3 captured ops.
  std::map<std::string, std::vector<const Span*>> replayed;
  for (const Span& s : t.spans)
    if (s.tag("replayed_from") == "cuda-graph") replayed[s.name].push_back(&s);
  ASSERT_EQ(replayed.size(), 3u);
  for (const auto& [name, spans] : replayed) EXPECT_EQ(spans.size(), 2u) << name;
  // addmm of the first launch: from its first kernel's start to its last kernel's end, on their stream.
  const Span* addmm = nullptr;
  for (const Span* s : replayed["aten::addmm"])
    if (s->start_ns == 1200) addmm = s;
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->end_ns, 1350);
  EXPECT_EQ(addmm->track, Track::stream(0, 7));
  EXPECT_EQ(addmm->level, Level::kFramework);
  EXPECT_EQ(addmm->tag_int("graph_launch_id"), 11);
  EXPECT_EQ(addmm->tag_int("capture_span_id"), 4);
  const Span& linear = by_id(t, addmm->parent_id);
  EXPECT_EQ(linear.name, "aten::linear");
  EXPECT_EQ(linear.start_ns, 1200);
  EXPECT_EQ(linear.end_ns, 1350);
  EXPECT_EQ(by_id(t, linear.parent_id).name, "predict");  // the graph launch's parent
  for (const Span* s : replayed["aten::relu"]) EXPECT_EQ(by_id(t, s->parent_id).name, "predict");

  EXPECT_EQ(t.counters.at("cuda_graph.replayed_activities"), 6u);
  EXPECT_EQ(t.counters.at("cuda_graph.attributed_activities"), 6u);
  EXPECT_EQ(t.counters.at("cuda_graph.captured_before_profiling"), 0u);
  // 6 replayed spans placed by context, 6 kernels moved from correlation to context; nothing unplaced.
  EXPECT_EQ(t.assembly.by_context, base.by_context + 12);
  EXPECT_EQ(t.assembly.by_correlation, base.by_correlation - 6);
  EXPECT_EQ(t.assembly.unparented, base.unparented);
  EXPECT_EQ(t.spans.size(), u.spans.size() + 6);
  // Still in the assembler's order.
  for (std::size_t i = 1; i < t.spans.size(); ++i) EXPECT_LE(t.spans[i - 1].start_ns, t.spans[i].start_ns);
}

TEST(GraphReplay, AssemblingTwiceAddsNothing) {
  Trace t = capture_and_replay();
  assemble(t);
  const Trace once = t;
  assemble(t);
  EXPECT_EQ(t.spans, once.spans);
  EXPECT_EQ(t.counters, once.counters);
  EXPECT_EQ(t.assembly, once.assembly);
}

TEST(GraphReplay, CaptureLearnedInOneTraceAttributesReplaysInALaterOne) {
  GraphCaptureContexts contexts;
  // Warm-up trace: capture only. Two graphs: node 3001 under a program's range "block.0" (MODEL level, as `xsp profile`
  // records a program's own ranges) ⊃ launch, 3002 under a library's range "mlp".
  Trace warmup;
  warmup.spans.push_back(named(make_span(1, Level::kApplication, 0, 1000), "warmup"));
  Span block = named(make_span(2, Level::kModel, 10, 100), "block.0");
  block.tags.emplace_back("sample", "true");  // even a window at capture is no window when replayed
  warmup.spans.push_back(block);
  warmup.spans.push_back(captured_launch(3, 20, 30, {3001}));
  warmup.spans.push_back(named(make_span(4, Level::kLibrary, 200, 300), "mlp"));
  warmup.spans.push_back(captured_launch(5, 210, 220, {3002}));
  assemble(warmup);  // teaches the process's registry, which the assemble(run) below uses
  EXPECT_EQ(attribute_graph_replays(warmup, contexts).replayed, 0u);
  contexts.learn(warmup);  // learning twice changes nothing
  EXPECT_EQ(contexts.nodes(), 2u);
  ASSERT_NE(contexts.context(3001), nullptr);
  ASSERT_EQ(contexts.context(3001)->size(), 1u);
  EXPECT_EQ(contexts.context(3001)->front()->name, "block.0");
  EXPECT_EQ(contexts.context(3001)->front()->level, Level::kModel);
  EXPECT_TRUE(contexts.context(3001)->front()->tags.empty());

  // Measured trace: one launch replays both graphs' nodes on two streams, plus a node never captured under
  // profiling and one whose capture was not seen in any learned trace.
  Trace run;
  run.spans.push_back(named(make_span(1, Level::kApplication, 0, 10'000), "run"));
  run.spans.push_back(graph_launch(2, 100, 150));
  run.spans.push_back(replayed_kernel(3, 200, 300, 2, 4001, 3001, 7));
  run.spans.push_back(replayed_kernel(4, 200, 260, 2, 4002, 3002, 9));
  run.spans.push_back(replayed_kernel(5, 300, 400, 2, 4003, 0, 7));
  run.spans.push_back(replayed_kernel(6, 400, 500, 2, 4004, 9999, 7));
  assemble(run);
  std::size_t replayed_spans = 0;
  for (const Span& s : run.spans) replayed_spans += s.tag("replayed_from") == "cuda-graph";
  EXPECT_EQ(replayed_spans, 2u);
  const GraphReplayReport r = attribute_graph_replays(run, contexts);  // the same with the test's registry
  EXPECT_EQ(r.replayed, 4u);
  EXPECT_EQ(r.attributed, 2u);
  EXPECT_EQ(r.before_profiling, 1u);
  EXPECT_EQ(r.unknown_context, 1u);
  EXPECT_EQ(r.replayed_spans, 0u);
  EXPECT_EQ(op_path(run, *find_kernel(run, "kernel#3")), std::vector<std::string>{"block.0"});
  EXPECT_EQ(op_path(run, *find_kernel(run, "kernel#4")), std::vector<std::string>{"mlp"});
  EXPECT_EQ(by_id(run, find_kernel(run, "kernel#4")->parent_id).track, Track::stream(0, 9));
  // The replayed ranges hang from the launch's parent: here the run itself (the launch was placed by containment).
  EXPECT_EQ(by_id(run, by_id(run, find_kernel(run, "kernel#3")->parent_id).parent_id).name, "run");
  // Not attributable: under their graph launch, as before, and saying why.
  for (const char* k : {"kernel#5", "kernel#6"}) {
    const Span* s = find_kernel(run, k);
    EXPECT_EQ(by_id(run, s->parent_id).name, "cudaGraphLaunch") << k;
    EXPECT_EQ(s->tag("attribution"), "graph-launch") << k;
  }
  EXPECT_EQ(run.counters.at("cuda_graph.captured_before_profiling"), 1u);
  EXPECT_EQ(run.counters.at("cuda_graph.unknown_capture_context"), 1u);
}

TEST(GraphReplay, TracesWithoutGraphsAreUntouched) {
  Trace t;
  t.spans.push_back(named(make_span(1, Level::kApplication, 0, 100), "run"));
  t.spans.push_back(named(make_span(2, Level::kSystem, 10, 20, 1, kNoSpan, 2), "cudaLaunchKernel"));
  Span k = named(make_span(3, Level::kKernel, 30, 40, 0, kNoSpan, 2), "k");
  k.track = Track::stream(0, 7);
  t.spans.push_back(k);
  assemble(t);
  EXPECT_EQ(t.spans.size(), 3u);
  EXPECT_FALSE(t.counters.contains("cuda_graph.replayed_activities"));
  EXPECT_EQ(by_id(t, 3).parent_id, 2u);
}

// In the Chrome/Perfetto export a replayed op is an annotation on its GPU stream (not a CPU op), and each replayed
// kernel keeps its flow arrow from the graph launch, as Kineto draws it.
TEST(GraphReplay, ChromeExportShowsReplaysOnTheGraphLaunchsTimeline) {
  Trace t = capture_and_replay();
  assemble(t);
  const nlohmann::json j = to_chrome_trace(t, TraceResource{});
  std::map<std::string, std::set<std::string>> categories;  // name → categories
  std::map<std::int64_t, double> flow_start_ts;             // flow id (the kernel's span id) → ts of its start
  for (const nlohmann::json& e : j.at("traceEvents")) {
    if (e.at("ph") == "X") categories[e.at("name").get<std::string>()].insert(e.at("cat").get<std::string>());
    if (e.at("ph") == "s") flow_start_ts[e.at("id").get<std::int64_t>()] = e.at("ts").get<double>();
  }
  // The captured ops ran on the host at capture (cpu_op) and are replayed on the GPU (gpu_user_annotation).
  EXPECT_EQ(categories["aten::addmm"], (std::set<std::string>{"cpu_op", "gpu_user_annotation"}));
  EXPECT_EQ(categories["aten::relu"], (std::set<std::string>{"cpu_op", "gpu_user_annotation"}));
  // Kernels 12-14 replayed by the launch at 1.1 µs, 16-18 by the one at 5.1 µs.
  for (std::int64_t k : {12, 13, 14}) EXPECT_DOUBLE_EQ(flow_start_ts.at(k), 1.1) << k;
  for (std::int64_t k : {16, 17, 18}) EXPECT_DOUBLE_EQ(flow_start_ts.at(k), 5.1) << k;
}

}  // namespace
}  // namespace xsp
