// The report's headline, generation charts and comparison sentences: see src/report/report_internal.h.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report_internal.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/summary.h"
#include "xsp/stats/stats.h"

namespace xsp::report_detail {

std::optional<double> number(const Table& t, const std::vector<Cell>& row, std::string_view name) {
  const int i = column_index(t, name);
  if (i < 0) return std::nullopt;
  const Cell& c = row[static_cast<std::size_t>(i)];
  if (const auto* d = std::get_if<double>(&c)) return std::isfinite(*d) ? std::optional<double>(*d) : std::nullopt;
  if (const auto* n = std::get_if<std::int64_t>(&c)) return static_cast<double>(*n);
  return std::nullopt;
}

std::string text(const Table& t, const std::vector<Cell>& row, std::string_view name) {
  const int i = column_index(t, name);
  if (i < 0) return "";
  const Cell& c = row[static_cast<std::size_t>(i)];
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* n = std::get_if<std::int64_t>(&c)) return std::to_string(*n);
  return "";
}

namespace {

// The first table with rows whose id is `id`, else nullptr.
const Table* first_with_rows(const std::vector<Table>& tables, std::string_view id) {
  for (const Table& t : tables)
    if (t.id == id && !t.rows.empty()) return &t;
  return nullptr;
}

// The row of `t` with the largest value in `column`, else nullptr.
const std::vector<Cell>* largest(const Table& t, std::string_view column) {
  const std::vector<Cell>* best = nullptr;
  double best_value = -1;
  for (const auto& row : t.rows) {
    const auto v = number(t, row, column);
    if (v && *v > best_value) {
      best_value = *v;
      best = &row;
    }
  }
  return best;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

struct Item {
  std::string label, value, detail;
};

void latency_items(const EvaluationRecord& r, const std::vector<Table>& tables, std::vector<Item>& items) {
  const Table* a1 = first_with_rows(tables, "A1");
  if (a1 == nullptr) return;
  const auto& first = a1->rows.front();
  const auto median = number(*a1, first, "median_ms");
  const auto mean = number(*a1, first, "latency_trimmed_mean_ms");
  const auto low = number(*a1, first, "ci95_low_ms"), high = number(*a1, first, "ci95_high_ms");
  const std::string batch = text(*a1, first, "batch_size");
  if (median || mean) {
    std::string detail = median ? "median" : "trimmed mean";
    if (median && low && high) detail += ", 95% interval [" + figure(*low) + ", " + figure(*high) + "] ms";
    const std::string verdict = text(*a1, first, "stability");
    if (!verdict.empty()) detail += "; " + verdict;
    items.push_back({"Predict latency at batch size " + batch, figure(median ? *median : *mean) + " ms", detail});
  }
  const std::vector<Cell>* best = largest(*a1, "throughput_samples_per_s");
  if (best != nullptr && r.batch_sizes.size() > 1)
    items.push_back(
        {"Best throughput", figure(*number(*a1, *best, "throughput_samples_per_s")) + " samples/s",
         "at batch size " + text(*a1, *best, "batch_size") + " of " + std::to_string(a1->rows.size()) + " measured"});
}

void bottleneck_items(const std::vector<Table>& tables, std::vector<Item>& items) {
  if (const Table* ops = first_with_rows(tables, "ops")) {
    const auto& row = ops->rows.front();  // sorted by self time
    const std::string value = text(*ops, row, "op_name");
    std::string detail;
    for (const char* c : {"self_ms", "self_percent", "calls"})
      if (const auto v = number(*ops, row, c))
        detail += (detail.empty() ? "" : ", ") +
                  (std::string(c) == "calls" && *v == std::floor(*v) ? std::to_string(static_cast<long long>(*v))
                                                                     : figure(*v)) +
                  (std::string(c) == "self_ms"        ? " ms self"
                   : std::string(c) == "self_percent" ? "% of the batch"
                                                      : " calls");
    items.push_back({"Top op by self time", value, detail});
  }
  // On a GPU the layers' own latencies are launch times; the kernel time under each layer (A11) says where the
  // GPU's time goes.
  if (const Table* a11 = first_with_rows(tables, "A11")) {
    double total = 0;
    for (const auto& row : a11->rows) total += number(*a11, row, "kernel_latency_ms").value_or(0);
    if (const auto* row = largest(*a11, "kernel_latency_ms")) {
      const double ms = *number(*a11, *row, "kernel_latency_ms");
      items.push_back({"Layer with the most kernel time",
                       "#" + text(*a11, *row, "layer_index") + " " + text(*a11, *row, "layer_name"),
                       figure(ms) + " ms, " + figure(total > 0 ? 100 * ms / total : 0) +
                           "% of the layers' kernel time" +
                           (a11->batch_size ? " at batch size " + std::to_string(*a11->batch_size) : "")});
    }
  } else if (const Table* a3 = first_with_rows(tables, "A3")) {
    double total = 0;
    for (const auto& row : a3->rows) total += number(*a3, row, "latency_ms").value_or(0);
    if (const auto* row = largest(*a3, "latency_ms")) {
      const double ms = *number(*a3, *row, "latency_ms");
      items.push_back({"Slowest layer", "#" + text(*a3, *row, "layer_index") + " " + text(*a3, *row, "layer_name"),
                       figure(ms) + " ms, " + figure(total > 0 ? 100 * ms / total : 0) + "% of the layers' time" +
                           (a3->batch_size ? " at batch size " + std::to_string(*a3->batch_size) : "")});
    }
  }
  if (const Table* a6 = first_with_rows(tables, "A6"))
    if (const auto* row = largest(*a6, "latency_ms"))
      items.push_back({"Costliest layer type", text(*a6, *row, "layer_type"),
                       figure(number(*a6, *row, "percent").value_or(0)) + "% of the layers' time, " +
                           figure(*number(*a6, *row, "latency_ms")) + " ms"});
  if (const Table* a10 = first_with_rows(tables, "A10"))
    if (const auto* row = largest(*a10, "total_latency_ms"))
      items.push_back({"Top kernel", short_symbol(text(*a10, *row, "kernel_name"), 90),
                       figure(number(*a10, *row, "percent_of_kernel_time").value_or(0)) + "% of kernel time, " +
                           figure(*number(*a10, *row, "total_latency_ms")) + " ms per batch"});
}

void outcome_items(const EvaluationRecord& r, std::vector<Item>& items) {
  for (const RunRecord& run : r.runs) {
    if (run.generation && run.generation->timings_used) {
      const GenerationOutcome& g = *run.generation;
      const std::string at = "batch size " + std::to_string(run.batch_size) + ", " + std::to_string(g.sequences) +
                             " sequences, " + std::string(to_string(run.trace_level)) + " run";
      items.push_back(
          {"TTFT p50 / p99", figure(g.ttft_ns.p50 / 1e6) + " / " + figure(g.ttft_ns.p99 / 1e6) + " ms", at});
      items.push_back({"TPOT p50 / p99", figure(g.tpot_ns.p50 / 1e6) + " / " + figure(g.tpot_ns.p99 / 1e6) + " ms",
                       "ITL p99 " + figure(g.itl_ns.p99 / 1e6) + " ms"});
      items.push_back({"Output tokens/s", figure(g.output_tokens_per_s), at});
      return;  // the first timing run: the smallest batch size's
    }
    if (run.scenario_result) {
      const ScenarioOutcome& s = *run.scenario_result;
      items.push_back({"Query latency p50 / p99", figure(s.p50_ns / 1e6) + " / " + figure(s.p99_ns / 1e6) + " ms",
                       s.scenario + ", " + std::to_string(s.query_count) + " queries"});
      items.push_back({"QPS", figure(s.qps_with_overhead),
                       s.target_qps > 0 ? "target " + figure(s.target_qps) + " QPS" : std::string("")});
      return;
    }
  }
}

void overhead_items(const EvaluationRecord& r, std::vector<Item>& items) {
  std::string value, detail;
  int batch = -1;
  for (const LevelOverhead& o : r.level_overheads) {
    if (o.design == "residual") continue;
    if (batch < 0) batch = o.batch_size;
    if (o.batch_size != batch) continue;  // the smallest batch size's, as the latency above
    value +=
        (value.empty() ? "" : ", ") + std::string(to_string(o.level)) + " " + percent(o.overhead.overhead_fraction);
    if (std::isfinite(o.overhead.ci95_fraction.low))
      detail += (detail.empty() ? "" : "; ") + std::string(to_string(o.level)) + " [" +
                percent(o.overhead.ci95_fraction.low) + ", " + percent(o.overhead.ci95_fraction.high) + "]";
  }
  if (!value.empty())
    items.push_back({"Tracing overhead per level (batch size " + std::to_string(batch) + ")", value,
                     detail.empty() ? "" : "95% intervals: " + detail});
}

}  // namespace

std::string figure(double value) {
  if (!std::isfinite(value)) return "–";
  char buf[32];
  const double a = std::fabs(value);
  std::snprintf(buf, sizeof buf, a >= 100 || a == 0 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3g", value);
  return buf;
}

std::string headline_html(const EvaluationRecord& r, const std::vector<Table>& tables) {
  std::vector<Item> items;
  latency_items(r, tables, items);
  outcome_items(r, items);
  bottleneck_items(tables, items);
  overhead_items(r, items);
  if (items.empty()) return "";
  std::string html = "<div class=\"headline\">";
  for (const Item& i : items)
    html += "<div class=\"card\"><div class=\"label\">" + escape_html(i.label) + "</div><div class=\"value" +
            (i.value.size() > 32 ? " long" : "") + "\">" + escape_html(i.value) + "</div><div class=\"detail\">" +
            escape_html(i.detail) + "</div></div>";
  return html + "</div>";
}

// ---- generation ----
ReportChart distribution(const std::vector<double>& values_ms, const std::string& what, const std::string& title,
                         const std::string& element_id) {
  nlohmann::json values = nlohmann::json::array();
  const std::size_t step = std::max<std::size_t>(1, values_ms.size() / 20000);
  for (std::size_t i = 0; i < values_ms.size(); i += step) values.push_back({{"ms", values_ms[i]}});
  ReportChart c;
  c.element_id = element_id;
  c.title = title;
  c.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
            {"width", 360},
            {"height", 180},
            {"data", {{"values", values}}},
            {"mark", {{"type", "bar"}, {"tooltip", true}}},
            {"encoding",
             {{"x", {{"field", "ms"}, {"type", "quantitative"}, {"bin", {{"maxbins", 40}}}, {"title", what + " (ms)"}}},
              {"y", {{"aggregate", "count"}, {"type", "quantitative"}, {"title", "count"}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

namespace {

// Gaps between consecutive tokens of every request of `trace` (ms): prefill end → decode 1 end → decode 2 end ...
std::vector<double> inter_token_latencies_ms(const Trace& trace) {
  std::vector<double> out;
  for (const GenerationRequest& q : extract_generation_requests(trace)) {
    if (!q.prefill) continue;
    std::int64_t last = q.prefill->end_ns;
    for (const GenerationStep& s : q.decode) {
      out.push_back((s.end_ns - last) / 1e6);
      last = s.end_ns;
    }
  }
  return out;
}

// The p99 decode step by duration (nearest rank) among the steps of requests whose ops were traced.
const Span* p99_decode_step(const Trace& trace, std::size_t& among) {
  std::vector<std::pair<std::int64_t, SpanId>> steps;
  for (const GenerationRequest& q : extract_generation_requests(trace))
    if (q.traced)
      for (const GenerationStep& s : q.decode) steps.emplace_back(s.duration_ns(), s.span_id);
  among = steps.size();
  if (steps.empty()) return nullptr;
  std::sort(steps.begin(), steps.end());
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(steps.size())));
  const SpanId id = steps[std::max<std::size_t>(rank, 1) - 1].second;
  for (const Span& s : trace.spans)
    if (s.id == id) return &s;
  return nullptr;
}

}  // namespace

std::string generation_section(const EvaluationRecord& r, const ReportOptions& options,
                               const std::function<std::string()>& next_id, std::vector<ReportChart>& charts) {
  std::string html = "<h3>Token latencies</h3><div class=\"row\">";
  for (const RunRecord& run : r.runs) {
    if (!run.generation || !run.generation->timings_used) continue;
    const GenerationOutcome& g = *run.generation;
    const std::string at =
        " (batch size " + std::to_string(run.batch_size) + ", " + std::string(to_string(run.trace_level)) + " run)";
    std::vector<double> ttft, tpot;
    for (double v : g.ttft_values_ns) ttft.push_back(v / 1e6);
    for (double v : g.tpot_values_ns) tpot.push_back(v / 1e6);
    std::vector<double> itl = inter_token_latencies_ms(run.trace);
    for (auto [values, what, name] :
         {std::tuple{&ttft, "TTFT", "time to first token"}, std::tuple{&tpot, "TPOT", "time per output token"},
          std::tuple{&itl, "ITL", "inter-token latency"}}) {
      if (values->empty()) continue;
      const LatencySummary s = summarize(*values);
      ReportChart c = distribution(*values, what,
                                   std::string(what) + ", " + name + at + ": " + std::to_string(values->size()) +
                                       " values, p50 " + figure(s.p50) + " ms, p99 " + figure(s.p99) + " ms",
                                   next_id());
      html += chart_figure(c);
      charts.push_back(std::move(c));
    }
  }
  html += "</div>";
  // The slow step, with its ops and kernels: the deepest run that traced steps.
  const RunRecord* deepest = nullptr;
  for (const RunRecord& run : r.runs)
    if (run.generation && (deepest == nullptr || run.trace_level > deepest->trace_level)) deepest = &run;
  if (deepest != nullptr && deepest->trace_level > TraceLevel::kModel) {
    std::size_t among = 0;
    if (const Span* step = p99_decode_step(deepest->trace, among)) {
      if (auto tl = span_timeline_chart(deepest->trace, *step,
                                        "The p99 decode step of " + std::to_string(among) +
                                            " traced decode steps (batch size " + std::to_string(deepest->batch_size) +
                                            ", " + figure(step->duration_ns() / 1e6) + " ms)",
                                        next_id(), options.max_timeline_spans)) {
        html += "<h3>The p99 decode step</h3>" + chart_figure(*tl);
        charts.push_back(std::move(*tl));
      }
    }
  }
  return html;
}

// ---- comparison ----

std::vector<std::string> comparison_sentences(const std::vector<Table>& compare_tables) {
  std::vector<std::string> out;
  for (const Table& t : compare_tables) {
    if (t.id != "compare.A1.significance") continue;
    for (const auto& row : t.rows) {
      const auto a = number(t, row, "median_a_ms"), b = number(t, row, "median_b_ms");
      if (!a || !b || *a <= 0 || *b <= 0) continue;
      const double ratio = *b >= *a ? *b / *a : *a / *b;
      const auto p = number(t, row, "p_value");
      const bool significant = text(t, row, "significant") == "yes";
      char r[32];
      std::snprintf(r, sizeof r, "%.2f×", ratio);
      std::string s = "#" + text(t, row, "evaluation_b") + " is " +
                      (significant ? std::string(r) + (*b >= *a ? " slower" : " faster") + " than"
                                   : std::string("not significantly different from")) +
                      " #" + text(t, row, "evaluation_a") + " at batch size " + text(t, row, "batch_size") +
                      " (median " + figure(*b) + " ms vs " + figure(*a) + " ms";
      if (!significant) s += ", " + std::string(r) + (*b >= *a ? " slower" : " faster");
      if (p) s += *p < 0.001 ? "; p < 0.001" : "; p = " + figure(*p);
      out.push_back(s + ")");
    }
  }
  return out;
}

}  // namespace xsp::report_detail
