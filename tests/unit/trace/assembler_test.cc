#include "xsp/trace/assembler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "test_util.h"

namespace xsp {
namespace {

using testing::by_id;
using testing::make_span;
using L = Level;

void expect_parent(const Trace& t, SpanId child, SpanId parent, ParentRule rule) {
  const Span& s = by_id(t, child);
  EXPECT_EQ(s.parent_id, parent) << "span " << child;
  EXPECT_EQ(s.parent_rule, rule) << "span " << child;
}

TEST(Assembler, NestingThreeLevelsDeep) {
  Trace t;
  // Given out of order on purpose.
  t.spans = {make_span(4, L::kLibrary, 300, 400), make_span(2, L::kModel, 100, 900),
             make_span(1, L::kApplication, 0, 1000), make_span(3, L::kFramework, 200, 800)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 1, kNoSpan, ParentRule::kNone);
  expect_parent(t, 2, 1, ParentRule::kContainment);
  expect_parent(t, 3, 2, ParentRule::kContainment);
  expect_parent(t, 4, 3, ParentRule::kContainment);
  EXPECT_EQ(r.by_containment, 3u);
  EXPECT_EQ(r.roots, 1u);
  EXPECT_EQ(r.unparented, 0u);
  EXPECT_EQ(r.by_context, 0u);
  EXPECT_EQ(r.by_correlation, 0u);
  EXPECT_EQ(r.dangling_parent_ids, 0u);
  EXPECT_EQ(t.assembly, r);
  // Sorted by start.
  ASSERT_EQ(t.spans.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(t.spans[i].id, i + 1);
}

TEST(Assembler, SkipsLevelsWhenIntermediateAbsent) {
  Trace t;
  t.spans = {make_span(1, L::kModel, 0, 100), make_span(2, L::kKernel, 10, 20)};
  assemble(t);
  expect_parent(t, 2, 1, ParentRule::kContainment);
  EXPECT_EQ(t.assembly.unparented, 1u);  // the MODEL span: not APPLICATION, nothing contains it
  EXPECT_EQ(t.assembly.roots, 0u);
}

TEST(Assembler, SiblingsAndTouchingBoundaries) {
  Trace t;
  t.spans = {make_span(1, L::kModel, 0, 100),     make_span(2, L::kFramework, 10, 20),
             make_span(4, L::kFramework, 20, 30), make_span(3, L::kFramework, 30, 40),
             make_span(5, L::kLibrary, 32, 35),   make_span(6, L::kLibrary, 30, 30),
             make_span(7, L::kLibrary, 25, 50)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 2, 1, ParentRule::kContainment);
  expect_parent(t, 3, 1, ParentRule::kContainment);
  expect_parent(t, 4, 1, ParentRule::kContainment);
  expect_parent(t, 5, 3, ParentRule::kContainment);
  // Contained by both 4 [20,30] and 3 [30,40]: the latest start wins.
  expect_parent(t, 6, 3, ParentRule::kContainment);
  // Straddles two siblings: only the MODEL span contains it.
  expect_parent(t, 7, 1, ParentRule::kContainment);
  EXPECT_EQ(r.by_containment, 6u);
  EXPECT_EQ(r.unparented, 1u);  // span 1
}

TEST(Assembler, TiesAtEqualTimestamps) {
  Trace t;
  // A MODEL and a FRAMEWORK span with the same interval; the framework one has the smaller id.
  t.spans = {make_span(3, L::kFramework, 0, 100), make_span(5, L::kModel, 0, 100),
             // Two same-level spans with identical intervals, and a LIBRARY span inside both.
             make_span(8, L::kLibrary, 10, 20), make_span(7, L::kLibrary, 10, 20), make_span(9, L::kSystem, 12, 15)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 5, kNoSpan, ParentRule::kNone);
  expect_parent(t, 3, 5, ParentRule::kContainment);
  expect_parent(t, 7, 3, ParentRule::kContainment);
  expect_parent(t, 8, 3, ParentRule::kContainment);
  expect_parent(t, 9, 7, ParentRule::kContainment);  // smaller id among equals
  EXPECT_EQ(r.by_containment, 4u);
  EXPECT_EQ(r.unparented, 1u);
  // Sorted (start, level, -end, id).
  std::vector<SpanId> order;
  for (const Span& s : t.spans) order.push_back(s.id);
  EXPECT_EQ(order, (std::vector<SpanId>{5, 3, 7, 8, 9}));
}

TEST(Assembler, InnermostPrefersDeeperLevelThenShorterInterval) {
  Trace t;
  t.spans = {make_span(1, L::kModel, 0, 100), make_span(2, L::kFramework, 0, 100), make_span(3, L::kFramework, 0, 50),
             make_span(4, L::kLibrary, 0, 50), make_span(5, L::kSystem, 0, 10)};
  assemble(t);
  expect_parent(t, 2, 1, ParentRule::kContainment);
  expect_parent(t, 3, 1, ParentRule::kContainment);  // same level as 2: not its parent
  expect_parent(t, 4, 3, ParentRule::kContainment);  // 3 is shorter than 2
  expect_parent(t, 5, 4, ParentRule::kContainment);  // deeper level wins at equal start
}

TEST(Assembler, ZeroLengthSpansAtBoundaries) {
  Trace t;
  t.spans = {make_span(1, L::kModel, 0, 100), make_span(2, L::kFramework, 100, 100), make_span(3, L::kFramework, 0, 0),
             make_span(4, L::kFramework, 101, 101)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 2, 1, ParentRule::kContainment);
  expect_parent(t, 3, 1, ParentRule::kContainment);
  expect_parent(t, 4, kNoSpan, ParentRule::kNone);
  EXPECT_EQ(r.unparented, 2u);  // 1 and 4

  // When a second MODEL span starts where the first ends, the latest start wins.
  Trace u;
  u.spans = {make_span(1, L::kModel, 0, 100), make_span(2, L::kModel, 100, 200), make_span(3, L::kFramework, 100, 100)};
  assemble(u);
  expect_parent(u, 3, 2, ParentRule::kContainment);
}

TEST(Assembler, ThreadsAreSeparate) {
  Trace t;
  t.spans = {make_span(1, L::kModel, 0, 100, /*thread=*/1), make_span(2, L::kFramework, 10, 20, /*thread=*/2),
             make_span(3, L::kFramework, 30, 40, /*thread=*/1), make_span(4, L::kModel, 0, 100, /*thread=*/3),
             make_span(5, L::kLibrary, 31, 32, /*thread=*/3)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 2, kNoSpan, ParentRule::kNone);
  expect_parent(t, 3, 1, ParentRule::kContainment);
  expect_parent(t, 5, 4, ParentRule::kContainment);  // not 3, which is on thread 1
  EXPECT_EQ(r.by_containment, 2u);
  EXPECT_EQ(r.unparented, 3u);  // 1, 2, 4
}

TEST(Assembler, ContextParentsKeptAndDanglingReplaced) {
  Trace t;
  t.spans = {make_span(1, L::kModel, 0, 100), make_span(2, L::kModel, 200, 300),
             // The profiler says 2, although the times say 1: context wins.
             make_span(3, L::kFramework, 10, 20, 1, /*parent=*/2),
             // Parent 999 does not exist: counted and re-placed by containment.
             make_span(4, L::kFramework, 30, 40, 1, /*parent=*/999),
             // Names itself: as good as absent.
             make_span(5, L::kFramework, 250, 260, 1, /*parent=*/5),
             // Dangling and nothing contains it.
             make_span(6, L::kFramework, 500, 600, 1, /*parent=*/1000)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 3, 2, ParentRule::kContext);
  expect_parent(t, 4, 1, ParentRule::kContainment);
  expect_parent(t, 5, 2, ParentRule::kContainment);
  expect_parent(t, 6, kNoSpan, ParentRule::kNone);
  EXPECT_EQ(r.by_context, 1u);
  EXPECT_EQ(r.dangling_parent_ids, 3u);
  EXPECT_EQ(r.by_containment, 2u);
  EXPECT_EQ(r.unparented, 3u);  // 1, 2, 6
  EXPECT_EQ(r.roots, 0u);
}

TEST(Assembler, CorrelationIgnoresTime) {
  Trace t;
  t.spans = {make_span(1, L::kApplication, 0, 1000, 1), make_span(10, L::kSystem, 100, 110, 1, kNoSpan, /*corr=*/7),
             // Runs long after the launch, on a device track.
             make_span(11, L::kKernel, 5000, 6000, 99, kNoSpan, /*corr=*/7),
             // A second activity of the same launch (e.g. a memset).
             make_span(12, L::kKernel, 6000, 6100, 99, kNoSpan, /*corr=*/7),
             // No launching call carries id 8.
             make_span(13, L::kKernel, 7000, 7100, 99, kNoSpan, /*corr=*/8),
             // A context parent is not overridden by correlation.
             make_span(14, L::kKernel, 7200, 7300, 99, /*parent=*/1, /*corr=*/7)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 10, 1, ParentRule::kContainment);
  expect_parent(t, 11, 10, ParentRule::kCorrelation);
  expect_parent(t, 12, 10, ParentRule::kCorrelation);
  expect_parent(t, 13, kNoSpan, ParentRule::kNone);
  expect_parent(t, 14, 1, ParentRule::kContext);
  EXPECT_EQ(r.by_correlation, 2u);
  EXPECT_EQ(r.by_containment, 1u);
  EXPECT_EQ(r.by_context, 1u);
  EXPECT_EQ(r.roots, 1u);
  EXPECT_EQ(r.unparented, 1u);
}

TEST(Assembler, CorrelationPicksShallowestLevel) {
  Trace t;
  // External correlation: FRAMEWORK op, SYSTEM call and KERNEL all carry id 3.
  t.spans = {make_span(1, L::kFramework, 0, 100, 1, kNoSpan, 3), make_span(2, L::kSystem, 10, 20, 5, kNoSpan, 3),
             make_span(3, L::kKernel, 500, 600, 99, kNoSpan, 3), make_span(4, L::kFramework, 200, 300, 6, kNoSpan, 3)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, 2, 1, ParentRule::kCorrelation);
  expect_parent(t, 3, 1, ParentRule::kCorrelation);
  expect_parent(t, 4, kNoSpan, ParentRule::kNone);  // same level as the head: not placed by correlation
  EXPECT_EQ(r.by_correlation, 2u);
  EXPECT_EQ(r.unparented, 2u);
}

TEST(Assembler, NegativeDurationsClampedAndCounted) {
  Trace t;
  t.counters["assembler.negative_duration"] = 1;  // from an earlier pass: added to
  t.spans = {make_span(1, L::kModel, 0, 100), make_span(2, L::kFramework, 50, 40), make_span(3, L::kFramework, 60, 70)};
  assemble(t);
  EXPECT_EQ(by_id(t, 2).start_ns, 50);
  EXPECT_EQ(by_id(t, 2).end_ns, 50);
  expect_parent(t, 2, 1, ParentRule::kContainment);
  EXPECT_EQ(t.counters.at("assembler.negative_duration"), 2u);

  Trace clean;
  clean.spans = {make_span(1, L::kModel, 0, 100)};
  assemble(clean);
  EXPECT_EQ(clean.counters.count("assembler.negative_duration"), 0u);
}

TEST(Assembler, EmptyTraceAndIdempotence) {
  Trace empty;
  EXPECT_EQ(assemble(empty), AssemblyReport{});

  Trace t;
  t.spans = {make_span(1, L::kApplication, 0, 1000),
             make_span(2, L::kModel, 10, 900),
             make_span(3, L::kFramework, 20, 30, 1, /*parent=*/2),
             make_span(4, L::kSystem, 21, 22, 1, kNoSpan, 9),
             make_span(5, L::kKernel, 40, 50, 7, kNoSpan, 9),
             make_span(6, L::kKernel, 60, 70, 7)};
  const AssemblyReport first = assemble(t);
  const Trace once = t;
  const AssemblyReport second = assemble(t);
  EXPECT_EQ(first, second);
  EXPECT_EQ(t, once);
  EXPECT_EQ(first.by_context, 1u);
  EXPECT_EQ(first.by_correlation, 1u);
  EXPECT_EQ(first.by_containment, 2u);  // 2 under 1, 4 under 3
  EXPECT_EQ(first.roots, 1u);
  EXPECT_EQ(first.unparented, 1u);  // 6
}

TEST(Assembler, ArbitraryIdsUseSparseLookup) {
  Trace t;
  const SpanId big = SpanId{1} << 60;
  t.spans = {make_span(big, L::kModel, 0, 100), make_span(big + 5, L::kFramework, 10, 20, 1, /*parent=*/big),
             make_span(3, L::kFramework, 30, 40, 1, /*parent=*/big + 1)};
  const AssemblyReport r = assemble(t);
  expect_parent(t, big + 5, big, ParentRule::kContext);
  expect_parent(t, 3, big, ParentRule::kContainment);
  EXPECT_EQ(r.dangling_parent_ids, 1u);
}

// Brute-force reading of the header's containment rule, to check the sweep on random traces.
SpanId brute_force_container(const std::vector<Span>& spans, const Span& s) {
  const Span* best = nullptr;
  for (const Span& c : spans) {
    if (c.track != s.track || c.level >= s.level || c.start_ns > s.start_ns || s.end_ns > c.end_ns) continue;
    auto better = [](const Span& a, const Span& b) {  // a more inner than b
      if (a.start_ns != b.start_ns) return a.start_ns > b.start_ns;
      if (a.level != b.level) return a.level > b.level;
      if (a.duration_ns() != b.duration_ns()) return a.duration_ns() < b.duration_ns();
      return a.id < b.id;
    };
    if (best == nullptr || better(c, *best)) best = &c;
  }
  return best ? best->id : kNoSpan;
}

TEST(Assembler, MatchesBruteForceOnRandomTraces) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 50; ++round) {
    Trace t;
    const int n = 300;
    for (int i = 0; i < n; ++i) {
      // Few distinct values, so that ties and shared boundaries are frequent.
      const std::int64_t start = static_cast<std::int64_t>(rng() % 40);
      const std::int64_t len = static_cast<std::int64_t>(rng() % 15);
      t.spans.push_back(
          make_span(static_cast<SpanId>(i + 1), static_cast<Level>(rng() % 7), start, start + len, rng() % 3));
    }
    const std::vector<Span> input = t.spans;
    const AssemblyReport r = assemble(t);
    std::size_t containment = 0, roots = 0, unparented = 0;
    for (const Span& in : input) {
      const SpanId expected = brute_force_container(input, in);
      const Span& out = by_id(t, in.id);
      ASSERT_EQ(out.parent_id, expected) << "round " << round << " span " << in.id;
      if (expected != kNoSpan) {
        ++containment;
      } else if (in.level == Level::kApplication) {
        ++roots;
      } else {
        ++unparented;
      }
    }
    EXPECT_EQ(r.by_containment, containment);
    EXPECT_EQ(r.roots, roots);
    EXPECT_EQ(r.unparented, unparented);
    ASSERT_TRUE(std::is_sorted(t.spans.begin(), t.spans.end(), [](const Span& a, const Span& b) {
      return std::tuple(a.start_ns, a.level, -a.end_ns, a.id) < std::tuple(b.start_ns, b.level, -b.end_ns, b.id);
    }));
  }
}

}  // namespace
}  // namespace xsp
