// The op table ("ops", op_table.h) on hand-made traces whose self and total times are known by construction.
#include "xsp/analysis/op_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace_builder.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"

namespace xsp {
namespace {

using testing::TraceBuilder;

// One batch (times in µs from t0, scaled by `scale`):
//   A aten::conv2d [10,410) ⊃ B aten::convolution [20,400) ⊃ C aten::_slow_conv2d_forward [30,380)
//       ⊃ D aten::empty [40,50), E aten::empty [50,60);  B ⊃ F aten::empty [385,395)
//   G aten::relu [420,520) ⊃ H aten::clamp_min [430,500)
//   I aten::linear [530,690) ⊃ J aten::linear [540,600) ⊃ K aten::addmm [550,590);  I ⊃ L aten::addmm [610,680)
//   M aten::relu [700,750)
// Self (µs): A 20, B 20, C 330, D+E+F 30, G 30, H 70, I 30, J 20, K 40, L 70, M 50: 710 = A+G+I+M, the time covered
// by the top-level ops.
void add_batch(TraceBuilder& tb, SpanId app, int batch, std::int64_t t0, std::int64_t scale) {
  auto at = [&](std::int64_t us) { return t0 + us * 1000 * scale; };
  const SpanId pred = tb.add(Level::kModel, "predict", at(0), at(1000), app, {{"batch", std::to_string(batch)}});
  const Tag conv_shapes{"shapes", "[1,3,8,8]"};
  const SpanId a =
      tb.add(Level::kFramework, "aten::conv2d", at(10), at(410), pred, {{"module", "layer1.conv"}, conv_shapes});
  const SpanId b =
      tb.add(Level::kFramework, "aten::convolution", at(20), at(400), a, {{"module", "layer1.conv"}, conv_shapes});
  const SpanId c = tb.add(Level::kFramework, "aten::_slow_conv2d_forward", at(30), at(380), b,
                          {{"module", "layer1.conv"}, conv_shapes});
  tb.add(Level::kFramework, "aten::empty", at(40), at(50), c, {{"module", "layer1.conv"}});
  tb.add(Level::kFramework, "aten::empty", at(50), at(60), c, {{"module", "layer1.conv"}});
  tb.add(Level::kFramework, "aten::empty", at(385), at(395), b, {{"module", "layer1.conv"}});
  const SpanId g = tb.add(Level::kFramework, "aten::relu", at(420), at(520), pred,
                          {{"module", "layer1.relu"}, {"shapes", "[1,64]"}});
  tb.add(Level::kFramework, "aten::clamp_min", at(430), at(500), g, {{"module", "layer1.relu"}});
  const SpanId i = tb.add(Level::kFramework, "aten::linear", at(530), at(690), pred, {{"module", "fc"}});
  const SpanId j = tb.add(Level::kFramework, "aten::linear", at(540), at(600), i, {{"module", "fc"}});
  tb.add(Level::kFramework, "aten::addmm", at(550), at(590), j, {{"module", "fc"}});
  tb.add(Level::kFramework, "aten::addmm", at(610), at(680), i, {{"module", "fc"}});
  tb.add(Level::kFramework, "aten::relu", at(700), at(750), pred, {{"shapes", "[1,10]"}});
}

// Batches with scales `scales`; plus an op outside any predict span, which is not counted.
Trace ops_trace(const std::vector<std::int64_t>& scales) {
  TraceBuilder tb;
  const SpanId app = tb.add(Level::kApplication, "evaluation", 0, 1'000'000'000'000, kNoSpan);
  for (std::size_t k = 0; k < scales.size(); ++k)
    add_batch(tb, app, static_cast<int>(k), 10'000'000 * static_cast<std::int64_t>(k + 1), scales[k]);
  tb.add(Level::kFramework, "aten::resize", 10, 20, app);
  return tb.trace;
}

RunRecord run(TraceLevel level, Trace trace) {
  RunRecord r;
  r.batch_size = 1;
  r.trace_level = level;
  r.iterations = 1;
  r.trace = std::move(trace);
  return r;
}

EvaluationRecord framework_record(const std::vector<std::int64_t>& scales = {1}) {
  EvaluationRecord e;
  e.batch_sizes = {1};
  e.trace_level = TraceLevel::kFramework;
  e.leveled = true;
  e.runs.push_back(run(TraceLevel::kFramework, ops_trace(scales)));
  return e;
}

double num(const Table& t, const std::vector<Cell>& row, const char* col) {
  const Cell& c = cell(t, row, col);
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  return std::get<double>(c);
}
bool empty(const Table& t, const std::vector<Cell>& row, const char* col) {
  return std::holds_alternative<std::monostate>(cell(t, row, col));
}
std::string name(const Table& t, std::size_t i) { return std::get<std::string>(cell(t, t.rows.at(i), "op_name")); }
std::vector<std::string> names(const Table& t) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) out.push_back(name(t, i));
  return out;
}
const std::vector<Cell>& row_of(const Table& t, const std::string& op) {
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    if (name(t, i) == op) return t.rows[i];
  throw std::out_of_range("no row " + op);
}
bool has_note(const Table& t, const std::string& part) {
  for (const auto& n : t.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(OpTable, SelfTimesSumToTheFrameworkTimeAndTotalsCountEveryCall) {
  const Table t = op_table(framework_record(), 1);
  EXPECT_EQ(t.id, "ops");
  EXPECT_EQ(t.title, "Op table: self and total time per op (batch size 1)");
  ASSERT_EQ(names(t),
            (std::vector<std::string>{"aten::_slow_conv2d_forward", "aten::addmm", "aten::relu", "aten::clamp_min",
                                      "aten::linear", "aten::empty", "aten::conv2d", "aten::convolution"}));
  // µs of the construction, in ms.
  const std::map<std::string, std::vector<double>> want = {
      // calls, self, total
      {"aten::_slow_conv2d_forward", {1, 0.330, 0.350}},
      {"aten::addmm", {2, 0.110, 0.110}},
      {"aten::relu", {2, 0.080, 0.150}},
      {"aten::clamp_min", {1, 0.070, 0.070}},
      {"aten::linear", {2, 0.050, 0.220}},  // recursion: the inner call's 60 µs is in the total twice
      {"aten::empty", {3, 0.030, 0.030}},
      {"aten::conv2d", {1, 0.020, 0.400}},
      {"aten::convolution", {1, 0.020, 0.380}},
  };
  double self_sum = 0, percent_sum = 0;
  for (const auto& row : t.rows) {
    const std::string op = std::get<std::string>(cell(t, row, "op_name"));
    const auto& w = want.at(op);
    EXPECT_DOUBLE_EQ(num(t, row, "calls"), w[0]) << op;
    EXPECT_NEAR(num(t, row, "self_ms"), w[1], 1e-12) << op;
    EXPECT_NEAR(num(t, row, "total_ms"), w[2], 1e-12) << op;
    EXPECT_NEAR(num(t, row, "avg_self_us"), w[1] * 1e3 / w[0], 1e-9) << op;
    EXPECT_NEAR(num(t, row, "avg_total_us"), w[2] * 1e3 / w[0], 1e-9) << op;
    EXPECT_TRUE(empty(t, row, "self_cuda_ms")) << op;  // no kernel run
    EXPECT_TRUE(empty(t, row, "shapes")) << op;
    self_sum += num(t, row, "self_ms");
    percent_sum += num(t, row, "self_percent");
  }
  // The time covered by the top-level ops: conv2d 400 + relu 100 + linear 160 + relu 50 µs.
  EXPECT_NEAR(self_sum, 0.710, 1e-12);
  EXPECT_NEAR(percent_sum, 100.0, 1e-9);
  EXPECT_NEAR(num(t, t.rows[0], "self_percent"), 100.0 * 330 / 710, 1e-9);
  EXPECT_TRUE(has_note(t, "framework time 0.710 ms per batch"));
  EXPECT_TRUE(has_note(t, "1 of 14 FRAMEWORK spans"));  // aten::resize outside the predict span
  EXPECT_TRUE(has_note(t, "1 batch"));
}

TEST(OpTable, ValuesAreTrimmedMeansOverTheBatches) {
  // Three batches at 1×, 2× and 5× the times: the trimmed mean of three is the median, the 2× batch; calls are the
  // mean per batch; averages per call use every batch.
  const Table t = op_table(framework_record({1, 2, 5}), 1);
  const auto& slow = row_of(t, "aten::_slow_conv2d_forward");
  EXPECT_NEAR(num(t, slow, "self_ms"), 0.660, 1e-12);
  EXPECT_NEAR(num(t, slow, "total_ms"), 0.700, 1e-12);
  EXPECT_DOUBLE_EQ(num(t, slow, "calls"), 1.0);
  EXPECT_NEAR(num(t, slow, "avg_self_us"), 330.0 * 8 / 3, 1e-9);
  const auto& empty_op = row_of(t, "aten::empty");
  EXPECT_DOUBLE_EQ(num(t, empty_op, "calls"), 3.0);
  EXPECT_NEAR(num(t, empty_op, "avg_self_us"), 10.0 * 8 / 3, 1e-9);
  EXPECT_TRUE(has_note(t, "3 batches"));
}

TEST(OpTable, ABatchWithoutTheOpCountsZero) {
  EvaluationRecord e = framework_record({1, 1});
  // A third batch with one op only: the other ops have 0 there, so their median over (x, x, 0) is still x, while
  // that op's is 0 and its calls per batch 1/3.
  TraceBuilder tb;
  tb.trace = e.runs[0].trace;
  tb.next = tb.trace.spans.size() + 1;
  const SpanId pred = tb.add(Level::kModel, "predict", 900'000'000, 900'100'000, kNoSpan, {{"batch", "2"}});
  tb.add(Level::kFramework, "aten::sigmoid", 900'000'000, 900'090'000, pred);
  e.runs[0].trace = tb.trace;
  const Table t = op_table(e, 1);
  EXPECT_NEAR(num(t, row_of(t, "aten::_slow_conv2d_forward"), "self_ms"), 0.330, 1e-12);
  EXPECT_NEAR(num(t, row_of(t, "aten::_slow_conv2d_forward"), "calls"), 2.0 / 3, 1e-12);
  EXPECT_NEAR(num(t, row_of(t, "aten::sigmoid"), "self_ms"), 0.0, 1e-12);
  EXPECT_NEAR(num(t, row_of(t, "aten::sigmoid"), "avg_self_us"), 90.0, 1e-9);
}

TEST(OpTable, ChildrenOnAnotherThreadAreNotSubtracted) {
  TraceBuilder tb;
  const SpanId pred = tb.add(Level::kModel, "predict", 0, 1000, kNoSpan);
  const SpanId op = tb.add(Level::kFramework, "aten::add", 0, 1000, pred);
  tb.add(Level::kFramework, "aten::mul", 100, 300, op);  // same thread
  const SpanId other = tb.add(Level::kFramework, "aten::mul", 400, 900, op);
  tb.trace.spans[other - 1].track = Track::host_thread(7);  // an inter-op helper thread: ran beside aten::add
  EvaluationRecord e;
  e.batch_sizes = {1};
  e.runs.push_back(run(TraceLevel::kFramework, tb.trace));
  const Table t = op_table(e, 1);
  EXPECT_NEAR(num(t, row_of(t, "aten::add"), "self_ms"), 800e-6, 1e-15);
  EXPECT_NEAR(num(t, row_of(t, "aten::mul"), "self_ms"), 700e-6, 1e-15);
}

TEST(OpTable, SortOrders) {
  const EvaluationRecord e = framework_record();
  OpTableOptions o;
  o.sort = OpSort::kTotal;
  EXPECT_EQ(names(op_table(e, 1, o)),
            (std::vector<std::string>{"aten::conv2d", "aten::convolution", "aten::_slow_conv2d_forward", "aten::linear",
                                      "aten::relu", "aten::addmm", "aten::clamp_min", "aten::empty"}));
  o.sort = OpSort::kCalls;  // ties by name
  EXPECT_EQ(
      names(op_table(e, 1, o)),
      (std::vector<std::string>{"aten::empty", "aten::addmm", "aten::linear", "aten::relu",
                                "aten::_slow_conv2d_forward", "aten::clamp_min", "aten::conv2d", "aten::convolution"}));
  o.sort = OpSort::kAvg;  // self per call: 330, 70, 55, 40, 25, 20, 20, 10 µs
  EXPECT_EQ(names(op_table(e, 1, o)),
            (std::vector<std::string>{"aten::_slow_conv2d_forward", "aten::clamp_min", "aten::addmm", "aten::relu",
                                      "aten::linear", "aten::conv2d", "aten::convolution", "aten::empty"}));
}

TEST(OpTable, TopGroupsTheRestIntoOneRow) {
  OpTableOptions o;
  o.top = 3;
  const Table t = op_table(framework_record(), 1, o);
  ASSERT_EQ(names(t),
            (std::vector<std::string>{"aten::_slow_conv2d_forward", "aten::addmm", "aten::relu", "(other 5 ops)"}));
  const auto& other = t.rows[3];
  EXPECT_DOUBLE_EQ(num(t, other, "calls"), 8.0);        // clamp_min 1, linear 2, empty 3, conv2d 1, conv 1
  EXPECT_NEAR(num(t, other, "self_ms"), 0.190, 1e-12);  // 70 + 50 + 30 + 20 + 20 µs
  // Totals are inclusive: conv2d's 400 µs hold convolution's 380; their sum would count that time twice.
  EXPECT_TRUE(empty(t, other, "total_ms"));
  EXPECT_TRUE(empty(t, other, "avg_total_us"));
  EXPECT_NE(std::find_if(t.notes.begin(), t.notes.end(),
                         [](const std::string& n) { return n.rfind("(other 5 ops): no total times", 0) == 0; }),
            t.notes.end());
  EXPECT_NEAR(num(t, other, "avg_self_us"), 190.0 / 8, 1e-9);
  EXPECT_NEAR(num(t, other, "self_percent"), 100.0 * 190 / 710, 1e-9);
  o.top = 8;  // as many as there are: no "other" row
  EXPECT_EQ(op_table(framework_record(), 1, o).rows.size(), 8u);
  o.top = 7;
  const Table one = op_table(framework_record(), 1, o);
  EXPECT_EQ(name(one, 7), "(other 1 op)");
  EXPECT_FALSE(empty(one, one.rows[7], "total_ms"));  // one row folded: its total is its own
}

TEST(OpTable, GroupByModuleSumsTheOpsOfEachModule) {
  OpTableOptions o;
  o.group_by = OpGroupBy::kModule;
  const Table t = op_table(framework_record(), 1, o);
  ASSERT_EQ(names(t), (std::vector<std::string>{"layer1.conv", "fc", "layer1.relu", "(no module)"}));
  o.top = 2;
  EXPECT_EQ(name(op_table(framework_record(), 1, o), 2), "(other 2 modules)");
  EXPECT_NEAR(num(t, t.rows[0], "self_ms"), 0.400, 1e-12);  // conv2d 20 + convolution 20 + slow 330 + empty 30 µs
  // Totals count a module's outermost calls only: conv2d's 400 µs, not conv2d + convolution + ... nested in it.
  EXPECT_NEAR(num(t, t.rows[0], "total_ms"), 0.400, 1e-12);
  EXPECT_NEAR(num(t, t.rows[1], "total_ms"), 0.160, 1e-12);  // the outer linear; the inner one is in fc too
  EXPECT_DOUBLE_EQ(num(t, t.rows[0], "calls"), 6.0);
  EXPECT_NEAR(num(t, t.rows[1], "self_ms"), 0.160, 1e-12);
  EXPECT_NEAR(num(t, t.rows[2], "self_ms"), 0.100, 1e-12);
  EXPECT_NEAR(num(t, t.rows[3], "self_ms"), 0.050, 1e-12);
  EXPECT_EQ(t.columns[0].title, "module");
  EXPECT_TRUE(has_note(t, "grouped by module"));
}

TEST(OpTable, GroupByShapesSplitsAnOpByItsInputShapes) {
  OpTableOptions o;
  o.group_by = OpGroupBy::kShapes;
  const Table t = op_table(framework_record(), 1, o);
  std::map<std::pair<std::string, std::string>, double> self;
  for (const auto& row : t.rows) {
    const Cell& s = cell(t, row, "shapes");
    self[{std::get<std::string>(cell(t, row, "op_name")),
          std::holds_alternative<std::string>(s) ? std::get<std::string>(s) : ""}] = num(t, row, "self_ms");
  }
  EXPECT_EQ(self.size(), 9u);  // relu is two rows
  EXPECT_NEAR((self[{"aten::relu", "[1,64]"}]), 0.030, 1e-12);
  EXPECT_NEAR((self[{"aten::relu", "[1,10]"}]), 0.050, 1e-12);
  EXPECT_NEAR((self[{"aten::_slow_conv2d_forward", "[1,3,8,8]"}]), 0.330, 1e-12);
  EXPECT_NEAR((self[{"aten::empty", ""}]), 0.030, 1e-12);
}

TEST(OpTable, GroupByShapesWithoutShapesNamesTheOption) {
  EvaluationRecord e = framework_record();
  for (Span& s : e.runs[0].trace.spans) std::erase_if(s.tags, [](const Tag& t) { return t.key == "shapes"; });
  OpTableOptions o;
  o.group_by = OpGroupBy::kShapes;
  try {
    op_table(e, 1, o);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("--group-by shapes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"shapes\" tag"), std::string::npos) << msg;
    EXPECT_NE(msg.find("name or module"), std::string::npos) << msg;
  }
}

TEST(OpTable, OptionValuesParseAndBadOnesAreRefused) {
  EXPECT_EQ(parse_op_group_by("name"), OpGroupBy::kName);
  EXPECT_EQ(parse_op_group_by("shapes"), OpGroupBy::kShapes);
  EXPECT_EQ(parse_op_group_by("module"), OpGroupBy::kModule);
  EXPECT_EQ(parse_op_group_by("layer"), std::nullopt);
  EXPECT_EQ(parse_op_group_by("Name"), std::nullopt);
  EXPECT_EQ(parse_op_sort("self"), OpSort::kSelf);
  EXPECT_EQ(parse_op_sort("total"), OpSort::kTotal);
  EXPECT_EQ(parse_op_sort("calls"), OpSort::kCalls);
  EXPECT_EQ(parse_op_sort("avg"), OpSort::kAvg);
  EXPECT_EQ(parse_op_sort("self_cuda"), OpSort::kSelfCuda);
  EXPECT_EQ(parse_op_sort("cuda"), std::nullopt);
  EXPECT_EQ(parse_op_sort(""), std::nullopt);
  for (const char* v : {"name", "shapes", "module"}) EXPECT_EQ(to_string(*parse_op_group_by(v)), v);
  for (const char* v : {"self", "total", "calls", "avg", "self_cuda"}) EXPECT_EQ(to_string(*parse_op_sort(v)), v);
}

TEST(OpTable, WithoutAFrameworkRunTheTableIsEmptyWithTheNote) {
  EvaluationRecord e;
  e.batch_sizes = {1};
  e.runs.push_back(run(TraceLevel::kModel, {}));
  const Table t = op_table(e, 1);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_TRUE(has_note(t, kNoFrameworkRun));
}

// The framework ops of one GPU batch, and with `kernels` the launches and kernels of the M/F/K run:
//   conv2d [10,410) ⊃ cudnn_convolution [20,400) ⊃ launch [30,40) → kernel [100,300)  (200 µs)
//   conv2d ⊃ launch [402,404) → memcpy [410,450)                                           (40 µs)
//   relu [420,520) ⊃ launch [430,440) → kernel [450,460)                                   (10 µs)
//   predict → kernel [600,605) with no op above it                                          (5 µs)
Trace gpu_trace(bool kernels) {
  TraceBuilder tb;
  const auto us = [](std::int64_t v) { return v * 1000; };
  const SpanId pred = tb.add(Level::kModel, "predict", 0, us(1000), kNoSpan, {{"batch", "0"}});
  const SpanId conv = tb.add(Level::kFramework, "aten::conv2d", us(10), us(410), pred);
  const SpanId cudnn = tb.add(Level::kFramework, "aten::cudnn_convolution", us(20), us(400), conv);
  const SpanId relu = tb.add(Level::kFramework, "aten::relu", us(420), us(520), pred);
  if (!kernels) return tb.trace;
  auto launch = [&](SpanId op, std::int64_t s, std::int64_t e, std::int64_t ks, std::int64_t ke) {
    const SpanId l = tb.add(Level::kSystem, "cudaLaunchKernel", us(s), us(e), op);
    tb.add(Level::kKernel, "kernel", us(ks), us(ke), l);
  };
  launch(cudnn, 30, 40, 100, 300);
  launch(conv, 402, 404, 410, 450);
  launch(relu, 430, 440, 450, 460);
  tb.add(Level::kKernel, "stray", us(600), us(605), pred);
  return tb.trace;
}

TEST(OpTable, KernelRunGivesSelfAndTotalCudaTime) {
  EvaluationRecord e;
  e.batch_sizes = {1};
  e.leveled = true;
  e.trace_level = TraceLevel::kKernel;
  e.runs.push_back(run(TraceLevel::kFramework, gpu_trace(false)));
  e.runs.push_back(run(TraceLevel::kKernel, gpu_trace(true)));
  OpTableOptions o;
  o.sort = OpSort::kSelfCuda;
  const Table t = op_table(e, 1, o);
  ASSERT_EQ(names(t), (std::vector<std::string>{"aten::cudnn_convolution", "aten::conv2d", "aten::relu"}));
  const auto& conv = row_of(t, "aten::conv2d");
  EXPECT_NEAR(num(t, conv, "self_cuda_ms"), 0.040, 1e-12);   // the memcpy it launched itself
  EXPECT_NEAR(num(t, conv, "cuda_total_ms"), 0.240, 1e-12);  // and cudnn_convolution's kernel
  EXPECT_DOUBLE_EQ(num(t, conv, "kernels"), 1.0);
  EXPECT_NEAR(num(t, conv, "self_ms"), 0.020, 1e-12);  // host values from the M/F run
  const auto& cudnn = row_of(t, "aten::cudnn_convolution");
  EXPECT_NEAR(num(t, cudnn, "self_cuda_ms"), 0.200, 1e-12);
  EXPECT_NEAR(num(t, cudnn, "cuda_total_ms"), 0.200, 1e-12);
  EXPECT_NEAR(num(t, row_of(t, "aten::relu"), "self_cuda_ms"), 0.010, 1e-12);
  EXPECT_TRUE(has_note(t, "self CUDA, CUDA total and kernels from the M/F/K run"));
  EXPECT_TRUE(has_note(t, "1 of 4 kernels have no FRAMEWORK op above them"));
}

TEST(OpTable, RunsThroughTheRegistryWithTheContextsOptions) {
  const EvaluationRecord e = framework_record();
  const AnalysisSpec& spec = analysis_spec("ops");
  EXPECT_EQ(spec.family, AnalysisFamily::kModel);
  EXPECT_EQ(spec.default_for, DefaultFor::kInference);
  EXPECT_EQ(spec.chart.kind, ChartKind::kBar);
  EXPECT_EQ(spec.chart.x, "op_name");
  EXPECT_EQ(spec.chart.y, "self_ms");
  const auto defaults = default_analysis_ids(e);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "ops"), defaults.end());
  AnalysisOptions options;
  options.op_top = 2;
  options.op_sort = OpSort::kCalls;
  const std::vector<Table> tables = run_analyses(e, {"ops"}, options);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(names(tables[0]), (std::vector<std::string>{"aten::empty", "aten::addmm", "(other 6 ops)"}));
  EXPECT_FALSE(vega_lite_chart(tables[0]).is_null());
}

}  // namespace
}  // namespace xsp
