// The op table ("ops", docs/ops.md) on a real LibTorch CPU run of MobileNet-v2 (test zoo), whose many 1x1
// (pointwise) convolutions are what made ResNet-50 slow on LibTorch CPU in the issue: the op with the most self
// time must be a convolution op, found under the aten::conv2d layers that A6 alone would show.
#include "xsp/analysis/op_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "e2e_shell.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/eval/runner.h"
#include "xsp/eval/session.h"
#include "xsp/predictors/libtorch.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

EvaluationRecord mobilenet_framework_run() {
  register_libtorch_predictor();
  const auto zoo = load_zoo(XSP_TEST_ZOO);
  const Manifest manifest = find_model(zoo, "mobilenet_v2");
  verify_checksum(manifest, "libtorch");
  auto predictor = create_predictor("libtorch");
  predictor->load(manifest, DeviceSpec{});
  RunPlan options;
  options.batch_sizes = {1};
  options.trace_level = TraceLevel::kFramework;
  options.leveled = false;
  options.levels = run_levels(options.trace_level, options.leveled, true);
  options.measurement.warmup_min_batches = 1;
  options.measurement.warmup_min_ms = options.measurement.warmup_max_ms = 0;
  // One measured batch: its op table is that batch's, so the self times must add up to its layers' time exactly
  // (with several, per-op and per-layer trimmed means differ by the noise of a loaded 2-core machine).
  options.measurement.min_batches = 1;
  options.measurement.min_duration_ms = options.measurement.max_duration_ms = 0;
  options.inputs.images_dir = fs::path(XSP_SOURCE_DIR) / "data" / "images";
  SessionOptions session_options;
  session_options.profilers.framework = predictor->framework_profiler();
  session_options.record_machine_state = false;
  RunSession session(std::move(session_options));
  return run_batch_sweep(manifest, *predictor, options, session);
}

double number(const Table& t, const std::vector<Cell>& row, const char* col) {
  const Cell& c = cell(t, row, col);
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  return std::get<double>(c);
}

}  // namespace

TEST(OpTableE2e, MobileNetV2OnLibTorchCpuSpendsMostSelfTimeInAConvolution) {
  const EvaluationRecord record = mobilenet_framework_run();
  const std::vector<Table> tables = run_analyses(record, {"ops", "A6"}, 1);
  ASSERT_EQ(tables.size(), 2u);
  const Table& ops = tables[0];
  ASSERT_FALSE(ops.rows.empty());
  const std::string top = std::get<std::string>(cell(ops, ops.rows[0], "op_name"));
  // What this LibTorch dispatches a CPU convolution to: the slow (im2col + GEMM) kernel, MKL-DNN, or the
  // depthwise / thnn implementations; never the aten::conv2d wrapper itself, whose self time is small.
  EXPECT_TRUE(top.find("conv") != std::string::npos || top.find("mkldnn") != std::string::npos) << top;
  EXPECT_NE(top, "aten::conv2d");
  EXPECT_GT(number(ops, ops.rows[0], "self_percent"), 25.0);

  // Every op is counted once by self time: their sum is the time A6's layers cover (LibTorch runs this model's ops
  // on the calling thread; intra-op workers record no ops).
  double self_ms = 0, a6_ms = 0;
  for (const auto& row : ops.rows) self_ms += number(ops, row, "self_ms");
  for (const auto& row : tables[1].rows) a6_ms += number(tables[1], row, "latency_ms");
  EXPECT_NEAR(self_ms, a6_ms, 1e-6 * a6_ms);
  // aten::conv2d (what A6 shows) has a total of at least the top op's self time when the top op is under it.
  std::map<std::string, double> total;
  for (const auto& row : ops.rows)
    total[std::get<std::string>(cell(ops, row, "op_name"))] = number(ops, row, "total_ms");
  ASSERT_TRUE(total.contains("aten::conv2d"));
  EXPECT_GE(total["aten::conv2d"], number(ops, ops.rows[0], "self_ms"));

  OpTableOptions by_module;
  by_module.group_by = OpGroupBy::kModule;
  by_module.top = 5;
  const Table modules = op_table(record, 1, by_module);
  ASSERT_EQ(modules.rows.size(), 6u);
  EXPECT_EQ(std::get<std::string>(cell(modules, modules.rows[5], "op_name")).rfind("(other ", 0), 0u);
}

// The CLI: `xsp analyze ID --analysis ops` with --top, --sort and --group-by on a stored MobileNet-v2 run, CSV out;
// bad values are usage errors naming the flag and the valid values.
TEST(OpTableE2e, AnalyzeFlagsShapeTheTableAndBadValuesExit2) {
  const fs::path dir = xsp::e2e::temp_dir("op-table");
  const std::string xsp = std::string(XSP_CLI) + " --zoo " + XSP_TEST_ZOO + " --store " + (dir / "s.db").string();
  const auto [eval_rc, eval_out] =
      xsp::e2e::sh(xsp +
                   " evaluate mobilenet_v2 --trace-level framework --warmup 1 --warmup-max-ms 0 "
                   "--min-batches 2 --min-duration-ms 0 --max-duration-ms 0 --no-progress");
  ASSERT_EQ(eval_rc, 0) << eval_out;
  const auto [rc, csv] = xsp::e2e::sh(xsp + " analyze 1 --analysis ops --top 3 --sort calls --format csv");
  ASSERT_EQ(rc, 0) << csv;
  // Header, three ops, the rest in one row; by calls, the most called op first: LibTorch's aten::empty.
  EXPECT_EQ(csv.rfind("batch_size,op_name,shapes,calls,self_ms,total_ms,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n1,aten::empty,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",(other "), std::string::npos) << csv;
  const auto [shapes_rc, shapes] = xsp::e2e::sh(xsp + " analyze 1 --analysis ops --group-by shapes --format csv");
  EXPECT_EQ(shapes_rc, 0) << shapes;
  EXPECT_NE(shapes.find("aten::_slow_conv2d_forward,\"[1,"), std::string::npos) << shapes;
  for (const auto& [flag, values] : std::vector<std::pair<std::string, std::string>>{
           {"--sort", "self, total, calls, avg, self_cuda"}, {"--group-by", "name, shapes, module"}}) {
    const auto [bad_rc, bad] = xsp::e2e::sh(xsp + " analyze 1 --analysis ops " + flag + " bogus");
    EXPECT_EQ(bad_rc, 2) << bad;
    EXPECT_NE(bad.find("xsp: error: " + flag + ": expected one of " + values + ", got 'bogus'"), std::string::npos)
        << bad;
  }
  fs::remove_all(dir);
}
