// Side-by-side comparison of evaluations (SPEC §4 "comparison of frameworks and machines side by side"):
// `xsp compare ID1 ID2 [ID3...]`. Returns Tables like every analysis, so the CLI only prints them.
//
// Output agreement between two evaluations of the same inputs, over the input ids both stored predictions for
// (RunRecord::predictions; xsp evaluate --store-predictions), with P and Q the per-class probability vectors of
// one input in evaluation A and B (natural logarithm throughout):
//   top-1 agreement  = #{inputs with argmax P = argmax Q} (ties broken by lower class index)
//   max |Δp|         = max over inputs and classes of |P_c − Q_c|
//   KL(P‖Q)          = Σ_c P_c ln(P_c / Q_c)            Kullback & Leibler, Ann. Math. Statist. 22(1), 1951;
//                                                         Cover & Thomas, Elements of Information Theory, 2nd
//                                                         ed., eq. 2.26. Terms with P_c = 0 are 0; Q_c is
//                                                         floored at kProbabilityFloor so that a float32
//                                                         softmax that underflowed to 0 gives a finite value.
//   JS(P,Q)          = ½ KL(P‖M) + ½ KL(Q‖M), M = ½(P+Q)  Lin, IEEE Trans. Inf. Theory 37(1), 1991; symmetric,
//                                                         0 ≤ JS ≤ ln 2, needs no floor.
// Both divergences first renormalize each vector to sum 1 in double (a float32 softmax sums to 1 only within
// rounding, and KL of vectors that do not sum to 1 can be negative). Means are arithmetic means over the common
// inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/record/record.h"

namespace xsp {

/// Q_c floor in KL(P‖Q) (see the header comment).
inline constexpr double kProbabilityFloor = 1e-30;

/// KL(P‖Q) in nats, ≥ 0 (P, Q renormalized; 0 when either sums to ≤ 0). Throws std::invalid_argument when the
/// sizes differ.
double kl_divergence(const std::vector<float>& p, const std::vector<float>& q);
/// JS(P,Q) in nats (0 ≤ JS ≤ ln 2 for probability vectors). Throws std::invalid_argument when the sizes differ.
double js_divergence(const std::vector<float>& p, const std::vector<float>& q);

/// Agreement of two sets of predictions over their common input ids.
struct PredictionAgreement {
  std::size_t common_inputs = 0;           ///< input ids present in both (with equal class counts)
  std::size_t top1_agree = 0;              ///< of those, inputs whose best class is the same
  double top1_agree_percent = 0;           ///< 100 × top1_agree / common_inputs (0 when none)
  double max_abs_diff = 0;                 ///< max |P_c − Q_c|
  double mean_kl_ab = 0;                   ///< mean KL(P‖Q)
  double mean_kl_ba = 0;                   ///< mean KL(Q‖P)
  double mean_js = 0;                      ///< mean JS(P,Q)
  double max_js = 0;                       ///< max JS(P,Q)
  std::vector<std::string> disagreeing;    ///< input ids whose top-1 differs
  std::size_t class_count_mismatches = 0;  ///< common ids left out because the class counts differ
};

/// Compares predictions by input id (order does not matter; ids must be unique within each side, as
/// RunRecord::predictions are). Top-1 is argmax of `probabilities` (ties: lower index).
PredictionAgreement compare_predictions(const std::vector<InputPrediction>& a, const std::vector<InputPrediction>& b);

/// An evaluation's predictions over all its runs, one per input id: the first occurrence in run order (runs are
/// stored batch size ascending, shallower level first, so the M run of the smallest batch size wins).
std::vector<InputPrediction> evaluation_predictions(const EvaluationRecord& record);

/// What compare_evaluations() shows.
struct CompareOptions {
  std::optional<int> batch_size;  ///< only this batch size in the layer tables (default: every common one)
  /// Significance of latency differences (a1_significance): level α in (0,1), bootstrap resamples and seed.
  bool significance = true;
  double alpha = 0.05;
  int bootstrap_resamples = 2000;
  std::uint64_t bootstrap_seed = 0;
};

/// "compare.evaluations": one row per evaluation (id, model, framework and version, device, trace level, batch
/// sizes). Notes say when the models differ.
Table compare_summary(const std::vector<EvaluationRecord>& records);
/// "compare.A1": one row per batch size measured by any evaluation; per evaluation E (by id) the columns
/// eE_latency_ms (trimmed mean predict latency of the M run, ms), eE_throughput_samples_per_s, and, for every
/// evaluation after the first, eE_latency_ratio (its latency / the first evaluation's). Empty cells where an
/// evaluation did not measure that batch size.
Table a1_side_by_side(const std::vector<EvaluationRecord>& records);
/// "compare.A1.significance": one row per batch size and evaluation after the first that both it and the first
/// evaluation measured (M run, raw RunRecord::predict_latency_ns): batches per side, medians (ms), median
/// difference (ms, other − first) with its bootstrap (1−α) interval, Mann–Whitney U of the first evaluation,
/// z, two-sided p, "significant" (p < α) and "p method" (exact below kExactMaxTotal batches in all, else
/// normal). Formulas and sources:
/// include/xsp/analysis/stats_tests.h.
Table a1_significance(const std::vector<EvaluationRecord>& records, const CompareOptions& options = {});
/// "compare.A6.totals": one row per evaluation and common batch size with the layer count (layers per batch),
/// summed layer latency (ms, M/F run), model latency (ms, M run) and the layers' share of it (%). Frameworks
/// name layer types differently, so A6 itself is one table per evaluation (a6_layer_latency_by_type).
Table a6_totals(const std::vector<EvaluationRecord>& records, const std::vector<int>& batch_sizes);
/// "compare.predictions": one row per pair (first evaluation, each other one) with the PredictionAgreement
/// figures; a note per pair lists disagreeing inputs. Zero rows and a note when fewer than two evaluations
/// stored predictions.
Table predictions_side_by_side(const std::vector<EvaluationRecord>& records);

/// Everything `xsp compare` prints, in order: summary, A1 side by side, A6 totals, each evaluation's A6 per
/// common batch size (title prefixed with the evaluation), predictions. Throws std::invalid_argument with fewer
/// than two records, or when options.batch_size is not measured by every evaluation.
std::vector<Table> compare_evaluations(const std::vector<EvaluationRecord>& records,
                                       const CompareOptions& options = {});

}  // namespace xsp
