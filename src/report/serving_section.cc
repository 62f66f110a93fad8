// The serving part of the report (xsp bench-serve, docs/serving.md): what a person reads first about a served model
// under load, then the tables `xsp show` prints, the distributions, and a sweep's throughput-latency curve.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "report_internal.h"
#include "xsp/serve/serving.h"

namespace xsp::report_detail {
namespace {

std::string ms_text(double ns) { return std::isnan(ns) ? "n/a" : figure(ns / 1e6) + " ms"; }

std::string point_name(const nlohmann::json& s) {
  const std::string parameter = s.value("parameter", "");
  if (parameter.empty()) return "";
  const nlohmann::json& v = s.contains("value") ? s["value"] : nlohmann::json(nullptr);
  std::ostringstream value;  // as given: "4", "0.5", "inf"
  if (v.is_number())
    value << v.get<double>();
  else
    value << (v.is_string() ? v.get<std::string>() : v.dump());
  return parameter + " " + value.str();
}

// "At request-rate 4: 60 of 60 requests, 3.9 requests/s, 250 output tokens/s; TTFT p50 8.77 ms (p99 194 ms), TPOT
// p50 7.34 ms (p99 34.6 ms); goodput 3.1 requests/s; bounds met."
std::string point_sentence(const nlohmann::json& j) {
  const serve::ServingSummary s = serve::summary_from_json(j);
  const std::string name = point_name(j);
  std::string out = (name.empty() ? std::string() : "At " + name + ": ") + std::to_string(s.completed) + " of " +
                    std::to_string(s.requests) + " requests, " + figure(s.requests_per_s) + " requests/s, " +
                    figure(s.output_tokens_per_s) + " output tokens/s; TTFT p50 " + ms_text(s.ttft_ns.p50) + " (p99 " +
                    ms_text(s.ttft_ns.p99) + "), TPOT p50 " + ms_text(s.tpot_ns.p50) + " (p99 " +
                    ms_text(s.tpot_ns.p99) + ")";
  if (!std::isnan(s.goodput_per_s)) out += "; goodput " + figure(s.goodput_per_s) + " requests/s";
  if (s.verdict) out += s.verdict->valid ? "; bounds met" : "; bounds not met: " + s.verdict->reason;
  if (s.failed > 0) out += "; " + std::to_string(s.failed) + " failed (table S3)";
  return out + ".";
}

// Output tokens/s against TTFT and TPOT (p50 and p99), one point per sweep value, joined in sweep order: where
// latency turns up as throughput stops growing is the server's knee.
ReportChart sweep_chart(const nlohmann::json& summaries, const std::string& parameter, const std::string& element_id) {
  nlohmann::json values = nlohmann::json::array();
  for (const nlohmann::json& j : summaries) {
    const serve::ServingSummary s = serve::summary_from_json(j);
    const double value = j.contains("value") && j["value"].is_number() ? j["value"].get<double>() : std::nan("");
    for (const auto& [figure_name, ns] : std::vector<std::pair<std::string, double>>{{"TTFT p50", s.ttft_ns.p50},
                                                                                     {"TTFT p99", s.ttft_ns.p99},
                                                                                     {"TPOT p50", s.tpot_ns.p50},
                                                                                     {"TPOT p99", s.tpot_ns.p99}}) {
      if (std::isnan(ns) || std::isnan(s.output_tokens_per_s)) continue;
      values.push_back({{"output_tokens_per_s", s.output_tokens_per_s},
                        {"ms", ns / 1e6},
                        {"figure", figure_name},
                        {"latency", figure_name.substr(0, 4)},
                        {parameter, std::isnan(value) ? nlohmann::json(nullptr) : nlohmann::json(value)},
                        {"order", j.value("point", 0)}});
    }
  }
  const nlohmann::json x = {{"field", "output_tokens_per_s"}, {"type", "quantitative"}, {"title", "output tokens/s"}};
  const nlohmann::json y = {
      {"field", "ms"}, {"type", "quantitative"}, {"title", "latency (ms)"}, {"scale", {{"type", "log"}}}};
  const nlohmann::json color = {{"field", "figure"}, {"type", "nominal"}, {"title", "figure"}};
  ReportChart c;
  c.element_id = element_id;
  c.title = "Throughput against latency over the sweep of " + parameter + " (one point per value, in sweep order)";
  c.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
            {"width", 420},
            {"height", 240},
            {"data", {{"values", values}}},
            {"layer",
             {{{"mark", {{"type", "point"}, {"filled", true}, {"tooltip", true}}},
               {"encoding", {{"x", x}, {"y", y}, {"color", color}}}},
              {{"mark", {{"type", "line"}}},
               {"encoding",
                {{"x", x}, {"y", y}, {"color", color}, {"order", {{"field", "order"}, {"type", "quantitative"}}}}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

// The slowest TTFT and the slowest ITL (of the first sweep point that has them) that serving-tail joined: its reading
// and the server's spans during it, from the server trace window that overlaps it most.
std::string slowest_on_server(const EvaluationRecord& r, const std::vector<Table>& tables, const ReportOptions& options,
                              const std::function<std::string()>& next_id, std::vector<ReportChart>& charts) {
  const Table* tail = nullptr;
  for (const Table& t : tables)
    if (t.id == "serving-tail" && !t.rows.empty()) tail = &t;
  if (tail == nullptr || r.runs.empty()) return "";
  std::string html;
  for (const char* kind : {"ttft", "itl"}) {
    for (const auto& row : tail->rows) {
      const std::string sentence = text(*tail, row, "sentence");
      if (text(*tail, row, "kind") != kind || text(*tail, row, "tail") != "max" || sentence.empty()) continue;
      const auto start = number(*tail, row, "start_ns"), end = number(*tail, row, "end_ns");
      if (!start || !end) break;
      const auto a = static_cast<std::int64_t>(*start), b = static_cast<std::int64_t>(*end);
      const RunRecord* best = nullptr;
      std::int64_t best_overlap = 0;
      for (const RunRecord& run : r.runs) {
        std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
        for (const Span& s : run.trace.spans) {
          lo = std::min(lo, s.start_ns);
          hi = std::max(hi, s.end_ns);
        }
        const std::int64_t overlap = std::min(hi, b) - std::max(lo, a);
        if (overlap > best_overlap) best_overlap = overlap, best = &run;
      }
      const std::string what = std::string(kind) == "ttft" ? "The slowest first token" : "The slowest inter-token gap";
      html += "<h4>" + escape_html(what) + " on the server</h4><p>" + escape_html(sentence) + "</p>";
      if (best == nullptr) break;
      if (auto c = window_timeline_chart(best->trace, a, b, std::string(kind) == "ttft" ? "the request" : "the gap",
                                         what + " of request " + text(*tail, row, "request_id") + " (" +
                                             figure((b - a) / 1e6) + " ms): the server's spans during it",
                                         next_id(), options.max_timeline_spans)) {
        html += chart_figure(*c);
        charts.push_back(std::move(*c));
      }
      break;
    }
  }
  return html;
}

}  // namespace

std::string serving_section(const EvaluationRecord& r, const std::vector<Table>& tables, const ReportOptions& options,
                            const std::function<std::string()>& next_id, std::vector<ReportChart>& charts) {
  std::string html = "<h3>Serving benchmark</h3>";
  const auto serving = r.settings.find("serving");
  if (serving == r.settings.end() || !serving->is_object() || !serving->contains("summary") ||
      !(*serving)["summary"].is_array())
    return html + "<p class=\"note\">no serving figures in this evaluation (settings.serving.summary)</p>";
  const nlohmann::json& summaries = (*serving)["summary"];
  try {
    html += "<ul class=\"headline\">";
    for (const nlohmann::json& j : summaries) html += "<li>" + escape_html(point_sentence(j)) + "</li>";
    html += "</ul>";
    for (const Table& t : serve::serving_tables(r))
      html += "<h4>" + escape_html(t.id + " " + t.title) + "</h4>" + html_table(t);

    // Per point, the distributions of its successful requests.
    std::map<int, std::vector<const serve::RequestFigures*>> by_point;
    const std::vector<serve::RequestFigures> requests = serve::request_figures(r);
    for (const serve::RequestFigures& f : requests) by_point[f.point].push_back(&f);
    html += "<h4>Latency distributions</h4>";
    for (const auto& [point, rows] : by_point) {
      std::string at;
      for (const nlohmann::json& j : summaries)
        if (j.value("point", 0) == point && !point_name(j).empty()) at = " at " + point_name(j);
      std::vector<double> ttft, tpot, itl, e2e;
      for (const serve::RequestFigures* f : rows) {
        ttft.push_back(f->ttft_ns / 1e6);
        e2e.push_back(f->e2e_ns / 1e6);
        if (!std::isnan(f->tpot_ns)) tpot.push_back(f->tpot_ns / 1e6);
        for (double v : f->itl_ns) itl.push_back(v / 1e6);
      }
      html += "<div class=\"row\">";
      for (auto [values, what] :
           {std::pair{&ttft, "TTFT"}, std::pair{&tpot, "TPOT"}, std::pair{&itl, "ITL"}, std::pair{&e2e, "E2E"}}) {
        if (values->empty()) continue;
        const LatencySummary s = summarize(*values);
        ReportChart c = distribution(*values, what,
                                     std::string(what) + at + ": " + std::to_string(values->size()) + " values, p50 " +
                                         figure(s.p50) + " ms, p99 " + figure(s.p99) + " ms",
                                     next_id());
        html += chart_figure(c);
        charts.push_back(std::move(c));
      }
      html += "</div>";
    }
    if (const auto& sweep = (*serving)["sweep"]; sweep.is_object() && summaries.size() > 1) {
      ReportChart c = sweep_chart(summaries, sweep.value("parameter", "value"), next_id());
      html += "<h4>Throughput and latency over the sweep</h4>" + chart_figure(c);
      charts.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    html += "<p class=\"note\">serving figures unreadable: " + escape_html(e.what()) + "</p>";
  }
  html += slowest_on_server(r, tables, options, next_id, charts);
  return html;
}

}  // namespace xsp::report_detail
