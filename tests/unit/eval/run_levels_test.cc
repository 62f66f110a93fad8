#include <gtest/gtest.h>

#include "xsp/eval/runner.h"

namespace xsp {
namespace {

using L = TraceLevel;

TEST(RunLevels, LeveledSequences) {
  EXPECT_EQ(run_levels(L::kModel, true, true), (std::vector<L>{L::kModel}));
  EXPECT_EQ(run_levels(L::kFramework, true, true), (std::vector<L>{L::kModel, L::kFramework}));
  EXPECT_EQ(run_levels(L::kKernel, true, true, true), (std::vector<L>{L::kModel, L::kFramework, L::kKernel}));
  EXPECT_EQ(run_levels(L::kKernel, false, true, true), (std::vector<L>{L::kKernel}));
}

TEST(RunLevels, HardwareAddsACounterRunAfterTheKernelRun) {
  // Counter runs never give timings (SPEC §3), so kernel latencies always come from their own M/F/K run.
  EXPECT_EQ(run_levels(L::kHardware, true, true, true, true),
            (std::vector<L>{L::kModel, L::kFramework, L::kKernel, L::kHardware}));
  EXPECT_EQ(run_levels(L::kHardware, false, true, true, true), (std::vector<L>{L::kKernel, L::kHardware}));
}

TEST(RunLevels, MissingProfilersAreNamed) {
  EXPECT_THROW(run_levels(L::kFramework, true, false), std::invalid_argument);
  EXPECT_THROW(run_levels(L::kKernel, true, true, false), std::invalid_argument);
  try {
    run_levels(L::kHardware, true, true, true, false);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("counter profiler"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_levels(L::kHardware, true, true, false, true), std::invalid_argument);
}

}  // namespace
}  // namespace xsp
