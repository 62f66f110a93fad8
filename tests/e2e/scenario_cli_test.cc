// `xsp evaluate --scenario` end to end on the real ResNet-18 (LibTorch): tail-query traces at the framework
// level (stored, shown, exported to Chrome JSON), the Offline batch-size sweep, and bad option values.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "e2e_shell.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

using xsp::e2e::sh;

using xsp::e2e::temp_dir;

TEST(ScenarioCli, TailTracesOfResnet18AreStoredShownAndExported) {
  const auto dir = temp_dir("tail");
  const std::string cli =
      std::string(XSP_CLI) + " --zoo " + std::string(XSP_TEST_ZOO) + " --store " + (dir / "xsp.db").string();
  auto [rc, out] = sh(cli +
                      " evaluate resnet18 --synthetic --scenario single-stream --min-queries 30"
                      " --min-duration-ms 100 --trace-level framework --trace-tail 2");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("dropped 27 query traces"), std::string::npos) << out;  // 30 - 2 slowest - median

  auto store = Store::open(dir / "xsp.db");
  const auto rec = store->load(1);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->runs.size(), 1u);
  const auto& run = rec->runs[0];
  const auto& lat = run.predict_latency_ns;
  ASSERT_EQ(lat.size(), 30u);
  // --warmup's 3 queries ran first, one at a time, and none of them is among the measured or kept ones.
  EXPECT_EQ(rec->settings["scenario_settings"]["warmup_queries"], 3) << rec->settings["scenario_settings"].dump();
  EXPECT_EQ(run.warmup_iterations, 3);
  std::vector<double> sorted = lat;
  std::sort(sorted.rbegin(), sorted.rend());
  std::map<SpanId, const Span*> by_id;
  for (const auto& s : run.trace.spans) by_id[s.id] = &s;
  std::size_t tail = 0, convs = 0;
  for (const auto& s : run.trace.spans) {
    if (s.name == "query" && s.tag("kept") == "tail") {
      ++tail;
      // A kept tail query is one of the two largest latencies of the stored raw latencies.
      EXPECT_GE(static_cast<double>(*s.tag_int("latency_ns")), sorted[1]);
    }
    if (s.name == "aten::conv2d") {
      ++convs;
      // Every operator hangs (through its enclosing ops) under a predict span under a kept query.
      const Span* p = &s;
      while (p->level != Level::kModel) p = by_id.at(p->parent_id);
      EXPECT_EQ(p->name, "predict");
      EXPECT_EQ(by_id.at(p->parent_id)->name, "query");
    }
  }
  EXPECT_EQ(tail, 2u);
  EXPECT_EQ(convs, 3u * 20u);  // ResNet-18 has 20 convolutions; 3 queries kept
  EXPECT_EQ(run.trace.counters.at("scenario.dropped_query_traces"), 27u);

  std::tie(rc, out) = sh(cli + " show 1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("tail traces (framework level, 30 queries traced)"), std::string::npos) << out;
  EXPECT_NE(out.find("cuda runtime:"), std::string::npos) << out;
  const auto file = dir / "tail.json";
  std::tie(rc, out) = sh(cli + " trace export 1 --run 1 -o " + file.string());
  ASSERT_EQ(rc, 0) << out;
  std::ifstream in(file);
  const auto chrome = nlohmann::json::parse(in);
  std::size_t queries = 0;
  for (const auto& e : chrome["traceEvents"])
    if (e.value("name", "") == "query") {
      ++queries;
      EXPECT_TRUE(e["args"].contains("rank")) << e.dump();
      EXPECT_TRUE(e["args"].contains("percentile")) << e.dump();
    }
  EXPECT_EQ(queries, 3u);
  std::tie(rc, out) = sh(cli + " trace export 1 --run 2 -o " + file.string());
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--run"), std::string::npos) << out;
}

TEST(ScenarioCli, OfflineSweepStoresOneRunPerBatchAndBadValuesFail) {
  const auto dir = temp_dir("sweep");
  const std::string cli =
      std::string(XSP_CLI) + " --zoo " + std::string(XSP_TEST_ZOO) + " --store " + (dir / "xsp.db").string();
  auto [rc, out] = sh(cli +
                      " evaluate digits_cnn --synthetic --scenario offline --batch-sizes 1,4,16"
                      " --min-queries 64 --target-qps 1 --min-duration-ms 1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("optimal batch size: "), std::string::npos) << out;
  auto store = Store::open(dir / "xsp.db");
  const auto rec = store->load(1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->batch_sizes, (std::vector<int>{1, 4, 16}));
  ASSERT_EQ(rec->runs.size(), 3u);
  EXPECT_TRUE(rec->settings["sweep"]["optimal_batch_size"].is_number());
  std::tie(rc, out) = sh(cli + " show 1");
  EXPECT_NE(out.find("<- optimal"), std::string::npos) << out;

  const std::pair<const char*, const char*> bad[] = {
      {" --scenario single-stream --batch-sizes 1,2", "--batch-sizes"},
      {" --scenario offline --batch-sizes 1,2 --max-batch 4", "--max-batch"},
      {" --scenario offline --trace-tail 3", "--trace-tail"},
      {" --scenario single-stream --trace-tail -1", "--trace-tail"},
      {" --scenario single-stream --trace-level framework --trace-tail 0", "--trace-tail"},
      {" --scenario single-stream --trace-level kernel", "--trace-level"},
  };
  for (const auto& [args, option] : bad) {
    std::tie(rc, out) = sh(cli + " evaluate digits_cnn --synthetic" + args);
    EXPECT_NE(rc, 0) << args;
    EXPECT_NE(out.find(option), std::string::npos) << args << ": " << out;
  }
  EXPECT_EQ(store->list().size(), 1u);  // the failures stored nothing
}

}  // namespace
