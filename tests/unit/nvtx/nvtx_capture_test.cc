// Capture control of the injection library (xsp/profilers/nvtx_capture.h): when collection is on, and how what the
// CUPTI part recorded over the whole run is cut down to it. Hand-made spans with known answers; no GPU.
#include "xsp/profilers/nvtx_capture.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xsp::nvtx {
namespace {

Span host(SpanId id, Level level, std::string name, std::int64_t start, std::int64_t end) {
  Span s;
  s.id = id;
  s.level = level;
  s.name = std::move(name);
  s.start_ns = start;
  s.end_ns = end;
  s.track = Track::host_thread(1);
  return s;
}

Span call(SpanId id, std::string name, std::int64_t start, std::int64_t end, std::uint64_t correlation) {
  Span s = host(id, Level::kSystem, std::move(name), start, end);
  s.correlation_id = correlation;
  return s;
}

Span kernel(SpanId id, std::int64_t start, std::int64_t end, std::uint64_t correlation) {
  Span s;
  s.id = id;
  s.level = Level::kKernel;
  s.name = "k";
  s.start_ns = start;
  s.end_ns = end;
  s.track = Track::stream(0, 7);
  s.correlation_id = correlation;
  return s;
}

using W = std::vector<CaptureWindow>;

TEST(CaptureWindows, TheDefaultsCaptureTheWholeLife) {
  const CaptureSettings all;
  EXPECT_FALSE(all.restricts());
  EXPECT_EQ(capture_windows(all, 10, 90, {}, {}, {}), (W{{10, 90}}));
}

TEST(CaptureWindows, TimeWindowOnDemandPeriodsAndRangesIntersect) {
  CaptureSettings s;
  s.start_ns = 20;
  s.end_ns = 80;
  EXPECT_TRUE(s.restricts());
  EXPECT_EQ(capture_windows(s, 0, 100, {}, {}, {}), (W{{20, 80}}));
  s.on_demand = true;
  // on at 10, off at 30, on at 50 and never off again: the last period ends with the process.
  const std::vector<std::pair<std::int64_t, bool>> switches = {{10, true}, {30, false}, {50, true}};
  EXPECT_EQ(capture_windows(s, 0, 100, switches, {}, {}), (W{{20, 30}, {50, 80}}));
  s.range = "infer";
  const std::vector<Span> ranges = {host(1, Level::kModel, "infer", 25, 60), host(2, Level::kModel, "other", 0, 100),
                                    host(3, Level::kModel, "infer", 70, 75),
                                    call(4, "infer", 0, 100, 0)};  // a SYSTEM span is no range
  const std::vector<Span> calls = {call(5, "infer", 0, 100, 5)};   // nor is a CUDA call of that name
  EXPECT_EQ(capture_windows(s, 0, 100, switches, ranges, calls), (W{{25, 30}, {50, 60}, {70, 75}}));
}

TEST(CaptureWindows, ProfilerApiPeriodsRunFromAStartsEndToAStopsStart) {
  CaptureSettings s;
  s.profiler_api = true;
  // The runtime call wraps the driver's: collection is on once the driver's start returned, off once a stop began.
  // A start without a stop runs to the end; a stop without a start is ignored.
  const std::vector<Span> calls = {call(1, "cudaProfilerStop", 5, 6, 1),
                                   call(2, "cudaProfilerStart", 10, 20, 2),
                                   call(3, "cuProfilerStart", 12, 18, 3),
                                   call(4, "cudaProfilerStop", 40, 50, 4),
                                   call(5, "cuProfilerStop", 42, 48, 5),
                                   call(6, "cudaProfilerStart", 70, 71, 6),
                                   host(7, Level::kModel, "cudaProfilerStop", 80, 81)};
  EXPECT_EQ(capture_windows(s, 0, 100, {}, {}, calls), (W{{18, 40}, {71, 100}}));
  EXPECT_TRUE(capture_windows(s, 0, 100, {}, calls, {}).empty()) << "profiler calls count only among the CUDA calls";
  EXPECT_TRUE(capture_windows(s, 0, 100, {}, {}, {}).empty()) << "no start: nothing captured";
}

TEST(KeepCaptured, CallsByTheirStartKernelsWithTheirCallRangesOnlyWhenAsked) {
  const W windows = {{100, 200}, {300, 400}};
  std::vector<Span> spans = {
      call(1, "cudaLaunchKernel", 150, 160, 11),  // inside
      kernel(2, 500, 510, 11),                    // ran after the window: goes with its call
      call(3, "cudaLaunchKernel", 250, 260, 12),  // between windows
      kernel(4, 350, 360, 12),                    // ran inside a window: goes with its call
      kernel(5, 310, 320, 99),                    // no call has its id: by its own start
      kernel(6, 210, 220, 98),
      host(7, Level::kModel, "step", 190, 310),  // overlaps both windows
      host(8, Level::kFramework, "op", 220, 280),
      call(9, "cudaMemcpy", 400, 401, 13),  // a window's end is outside it
  };
  std::vector<Span> with_ranges = spans;
  EXPECT_EQ(keep_captured(spans, windows, false), 4u);
  std::vector<SpanId> kept;
  for (const Span& s : spans) kept.push_back(s.id);
  EXPECT_EQ(kept, (std::vector<SpanId>{1, 2, 5, 7, 8}));
  EXPECT_EQ(keep_captured(with_ranges, windows, true), 5u);
  kept.clear();
  for (const Span& s : with_ranges) kept.push_back(s.id);
  EXPECT_EQ(kept, (std::vector<SpanId>{1, 2, 5, 7}));
}

}  // namespace
}  // namespace xsp::nvtx
