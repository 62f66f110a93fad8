// Run summary with stability and level overheads: see include/xsp/analysis/summary.h.
#include "xsp/analysis/summary.h"

#include "internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace xsp {
namespace {

using detail::fixed;

Cell real_or_empty(double v) { return std::isfinite(v) ? Cell(v) : Cell(); }


}  // namespace

StabilityAssessment run_stability(const RunRecord& run) {
  if (!run.measurement.design.empty()) return run.measurement.stability;
  return assess_series(run.predict_latency_ns, StabilityRule{});
}

std::string stability_label(const StabilityAssessment& s) {
  switch (s.verdict) {
    case Verdict::kStable: return "stable";
    case Verdict::kUnstable: return "UNSTABLE (spread " + fixed(100 * s.spread_fraction, 1) + "%)";
    case Verdict::kNotAssessed: return "not assessed";
  }
  return "not assessed";
}

std::vector<LevelOverhead> level_overheads(const EvaluationRecord& record) {
  if (!record.level_overheads.empty()) return record.level_overheads;
  std::vector<LevelOverhead> out;
  if (!record.leveled) return out;
  for (int batch_size : record.batch_sizes) {
    std::vector<const RunRecord*> runs;
    for (const auto& run : record.runs)
      if (run.batch_size == batch_size && run.trace_level != TraceLevel::kHardware && !run.predict_latency_ns.empty())
        runs.push_back(&run);
    std::sort(runs.begin(), runs.end(), [](auto* a, auto* b) { return a->trace_level < b->trace_level; });
    for (std::size_t i = 1; i < runs.size(); ++i) {
      LevelOverhead o;
      o.batch_size = batch_size;
      o.level = runs[i]->trace_level;
      o.baseline = runs[i - 1]->trace_level;
      o.design = "sequential";
      o.latency_ns = median(runs[i]->predict_latency_ns);
      o.baseline_latency_ns = median(runs[i - 1]->predict_latency_ns);
      o.overhead = unpaired_change(runs[i]->predict_latency_ns, runs[i - 1]->predict_latency_ns);
      o.note = "stored before XSP interleaved levels: the runs ran one after the other and each batch counts as a "
               "block, so drift between the runs reads as overhead";
      out.push_back(o);
    }
  }
  return out;
}

std::vector<Table> evaluation_summary(const EvaluationRecord& record) {
  Table t;
  t.id = "summary.runs";
  t.title = "Predict latency per batch size and run (each level's latency from its own run), with its 95% interval "
            "and stability";
  t.columns = {{"batch_size", "batch"},
               {"run", "run"},
               {"trace_level", "level", false},
               {"median_ms", "median ms"},
               {"ci95_low_ms", "95% CI low"},
               {"ci95_high_ms", "95% CI high"},
               {"stability", "stability"},
               {"spread_percent", "spread %", false},
               {"cv_percent", "CV %"},
               {"drift_percent", "drift %"},
               {"trimmed_mean_ms", "trimmed mean ms"},
               {"p50_ms", "p50 ms", false},
               {"p90_ms", "p90 ms"},
               {"p99_ms", "p99 ms"},
               {"throughput_samples_per_s", "samples/s"},
               {"batches", "batches"},
               {"warmup_batches", "warm-up"},
               {"warmup_ms", "warm-up ms"},
               {"spans", "spans"},
               {"unparented", "unparented"},
               {"warnings", "warnings"}};
  for (const auto& run : record.runs) {
    const StabilityAssessment s = run_stability(run);
    const auto it = run.stage_latency_ns.find(kStagePredict);
    const LatencySummary p = it != run.stage_latency_ns.end() ? it->second : summarize(run.predict_latency_ns);
    t.rows.push_back({Cell(std::int64_t{run.batch_size}), Cell(std::string(run_name(run.trace_level))),
                      Cell(std::string(to_string(run.trace_level))), real_or_empty(s.median_ns / 1e6),
                      real_or_empty(s.ci95_ns.low / 1e6), real_or_empty(s.ci95_ns.high / 1e6),
                      Cell(run.trace_level == TraceLevel::kHardware ? std::string("n/a (counter run)")
                                                                    : stability_label(s)),
                      real_or_empty(100 * s.spread_fraction), real_or_empty(100 * s.cv),
                      real_or_empty(100 * s.drift_fraction), real_or_empty(p.trimmed_mean / 1e6),
                      real_or_empty(p.p50 / 1e6), real_or_empty(p.p90 / 1e6), real_or_empty(p.p99 / 1e6),
                      real_or_empty(run.throughput_samples_per_s),
                      Cell(static_cast<std::int64_t>(run.predict_latency_ns.size())),
                      Cell(std::int64_t{run.warmup_iterations}),
                      real_or_empty(static_cast<double>(run.measurement.warmup_ns) / 1e6),
                      Cell(static_cast<std::int64_t>(run.trace.spans.size())),
                      Cell(static_cast<std::int64_t>(run.trace.assembly.unparented)),
                      Cell(static_cast<std::int64_t>(run.warnings.size()))});
  }
  t.notes.push_back("median and its 95% interval over the result windows (the wider of the order-statistic and the "
                    "batch-means interval); stable = the last windows agree within the tolerance (SPEC §3)");
  for (const auto& run : record.runs) {
    const std::string who = "batch " + std::to_string(run.batch_size) + " " + run_name(run.trace_level) + ": ";
    for (const auto& w : run.warnings) t.notes.push_back("WARNING " + who + w);
    for (const auto& [name, value] : run.trace.counters) {
      if (value == 0) continue;
      // trace.* are the batches and spans the trace budget left out on purpose (--trace-batches), not losses.
      const bool deliberate = name.rfind("trace.", 0) == 0;
      t.notes.push_back((deliberate ? "info: " : "") + who + name + " = " + std::to_string(value));
    }
  }
  std::vector<Table> out{std::move(t)};

  const auto overheads = level_overheads(record);
  if (overheads.empty()) return out;
  Table o;
  o.id = "summary.overheads";
  o.title = "Overhead each level adds over the next shallower one (SPEC §3), with its 95% interval";
  o.columns = {{"batch_size", "batch"},
               {"trace_level", "run"},
               {"baseline", "over"},
               {"design", "design"},
               {"overhead", "overhead [95% CI]"},
               {"overhead_percent", "", false},
               {"ci95_low_percent", "", false},
               {"ci95_high_percent", "", false},
               {"significant", "", false},
               {"latency_ms", "run ms"},
               {"baseline_latency_ms", "over ms"},
               {"rounds", "rounds"}};
  for (const auto& v : overheads) {
    const bool residual = v.design == "residual";
    o.rows.push_back({Cell(std::int64_t{v.batch_size}),
                      Cell(std::string(residual ? "M (after CUPTI)" : run_name(v.level))),
                      Cell(std::string(run_name(v.baseline))), Cell(v.design), Cell(describe_overhead(v.overhead)),
                      real_or_empty(100 * v.overhead.overhead_fraction),
                      real_or_empty(100 * v.overhead.ci95_fraction.low),
                      real_or_empty(100 * v.overhead.ci95_fraction.high),
                      Cell(std::string(v.overhead.significant() ? "yes" : "no")), real_or_empty(v.latency_ns / 1e6),
                      real_or_empty(v.baseline_latency_ns / 1e6), Cell(static_cast<std::int64_t>(v.overhead.rounds))});
  }
  o.notes.push_back("overhead = geometric mean of per-round ratios of block medians − 1; interleaved rounds (AB, BA, "
                    "...) cancel drift; an interval holding 0 is not significant");
  for (const auto& v : overheads)
    if (!v.note.empty() && v.design != "interleaved") {
      o.notes.push_back(v.design + ": " + v.note);
      break;
    }
  for (const auto& v : overheads)
    if (v.design == "interleaved" && !v.note.empty()) {
      o.notes.push_back(std::string(run_name(v.level)) + ": " + v.note);
      break;
    }
  out.push_back(std::move(o));
  return out;
}

std::vector<std::string> describe_measurements(const EvaluationRecord& record) {
  std::vector<std::string> lines;
  for (const auto& run : record.runs) {
    const RunMeasurement& m = run.measurement;
    std::string s = "run " + std::to_string(run.id) + " (batch " + std::to_string(run.batch_size) + ", " +
                    run_name(run.trace_level) + "): ";
    if (m.design.empty()) {
      lines.push_back(s + "measured before XSP assessed stability (verdict assessed afterwards on 3 equal windows)");
      continue;
    }
    s += m.design;
    if (m.batches_per_block > 0)
      s += ", " + std::to_string(m.blocks.size()) + " blocks of " + std::to_string(m.batches_per_block) +
           " batches, the last " + std::to_string(m.blocks.size() - m.result_first_block) + " are the result";
    s += "; window medians (ms):";
    for (double w : m.stability.window_medians_ns) s += " " + fixed(w / 1e6, 3);
    s += "; warm-up " + std::to_string(m.warmup_batches) + " batches in " + fixed(m.warmup_ns / 1e6, 0) + " ms" +
         (m.design == "fixed" || m.design == "scenario" ? "" : m.warmup_converged ? " (converged)" : " (did NOT converge)");
    s += "; measured " + fixed(m.measure_ns / 1e6, 0) + " ms" + (m.reached_max_duration ? " (maximum reached)" : "");
    lines.push_back(s);
  }
  return lines;
}

}  // namespace xsp
