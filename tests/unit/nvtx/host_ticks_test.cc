// The ranges' clock of the injection library (xsp/profilers/host_ticks.h): ticks made CLOCK_MONOTONIC ns through
// anchors, on hand-made anchors with known answers, and the process's own counter against clock_gettime.
#include "xsp/profilers/host_ticks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace xsp {
namespace {

// A counter at 3 ticks per ns from tick 3000 = 1000 ns, whose rate the clock slews to 2 ticks per ns after tick 9000.
TEST(TickMapping, InterpolatesBetweenAnchorsAndExtendsTheOutermostSegments) {
  const TickMapping m({{9000, 3000}, {3000, 1000}, {13000, 5000}});  // out of order on purpose
  EXPECT_EQ(m.to_ns(3000), 1000);
  EXPECT_EQ(m.to_ns(6000), 2000);
  EXPECT_EQ(m.to_ns(9000), 3000);
  EXPECT_EQ(m.to_ns(11000), 4000) << "the second segment's own rate";
  EXPECT_EQ(m.to_ns(13000), 5000);
  EXPECT_EQ(m.to_ns(0), 0) << "before the first anchor: the first segment's line";
  EXPECT_EQ(m.to_ns(15000), 6000) << "after the last: the last segment's line";
  EXPECT_EQ(m.to_ns(3001), 1000) << "a third of a ns rounds to the nearest";
  EXPECT_EQ(m.to_ns(3002), 1001);
  ASSERT_EQ(m.anchors().size(), 3u);
  EXPECT_EQ(m.anchors().front(), (TickAnchor{3000, 1000}));
}

TEST(TickMapping, IdentityWithoutAnchorsAndOneAnchorCountsNs) {
  EXPECT_EQ(TickMapping({}).to_ns(123456), 123456);
  EXPECT_EQ(TickMapping({{10, 20}}, true).to_ns(123456), 123456) << "identity whatever the anchors";
  EXPECT_EQ(TickMapping({{1000, 5000}}).to_ns(1500), 5500);
  const TickMapping dup({{1000, 5000}, {1000, 7000}, {3000, 6000}});
  EXPECT_EQ(dup.anchors().size(), 2u) << "a repeated tick keeps its first anchor";
  EXPECT_EQ(dup.to_ns(2000), 5500);
}

TEST(KernelTimesWithCounter, ReadsTheClocksourceAndSaysWhy) {
  const auto dir = std::filesystem::temp_directory_path() / ("xsp-ticks-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "current_clocksource").string();
  std::string source;
  EXPECT_FALSE(kernel_times_with_counter((dir / "missing").string(), &source));
  EXPECT_NE(source.find("missing"), std::string::npos) << source;
  std::ofstream(path) << "kvm-clock\n";
  EXPECT_FALSE(kernel_times_with_counter(path, &source));
  EXPECT_EQ(source, "clocksource kvm-clock: CLOCK_MONOTONIC");
#if defined(__x86_64__)
  std::ofstream(path) << "tsc\n";
  EXPECT_TRUE(kernel_times_with_counter(path, &source));
  EXPECT_EQ(source, "clocksource tsc: cycle counter");
#endif
  std::filesystem::remove_all(dir);
}

// This machine's clock: a clock_gettime read between two tick reads maps between them (within the anchors' error, a
// few µs; a preemption between the reads only widens the bracket), whichever clock the kernel keeps.
TEST(HostTicks, TicksMapOntoClockMonotonic) {
  HostTicks clock(5'000'000);
  struct Bracket {
    std::int64_t before, ns, after;
  };
  auto bracket = [&] {
    const std::int64_t before = clock.ticks();
    const std::int64_t ns = now_ns();
    return Bracket{before, ns, clock.ticks()};
  };
  std::vector<Bracket> marks = {bracket()};
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    clock.anchor_if_due(clock.ticks());
    marks.push_back(bracket());
  }
  const TickMapping m = clock.mapping();
  constexpr std::int64_t kError = 5'000;
  for (const Bracket& b : marks) {
    EXPECT_LE(m.to_ns(b.before), b.ns + kError) << clock.source();
    EXPECT_GE(m.to_ns(b.after), b.ns - kError) << clock.source();
  }
  for (std::size_t i = 1; i < marks.size(); ++i) EXPECT_LT(m.to_ns(marks[i - 1].after), m.to_ns(marks[i].before));
  if (clock.uses_counter()) EXPECT_GE(m.anchors().size(), 3u) << "anchors while the thread ran, and at mapping()";
}

}  // namespace
}  // namespace xsp
