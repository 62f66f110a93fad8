// Run summary with stability and level overheads: see include/xsp/analysis/summary.h.
#include "xsp/analysis/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "internal.h"
#include "xsp/analysis/registry.h"
#include "xsp/trace/run_statistics.h"

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
    case Verdict::kStable:
      return "stable";
    case Verdict::kUnstable:
      return "UNSTABLE (spread " + fixed(100 * s.spread_fraction, 1) + "%)";
    case Verdict::kNotAssessed:
      return "not assessed";
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
      o.note = runs[i]->measurement.design == "generation"
                   ? "generation runs are measured one level after the other; each request counts as a block, so "
                     "drift between the runs reads as overhead"
                   : "stored before XSP interleaved levels: the runs ran one after the other and each batch counts "
                     "as a block, so drift between the runs reads as overhead";
      out.push_back(o);
    }
  }
  return out;
}

namespace {

// "32" or "16–64": the token counts a run's requests drew.
std::string count_range(const std::vector<std::int64_t>& counts) {
  if (counts.empty()) return "";
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  return *lo == *hi ? std::to_string(*lo) : std::to_string(*lo) + "–" + std::to_string(*hi);
}

// The token-latency check of a run as one cell: "valid", "INVALID: <reason>", or the early-stopping estimates
// alone when the scenario has no bounds (single-stream).
std::string describe_check(const GenerationOutcome& g) {
  if (g.valid) return *g.valid ? "valid" : "INVALID: " + g.invalid_reason;
  std::string out;
  for (const auto& [name, c] : {std::pair{"TTFT", &g.ttft_check}, {"TPOT", &g.tpot_check}}) {
    if (!*c) continue;
    const TokenLatencyCheck& k = **c;
    out += std::string(out.empty() ? "" : ", ") + name + " p" + fixed(k.percentile, 0) + " ";
    out +=
        k.enough_samples ? fixed(k.estimate_ns / 1e6, 3) + " ms" : "n/a (" + std::to_string(k.min_samples) + " needed)";
  }
  return out;
}

// The generation runs' token latencies and their kept tail steps (summary.generation, summary.generation_tail).
void generation_summary(const EvaluationRecord& record, std::vector<Table>& out) {
  Table g = empty_table(table_spec("summary.generation"));
  Table tail = empty_table(table_spec("summary.generation_tail"));
  for (const auto& run : record.runs) {
    if (!run.generation) continue;
    const GenerationOutcome& j = *run.generation;
    RowBuilder row(g);
    row.set("batch_size", std::int64_t{run.batch_size})
        .set("run", std::string(run_name(run.trace_level)))
        .set("requests", j.requests)
        .set("sequences", j.sequences)
        .set("prompt_tokens", count_range(j.prompt_tokens))
        .set("output_tokens", count_range(j.output_tokens))
        .set("ttft_p50_ms", real_or_empty(j.ttft_ns.p50 / 1e6))
        .set("ttft_p90_ms", real_or_empty(j.ttft_ns.p90 / 1e6))
        .set("ttft_p99_ms", real_or_empty(j.ttft_ns.p99 / 1e6))
        .set("tpot_p50_ms", real_or_empty(j.tpot_ns.p50 / 1e6))
        .set("tpot_p90_ms", real_or_empty(j.tpot_ns.p90 / 1e6))
        .set("tpot_p99_ms", real_or_empty(j.tpot_ns.p99 / 1e6))
        .set("itl_p99_ms", real_or_empty(j.itl_ns.p99 / 1e6))
        .set("e2e_p50_ms", real_or_empty(j.e2e_ns.p50 / 1e6))
        .set("output_tokens_per_s", real_or_empty(j.output_tokens_per_s))
        .set("input_tokens_per_s", real_or_empty(j.input_tokens_per_s))
        .set("ttft_stability", std::string(to_string(j.ttft_stability)))
        .set("tpot_stability", std::string(to_string(j.tpot_stability)))
        .set("check", describe_check(j))
        .set("kv_cache_bytes", j.kv_cache_bytes);
    g.rows.push_back(row.take());
    for (const GenerationTailStep& t : j.tail) {
      RowBuilder r(tail);
      r.set("batch_size", std::int64_t{run.batch_size})
          .set("run", std::string(run_name(run.trace_level)))
          .set("kind", t.kind)
          .set("rank", t.rank)
          .set("percentile", real_or_empty(t.percentile))
          .set("request", t.request)
          .set("step", t.step)
          .set("latency_ms", real_or_empty(t.latency_ns / 1e6))
          .set("span_id", std::to_string(t.span_id))
          .set("full_trace", std::string(t.full_trace ? "yes" : "no"));
      tail.rows.push_back(r.take());
    }
  }
  if (g.rows.empty()) return;
  g.notes.push_back(
      "per sequence; TTFT = issue to the first token (end of prefill), TPOT = (last − first token) / "
      "(tokens − 1), ITL = every gap between tokens (vLLM benchmark_serving, MLPerf LoadGen); the "
      "runs table above times each request's whole service (its \"request\" span)");
  out.push_back(std::move(g));
  if (!tail.rows.empty()) out.push_back(std::move(tail));
}

// The sample outputs of task models (settings["sample_outputs"] entries with a "task", written by run_evaluation):
// up to five rows per input (summary.outputs).
void task_outputs_summary(const EvaluationRecord& record, std::vector<Table>& out) {
  const auto it = record.settings.find("sample_outputs");
  if (it == record.settings.end() || !it->is_object()) return;
  Table t = empty_table(table_spec("summary.outputs"));
  for (const auto& entry : it->items()) {
    // Not a structured binding: the lambda below captures the key, which clang (C++20, before 16) cannot.
    const std::string batch = entry.key();
    const nlohmann::json& samples = entry.value();
    if (!samples.is_array()) continue;
    for (const auto& s : samples) {
      if (!s.is_object() || !s.contains("task")) continue;
      const std::string task = s.value("task", std::string());
      auto add = [&](std::int64_t rank, const nlohmann::json& item, double score, const std::string& box,
                     const std::string& of) {
        RowBuilder row(t);
        row.set("batch_size", static_cast<std::int64_t>(std::atoll(batch.c_str())))
            .set("input", s.value("input", std::string()))
            .set("task", task)
            .set("rank", rank)
            .set("class", item.value("class", std::int64_t{0}))
            .set("label", item.value("label", std::string()))
            .set("score", real_or_empty(score))
            .set("box", box)
            .set("of", of);
        t.rows.push_back(row.take());
      };
      std::int64_t rank = 0;
      if (task == "detection") {
        const std::string of = std::to_string(s.value("detection_count", std::int64_t{0})) + " detections";
        for (const auto& d : s.value("detections", nlohmann::json::array())) {
          if (++rank > 5) break;
          std::string box;
          for (const auto& v : d.value("box", nlohmann::json::array()))
            box += (box.empty() ? "" : ",") + fixed(v.get<double>(), 1);
          add(rank, d, d.value("score", std::nan("")), box, of);
        }
        if (rank == 0) add(0, nlohmann::json::object(), std::nan(""), "", of);
        continue;
      }
      std::string of;
      if (task == "segmentation" && s.contains("mask"))
        of = "mask " + std::to_string(s["mask"].value("height", 0)) + "x" + std::to_string(s["mask"].value("width", 0));
      for (const auto& c : s.value("classes", nlohmann::json::array()))
        add(++rank, c, c.value("value", std::nan("")), "", of);
    }
  }
  if (t.rows.empty()) return;
  t.notes.push_back(
      "the model's outputs for the inputs of each batch size's last batch; every input's outputs are "
      "kept with --store-predictions");
  out.push_back(std::move(t));
}

// summary.overheads: each level over the shallower one (leveled evaluations).
void overhead_table(const EvaluationRecord& record, std::vector<Table>& out) {
  const auto overheads = level_overheads(record);
  if (overheads.empty()) return;
  Table o = empty_table(table_spec("summary.overheads"));
  for (const auto& v : overheads) {
    const bool residual = v.design == "residual";
    RowBuilder row(o);
    row.set("batch_size", std::int64_t{v.batch_size})
        .set("trace_level", std::string(residual ? "M (after CUPTI)" : run_name(v.level)))
        .set("baseline", std::string(run_name(v.baseline)))
        .set("design", v.design)
        .set("overhead", describe_overhead(v.overhead))
        .set("overhead_percent", real_or_empty(100 * v.overhead.overhead_fraction))
        .set("ci95_low_percent", real_or_empty(100 * v.overhead.ci95_fraction.low))
        .set("ci95_high_percent", real_or_empty(100 * v.overhead.ci95_fraction.high))
        .set("significant", std::string(v.overhead.significant() ? "yes" : "no"))
        .set("latency_ms", real_or_empty(v.latency_ns / 1e6))
        .set("baseline_latency_ms", real_or_empty(v.baseline_latency_ns / 1e6))
        .set("rounds", static_cast<std::int64_t>(v.overhead.rounds));
    o.rows.push_back(row.take());
  }
  o.notes.push_back(
      "overhead = geometric mean of per-round ratios of block medians − 1; interleaved rounds (AB, BA, "
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
}

}  // namespace

// A profiled command (RecordKind::kExternal): its own ranges instead of batch latencies, which it has none of; with
// several runs (--leveled, --repeat) its samples per run with their interval and verdict, and the overheads.
std::vector<Table> external_summary(const EvaluationRecord& record) {
  Table t = empty_table(table_spec("summary.ranges"));
  for (const auto& run : record.runs) {
    for (const auto& [name, s] : run.stage_latency_ns) {
      RowBuilder row(t);
      row.set("run", std::string(run_name(run.trace_level)))
          .set("range", name)
          .set("count", static_cast<std::int64_t>(s.n))
          .set("total_ms", real_or_empty(s.mean * static_cast<double>(s.n) / 1e6))
          .set("mean_ms", real_or_empty(s.mean / 1e6))
          .set("p50_ms", real_or_empty(s.p50 / 1e6))
          .set("p90_ms", real_or_empty(s.p90 / 1e6))
          .set("p99_ms", real_or_empty(s.p99 / 1e6))
          .set("max_ms", real_or_empty(s.max / 1e6));
      t.rows.push_back(row.take());
    }
  }
  const nlohmann::json exit = record.settings.value("exit", nlohmann::json::object());
  const std::int64_t wall_ns = record.settings.value("wall_ns", std::int64_t{0});
  const std::size_t executions = record.settings.value("executions", nlohmann::json::array()).size();
  t.notes.push_back("the command " + exit.value("text", std::string("ended")) + "; " +
                    (executions > 1 ? std::to_string(executions) + " runs took " : std::string("it took ")) +
                    fixed(static_cast<double>(wall_ns) / 1e6, 1) + " ms; " +
                    std::to_string(record.settings.value("processes", nlohmann::json::array()).size()) +
                    " process(es) traced in the " +
                    (record.runs.empty() ? "" : run_name(record.runs.back().trace_level)) + " trace");
  for (const auto& run : record.runs) {
    const std::string who = record.runs.size() > 1 ? std::string(run_name(run.trace_level)) + ": " : "";
    t.notes.push_back(who + std::to_string(run.trace.spans.size()) + " spans in the kept trace");
    for (const auto& w : run.warnings) t.notes.push_back("WARNING " + who + w);
    for (const std::string& line : describe_run_statistics(run.trace.counters)) t.notes.push_back(who + line);
  }
  std::vector<Table> out{std::move(t)};

  const nlohmann::json sample = record.settings.value("sample_range", nlohmann::json(nullptr));
  if (sample.is_string()) {
    Table s = empty_table(table_spec("summary.samples"));
    for (const auto& run : record.runs) {
      const StabilityAssessment& a = run.measurement.stability;
      const LatencySummary p = summarize(run.predict_latency_ns);
      RowBuilder row(s);
      row.set("run", std::string(run_name(run.trace_level)))
          .set("trace_level", std::string(to_string(run.trace_level)))
          .set("range", sample.get<std::string>())
          .set("runs", static_cast<std::int64_t>(run.measurement.blocks.size()))
          .set("samples", static_cast<std::int64_t>(run.predict_latency_ns.size()));
      if (run.trace_level == TraceLevel::kHardware) {  // kernel replay: its durations are no latencies (SPEC §3)
        row.set("stability", std::string("n/a (counter run)"));
        s.rows.push_back(row.take());
        continue;
      }
      row.set("median_ms", real_or_empty(a.median_ns / 1e6))
          .set("ci95_low_ms", real_or_empty(a.ci95_ns.low / 1e6))
          .set("ci95_high_ms", real_or_empty(a.ci95_ns.high / 1e6))
          .set("stability", stability_label(a))
          .set("spread_percent", real_or_empty(100 * a.spread_fraction))
          .set("cv_percent", real_or_empty(100 * a.cv))
          .set("p90_ms", real_or_empty(p.p90 / 1e6))
          .set("p99_ms", real_or_empty(p.p99 / 1e6));
      s.rows.push_back(row.take());
    }
    s.notes.push_back("samples: the program's outermost \"" + sample.get<std::string>() +
                      "\" ranges; with several runs each run is a window (stable = the runs' medians agree within the "
                      "tolerance), with one run its samples split into windows in time");
    out.push_back(std::move(s));
  }
  overhead_table(record, out);
  return out;
}

std::vector<Table> evaluation_summary(const EvaluationRecord& record) {
  if (record.kind() == RecordKind::kExternal) return external_summary(record);
  Table t = empty_table(table_spec("summary.runs"));
  for (const auto& run : record.runs) {
    const StabilityAssessment s = run_stability(run);
    const auto it = run.stage_latency_ns.find(kStagePredict);
    const LatencySummary p = it != run.stage_latency_ns.end() ? it->second : summarize(run.predict_latency_ns);
    RowBuilder row(t);
    row.set("batch_size", std::int64_t{run.batch_size})
        .set("run", std::string(run_name(run.trace_level)))
        .set("trace_level", std::string(to_string(run.trace_level)))
        .set("median_ms", real_or_empty(s.median_ns / 1e6))
        .set("ci95_low_ms", real_or_empty(s.ci95_ns.low / 1e6))
        .set("ci95_high_ms", real_or_empty(s.ci95_ns.high / 1e6))
        .set("stability",
             run.trace_level == TraceLevel::kHardware ? std::string("n/a (counter run)") : stability_label(s))
        .set("spread_percent", real_or_empty(100 * s.spread_fraction))
        .set("cv_percent", real_or_empty(100 * s.cv))
        .set("drift_percent", real_or_empty(100 * s.drift_fraction))
        .set("trimmed_mean_ms", real_or_empty(p.trimmed_mean / 1e6))
        .set("p50_ms", real_or_empty(p.p50 / 1e6))
        .set("p90_ms", real_or_empty(p.p90 / 1e6))
        .set("p99_ms", real_or_empty(p.p99 / 1e6))
        .set("throughput_samples_per_s", real_or_empty(run.throughput_samples_per_s))
        .set("batches", static_cast<std::int64_t>(run.predict_latency_ns.size()))
        .set("warmup_batches", std::int64_t{run.warmup_iterations})
        .set("warmup_ms", real_or_empty(static_cast<double>(run.measurement.warmup_ns) / 1e6))
        .set("spans", static_cast<std::int64_t>(run.trace.spans.size()))
        .set("unparented", static_cast<std::int64_t>(run.trace.assembly.unparented))
        .set("warnings", static_cast<std::int64_t>(run.warnings.size()));
    t.rows.push_back(row.take());
  }
  t.notes.push_back(
      "median and its 95% interval over the result windows (the wider of the order-statistic and the "
      "batch-means interval); stable = the last windows agree within the tolerance (SPEC §3)");
  for (const auto& run : record.runs) {
    const std::string who = "batch " + std::to_string(run.batch_size) + " " + run_name(run.trace_level) + ": ";
    for (const auto& w : run.warnings) t.notes.push_back("WARNING " + who + w);
    // Severity and meaning from the run-statistics registry: errors and data losses first, in capitals.
    for (const std::string& line : describe_run_statistics(run.trace.counters)) t.notes.push_back(who + line);
  }
  std::vector<Table> out{std::move(t)};
  generation_summary(record, out);
  task_outputs_summary(record, out);

  overhead_table(record, out);
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
    if (record.kind() == RecordKind::kExternal) {
      std::string e = "run " + std::to_string(run.id) + " (" + run_name(run.trace_level) + "): the whole command";
      if (m.blocks.size() <= 1) {
        e += ", run once under the injection library: no warm-up; its samples split into windows in time";
      } else {
        e += " run " + std::to_string(m.blocks.size()) +
             " times (rounds alternate the order of the levels); "
             "each run is one window; run medians (ms):";
        for (const BlockSummary& b : m.blocks)
          e += " " + (std::isnan(b.median_ns) ? "n/a" : fixed(b.median_ns / 1e6, 3));
      }
      lines.push_back(e);
      continue;
    }
    s += m.design;
    if (m.batches_per_block > 0)
      s += ", " + std::to_string(m.blocks.size()) + " blocks of " + std::to_string(m.batches_per_block) +
           " batches, the last " + std::to_string(m.blocks.size() - m.result_first_block) + " are the result";
    s += "; window medians (ms):";
    for (double w : m.stability.window_medians_ns) s += " " + fixed(w / 1e6, 3);
    s += "; warm-up " + std::to_string(m.warmup_batches) + " batches in " + fixed(m.warmup_ns / 1e6, 0) + " ms" +
         (m.design == "fixed" || m.design == "scenario" ? ""
          : m.warmup_converged                          ? " (converged)"
                                                        : " (did NOT converge)");
    s += "; measured " + fixed(m.measure_ns / 1e6, 0) + " ms" + (m.reached_max_duration ? " (maximum reached)" : "");
    lines.push_back(s);
  }
  return lines;
}

}  // namespace xsp
