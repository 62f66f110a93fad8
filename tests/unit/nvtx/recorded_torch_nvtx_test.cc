// A PyTorch 2.11 program's NVTX ranges as the injection library recorded them on an H200
// (scripts/gpu/nvtx_torch.py under NVTX_INJECTION64_PATH, torch.autograd.profiler.emit_nvtx(record_shapes=True)):
// its own "step" ranges at MODEL level, every op PyTorch named at FRAMEWORK level with its op id, input shapes and,
// under autograd, the sequence number that pairs a forward op with its backward.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "xsp/trace/run_statistics.h"
#include "xsp/trace/serialize.h"

namespace xsp {
namespace {

Trace recorded() {
  std::ifstream f(std::string(XSP_TEST_FIXTURES) + "/nvtx/torch_emit_nvtx_h200.xsptrace", std::ios::binary);
  EXPECT_TRUE(f) << "fixture missing";
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return decode_trace(bytes);
}

TEST(RecordedTorchNvtx, StepsHoldEveryForwardOpNestedWithItsShapes) {
  const Trace t = recorded();
  EXPECT_EQ(t.counters.at(stat::kNvtxRanges), t.spans.size());
  EXPECT_EQ(t.counters.at(stat::kNvtxUnmatchedPops), 0u);
  EXPECT_EQ(t.counters.at(stat::kNvtxOpenAtEnd), 0u);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id[s.id] = &s;
  auto step_of = [&](const Span& s) -> const Span* {
    for (const Span* p = &s; p != nullptr;) {
      if (p->level == Level::kModel) return p;
      auto it = by_id.find(p->parent_id);
      p = it == by_id.end() ? nullptr : it->second;
    }
    return nullptr;
  };
  // Three inference steps of Linear(64, 128) → ReLU → Linear(128, 10) on a batch of 8: 12 ops each, the same ones.
  std::vector<const Span*> steps;
  for (const Span& s : t.spans)
    if (s.name == "step") steps.push_back(&s);
  ASSERT_EQ(steps.size(), 3u);
  for (const Span* step : steps) {
    EXPECT_EQ(step->level, Level::kModel);
    std::multiset<std::string> ops;
    for (const Span& s : t.spans)
      if (s.level == Level::kFramework && step_of(s) == step) ops.insert(s.name);
    EXPECT_EQ(ops.size(), 12u);
    EXPECT_EQ(ops.count("aten::linear"), 2u);
    EXPECT_EQ(ops.count("aten::addmm"), 2u);
    EXPECT_EQ(ops.count("aten::relu"), 1u);
  }
  // The first linear of each step: its inputs are x, the weight and the bias; aten::addmm runs inside it.
  const Span& linear =
      *std::find_if(t.spans.begin(), t.spans.end(), [](const Span& s) { return s.name == "aten::linear"; });
  EXPECT_EQ(linear.tag("shapes"), std::optional<std::string_view>("[8,64],[128,64],[128]"));
  EXPECT_TRUE(linear.tag("op_id").has_value());
  EXPECT_FALSE(linear.tag("sequence").has_value());  // under no_grad: no autograd sequence number
  bool addmm_inside = false;
  for (const Span& s : t.spans)
    addmm_inside |= s.name == "aten::addmm" && s.parent_id == linear.id && s.start_ns >= linear.start_ns &&
                    s.end_ns <= linear.end_ns;
  EXPECT_TRUE(addmm_inside);
}

TEST(RecordedTorchNvtx, BackwardOpsCarryTheSequenceNumberOfTheirForwardOp) {
  const Trace t = recorded();
  // Forward ops under autograd have sequence numbers; each backward node names the number of the op it differentiates.
  std::map<std::string, std::string> forward;   // sequence → forward op, in the "train step" range
  std::map<std::string, std::string> backward;  // sequence → backward node
  for (const Span& s : t.spans) {
    const auto seq = s.tag("sequence");
    if (!seq) continue;
    if (s.name.ends_with("Backward0"))
      backward[std::string(*seq)] = s.name;
    else if (!forward.count(std::string(*seq)))
      forward[std::string(*seq)] = s.name;
  }
  EXPECT_EQ(forward.at("1"), "aten::addmm");
  EXPECT_EQ(backward.at("1"), "AddmmBackward0");
  EXPECT_EQ(forward.at("2"), "aten::relu");
  EXPECT_EQ(backward.at("2"), "ReluBackward0");
  EXPECT_EQ(forward.at("6"), "aten::mean");
  EXPECT_EQ(backward.at("6"), "MeanBackward0");
  // The backward pass runs on autograd's own thread: another track than the forward ops'.
  std::set<std::uint64_t> backward_tracks, program_tracks;
  for (const Span& s : t.spans) {
    if (s.name.starts_with("autograd::engine::evaluate_function: ")) backward_tracks.insert(s.track.id);
    if (s.level == Level::kModel) program_tracks.insert(s.track.id);  // "step", "train step": the Python thread
  }
  ASSERT_EQ(backward_tracks.size(), 1u);
  ASSERT_EQ(program_tracks.size(), 1u);
  EXPECT_NE(*backward_tracks.begin(), *program_tracks.begin());
}

}  // namespace
}  // namespace xsp
