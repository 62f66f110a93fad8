// Signals during `xsp evaluate` (issue 12): the first SIGINT/SIGTERM stops the batch sweep after the current batch,
// saves the runs already complete as an "incomplete" evaluation, says so, and exits 128 + the signal. In-process on
// a fake framework that raises the signal itself once the batch size 2 begins, so the batch size 1 runs are
// complete and the batch size 2 runs are not.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "cli_harness.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

int g_raise = 0;  // the signal to raise at the first batch of size 2; 0: none

// Raises g_raise once, when the first batch of size 2 begins (a second signal would end the test process, as it
// ends xsp).
void raise_at_batch_size_2(const Tensor& t) {
  if (g_raise != 0 && !t.shape.empty() && t.shape[0] == 2) {
    const int sig = g_raise;
    g_raise = 0;
    std::raise(sig);
  }
}

class Signals : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("signal-fake", "signal_model", raise_at_batch_size_2); }

  int evaluate(int sig) {
    g_raise = sig;
    return xsp({"--zoo", (dir_ / "zoo").string(), "--store", (dir_ / "s.db").string(), "evaluate", "signal_model",
                "--framework", "signal-fake", "--batch-sizes", "1,2", "--trace-level", "framework", "--leveled",
                "--synthetic", "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"});
  }

  void expect_incomplete_with_batch_size_1_runs(int sig) {
    auto store = Store::open(dir_ / "s.db");
    const auto e = store->load(1);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->status, "incomplete");
    ASSERT_EQ(e->runs.size(), 2u);  // batch size 1: M and M/F, both complete; batch size 2 was cut short
    for (const RunRecord& r : e->runs) {
      EXPECT_EQ(r.batch_size, 1);
      EXPECT_FALSE(r.predict_latency_ns.empty());
    }
    EXPECT_EQ(e->settings["interrupted"]["signal"], sig);
    EXPECT_EQ(e->settings["interrupted"]["complete_runs"], 2);
    for (const LevelOverhead& o : e->level_overheads) EXPECT_EQ(o.batch_size, 1);
    EXPECT_NE(err_.find("interrupted by signal " + std::to_string(sig)), std::string::npos) << err_;
    EXPECT_NE(err_.find("2 complete runs"), std::string::npos) << err_;
  }
};

TEST_F(Signals, SigintSavesTheCompleteRunsAsIncompleteAndExits130) {
  EXPECT_EQ(evaluate(SIGINT), 130) << err_;
  expect_incomplete_with_batch_size_1_runs(SIGINT);
}

TEST_F(Signals, SigtermSavesTheCompleteRunsAsIncompleteAndExits143) {
  EXPECT_EQ(evaluate(SIGTERM), 143) << err_;
  expect_incomplete_with_batch_size_1_runs(SIGTERM);
}

// A scenario stops the same way: an offline sweep over max batches 1, 2, 4 gets SIGINT during its max-batch-2 run.
// Offline's single query is never cut, so that run completes; the max-batch-4 run never starts.
TEST_F(Signals, AScenarioSavesItsCompleteRunsAsIncompleteAndExits130) {
  g_raise = SIGINT;
  EXPECT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "--store", (dir_ / "s.db").string(), "evaluate", "signal_model",
                 "--framework", "signal-fake", "--synthetic", "--scenario", "offline", "--batch-sizes", "1,2,4",
                 "--target-qps", "400", "--min-duration-ms", "50", "--no-progress"}),
            130)
      << err_;
  const auto e = Store::open(dir_ / "s.db")->load(1);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, "incomplete");
  ASSERT_EQ(e->runs.size(), 2u);
  EXPECT_EQ(e->runs[0].batch_size, 1);
  EXPECT_EQ(e->runs[1].batch_size, 2);
  EXPECT_EQ(e->settings["interrupted"]["signal"], SIGINT);
  EXPECT_EQ(e->settings["interrupted"]["complete_runs"], 2);
  EXPECT_NE(err_.find("2 complete runs"), std::string::npos) << err_;
}

TEST_F(Signals, WithoutASignalTheEvaluationIsCompleteAndTheHandlersAreGone) {
  EXPECT_EQ(evaluate(0), 0) << err_;
  auto store = Store::open(dir_ / "s.db");
  const auto e = store->load(1);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, "complete");
  EXPECT_EQ(e->runs.size(), 4u);
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);  // the guard put the previous (default) handler back
}

}  // namespace
}  // namespace xsp
