#include "xsp/profilers/hardware_counters.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "xsp/profilers/counter_spans.h"

namespace xsp {
namespace {

std::map<std::string, double> all_metrics(double value) {
  std::map<std::string, double> m;
  for (const auto& name : hw::metric_names()) m[name] = value;
  return m;
}

TEST(HardwareCounters, FmaCountsTwoFlops) {
  auto m = all_metrics(0);
  m["sm__sass_thread_inst_executed_op_fadd_pred_on.sum"] = 10;
  m["sm__sass_thread_inst_executed_op_fmul_pred_on.sum"] = 20;
  m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] = 100;
  m["sm__sass_thread_inst_executed_op_dfma_pred_on.sum"] = 7;
  m["sm__ops_path_tensor_src_fp16.sum"] = 1000;
  m["dram__bytes_read.sum"] = 4096;
  m["sm__warps_active.avg.pct_of_peak_sustained_active"] = 37.5;
  const auto c = hw::evaluate_counters(m);
  EXPECT_DOUBLE_EQ(c.at("fp32_flops"), 10 + 20 + 2 * 100);
  EXPECT_DOUBLE_EQ(c.at("fp64_flops"), 14);
  EXPECT_DOUBLE_EQ(c.at("tensor_fp16_flops"), 1000);
  EXPECT_DOUBLE_EQ(c.at("dram_read_bytes"), 4096);
  EXPECT_DOUBLE_EQ(c.at("achieved_occupancy_percent"), 37.5);
  EXPECT_DOUBLE_EQ(*hw::total_flops(c), 230 + 14 + 1000);
  EXPECT_EQ(c.size(), hw::counter_defs().size());
}

TEST(HardwareCounters, CounterAbsentWhenAMetricIsMissing) {
  auto m = all_metrics(1);
  m.erase("sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  const auto c = hw::evaluate_counters(m);
  EXPECT_FALSE(c.contains("fp32_flops"));
  EXPECT_TRUE(c.contains("fp64_flops"));
  EXPECT_FALSE(hw::total_flops({{"dram_read_bytes", 5}}).has_value());
}

TEST(HardwareCounters, MetricNamesAreDistinctSortedAndCarryARollup) {
  const auto names = hw::metric_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const auto& n : names) EXPECT_NE(n.find('.'), std::string::npos) << n;  // .sum / .avg...
  ASSERT_NE(hw::find_counter("l2_bytes"), nullptr);
  EXPECT_EQ(hw::find_counter("l2_bytes")->terms.front().metric, "lts__t_bytes.sum");
  EXPECT_EQ(hw::find_counter("nope"), nullptr);
}

CounterCollection two_kernel_collection() {
  CounterCollection c;
  c.replay = "kernel";
  c.passes = 3;
  c.chip = "GH100";
  c.launches = {{"gemm", 100, 180, 7, 42}, {"relu", 200, 230, 7, kNoSpan}};
  c.ranges = {{0, "0", all_metrics(2)}, {1, "1", all_metrics(3)}};
  return c;
}

TEST(CounterSpans, OneHardwareSpanPerRangeInLaunchOrder) {
  TraceRecorder recorder;
  append_counter_spans(two_kernel_collection(), recorder);
  const Trace t = recorder.take();
  ASSERT_EQ(t.spans.size(), 2u);
  const Span& gemm = t.spans[0];
  EXPECT_EQ(gemm.level, Level::kHardware);
  EXPECT_EQ(gemm.name, "gemm");
  EXPECT_EQ(gemm.parent_id, 42u);
  EXPECT_EQ(gemm.parent_rule, ParentRule::kContext);
  EXPECT_EQ(gemm.start_ns, 100);
  EXPECT_EQ(gemm.end_ns, 180);
  EXPECT_EQ(gemm.track, Track::host_thread(7));
  EXPECT_EQ(gemm.tag("fp32_flops"), "8");                        // 2 + 2 + 2·2
  EXPECT_EQ(gemm.find_tag("fp32_flops")->type, TagType::kReal);  // counters are numbers, not text
  EXPECT_EQ(gemm.find_tag("range_index")->type, TagType::kInt);
  EXPECT_EQ(gemm.tag("replay"), "kernel");
  EXPECT_EQ(gemm.tag_int("range_index"), 0);
  const Span& relu = t.spans[1];
  EXPECT_EQ(relu.parent_id, kNoSpan);  // placed later by containment
  EXPECT_EQ(relu.tag("dram_read_bytes"), "3");
  EXPECT_EQ(t.counters.at("counters.ranges"), 2u);
  EXPECT_EQ(t.counters.at("counters.passes"), 3u);
  EXPECT_FALSE(t.counters.contains("counters.unmatched_ranges"));
}

TEST(CounterSpans, MismatchedCountsAreCountedNotGuessed) {
  auto c = two_kernel_collection();
  c.ranges.push_back({2, "2", all_metrics(4)});
  c.dropped_ranges = 5;
  TraceRecorder recorder;
  append_counter_spans(c, recorder);
  Trace t = recorder.take();
  EXPECT_EQ(t.spans.size(), 2u);
  EXPECT_EQ(t.counters.at("counters.unmatched_ranges"), 1u);
  EXPECT_EQ(t.counters.at("counters.dropped_ranges"), 5u);

  c = two_kernel_collection();
  c.ranges.pop_back();
  TraceRecorder r2;
  append_counter_spans(c, r2);
  t = r2.take();
  EXPECT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.counters.at("counters.unmatched_launches"), 1u);
}

TEST(CounterSpans, JsonRoundTripAndErrors) {
  const auto c = two_kernel_collection();
  const auto back = counter_collection_from_json(to_json(c));
  ASSERT_EQ(back.launches.size(), 2u);
  EXPECT_EQ(back.launches[0].op, 42u);
  EXPECT_EQ(back.ranges[1].metrics.at("dram__bytes_read.sum"), 3);
  EXPECT_EQ(back.chip, "GH100");
  auto j = to_json(c);
  j["launches"][1].erase("kernel_name");
  try {
    counter_collection_from_json(j);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kernel_name"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xsp
