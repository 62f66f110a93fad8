#include "xsp/trace/span.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "xsp/trace/trace.h"

namespace xsp {
namespace {

TEST(Span, LevelNamesRoundTrip) {
  EXPECT_EQ(to_string(Level::kApplication), "application");
  EXPECT_EQ(to_string(Level::kFramework), "framework");
  EXPECT_EQ(to_string(Level::kHardware), "hardware");
  for (int i = 0; i <= 6; ++i) {
    const auto level = static_cast<Level>(i);
    EXPECT_EQ(parse_level(to_string(level)), level);
  }
  EXPECT_EQ(parse_level("Model"), std::nullopt);
  EXPECT_EQ(parse_level(""), std::nullopt);
  EXPECT_EQ(parse_level("full"), std::nullopt);
}

TEST(Span, TraceLevels) {
  EXPECT_EQ(parse_trace_level("model"), TraceLevel::kModel);
  EXPECT_EQ(parse_trace_level("kernel"), TraceLevel::kKernel);
  EXPECT_EQ(parse_trace_level("full"), TraceLevel::kHardware);
  EXPECT_EQ(parse_trace_level("application"), std::nullopt);
  EXPECT_EQ(to_string(TraceLevel::kSystem), "system");
  for (int i = 0; i <= 5; ++i) {
    const auto t = static_cast<TraceLevel>(i);
    EXPECT_EQ(parse_trace_level(to_string(t)), t);
  }
  EXPECT_EQ(deepest_level(TraceLevel::kModel), Level::kModel);
  EXPECT_EQ(deepest_level(TraceLevel::kKernel), Level::kKernel);
  EXPECT_EQ(deepest_level(TraceLevel::kHardware), Level::kHardware);

  EXPECT_TRUE(enables(TraceLevel::kModel, Level::kApplication));
  EXPECT_TRUE(enables(TraceLevel::kModel, Level::kModel));
  EXPECT_FALSE(enables(TraceLevel::kModel, Level::kFramework));
  EXPECT_TRUE(enables(TraceLevel::kFramework, Level::kFramework));
  EXPECT_FALSE(enables(TraceLevel::kFramework, Level::kLibrary));
  EXPECT_TRUE(enables(TraceLevel::kKernel, Level::kSystem));
  EXPECT_FALSE(enables(TraceLevel::kKernel, Level::kHardware));
  EXPECT_TRUE(enables(TraceLevel::kHardware, Level::kHardware));
}

TEST(Span, ParentRuleNames) {
  EXPECT_EQ(to_string(ParentRule::kNone), "none");
  EXPECT_EQ(to_string(ParentRule::kContext), "context");
  EXPECT_EQ(to_string(ParentRule::kCorrelation), "correlation");
  EXPECT_EQ(to_string(ParentRule::kContainment), "containment");
}

TEST(Span, Tags) {
  Span s;
  s.start_ns = 10;
  s.end_ns = 35;
  s.tags = {{"batch", "32"}, {"neg", "-7"}, {"unit", "12ms"}, {"batch", "64"}, {"empty", ""}};
  EXPECT_EQ(s.duration_ns(), 25);
  EXPECT_EQ(s.tag("unit"), "12ms");
  EXPECT_EQ(s.tag("batch"), "32");  // the first of two
  EXPECT_EQ(s.tag("missing"), std::nullopt);
  EXPECT_EQ(s.tag_int("batch"), 32);
  EXPECT_EQ(s.tag_int("neg"), -7);
  EXPECT_EQ(s.tag_int("unit"), std::nullopt);
  EXPECT_EQ(s.tag_int("empty"), std::nullopt);
  EXPECT_EQ(s.tag_int("missing"), std::nullopt);
}

TEST(Recorder, IdsStartAtOneAndReserve) {
  TraceRecorder r;
  EXPECT_EQ(r.next_id(), 1u);
  EXPECT_EQ(r.reserve_ids(10), 2u);
  EXPECT_EQ(r.next_id(), 12u);
}

TEST(Recorder, ConcurrentAddCountTake) {
  TraceRecorder r;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&r, t] {
      std::vector<Span> batch;
      for (int i = 0; i < kPerThread; ++i) {
        Span s;
        s.id = r.next_id();
        s.track = Track::host_thread(current_thread_id());
        if (t % 2 == 0) {
          r.add(std::move(s));
        } else {
          batch.push_back(std::move(s));
        }
        r.count("test.events", 1);
      }
      if (!batch.empty()) r.add_all(std::move(batch));
    });
  }
  for (auto& th : threads) th.join();

  Trace trace = r.take();
  ASSERT_EQ(trace.spans.size(), static_cast<std::size_t>(kThreads * kPerThread));
  std::set<SpanId> ids;
  std::set<std::uint64_t> tids;
  for (const Span& s : trace.spans) {
    ids.insert(s.id);
    tids.insert(s.track.id);
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_EQ(*ids.begin(), 1u);
  EXPECT_EQ(*ids.rbegin(), static_cast<SpanId>(kThreads * kPerThread));
  EXPECT_EQ(tids.size(), static_cast<std::size_t>(kThreads));
  EXPECT_EQ(trace.counters.at("test.events"), static_cast<std::uint64_t>(kThreads * kPerThread));

  Trace again = r.take();
  EXPECT_TRUE(again.spans.empty());
  EXPECT_TRUE(again.counters.empty());
  EXPECT_EQ(again.clock, trace.clock);
  EXPECT_EQ(r.next_id(), static_cast<SpanId>(kThreads * kPerThread + 1));
}

TEST(Clock, ThreadIdAndClocks) {
  EXPECT_EQ(current_thread_id(), static_cast<std::uint64_t>(::syscall(SYS_gettid)));
  std::uint64_t other = 0;
  std::thread([&other] { other = current_thread_id(); }).join();
  EXPECT_NE(other, current_thread_id());

  const std::int64_t a = now_ns();
  const std::int64_t b = now_ns();
  EXPECT_LE(a, b);
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  const std::int64_t expected = (real.tv_sec - mono.tv_sec) * 1'000'000'000LL + (real.tv_nsec - mono.tv_nsec);
  EXPECT_NEAR(static_cast<double>(unix_offset_now_ns()), static_cast<double>(expected), 1e7);  // within 10 ms
  TraceRecorder r;
  EXPECT_NEAR(static_cast<double>(r.take().clock.unix_offset_ns), static_cast<double>(expected), 1e7);
}

}  // namespace
}  // namespace xsp
