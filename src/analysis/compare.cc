// Side-by-side comparison of evaluations; formulas and sources in include/xsp/analysis/compare.h.
#include "xsp/analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/stats_tests.h"
#include "xsp/analysis/summary.h"

namespace xsp {
namespace {

std::string eval_label(const EvaluationRecord& r) { return "#" + std::to_string(r.id) + " " + r.framework_name; }
std::string col_prefix(const EvaluationRecord& r) { return "e" + std::to_string(r.id) + "_"; }

int argmax(const std::vector<float>& v) {
  int best = 0;
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
  return best;
}

void check_sizes(const std::vector<float>& p, const std::vector<float>& q, const char* what) {
  if (p.size() != q.size())
    throw std::invalid_argument(std::string(what) + ": distributions of different sizes (" + std::to_string(p.size()) +
                                " and " + std::to_string(q.size()) + " classes)");
}

const LatencySummary* predict_summary(const RunRecord* run) {
  if (run == nullptr) return nullptr;
  auto it = run->stage_latency_ns.find(kStagePredict);
  return it == run->stage_latency_ns.end() ? nullptr : &it->second;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// Sum in double: float32 softmax outputs sum to 1 only within rounding, and KL of vectors that do not sum to 1
// can be negative; both divergences renormalize (v_c / Σv) first.
double sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

}  // namespace

double kl_divergence(const std::vector<float>& p, const std::vector<float>& q) {
  check_sizes(p, q, "KL divergence");
  const double sp = sum(p), sq = sum(q);
  if (sp <= 0 || sq <= 0) return 0;
  double kl = 0;
  for (std::size_t c = 0; c < p.size(); ++c) {
    const double pc = p[c] / sp;
    if (pc <= 0) continue;
    kl += pc * std::log(pc / std::max(q[c] / sq, kProbabilityFloor));
  }
  return std::max(kl, 0.0);  // >= 0 by Gibbs' inequality; rounding can leave a tiny negative
}

double js_divergence(const std::vector<float>& p, const std::vector<float>& q) {
  check_sizes(p, q, "JS divergence");
  const double sp = sum(p), sq = sum(q);
  if (sp <= 0 || sq <= 0) return 0;
  double js = 0;
  for (std::size_t c = 0; c < p.size(); ++c) {
    const double pc = p[c] / sp, qc = q[c] / sq, m = 0.5 * (pc + qc);
    if (pc > 0) js += 0.5 * pc * std::log(pc / m);
    if (qc > 0) js += 0.5 * qc * std::log(qc / m);
  }
  return std::max(js, 0.0);  // rounding can leave a tiny negative for identical inputs
}

PredictionAgreement compare_predictions(const std::vector<InputPrediction>& a, const std::vector<InputPrediction>& b) {
  std::map<std::string, const InputPrediction*> by_id;
  for (const auto& p : b) by_id.emplace(p.input_id, &p);
  PredictionAgreement r;
  double kl_ab = 0, kl_ba = 0, js = 0;
  for (const auto& pa : a) {
    auto it = by_id.find(pa.input_id);
    if (it == by_id.end()) continue;
    const InputPrediction& pb = *it->second;
    if (pa.probabilities.size() != pb.probabilities.size() || pa.probabilities.empty()) {
      ++r.class_count_mismatches;
      continue;
    }
    ++r.common_inputs;
    if (argmax(pa.probabilities) == argmax(pb.probabilities))
      ++r.top1_agree;
    else
      r.disagreeing.push_back(pa.input_id);
    for (std::size_t c = 0; c < pa.probabilities.size(); ++c)
      r.max_abs_diff =
          std::max(r.max_abs_diff, std::abs(static_cast<double>(pa.probabilities[c]) - pb.probabilities[c]));
    kl_ab += kl_divergence(pa.probabilities, pb.probabilities);
    kl_ba += kl_divergence(pb.probabilities, pa.probabilities);
    const double j = js_divergence(pa.probabilities, pb.probabilities);
    js += j;
    r.max_js = std::max(r.max_js, j);
  }
  if (r.common_inputs > 0) {
    const double n = static_cast<double>(r.common_inputs);
    r.top1_agree_percent = 100.0 * static_cast<double>(r.top1_agree) / n;
    r.mean_kl_ab = kl_ab / n;
    r.mean_kl_ba = kl_ba / n;
    r.mean_js = js / n;
  }
  return r;
}

std::vector<InputPrediction> evaluation_predictions(const EvaluationRecord& record) {
  std::vector<InputPrediction> out;
  std::set<std::string> seen;
  for (const auto& run : record.runs)
    for (const auto& p : run.predictions)
      if (seen.insert(p.input_id).second) out.push_back(p);
  return out;
}

Table compare_summary(const std::vector<EvaluationRecord>& records) {
  Table t = empty_table(table_spec("compare.evaluations"));
  std::set<std::string> models;
  for (const auto& r : records) {
    models.insert(r.model_name + " " + r.model_version);
    RowBuilder row(t);
    row.set("evaluation", r.id)
        .set("model", r.model_name + " " + r.model_version)
        .set("framework", r.framework_name + " " + r.framework_version)
        .set("device", r.device)
        .set("trace_level", std::string(to_string(r.trace_level)) + (r.leveled ? " (leveled)" : ""))
        .set("batch_sizes", join_ints(r.batch_sizes))
        .set("predictions", static_cast<std::int64_t>(evaluation_predictions(r).size()));
    t.rows.push_back(row.take());
  }
  if (models.size() > 1)
    t.notes.push_back("the evaluations are of different models: latencies compare models, not only frameworks");
  return t;
}

Table a1_side_by_side(const std::vector<EvaluationRecord>& records) {
  Table t;
  t.id = "compare.A1";
  t.title =
      "A1 side by side: predict latency (trimmed mean, ms) with the median's 95% interval and stability, and "
      "throughput per batch size";
  t.columns = {{"batch_size", "batch"}};
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    t.columns.push_back({col_prefix(r) + "latency_ms", eval_label(r) + " ms"});
    t.columns.push_back({col_prefix(r) + "median_ci95", eval_label(r) + " median [95% CI]"});
    t.columns.push_back({col_prefix(r) + "median_ms", "", false});
    t.columns.push_back({col_prefix(r) + "ci95_low_ms", "", false});
    t.columns.push_back({col_prefix(r) + "ci95_high_ms", "", false});
    t.columns.push_back({col_prefix(r) + "stability", eval_label(r) + " stability"});
    t.columns.push_back({col_prefix(r) + "throughput_samples_per_s", eval_label(r) + " samples/s"});
    if (i > 0)
      t.columns.push_back({col_prefix(r) + "latency_ratio", eval_label(r) + " / #" + std::to_string(records[0].id)});
  }
  std::set<int> batches;
  for (const auto& r : records) batches.insert(r.batch_sizes.begin(), r.batch_sizes.end());
  for (int b : batches) {
    std::vector<Cell> row{Cell(std::int64_t{b})};
    const LatencySummary* first = predict_summary(records[0].run_for_level(b, Level::kModel));
    for (std::size_t i = 0; i < records.size(); ++i) {
      const RunRecord* run = records[i].run_for_level(b, Level::kModel);
      const LatencySummary* s = predict_summary(run);
      row.push_back(s ? Cell(s->trimmed_mean / 1e6) : Cell());
      if (run) {
        const StabilityAssessment st = run_stability(*run);
        if (std::isfinite(st.median_ns)) {
          char buf[96];
          std::snprintf(buf, sizeof buf, "%.3f [%.3f, %.3f]", st.median_ns / 1e6, st.ci95_ns.low / 1e6,
                        st.ci95_ns.high / 1e6);
          row.insert(row.end(), {Cell(std::string(buf)), Cell(st.median_ns / 1e6), Cell(st.ci95_ns.low / 1e6),
                                 Cell(st.ci95_ns.high / 1e6), Cell(stability_label(st))});
        } else {
          row.insert(row.end(), {Cell(), Cell(), Cell(), Cell(), Cell(stability_label(st))});
        }
      } else {
        row.insert(row.end(), {Cell(), Cell(), Cell(), Cell(), Cell()});
      }
      row.push_back(run ? Cell(run->throughput_samples_per_s) : Cell());
      if (i > 0)
        row.push_back(s && first && first->trimmed_mean > 0 ? Cell(s->trimmed_mean / first->trimmed_mean) : Cell());
    }
    t.rows.push_back(std::move(row));
  }
  t.notes.push_back("each evaluation's latencies from its own M run (SPEC §3); ratio > 1: slower than #" +
                    std::to_string(records[0].id));
  t.notes.push_back(
      "two medians whose intervals overlap may not differ; an UNSTABLE run's number moved during its "
      "measurement by more than the tolerance");
  return t;
}

Table a1_significance(const std::vector<EvaluationRecord>& records, const CompareOptions& options) {
  Table t = empty_table(table_spec("compare.A1.significance"));
  char alpha[32];
  std::snprintf(alpha, sizeof alpha, "%g", options.alpha);
  const std::string conf = std::to_string(static_cast<int>(std::lround(100 * (1 - options.alpha))));
  t.title += ": predict latency of each evaluation against #" +
             (records.empty() ? std::string("?") : std::to_string(records[0].id)) + " (Mann-Whitney U, bootstrap CI)";
  // The terminal titles carry the confidence level and alpha of this comparison.
  t.columns[static_cast<std::size_t>(column_index(t, "ci_low_ms"))].title = "CI" + conf + " low";
  t.columns[static_cast<std::size_t>(column_index(t, "ci_high_ms"))].title = "CI" + conf + " high";
  t.columns[static_cast<std::size_t>(column_index(t, "significant"))].title =
      std::string("significant (alpha=") + alpha + ")";
  if (records.size() < 2) return t;
  std::set<int> batches;
  for (const auto& r : records) batches.insert(r.batch_sizes.begin(), r.batch_sizes.end());
  for (int b : batches) {
    const RunRecord* first = records[0].run_for_level(b, Level::kModel);
    if (first == nullptr || first->predict_latency_ns.empty()) continue;
    for (std::size_t i = 1; i < records.size(); ++i) {
      const RunRecord* other = records[i].run_for_level(b, Level::kModel);
      if (other == nullptr || other->predict_latency_ns.empty()) continue;
      const LatencyComparison c = compare_latencies(first->predict_latency_ns, other->predict_latency_ns, options.alpha,
                                                    options.bootstrap_resamples, options.bootstrap_seed);
      RowBuilder row(t);
      row.set("batch_size", std::int64_t{b})
          .set("evaluation_a", records[0].id)
          .set("evaluation_b", records[i].id)
          .set("batches_a", static_cast<std::int64_t>(first->predict_latency_ns.size()))
          .set("batches_b", static_cast<std::int64_t>(other->predict_latency_ns.size()))
          .set("median_a_ms", median(first->predict_latency_ns) / 1e6)
          .set("median_b_ms", median(other->predict_latency_ns) / 1e6)
          .set("median_diff_ms", c.median_difference.difference / 1e6)
          .set("ci_low_ms", c.median_difference.low / 1e6)
          .set("ci_high_ms", c.median_difference.high / 1e6)
          .set("u", c.test.u1)
          .set("z", c.test.z)
          .set("p_value", c.test.p_value)
          .set("significant", std::string(c.significant ? "yes" : "no"))
          .set("p_method", std::string(c.test.exact ? "exact" : "normal"));
      t.rows.push_back(row.take());
    }
  }
  t.notes.push_back(
      "two-sided Mann-Whitney U (Mann & Whitney 1947) on the raw per-batch predict latencies of the M "
      "runs; p exact (permutation distribution of the midrank sum, as scipy.stats.mannwhitneyu "
      "method=exact without ties) when n A + n B <= " +
      std::to_string(kExactMaxTotal) +
      ", else normal approximation with tie and continuity correction (method=asymptotic); "
      "significant: p < " +
      std::string(alpha));
  t.notes.push_back("CI: bootstrap percentile interval of median(B) - median(A), " +
                    std::to_string(options.bootstrap_resamples) + " resamples, seed " +
                    std::to_string(options.bootstrap_seed));
  return t;
}

Table a6_totals(const std::vector<EvaluationRecord>& records, const std::vector<int>& batch_sizes) {
  Table t = empty_table(table_spec("compare.A6.totals"));
  for (int b : batch_sizes) {
    for (const auto& r : records) {
      const RunRecord* fw = layers_run(r, b);
      const LatencySummary* model = predict_summary(r.run_for_level(b, Level::kModel));
      RowBuilder row(t);
      row.set("evaluation", r.id).set("framework", r.framework_name).set("batch_size", std::int64_t{b});
      row.set("model_latency_ms", model ? Cell(model->trimmed_mean / 1e6) : Cell());
      if (fw == nullptr) {
        t.rows.push_back(row.take());
        continue;
      }
      const LayerStats stats = layer_stats(fw->trace);
      double total = 0;
      std::set<std::string> types;
      for (const auto& l : stats.layers) {
        total += l.latency_ns;
        types.insert(l.type);
      }
      row.set("layers", static_cast<std::int64_t>(stats.layers.size()))
          .set("layer_types", static_cast<std::int64_t>(types.size()))
          .set("layer_latency_ms", total / 1e6)
          .set("layer_share_percent",
               model && model->trimmed_mean > 0 ? Cell(100.0 * total / model->trimmed_mean) : Cell());
      t.rows.push_back(row.take());
    }
  }
  t.notes.push_back(
      "layer latency: sum over layer indexes of the trimmed-mean latency (M/F run); model latency: "
      "trimmed-mean predict latency (M run)");
  t.notes.push_back(
      "layers are what each framework reports: LibTorch top-level ops (aten::...), OpenCV DNN layers "
      "that ran (fused ones report no time); counts and types differ by design");
  return t;
}

Table predictions_side_by_side(const std::vector<EvaluationRecord>& records) {
  Table t = empty_table(table_spec("compare.predictions"));
  t.notes.push_back(
      "KL(P||Q) = sum_c P_c ln(P_c/Q_c) (Kullback & Leibler 1951; Cover & Thomas eq. 2.26), Q_c "
      "floored at 1e-30; JS = (KL(P||M) + KL(Q||M))/2, M = (P+Q)/2 (Lin 1991), 0 <= JS <= ln 2; "
      "natural log; means over the common inputs");
  std::vector<std::vector<InputPrediction>> preds;
  for (const auto& r : records) preds.push_back(evaluation_predictions(r));
  if (preds[0].empty()) {
    t.notes.push_back("evaluation #" + std::to_string(records[0].id) +
                      " stored no predictions (run xsp evaluate with --store-predictions)");
    return t;
  }
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (preds[i].empty()) {
      t.notes.push_back("evaluation #" + std::to_string(records[i].id) + " stored no predictions");
      continue;
    }
    const PredictionAgreement a = compare_predictions(preds[0], preds[i]);
    RowBuilder row(t);
    row.set("evaluation_a", records[0].id)
        .set("evaluation_b", records[i].id)
        .set("common_inputs", static_cast<std::int64_t>(a.common_inputs))
        .set("top1_agree", static_cast<std::int64_t>(a.top1_agree))
        .set("top1_agree_percent", a.top1_agree_percent)
        .set("max_abs_dp", a.max_abs_diff)
        .set("mean_kl_ab", a.mean_kl_ab)
        .set("mean_kl_ba", a.mean_kl_ba)
        .set("mean_js", a.mean_js)
        .set("max_js", a.max_js);
    t.rows.push_back(row.take());
    if (a.common_inputs == 0)
      t.notes.push_back("#" + std::to_string(records[0].id) + " and #" + std::to_string(records[i].id) +
                        " share no input id");
    if (!a.disagreeing.empty()) {
      std::string ids;
      for (const auto& d : a.disagreeing) ids += (ids.empty() ? "" : ", ") + d;
      t.notes.push_back("#" + std::to_string(records[i].id) + " disagrees on top-1 for: " + ids);
    }
    if (a.class_count_mismatches > 0)
      t.notes.push_back(std::to_string(a.class_count_mismatches) + " common inputs of #" +
                        std::to_string(records[i].id) + " left out: different class counts");
  }
  return t;
}

std::vector<Table> compare_evaluations(const std::vector<EvaluationRecord>& records, const CompareOptions& options) {
  if (records.size() < 2) throw std::invalid_argument("compare needs at least two evaluations");
  // Batch sizes every evaluation measured: layer tables side by side only make sense for those.
  std::vector<int> common = records[0].batch_sizes;
  for (const auto& r : records) {
    std::vector<int> keep;
    for (int b : common)
      if (std::find(r.batch_sizes.begin(), r.batch_sizes.end(), b) != r.batch_sizes.end()) keep.push_back(b);
    common = keep;
  }
  std::sort(common.begin(), common.end());
  if (options.batch_size) {
    if (std::find(common.begin(), common.end(), *options.batch_size) == common.end())
      throw std::invalid_argument("batch size " + std::to_string(*options.batch_size) +
                                  " is not measured by every evaluation; common batch sizes: " +
                                  (common.empty() ? std::string("none") : join_ints(common)));
    common = {*options.batch_size};
  }
  std::vector<Table> out{compare_summary(records), a1_side_by_side(records)};
  if (options.significance) out.push_back(a1_significance(records, options));
  out.push_back(a6_totals(records, common));
  for (int b : common) {
    for (const auto& r : records) {
      Table t = a6_layer_latency_by_type(r, b);
      t.id = "compare.A6.e" + std::to_string(r.id);
      t.title = "evaluation " + eval_label(r) + " " + r.framework_version + ": " + t.title;
      out.push_back(std::move(t));
    }
  }
  out.push_back(predictions_side_by_side(records));
  return out;
}

}  // namespace xsp
