// xsp compare on hand-made records and distributions with known answers.
#include "xsp/analysis/compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xsp {
namespace {

InputPrediction pred(std::string id, std::vector<float> p) {
  InputPrediction x;
  x.input_id = std::move(id);
  x.probabilities = std::move(p);
  return x;
}

TEST(Divergence, KnownValues) {
  // KL([1/2,1/2] || [1/4,3/4]) = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3).
  EXPECT_NEAR(kl_divergence({0.5f, 0.5f}, {0.25f, 0.75f}), 0.5 * std::log(4.0 / 3.0), 1e-7);
  // KL([1/4,3/4] || [1/2,1/2]) = 1/4 ln(1/2) + 3/4 ln(3/2).
  EXPECT_NEAR(kl_divergence({0.25f, 0.75f}, {0.5f, 0.5f}), 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-7);
  EXPECT_EQ(kl_divergence({0.2f, 0.8f}, {0.2f, 0.8f}), 0.0);
  // Disjoint supports: JS reaches its bound ln 2; KL stays finite thanks to the floor: ln(1 / 1e-30).
  EXPECT_NEAR(js_divergence({1.0f, 0.0f}, {0.0f, 1.0f}), std::log(2.0), 1e-12);
  EXPECT_NEAR(kl_divergence({1.0f, 0.0f}, {0.0f, 1.0f}), -std::log(kProbabilityFloor), 1e-9);
  // JS([1/2,1/2],[1/4,3/4]) by hand: M = [3/8, 5/8].
  const double m0 = 3.0 / 8, m1 = 5.0 / 8;
  const double js = 0.5 * (0.5 * std::log(0.5 / m0) + 0.5 * std::log(0.5 / m1)) +
                    0.5 * (0.25 * std::log(0.25 / m0) + 0.75 * std::log(0.75 / m1));
  EXPECT_NEAR(js_divergence({0.5f, 0.5f}, {0.25f, 0.75f}), js, 1e-8);
  EXPECT_NEAR(js_divergence({0.25f, 0.75f}, {0.5f, 0.5f}), js, 1e-8);  // symmetric
  // Renormalized: scaling a vector changes nothing.
  EXPECT_NEAR(kl_divergence({1.0f, 1.0f}, {0.25f, 0.75f}), 0.5 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_THROW(kl_divergence({1.0f}, {0.5f, 0.5f}), std::invalid_argument);
  EXPECT_THROW(js_divergence({1.0f}, {0.5f, 0.5f}), std::invalid_argument);
}

TEST(ComparePredictions, AgreementAndDivergences) {
  const std::vector<InputPrediction> a = {pred("x", {0.7f, 0.2f, 0.1f}), pred("y", {0.5f, 0.5f, 0.0f}),
                                          pred("z", {0.1f, 0.1f, 0.8f}), pred("only_a", {1, 0, 0})};
  // Other order; "y" flips top-1 (tie in A resolves to class 0, B prefers class 1); "z" identical.
  const std::vector<InputPrediction> b = {pred("z", {0.1f, 0.1f, 0.8f}), pred("only_b", {0, 1, 0}),
                                          pred("x", {0.6f, 0.3f, 0.1f}), pred("y", {0.25f, 0.75f, 0.0f})};
  const PredictionAgreement r = compare_predictions(a, b);
  EXPECT_EQ(r.common_inputs, 3u);
  EXPECT_EQ(r.top1_agree, 2u);
  EXPECT_NEAR(r.top1_agree_percent, 200.0 / 3.0, 1e-12);
  EXPECT_EQ(r.disagreeing, std::vector<std::string>{"y"});
  EXPECT_NEAR(r.max_abs_diff, 0.25, 1e-7);  // input y, classes 0 and 1
  const double kl_x = 0.7 * std::log(0.7 / 0.6) + 0.2 * std::log(0.2 / 0.3);
  const double kl_y = 0.5 * std::log(4.0 / 3.0);
  EXPECT_NEAR(r.mean_kl_ab, (kl_x + kl_y + 0) / 3, 1e-7);
  const double kl_x_ba = 0.6 * std::log(0.6 / 0.7) + 0.3 * std::log(0.3 / 0.2);
  const double kl_y_ba = 0.25 * std::log(0.5) + 0.75 * std::log(1.5);
  EXPECT_NEAR(r.mean_kl_ba, (kl_x_ba + kl_y_ba) / 3, 1e-7);
  const double js_y = js_divergence({0.5f, 0.5f, 0.0f}, {0.25f, 0.75f, 0.0f});
  EXPECT_GT(r.mean_js, 0);
  EXPECT_NEAR(r.max_js, js_y, 1e-12);  // y is the most different
  EXPECT_EQ(r.class_count_mismatches, 0u);

  // Different class counts are left out and counted, not compared.
  const PredictionAgreement m = compare_predictions({pred("x", {0.5f, 0.5f})}, {pred("x", {1, 0, 0})});
  EXPECT_EQ(m.common_inputs, 0u);
  EXPECT_EQ(m.class_count_mismatches, 1u);
  EXPECT_EQ(m.top1_agree_percent, 0);
}

RunRecord run(int batch, TraceLevel level, double predict_ms, std::vector<InputPrediction> preds = {}) {
  RunRecord r;
  r.batch_size = batch;
  r.trace_level = level;
  r.iterations = 1;
  LatencySummary s;
  s.n = 1;
  s.trimmed_mean = s.mean = s.p50 = s.p90 = s.p99 = predict_ms * 1e6;
  r.stage_latency_ns[kStagePredict] = s;
  r.throughput_samples_per_s = batch * 1e3 / predict_ms;
  r.predictions = std::move(preds);
  if (level == TraceLevel::kFramework) {
    // One predict span with two layers: 1 ms and 2 ms.
    auto span = [](SpanId id, SpanId parent, Level l, std::string name, std::int64_t a, std::int64_t b) {
      Span sp;
      sp.id = id;
      sp.parent_id = parent;
      sp.level = l;
      sp.name = std::move(name);
      sp.start_ns = a;
      sp.end_ns = b;
      return sp;
    };
    r.trace.spans = {span(1, kNoSpan, Level::kModel, kStagePredict, 0, 4'000'000),
                     span(2, 1, Level::kFramework, "Convolution", 0, 1'000'000),
                     span(3, 1, Level::kFramework, "ReLU", 1'000'000, 3'000'000)};
  }
  return r;
}

EvaluationRecord evaluation(std::int64_t id, std::string framework, double ms, std::vector<InputPrediction> preds) {
  EvaluationRecord e;
  e.id = id;
  e.model_name = "Net";
  e.model_version = "1.0.0";
  e.framework_name = std::move(framework);
  e.framework_version = "1.0";
  e.batch_sizes = {1, 2};
  e.trace_level = TraceLevel::kFramework;
  e.leveled = true;
  e.runs = {run(1, TraceLevel::kModel, ms, preds), run(1, TraceLevel::kFramework, ms * 2),
            run(2, TraceLevel::kModel, ms * 1.5), run(2, TraceLevel::kFramework, ms * 3)};
  return e;
}

TEST(CompareEvaluations, TablesSideBySide) {
  const auto a = evaluation(7, "libtorch", 4.0, {pred("x", {0.9f, 0.1f}), pred("y", {0.4f, 0.6f})});
  const auto b = evaluation(9, "opencv-dnn", 2.0, {pred("y", {0.3f, 0.7f}), pred("x", {0.2f, 0.8f})});
  const auto tables = compare_evaluations({a, b});
  // summary, A1, A1 significance, A6 totals, A6 x 2 evaluations x 2 common batch sizes, predictions.
  ASSERT_EQ(tables.size(), 9u);
  EXPECT_EQ(tables[0].id, "compare.evaluations");

  const Table& a1 = tables[1];
  ASSERT_EQ(a1.id, "compare.A1");
  ASSERT_EQ(a1.rows.size(), 2u);
  EXPECT_EQ(a1.columns[1].name, "e7_latency_ms");
  EXPECT_EQ(a1.columns[2].name, "e7_median_ci95");
  EXPECT_EQ(a1.columns[6].name, "e7_stability");
  EXPECT_EQ(a1.columns[8].name, "e9_latency_ms");
  EXPECT_EQ(a1.columns[15].name, "e9_latency_ratio");
  EXPECT_EQ(std::get<double>(a1.rows[0][1]), 4.0);  // M run, not the M/F run
  EXPECT_EQ(std::get<double>(a1.rows[0][8]), 2.0);
  EXPECT_EQ(std::get<double>(a1.rows[0][15]), 0.5);
  EXPECT_EQ(std::get<std::string>(a1.rows[0][6]), "not assessed");  // no raw latencies to assess
  EXPECT_EQ(std::get<double>(a1.rows[1][1]), 6.0);

  EXPECT_EQ(tables[2].id, "compare.A1.significance");
  EXPECT_TRUE(tables[2].rows.empty());  // these runs keep no raw latencies

  const Table& totals = tables[3];
  ASSERT_EQ(totals.rows.size(), 4u);
  EXPECT_EQ(std::get<std::int64_t>(totals.rows[0][3]), 2);  // layers
  EXPECT_EQ(std::get<double>(totals.rows[0][5]), 3.0);      // 1 + 2 ms
  EXPECT_EQ(std::get<double>(totals.rows[0][6]), 4.0);      // model latency, M run
  EXPECT_EQ(std::get<double>(totals.rows[0][7]), 75.0);     // percent

  EXPECT_EQ(tables[4].id, "compare.A6.e7");
  EXPECT_NE(tables[4].title.find("libtorch"), std::string::npos);
  EXPECT_EQ(tables[5].id, "compare.A6.e9");

  const Table& p = tables.back();
  ASSERT_EQ(p.id, "compare.predictions");
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_EQ(std::get<std::int64_t>(p.rows[0][2]), 2);  // common inputs
  EXPECT_EQ(std::get<std::int64_t>(p.rows[0][3]), 1);  // y agrees, x does not
  EXPECT_EQ(std::get<double>(p.rows[0][4]), 50.0);
  EXPECT_NEAR(std::get<double>(p.rows[0][5]), 0.7, 1e-6);
  bool named = false;
  for (const auto& n : p.notes) named |= n.find("disagrees on top-1 for: x") != std::string::npos;
  EXPECT_TRUE(named);

  // Only batch size 2 in the layer tables.
  CompareOptions only2;
  only2.batch_size = 2;
  EXPECT_EQ(compare_evaluations({a, b}, only2).size(), 7u);
  only2.significance = false;
  EXPECT_EQ(compare_evaluations({a, b}, only2).size(), 6u);
  only2.batch_size = 8;
  EXPECT_THROW(compare_evaluations({a, b}, only2), std::invalid_argument);
  EXPECT_THROW(compare_evaluations({a}), std::invalid_argument);
}

TEST(CompareEvaluations, WithoutPredictionsSaysSo) {
  const auto a = evaluation(1, "libtorch", 1.0, {});
  const auto b = evaluation(2, "opencv-dnn", 1.0, {});
  const Table p = predictions_side_by_side({a, b});
  EXPECT_TRUE(p.rows.empty());
  bool said = false;
  for (const auto& n : p.notes) said |= n.find("--store-predictions") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(EvaluationPredictions, FirstOccurrenceAcrossRuns) {
  EvaluationRecord e;
  e.runs = {run(1, TraceLevel::kModel, 1, {pred("a", {1, 0})}),
            run(2, TraceLevel::kModel, 1, {pred("a", {0, 1}), pred("b", {0, 1})})};
  const auto p = evaluation_predictions(e);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].probabilities, (std::vector<float>{1, 0}));
  EXPECT_EQ(p[1].input_id, "b");
}

}  // namespace
}  // namespace xsp
