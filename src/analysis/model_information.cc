// A1, model information (SPEC §4), and the run notes shared by every analysis (SPEC §3).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "internal.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/summary.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

std::string level_upper(Level level) {
  std::string s(to_string(level));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string run_note(const RunRecord& run, Level level, std::size_t batches) {
  std::string note = "latencies from the ";
  note += run_name(run.trace_level);
  note += " run (trace level ";
  note += to_string(run.trace_level);
  note += "), " + std::to_string(batches) + (batches == 1 ? " batch" : " batches") + ", trimmed mean";
  if (deepest_level(run.trace_level) != level) {
    // SPEC §3: a level's latencies come from the run where it is the deepest one; without such a run the
    // numbers carry the deeper profilers' overhead, which the reader must know.
    note += "; no run stopped at the " + level_upper(level) +
            " level, so these include the profiling overhead of deeper levels";
  }
  return note;
}

std::optional<int> optimal_batch_size(const std::vector<std::pair<int, double>>& throughput_by_batch) {
  std::vector<std::pair<int, double>> pts;
  pts.reserve(throughput_by_batch.size());
  for (const auto& p : throughput_by_batch) {
    if (std::isfinite(p.second)) pts.push_back(p);
  }
  if (pts.empty()) return std::nullopt;
  std::sort(pts.begin(), pts.end());
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    if (pts[i + 1].second <= 1.05 * pts[i].second) return pts[i].first;
  }
  return pts.back().first;
}

std::optional<int> optimal_batch_size_within_bound(const std::vector<BatchThroughput>& points,
                                                   double latency_bound_ms) {
  std::optional<int> best;
  double best_thr = 0;
  for (const BatchThroughput& p : points) {
    // NaN latencies or throughputs fail these comparisons and are never chosen.
    if (!(p.p99_latency_ms <= latency_bound_ms) || !std::isfinite(p.throughput_samples_per_s)) continue;
    if (!best || p.throughput_samples_per_s > best_thr ||
        (p.throughput_samples_per_s == best_thr && p.batch_size < *best)) {
      best = p.batch_size;
      best_thr = p.throughput_samples_per_s;
    }
  }
  return best;
}

namespace detail {
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<int> measured_batch_sizes(const EvaluationRecord& record) {
  std::set<int> s(record.batch_sizes.begin(), record.batch_sizes.end());
  if (s.empty()) {
    for (const RunRecord& r : record.runs) s.insert(r.batch_size);
  }
  return {s.begin(), s.end()};
}
}  // namespace detail

Table a1_model_information(const EvaluationRecord& record, std::optional<double> latency_bound_ms) {
  Table t = empty_table(analysis_spec("A1"));

  std::vector<std::pair<int, double>> thr;
  std::vector<BatchThroughput> points;
  std::vector<int> missing, unstable;
  std::set<TraceLevel> levels;
  std::size_t min_batches = SIZE_MAX, max_batches = 0;
  const RunRecord* any_run = nullptr;
  for (int b : detail::measured_batch_sizes(record)) {
    const RunRecord* run = record.run_for_level(b, Level::kModel);
    if (!run) {
      missing.push_back(b);
      continue;
    }
    LatencySummary s;
    auto it = run->stage_latency_ns.find(kStagePredict);
    if (it != run->stage_latency_ns.end() && it->second.n > 0) {
      s = it->second;
    } else if (!run->predict_latency_ns.empty()) {
      s = summarize(run->predict_latency_ns);  // older records: recompute from the raw samples
    } else {
      missing.push_back(b);
      continue;
    }
    any_run = run;
    levels.insert(run->trace_level);
    min_batches = std::min(min_batches, s.n);
    max_batches = std::max(max_batches, s.n);
    const double tm_ms = s.trimmed_mean / 1e6;
    const double throughput = s.trimmed_mean > 0 ? b / (s.trimmed_mean * 1e-9) : std::nan("");
    const StabilityAssessment st = run_stability(*run);
    auto ms = [](double ns) { return std::isfinite(ns) ? Cell{ns / 1e6} : Cell{}; };
    RowBuilder row(t);
    row.set("batch_size", static_cast<std::int64_t>(b))
        .set("median_ms", ms(st.median_ns))
        .set("ci95_low_ms", ms(st.ci95_ns.low))
        .set("ci95_high_ms", ms(st.ci95_ns.high))
        .set("stability", stability_label(st))
        .set("latency_trimmed_mean_ms", tm_ms)
        .set("p50_ms", s.p50 / 1e6)
        .set("p90_ms", s.p90 / 1e6)
        .set("p99_ms", s.p99 / 1e6)
        .set("throughput_samples_per_s", throughput);
    t.rows.push_back(row.take());
    if (st.verdict == Verdict::kUnstable) unstable.push_back(b);
    thr.emplace_back(b, throughput);
    points.push_back({b, throughput, s.p99 / 1e6});
  }

  if (any_run) {
    if (levels.size() == 1) {
      std::string note = run_note(*any_run, Level::kModel, max_batches);
      if (min_batches != max_batches) {
        const std::string n = std::to_string(max_batches) + " batches";
        note.replace(note.find(n), n.size(),
                     std::to_string(min_batches) + "–" + std::to_string(max_batches) + " batches");
      }
      t.notes.push_back(note + " and percentiles of the predict stage, per batch size");
    } else {
      t.notes.push_back(
          "latencies from runs of different trace levels per batch size (see the evaluation's runs); "
          "trimmed mean and percentiles of the predict stage");
    }
  } else {
    t.notes.push_back("no MODEL-level run in this evaluation");
  }
  if (!unstable.empty()) {
    std::string s = "UNSTABLE latency at batch size";
    for (int b : unstable) s += " " + std::to_string(b);
    t.notes.push_back(s + ": its windows disagree beyond the tolerance; the optimal batch size below rests on it");
  }
  if (!missing.empty()) {
    std::string s = "batch sizes without MODEL-level predict latencies (left out):";
    for (int b : missing) s += " " + std::to_string(b);
    t.notes.push_back(s);
  }

  if (latency_bound_ms) {
    const std::string bound = detail::fixed(*latency_bound_ms, 3) + " ms";
    if (auto best = optimal_batch_size_within_bound(points, *latency_bound_ms)) {
      const auto& p =
          *std::find_if(points.begin(), points.end(), [&](const BatchThroughput& q) { return q.batch_size == *best; });
      t.notes.push_back("optimal batch size under a p99 latency bound of " + bound + ": " + std::to_string(*best) +
                        " (highest throughput meeting the bound: " + detail::fixed(p.throughput_samples_per_s, 1) +
                        " samples/s, p99 " + detail::fixed(p.p99_latency_ms, 3) + " ms)");
    } else if (!points.empty()) {
      t.notes.push_back("optimal batch size: none: no batch size meets the p99 latency bound of " + bound);
    }
  } else if (auto best = optimal_batch_size(thr)) {
    std::sort(thr.begin(), thr.end());
    auto it = std::find_if(thr.begin(), thr.end(), [&](const auto& p) { return p.first == *best; });
    std::string why;
    if (thr.size() == 1) {
      why = "the only batch size measured";
    } else if (it + 1 != thr.end()) {
      const double gain = 100.0 * ((it + 1)->second / it->second - 1.0);
      why = "the next measured batch size, " + std::to_string((it + 1)->first) + ", changes throughput by " +
            (gain >= 0 ? "+" : "") + detail::fixed(gain, 1) + "% (<= +5%)";
    } else {
      why = "the largest measured: throughput rose by more than 5% at every step";
    }
    t.notes.push_back("optimal batch size: " + std::to_string(*best) + " (" + why + ")");
  }
  return t;
}

}  // namespace xsp
