// NVTX ranges as spans: PyTorch's op range strings on hand-made texts with known answers, the level of a range, and
// push/pop and start/end events turned into spans with their nesting.
#include "xsp/profilers/nvtx_ranges.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "xsp/trace/run_statistics.h"

namespace xsp::nvtx {
namespace {

TEST(TorchOpRange, EveryFieldGetNvtxStrWritesIsRead) {
  const auto r = parse_torch_op_range(
      "aten::conv2d, seq = 12, op_id = 345, sizes = [[1, 3, 224, 224], [64, 3, 7, 7], [], [2]], input_op_ids = "
      "[(340,0), (341,1)]");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->op, "aten::conv2d");
  EXPECT_EQ(r->sequence, 12);
  EXPECT_EQ(r->op_id, 345);
  // The LibTorch profiler's "shapes" tag form: one bracketed list per input, no spaces, no outer bracket.
  EXPECT_EQ(r->shapes, "[1,3,224,224],[64,3,7,7],[],[2]");
  EXPECT_EQ(r->input_op_ids, (std::vector<std::pair<std::int64_t, std::int64_t>>{{340, 0}, {341, 1}}));
}

TEST(TorchOpRange, FieldsAreOptionalAndTensorListsNest) {
  const auto seq_only = parse_torch_op_range("aten::add_, seq = 0");
  ASSERT_TRUE(seq_only.has_value());
  EXPECT_EQ(seq_only->op, "aten::add_");
  EXPECT_EQ(seq_only->sequence, 0);
  EXPECT_FALSE(seq_only->shapes.has_value());
  // A tensor-list input (aten::cat) nests one level deeper; the sizes field alone, without a sequence number.
  const auto cat = parse_torch_op_range("aten::cat, sizes = [[[2, 3], [2, 5]], []]");
  ASSERT_TRUE(cat.has_value());
  EXPECT_FALSE(cat->sequence.has_value());
  EXPECT_EQ(cat->shapes, "[[2,3],[2,5]],[]");
  // A backward op: the name holds spaces and a colon, the fields make it an op range.
  const auto bwd = parse_torch_op_range("autograd::engine::evaluate_function: ConvolutionBackward0, seq = 12");
  ASSERT_TRUE(bwd.has_value());
  EXPECT_EQ(bwd->op, "autograd::engine::evaluate_function: ConvolutionBackward0");
  EXPECT_EQ(bwd->sequence, 12);
  // No field, a namespaced name: an op (emit_nvtx without record_shapes, seq -1).
  const auto bare = parse_torch_op_range("prim::Constant");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->op, "prim::Constant");
  EXPECT_EQ(*bare, (TorchOpRange{"prim::Constant", std::nullopt, std::nullopt, std::nullopt, {}}));
}

TEST(TorchOpRange, UserRangesAndMalformedFieldsAreNotOps) {
  for (const char* text : {"infer", "step 3", "", "::x", "a::", "decode, seq = many", "aten::mm, sizes = [1, 2",
                           "aten::mm, sizes = [[1, x]]", "aten::mm, seq = 1 trailing", "my range :: with spaces"})
    EXPECT_FALSE(parse_torch_op_range(text).has_value()) << text;
}

TEST(RangeLevel, LibrariesFrameworkOpsAndTheProgramsOwnRanges) {
  EXPECT_EQ(range_level("cuDNN", "cudnnConvolutionForward"), Level::kLibrary);
  EXPECT_EQ(range_level("NCCL", "ncclAllReduce"), Level::kLibrary);
  EXPECT_EQ(range_level("cublas", "cublasSgemm_v2"), Level::kLibrary);  // matched without case
  EXPECT_EQ(range_level("TensorRT", "conv1 + relu1"), Level::kFramework);
  EXPECT_EQ(range_level("", "aten::linear, seq = 3, sizes = [[2, 8], [4, 8], [4]]"), Level::kFramework);
  EXPECT_EQ(range_level("", "infer"), Level::kModel);
  EXPECT_EQ(range_level("my_app", "step"), Level::kModel);
}

// A fake clock of ids: the recorder takes its ids from the caller (a TraceRecorder in the injection library).
struct Ids {
  SpanId next = 1;
  std::function<SpanId()> fn() {
    return [this] { return next++; };
  }
};

std::map<std::string, std::uint64_t> counters_of(const std::vector<std::pair<std::string, std::uint64_t>>& v) {
  return {v.begin(), v.end()};
}

TEST(RangeRecorder, PushPopNestsPerThreadWithContextParents) {
  Ids ids;
  RangeRecorder rec(ids.fn());
  // Thread 1: infer [0, 100] > aten::linear [10, 40] > cuBLAS gemm [15, 35]; thread 2: infer [5, 50] alone.
  EXPECT_EQ(rec.push(1, "", "infer", 0, 0), 0);
  EXPECT_EQ(rec.push(2, "", "infer", 0, 5), 0);
  EXPECT_EQ(rec.push(1, "", "aten::linear, seq = 4, sizes = [[2, 8], [4, 8], [4]]", 0, 10), 1);
  EXPECT_EQ(rec.push(1, "cuBLAS", "cublasSgemm_v2", 7, 15), 0);  // levels count per domain, as NVTX's
  EXPECT_EQ(rec.pop(1, "", 35), 1);        // NVTX pops per domain: the default domain's innermost range, linear...
  EXPECT_EQ(rec.pop(1, "cuBLAS", 40), 0);  // ...then gemm, out of order: each keeps its own interval
  EXPECT_EQ(rec.pop(2, "", 50), 0);
  EXPECT_EQ(rec.pop(1, "", 100), 0);
  EXPECT_EQ(rec.pop(1, "", 101), -1);  // nothing open: counted, no span
  auto [spans, counters] = rec.take(200);
  ASSERT_EQ(spans.size(), 4u);
  // Time order: infer (t1), infer (t2), linear, gemm.
  const Span& infer1 = spans[0];
  const Span& infer2 = spans[1];
  const Span& linear = spans[2];
  const Span& gemm = spans[3];
  EXPECT_EQ(infer1.name, "infer");
  EXPECT_EQ(infer1.level, Level::kModel);
  EXPECT_EQ(infer1.track, Track::host_thread(1));
  EXPECT_EQ(infer1.duration_ns(), 100);
  EXPECT_EQ(infer1.parent_id, kNoSpan);
  EXPECT_EQ(infer2.track, Track::host_thread(2));
  EXPECT_EQ(infer2.parent_id, kNoSpan);
  EXPECT_EQ(linear.name, "aten::linear");
  EXPECT_EQ(linear.level, Level::kFramework);
  EXPECT_EQ(linear.parent_id, infer1.id);
  EXPECT_EQ(linear.parent_rule, ParentRule::kContext);
  EXPECT_EQ(linear.tag("sequence"), std::optional<std::string_view>("4"));
  EXPECT_EQ(linear.tag("shapes"), std::optional<std::string_view>("[2,8],[4,8],[4]"));
  EXPECT_EQ(linear.duration_ns(), 25);
  EXPECT_EQ(gemm.level, Level::kLibrary);
  EXPECT_EQ(gemm.parent_id, linear.id);
  EXPECT_EQ(gemm.tag("domain"), std::optional<std::string_view>("cuBLAS"));
  EXPECT_EQ(gemm.tag("category"), std::optional<std::string_view>("7"));
  const auto c = counters_of(counters);
  EXPECT_EQ(c.at(stat::kNvtxRanges), 4u);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedPops), 1u);
  EXPECT_EQ(c.at(stat::kNvtxOpenAtEnd), 0u);
}

// Ops from the RecordFunction observer (push_op): the same spans as emit_nvtx's ranges of the same ops, their text
// built at take(), nested with the program's ranges, in their own domain (an NVTX pop of the default domain never
// closes one).
TEST(RangeRecorder, ObservedOpsAreFrameworkSpansNestedWithTheProgramsRanges) {
  Ids ids;
  RangeRecorder rec(ids.fn());
  const std::string matmul = "aten::matmul", mm = "aten::mm";
  // step [0, 100] > aten::matmul [10, 60] > aten::mm [20, 50] (seq 7, shapes); a user range "inner" [30, 40] in mm.
  EXPECT_EQ(rec.push(1, "", "step", 0, 0), 0);
  EXPECT_EQ(rec.push_op(1, "torch.ops", &matmul, -1, "", 10), 0);
  EXPECT_EQ(rec.push_op(1, "torch.ops", &mm, 7, "[[8, 32], [32, 16]]", 20), 1);
  EXPECT_EQ(rec.push(1, "", "inner", 0, 30), 1);
  EXPECT_EQ(rec.pop(1, "", 40), 1);  // the default domain's innermost: "inner", not the op around it
  EXPECT_EQ(rec.pop(1, "torch.ops", 50), 1);
  EXPECT_EQ(rec.pop(1, "torch.ops", 60), 0);
  EXPECT_EQ(rec.pop(1, "", 100), 0);
  auto [spans, counters] = rec.take(200);
  ASSERT_EQ(spans.size(), 4u);
  const Span& step = spans[0];
  const Span& op_matmul = spans[1];
  const Span& op_mm = spans[2];
  const Span& inner = spans[3];
  EXPECT_EQ(op_matmul.name, "aten::matmul");
  EXPECT_EQ(op_matmul.level, Level::kFramework);
  EXPECT_EQ(op_matmul.parent_id, step.id);
  EXPECT_FALSE(op_matmul.tag("sequence").has_value());
  EXPECT_FALSE(op_matmul.tag("shapes").has_value());
  EXPECT_EQ(op_matmul.tag("domain"), std::optional<std::string_view>("torch.ops"));
  EXPECT_EQ(op_mm.name, "aten::mm");
  EXPECT_EQ(op_mm.level, Level::kFramework);
  EXPECT_EQ(op_mm.parent_id, op_matmul.id);
  EXPECT_EQ(op_mm.tag_int("sequence"), std::optional<std::int64_t>(7));
  EXPECT_EQ(op_mm.tag("shapes"), std::optional<std::string_view>("[8,32],[32,16]"));
  EXPECT_EQ(op_mm.duration_ns(), 30);
  EXPECT_EQ(inner.name, "inner");
  EXPECT_EQ(inner.level, Level::kModel);
  EXPECT_EQ(inner.parent_id, op_mm.id);
  EXPECT_EQ(counters_of(counters).at(stat::kNvtxUnmatchedPops), 0u);
}

TEST(RangeRecorder, StartEndRangesCrossThreadsAndOpenRangesCloseAtTake) {
  Ids ids;
  RangeRecorder rec(ids.fn());
  const std::uint64_t a = rec.start(1, "", "request 1", 0, 10);
  const std::uint64_t b = rec.start(1, "", "request 2", 0, 20);
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  rec.end(a, 70);   // ended by another thread: still a span of thread 1, where it started
  rec.end(a, 80);   // twice: counted
  rec.end(999, 5);  // never started: counted
  rec.push(3, "", "crashed inside", 0, 30);
  EXPECT_EQ(rec.pop(3, "other domain", 40), -1);  // a domain pops only its own ranges
  auto [spans, counters] = rec.take(100);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].name, "request 1");
  EXPECT_EQ(spans[0].duration_ns(), 60);
  EXPECT_EQ(spans[0].tag("nvtx"), std::optional<std::string_view>("start"));
  EXPECT_EQ(spans[1].name, "request 2");  // still open: ends at the take
  EXPECT_EQ(spans[1].end_ns, 100);
  EXPECT_EQ(spans[1].tag("open_at_end"), std::optional<std::string_view>("true"));
  EXPECT_EQ(spans[2].name, "crashed inside");
  EXPECT_EQ(spans[2].end_ns, 100);
  const auto c = counters_of(counters);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedEnds), 2u);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedPops), 1u);
  EXPECT_EQ(c.at(stat::kNvtxOpenAtEnd), 2u);
  // Taken: the recorder starts empty again.
  auto [again, counters2] = rec.take(200);
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(counters_of(counters2).at(stat::kNvtxUnmatchedEnds), 0u);
}

// A recorder that may hold 3 ranges: the 4th and 5th are dropped and counted, a dropped push still pairs with its pop
// (the range around it closes at its own pop), a dropped start gives id 0, and a take frees the room again.
TEST(RangeRecorder, PastItsCapRangesAreDroppedAndCountedAndNestingHolds) {
  Ids ids;
  RangeRecorder rec(ids.fn(), 3);
  rec.push(1, "", "step", 0, 0);
  rec.push(1, "", "aten::conv2d", 0, 10);
  rec.push(1, "", "aten::convolution", 0, 12);
  EXPECT_EQ(rec.push(1, "", "aten::_convolution", 0, 14), 3) << "a dropped push still has its level";
  EXPECT_EQ(rec.start(2, "", "request", 0, 15), 0u);
  rec.end(0, 16);                    // the dropped start's end: ignored, not unmatched
  EXPECT_EQ(rec.pop(1, "", 20), 3);  // the dropped one
  EXPECT_EQ(rec.pop(1, "", 30), 2);  // aten::convolution, at its own pop
  EXPECT_EQ(rec.pop(1, "", 40), 1);
  EXPECT_EQ(rec.pop(1, "", 50), 0);
  auto [spans, counters] = rec.take(100);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[2].name, "aten::convolution");
  EXPECT_EQ(spans[2].end_ns, 30);
  EXPECT_EQ(spans[2].parent_id, spans[1].id);
  EXPECT_EQ(spans[1].parent_id, spans[0].id);
  const auto c = counters_of(counters);
  EXPECT_EQ(c.at(stat::kNvtxDroppedRanges), 2u);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedEnds), 0u);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedPops), 0u);
  EXPECT_EQ(c.at(stat::kNvtxOpenAtEnd), 0u);
  // Room again after the take.
  EXPECT_NE(rec.start(2, "", "request", 0, 200), 0u);
  auto [after, counters2] = rec.take(300);
  EXPECT_EQ(after.size(), 1u);
  EXPECT_EQ(counters_of(counters2).at(stat::kNvtxDroppedRanges), 0u);
}

// Threads take room in blocks of 1,024: with room for 1,500, a thread that recorded one range holds 1,024, so another
// records the 476 left and then drops; a take frees it all again.
TEST(RangeRecorder, ThreadsTakeRoomInBlocksAndTheBoundHolds) {
  Ids ids;
  RangeRecorder rec(ids.fn(), 1500);
  rec.push(1, "", "serve", 0, 0);
  for (int i = 0; i < 600; ++i) {
    rec.push(2, "", "step", 0, 10 * i);
    rec.pop(2, "", 10 * i + 5);
  }
  rec.pop(1, "", 7000);
  auto [spans, counters] = rec.take(8000);
  EXPECT_EQ(spans.size(), 477u);
  EXPECT_EQ(counters_of(counters).at(stat::kNvtxDroppedRanges), 124u);
  EXPECT_EQ(spans.back().name, "step");
  EXPECT_EQ(spans.back().start_ns, 4750) << "the 476th step is the last recorded";
  for (int i = 0; i < 1500; ++i) {
    rec.push(2, "", "step", 0, 10 * i);
    rec.pop(2, "", 10 * i + 5);
  }
  auto [again, counters2] = rec.take(20000);
  EXPECT_EQ(again.size(), 1500u) << "after a take the whole room is there again";
  EXPECT_EQ(counters_of(counters2).at(stat::kNvtxDroppedRanges), 0u);
}

// A window taken while the program runs on (xsp profile --stop): closed ranges and copies of the open ones, cut at the
// window's end; the open ones then close without an error and are not handed out again, and what opens after the
// window is the next take's, with no parent from the window.
TEST(RangeRecorder, AWindowTakesEveryRangeOnceAndLeavesOpenRangesPairing) {
  Ids ids;
  RangeRecorder rec(ids.fn());
  rec.push(1, "", "serve", 0, 0);
  rec.push(1, "", "step", 0, 10);
  EXPECT_EQ(rec.pop(1, "", 20), 1);
  rec.push(1, "", "step", 0, 30);  // open at the window's end (50)
  const std::uint64_t request = rec.start(2, "", "request", 0, 40);
  auto [window, counters] = rec.take_window(50);
  ASSERT_EQ(window.size(), 4u);
  EXPECT_EQ(window[0].name, "serve");
  EXPECT_EQ(window[0].end_ns, 50);
  EXPECT_EQ(window[0].tag("open_at_end"), std::optional<std::string_view>("true"));
  EXPECT_EQ(window[1].end_ns, 20);
  EXPECT_EQ(window[1].parent_id, window[0].id);
  EXPECT_EQ(window[2].start_ns, 30);
  EXPECT_EQ(window[2].end_ns, 50);
  EXPECT_EQ(window[2].parent_id, window[0].id);
  EXPECT_EQ(window[3].name, "request");
  EXPECT_EQ(counters_of(counters).at(stat::kNvtxOpenAtEnd), 3u);
  // After the window: the open step and serve close at their pops, the request at its end, none an error.
  EXPECT_EQ(rec.pop(1, "", 60), 1);
  rec.push(1, "", "step", 0, 70);
  EXPECT_EQ(rec.pop(1, "", 80), 1) << "the placeholder of serve still holds level 0";
  rec.end(request, 85);
  EXPECT_EQ(rec.pop(1, "", 90), 0);
  auto [after, counters2] = rec.take(100);
  ASSERT_EQ(after.size(), 1u) << "only the step that opened after the window";
  EXPECT_EQ(after[0].start_ns, 70);
  EXPECT_EQ(after[0].parent_id, kNoSpan);
  const auto c = counters_of(counters2);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedPops), 0u);
  EXPECT_EQ(c.at(stat::kNvtxUnmatchedEnds), 0u);
  EXPECT_EQ(c.at(stat::kNvtxOpenAtEnd), 0u);
}

// Threads record at once, each through its own ranges (the injection library keeps thread() per thread), while windows
// are taken from another thread: every range is handed out exactly once, each op under its own thread's step (or none,
// when a window cut the step before the op opened), and nothing is lost or unmatched.
TEST(RangeRecorder, ThreadsRecordAtOnceWhileWindowsAreTakenAndEveryRangeIsTakenOnce) {
  std::atomic<SpanId> next{1};
  // Ids in blocks per thread, as the injection library hands them out (TraceRecorder::reserve_ids).
  RangeRecorder rec([&] { return next.fetch_add(1); }, SIZE_MAX, [&](std::size_t n) { return next.fetch_add(n); });
  EXPECT_EQ(&rec.thread(7), &rec.thread(7)) << "one object per thread id";
  EXPECT_NE(&rec.thread(7), &rec.thread(8));
  constexpr int kThreads = 4, kSteps = 3000;
  static const std::string kOp = "aten::mm";
  std::atomic<int> running{kThreads};
  std::atomic<int> windows{0};
  std::vector<std::thread> pool;
  for (int t = 1; t <= kThreads; ++t)
    pool.emplace_back([&, t] {
      RangeRecorder::Thread& mine = rec.thread(static_cast<std::uint64_t>(t));
      for (int i = 0; i < kSteps; ++i) {
        // Halfway, wait for a window: a fast thread must not finish before the first one is taken.
        if (i == kSteps / 2)
          while (windows.load() == 0) std::this_thread::yield();
        const std::int64_t ts = 10 * i;
        EXPECT_EQ(rec.push(mine, "", "step", 0, ts), 0);
        EXPECT_EQ(rec.push_op(mine, "torch.ops", &kOp, i, "", ts + 1), 0);
        EXPECT_EQ(rec.pop(mine, "torch.ops", ts + 2), 0);
        EXPECT_EQ(rec.pop(mine, "", ts + 3), 0);
      }
      running.fetch_sub(1);
    });
  std::vector<Span> all;
  std::uint64_t unmatched = 0, dropped = 0;
  auto keep = [&](RangeRecorder::Taken taken) {
    for (Span& s : taken.first) all.push_back(std::move(s));
    const auto c = counters_of(taken.second);
    unmatched += c.at(stat::kNvtxUnmatchedPops) + c.at(stat::kNvtxUnmatchedEnds);
    dropped += c.at(stat::kNvtxDroppedRanges);
  };
  while (running.load() > 0) {
    keep(rec.take_window(0));
    windows.fetch_add(1);
  }
  for (std::thread& t : pool) t.join();
  keep(rec.take(0));
  EXPECT_GT(windows.load(), 0);
  EXPECT_EQ(unmatched, 0u);
  EXPECT_EQ(dropped, 0u);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(2 * kThreads * kSteps));
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : all) EXPECT_TRUE(by_id.emplace(s.id, &s).second) << "span " << s.id << " taken twice";
  std::set<std::uint64_t> tracks;
  int orphans = 0;
  for (const Span& s : all) {
    tracks.insert(s.track.id);
    if (s.name != kOp) continue;
    ASSERT_EQ(s.level, Level::kFramework);
    // An op that opened after a window cut its step has no parent (the step's span is the window's).
    if (s.parent_id == kNoSpan) {
      ++orphans;
      continue;
    }
    const auto parent = by_id.find(s.parent_id);
    ASSERT_NE(parent, by_id.end()) << "an op's step was never taken";
    EXPECT_EQ(parent->second->name, "step");
    EXPECT_EQ(parent->second->track, s.track) << "an op under another thread's step";
    EXPECT_EQ(parent->second->start_ns + 1, s.start_ns);
  }
  EXPECT_EQ(tracks.size(), static_cast<std::size_t>(kThreads));
  EXPECT_LE(orphans, windows.load() * kThreads) << "a window cuts at most one open step per thread";
}

}  // namespace
}  // namespace xsp::nvtx
