// The HTML report: see include/xsp/report/report.h.
#include "xsp/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "report_assets.h"
#include "report_internal.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/roofline.h"
#include "xsp/analysis/serving_join.h"
#include "xsp/analysis/summary.h"

namespace xsp {
namespace report_detail {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// JSON inside <script type="application/json">: "</" would end the element early; "<\/" is the same JSON string.
std::string json_for_script(const nlohmann::json& j) {
  std::string s = j.dump();
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string cell_text(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return "";
  if (const auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&c)) {
    if (!std::isfinite(*d)) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", *d);
    return buf;
  }
  return std::get<std::string>(c);
}

// The unit a column's values are in, for its header: the registry's, else the suffix of its name.
std::string column_unit(const Table& t, const Column& c) {
  if (const AnalysisSpec* s = spec_of(t))
    for (const ColumnSpec& cs : s->columns)
      if (cs.name == c.name) return cs.unit;
  for (const auto& [suffix, unit] :
       {std::pair{"_ms", "ms"}, {"_ns", "ns"}, {"_us", "µs"}, {"_bytes", "bytes"}, {"_percent", "%"}, {"_per_s", "/s"}})
    if (c.name.size() > std::strlen(suffix) && c.name.ends_with(suffix)) return unit;
  return "";
}

}  // namespace

std::string html_table(const Table& t, const std::vector<std::string>& first) {
  // Column order: the key column, then `first` in its order, then the others.
  std::vector<std::size_t> order;
  if (!t.columns.empty()) order.push_back(0);
  for (const std::string& f : first)
    for (std::size_t i = 1; i < t.columns.size(); ++i)
      if (t.columns[i].name == f) order.push_back(i);
  for (std::size_t i = 1; i < t.columns.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  std::string out = "<div class=\"table-wrap\"><table><thead><tr>";
  for (std::size_t i : order) {
    const Column& c = t.columns[i];
    std::string title = c.title.empty() ? c.name : c.title;
    const std::string unit = column_unit(t, c);
    if (!unit.empty() && title.find(unit) == std::string::npos) title += " (" + unit + ")";
    out += "<th title=\"" + escape_html(c.name) + "\">" + escape_html(title) + "</th>";
  }
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i : order) {
      const Cell& c = row[i];
      const bool number = std::holds_alternative<std::int64_t>(c) || std::holds_alternative<double>(c);
      out += number ? "<td class=\"num\">" : "<td>";
      out += escape_html(t.columns[i].symbol ? short_symbol(cell_text(c), 90) : cell_text(c)) + "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table></div>";
  for (const std::string& n : t.notes) out += "<p class=\"note\">" + escape_html(n) + "</p>";
  return out;
}

namespace {

// The unit drawn as "main": the spec itself, or the first unit of its (possibly nested) layers.
nlohmann::json* main_unit(nlohmann::json& spec) {
  nlohmann::json* unit = &spec;
  while (unit->contains("layer") && (*unit)["layer"].is_array() && !(*unit)["layer"].empty())
    unit = &(*unit)["layer"][0];
  return unit->contains("mark") ? unit : nullptr;
}

}  // namespace

// Marks the main unit of `spec` drawn from its data: the rows whose quantitative encoded fields are all numbers
// (Vega-Lite drops the others from continuous scales), or -1 when it aggregates or transforms them first.
long expected_marks(nlohmann::json& spec) {
  nlohmann::json* unit = main_unit(spec);
  if (unit == nullptr) return -1;
  (*unit)["name"] = "main";
  if (unit->contains("transform") || spec.contains("transform")) return -1;
  const nlohmann::json* data =
      unit->contains("data") ? &(*unit)["data"] : (spec.contains("data") ? &spec["data"] : nullptr);
  if (data == nullptr || !data->contains("values")) return -1;
  std::vector<std::string> fields;
  if (unit->contains("encoding")) {
    for (const auto& [channel, enc] : (*unit)["encoding"].items()) {
      if (!enc.is_object()) continue;
      if (enc.contains("aggregate") || enc.contains("bin")) return -1;
      if (enc.value("type", "") == "quantitative" && enc.contains("field") && enc["field"].is_string())
        fields.push_back(enc["field"].get<std::string>());
    }
  }
  long n = 0;
  for (const auto& row : (*data)["values"]) {
    bool ok = true;
    for (const auto& f : fields) ok = ok && row.contains(f) && row[f].is_number();
    n += ok ? 1 : 0;
  }
  return n;
}

std::string chart_figure(const ReportChart& c) {
  return "<figure><figcaption>" + escape_html(c.title) + "</figcaption><div class=\"chart\" id=\"" + c.element_id +
         "\"></div></figure>";
}

}  // namespace report_detail

namespace {

using report_detail::chart_figure;
using report_detail::escape_html;
using report_detail::expected_marks;
using report_detail::html_table;
using report_detail::json_for_script;

std::string evaluation_label(const EvaluationRecord& r) {
  return "#" + std::to_string(r.id) + " " + r.model_name + " " + r.framework_name + " " + r.device;
}

// One histogram of a scenario run's per-query latencies (ms), at most `max_values` of them, evenly sampled.
ReportChart latency_histogram(const EvaluationRecord& r, std::size_t run_index, std::size_t max_values,
                              const std::string& element_id) {
  const RunRecord& run = r.runs[run_index];
  nlohmann::json values = nlohmann::json::array();
  const std::size_t n = run.predict_latency_ns.size();
  const std::size_t step = std::max<std::size_t>(1, (n + max_values - 1) / std::max<std::size_t>(1, max_values));
  for (std::size_t i = 0; i < n; i += step) values.push_back({{"latency_ms", run.predict_latency_ns[i] / 1e6}});
  ReportChart c;
  c.element_id = element_id;
  c.title = r.scenario + " run " + std::to_string(run_index + 1) + ": query latency distribution (batch size " +
            std::to_string(run.batch_size) + ", " + std::to_string(n) + " queries)";
  c.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"width", 560},
      {"height", 220},
      {"data", {{"values", values}}},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"x",
         {{"field", "latency_ms"}, {"type", "quantitative"}, {"bin", {{"maxbins", 60}}}, {"title", "latency (ms)"}}},
        {"y", {{"aggregate", "count"}, {"type", "quantitative"}, {"title", "queries"}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

std::optional<ReportChart> accuracy_chart(const EvaluationRecord& r, const std::string& element_id) {
  if (!r.settings.contains("accuracy") || !r.settings["accuracy"].is_object()) return std::nullopt;
  const auto& a = r.settings["accuracy"];
  nlohmann::json values = nlohmann::json::array();
  if (a.contains("top1_by_batch_size") && a["top1_by_batch_size"].is_object())
    for (const auto& [b, v] : a["top1_by_batch_size"].items())
      values.push_back({{"batch_size", std::stoi(b)}, {"top1_percent", v}});
  if (values.empty()) return std::nullopt;
  ReportChart c;
  c.element_id = element_id;
  c.title = "Accuracy on " + a.value("dataset", std::string("?")) + ": top-1 by batch size";
  c.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
            {"width", 360},
            {"height", 200},
            {"data", {{"values", values}}},
            {"mark", {{"type", "bar"}, {"tooltip", true}}},
            {"encoding",
             {{"x", {{"field", "batch_size"}, {"type", "ordinal"}, {"title", "batch size"}}},
              {"y",
               {{"field", "top1_percent"},
                {"type", "quantitative"},
                {"title", "top-1 (%)"},
                {"scale", {{"domain", {0, 100}}}}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

// Latency and throughput against batch size for every evaluation compared (A1 of each).
std::optional<ReportChart> comparison_chart(const std::vector<ReportEvaluation>& evaluations,
                                            const std::string& element_id) {
  nlohmann::json values = nlohmann::json::array();
  for (const ReportEvaluation& e : evaluations) {
    if (e.record.scenario != "batch-sweep") continue;
    const Table a1 = a1_model_information(e.record);
    const int b = column_index(a1, "batch_size"), l = column_index(a1, "latency_trimmed_mean_ms");
    if (b < 0 || l < 0) continue;
    for (const auto& row : a1.rows) {
      const Cell& bc = row[static_cast<std::size_t>(b)];
      const Cell& lc = row[static_cast<std::size_t>(l)];
      if (!std::holds_alternative<std::int64_t>(bc) || !std::holds_alternative<double>(lc)) continue;
      values.push_back({{"evaluation", evaluation_label(e.record)},
                        {"batch_size", std::get<std::int64_t>(bc)},
                        {"latency_trimmed_mean_ms", std::get<double>(lc)}});
    }
  }
  if (values.empty()) return std::nullopt;
  ReportChart c;
  c.element_id = element_id;
  c.title = "Predict latency against batch size (A1 of each evaluation)";
  c.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"width", 560},
      {"height", 260},
      {"data", {{"values", values}}},
      {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
      {"encoding",
       {{"x", {{"field", "batch_size"}, {"type", "ordinal"}, {"title", "batch size"}, {"axis", {{"labelAngle", 0}}}}},
        {"y", {{"field", "latency_trimmed_mean_ms"}, {"type", "quantitative"}, {"title", "trimmed-mean latency (ms)"}}},
        {"color", {{"field", "evaluation"}, {"type", "nominal"}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

// The deepest run of the smallest batch size: the one whose timeline shows the most levels.
const RunRecord* timeline_run(const EvaluationRecord& r) {
  const RunRecord* best = nullptr;
  for (const RunRecord& run : r.runs) {
    if (run.trace.spans.empty()) continue;
    if (best == nullptr || run.batch_size < best->batch_size ||
        (run.batch_size == best->batch_size && run.trace_level > best->trace_level))
      best = &run;
  }
  return best;
}

// --- Outputs of task models (settings["sample_outputs"] entries with a "task") ---

constexpr std::size_t kMaxOutputInputs = 4;  // inputs drawn per evaluation
constexpr long kMaxMaskCells = 64;           // cells per side of a drawn mask at most
constexpr double kOutputPlotSize = 320;      // the longer side of an output plot, in screen pixels

// The model input's [H, W] a detection sample names (its "input_size", written by run_evaluation), else nullopt.
std::optional<std::pair<double, double>> sample_input_size(const nlohmann::json& sample) {
  const auto it = sample.find("input_size");
  if (it == sample.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number())
    return std::nullopt;
  const double h = (*it)[0].get<double>(), w = (*it)[1].get<double>();
  if (!(h > 0) || !(w > 0)) return std::nullopt;
  return std::make_pair(h, w);
}

double json_number(const nlohmann::json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string class_label(const nlohmann::json& item) {
  std::string label = item.value("label", std::string());
  if (label.empty()) label = "class " + std::to_string(static_cast<long long>(json_number(item, "class", 0)));
  return label;
}

// Plot width and height (screen pixels) for an image of h x w pixels: the longer side kOutputPlotSize.
std::pair<long, long> plot_size(double h, double w) {
  const double scale = kOutputPlotSize / std::max(h, w);
  return {std::max(1L, std::lround(h * scale)), std::max(1L, std::lround(w * scale))};
}

// Vega-Lite scales of an image's pixels: x 0..w, y 0..h downwards, exactly (no nice rounding, no zero padding).
std::pair<nlohmann::json, nlohmann::json> pixel_scales(double h, double w) {
  return {{{"domain", {0, w}}, {"nice", false}, {"zero", false}},
          {{"domain", {0, h}}, {"nice", false}, {"zero", false}, {"reverse", true}}};
}

std::optional<ReportChart> detection_chart(const nlohmann::json& sample, const std::string& element_id) {
  const auto size = sample_input_size(sample);
  nlohmann::json values = nlohmann::json::array();
  double largest = 0;
  for (const auto& d : sample.value("detections", nlohmann::json::array())) {
    if (!d.is_object() || !d.contains("box") || !d["box"].is_array() || d["box"].size() != 4) continue;
    const auto& b = d["box"];
    bool numbers = true;
    for (const auto& v : b) numbers = numbers && v.is_number();
    if (!numbers) continue;
    const double x1 = b[0].get<double>(), y1 = b[1].get<double>(), x2 = b[2].get<double>(), y2 = b[3].get<double>();
    largest = std::max({largest, x1, y1, x2, y2});
    char box[96];
    std::snprintf(box, sizeof box, "%.1f, %.1f, %.1f, %.1f", x1, y1, x2, y2);
    values.push_back({{"label", class_label(d)},
                      {"score", json_number(d, "score", 0)},
                      {"x1", x1},
                      {"y1", y1},
                      {"x2", x2},
                      {"y2", y2},
                      {"box", box}});
  }
  if (values.empty()) return std::nullopt;
  // The model input's size the sample names, else the smallest square holding every box (at least 320).
  const double fallback = std::ceil(std::max(320.0, largest));
  const double h = size ? size->first : fallback, w = size ? size->second : fallback;
  const auto [ph, pw] = plot_size(h, w);
  const long drawn = static_cast<long>(values.size());
  const auto count = sample.contains("detection_count") && sample["detection_count"].is_number_integer()
                         ? sample["detection_count"].get<long long>()
                         : static_cast<long long>(drawn);
  ReportChart c;
  c.element_id = element_id;
  c.title = sample.value("input", std::string("?")) + ": " + std::to_string(count) + " detections (" +
            std::to_string(drawn) + " drawn), boxes in the model input's " + std::to_string(std::lround(w)) + "x" +
            std::to_string(std::lround(h)) + " pixels";
  const auto [x_scale, y_scale] = pixel_scales(h, w);
  c.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
            {"width", pw},
            {"height", ph},
            {"data", {{"values", values}}},
            {"layer",
             {{{"mark", {{"type", "rect"}, {"filled", false}, {"strokeWidth", 1.5}, {"clip", true}, {"tooltip", true}}},
               {"encoding",
                {{"x", {{"field", "x1"}, {"type", "quantitative"}, {"scale", x_scale}, {"title", "x (pixels)"}}},
                 {"x2", {{"field", "x2"}}},
                 {"y", {{"field", "y1"}, {"type", "quantitative"}, {"scale", y_scale}, {"title", "y (pixels)"}}},
                 {"y2", {{"field", "y2"}}},
                 {"color", {{"field", "label"}, {"type", "nominal"}, {"title", "label"}}},
                 {"tooltip",
                  {{{"field", "label"}, {"type", "nominal"}},
                   {{"field", "score"}, {"type", "quantitative"}, {"format", ".4f"}},
                   {{"field", "box"}, {"type", "nominal"}, {"title", "box (x1, y1, x2, y2)"}}}}}}},
              {{"mark",
                {{"type", "text"},
                 {"align", "left"},
                 {"baseline", "top"},
                 {"dx", 2},
                 {"dy", 2},
                 {"fontSize", 9},
                 {"clip", true}}},
               {"encoding",
                {{"x", {{"field", "x1"}, {"type", "quantitative"}}},
                 {"y", {{"field", "y1"}, {"type", "quantitative"}}},
                 {"text", {{"field", "label"}, {"type", "nominal"}}},
                 {"color", {{"field", "label"}, {"type", "nominal"}}}}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

// The mask of a segmentation sample downsampled to at most kMaxMaskCells per side; a note instead when it
// cannot be drawn (no runs kept, or runs that do not cover the mask).
std::optional<ReportChart> segmentation_chart(const nlohmann::json& sample, const std::string& element_id,
                                              std::string& note) {
  const std::string input = sample.value("input", std::string("?"));
  const nlohmann::json mask = sample.value("mask", nlohmann::json::object());
  const long long h = mask.is_object() && mask.contains("height") && mask["height"].is_number_integer()
                          ? mask["height"].get<long long>()
                          : 0;
  const long long w = mask.is_object() && mask.contains("width") && mask["width"].is_number_integer()
                          ? mask["width"].get<long long>()
                          : 0;
  const std::string size = std::to_string(h) + "x" + std::to_string(w);
  if (h <= 0 || w <= 0) {
    note = input + ": the mask has no size; not drawn";
    return std::nullopt;
  }
  if (!mask.contains("runs") || !mask["runs"].is_array()) {
    note = input + ": the " + size + " mask's " +
           std::to_string(static_cast<long long>(json_number(mask, "run_count", 0))) +
           " runs were too many to keep with the evaluation; not drawn";
    return std::nullopt;
  }
  const auto& runs = mask["runs"];
  // Class of each run, and where each run ends (row-major pixel index, exclusive).
  std::vector<long long> run_class, run_end;
  long long total = 0;
  bool valid = runs.size() % 2 == 0;
  for (std::size_t i = 0; valid && i + 1 < runs.size(); i += 2) {
    valid = runs[i].is_number_integer() && runs[i + 1].is_number_integer() && runs[i + 1].get<long long>() >= 0;
    if (!valid) break;
    total += runs[i + 1].get<long long>();
    run_class.push_back(runs[i].get<long long>());
    run_end.push_back(total);
  }
  if (!valid || total != h * w) {
    note = input + ": the " + size + " mask's runs do not cover its " + std::to_string(h * w) + " pixels; not drawn";
    return std::nullopt;
  }
  // Labels of the classes, from the sample's classes.
  std::unordered_map<long long, std::string> labels;
  for (const auto& c : sample.value("classes", nlohmann::json::array()))
    if (c.is_object() && c.contains("class") && c["class"].is_number_integer())
      labels[c["class"].get<long long>()] = class_label(c);
  auto label_of = [&](long long cls) {
    const auto it = labels.find(cls);
    return it != labels.end() ? it->second : "class " + std::to_string(cls);
  };
  const long long ch = (h + kMaxMaskCells - 1) / kMaxMaskCells, cw = (w + kMaxMaskCells - 1) / kMaxMaskCells;
  nlohmann::json values = nlohmann::json::array();
  std::size_t run = 0;
  for (long long y0 = 0; y0 < h; y0 += ch) {
    const long long y1 = std::min(h, y0 + ch), py = y0 + (y1 - y0) / 2;
    for (long long x0 = 0; x0 < w; x0 += cw) {
      const long long x1 = std::min(w, x0 + cw), px = x0 + (x1 - x0) / 2;
      const long long pixel = py * w + px;  // increases cell by cell: the run index only moves forward
      while (run_end[run] <= pixel) ++run;
      const long long cls = run_class[run];
      values.push_back({{"x", x0}, {"x2", x1}, {"y", y0}, {"y2", y1}, {"class", cls}, {"label", label_of(cls)}});
    }
  }
  const long long rows = (h + ch - 1) / ch, cols = (w + cw - 1) / cw;
  const auto [ph, pw] = plot_size(static_cast<double>(h), static_cast<double>(w));
  ReportChart c;
  c.element_id = element_id;
  c.title = input + ": segmentation mask " + size + " (" + std::to_string(run_class.size()) + " runs), drawn as " +
            std::to_string(rows) + "x" + std::to_string(cols) + " cells of " + std::to_string(ch) + "x" +
            std::to_string(cw) + " pixels, each the class of its centre pixel";
  const auto [x_scale, y_scale] = pixel_scales(h, w);
  c.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"width", pw},
      {"height", ph},
      {"data", {{"values", values}}},
      // Each cell reaches half a screen pixel into its right and lower neighbours: no anti-aliasing seams.
      {"mark", {{"type", "rect"}, {"x2Offset", 0.5}, {"y2Offset", 0.5}, {"clip", true}, {"tooltip", true}}},
      {"encoding",
       {{"x",
         {{"field", "x"},
          {"type", "quantitative"},
          {"scale", x_scale},
          {"axis", {{"grid", false}}},
          {"title", "x (pixels)"}}},
        {"x2", {{"field", "x2"}}},
        {"y",
         {{"field", "y"},
          {"type", "quantitative"},
          {"scale", y_scale},
          {"axis", {{"grid", false}}},
          {"title", "y (pixels)"}}},
        {"y2", {{"field", "y2"}}},
        {"color", {{"field", "label"}, {"type", "nominal"}, {"title", "class"}}},
        {"tooltip", {{{"field", "label"}, {"type", "nominal"}}, {{"field", "class"}, {"type", "quantitative"}}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

std::optional<ReportChart> text_classification_chart(const nlohmann::json& sample, const std::string& element_id) {
  nlohmann::json values = nlohmann::json::array();
  for (const auto& c : sample.value("classes", nlohmann::json::array())) {
    if (!c.is_object() || !c.contains("value") || !c["value"].is_number()) continue;
    values.push_back(
        {{"label", class_label(c)}, {"class", json_number(c, "class", 0)}, {"value", c["value"].get<double>()}});
  }
  if (values.empty()) return std::nullopt;
  ReportChart c;
  c.element_id = element_id;
  c.title = sample.value("input", std::string("?")) + ": text classification, top " + std::to_string(values.size()) +
            " classes";
  c.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"width", 360},
      {"data", {{"values", values}}},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"x",
         {{"field", "value"}, {"type", "quantitative"}, {"scale", {{"domain", {0, 1}}}}, {"title", "probability"}}},
        {"y", {{"field", "label"}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}}},
        {"tooltip",
         {{{"field", "label"}, {"type", "nominal"}},
          {{"field", "class"}, {"type", "quantitative"}},
          {{"field", "value"}, {"type", "quantitative"}, {"format", ".4f"}, {"title", "probability"}}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

// The "Outputs" subsection: the task samples of the smallest batch size (at most kMaxOutputInputs inputs), one
// chart each; "" when the evaluation has no task samples.
std::string outputs_section(const EvaluationRecord& r, const std::function<std::string()>& next_id,
                            std::vector<ReportChart>& charts) {
  const auto it = r.settings.find("sample_outputs");
  if (it == r.settings.end() || !it->is_object()) return "";
  const nlohmann::json* samples = nullptr;
  long long smallest = 0;
  for (const auto& [key, value] : it->items()) {
    if (key.empty() || key.size() > 9 ||
        !std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;  // generation samples are keyed "<batch size>/<run>"
    if (!value.is_array()) continue;
    const bool tasks = std::any_of(value.begin(), value.end(), [](const nlohmann::json& s) {
      return s.is_object() && s.contains("task") && s["task"].is_string();
    });
    const long long b = std::stoll(key);
    if (tasks && (samples == nullptr || b < smallest)) {
      samples = &value;
      smallest = b;
    }
  }
  if (samples == nullptr) return "";
  std::string html =
      "<h3>Outputs</h3><p class=\"note\">the model's outputs for the first inputs of the last measured "
      "batch of batch size " +
      std::to_string(smallest) + "</p>";
  std::size_t drawn = 0;
  for (const auto& s : *samples) {
    if (!s.is_object() || !s.contains("task") || !s["task"].is_string()) continue;
    if (drawn++ >= kMaxOutputInputs) break;
    const std::string task = s["task"].get<std::string>();
    std::optional<ReportChart> c;
    std::string note;
    if (task == "detection") {
      c = detection_chart(s, next_id());
      if (!c) note = s.value("input", std::string("?")) + ": no detection";
    } else if (task == "segmentation") {
      c = segmentation_chart(s, next_id(), note);
    } else if (task == "text_classification") {
      c = text_classification_chart(s, next_id());
      if (!c) note = s.value("input", std::string("?")) + ": no class";
    } else {
      note = s.value("input", std::string("?")) + ": task " + task + " is not drawn";
    }
    if (c) {
      html += "<figure><figcaption>" + escape_html(c->title) + "</figcaption><div class=\"chart\" id=\"" +
              c->element_id + "\"></div></figure>";
      charts.push_back(std::move(*c));
    }
    if (!note.empty()) html += "<p class=\"note\">" + escape_html(note) + "</p>";
  }
  return html;
}

}  // namespace

bool report_assets_available() { return report_assets::available(); }

namespace {

// Every analysis of the evaluation (the generation ones only on a generation evaluation, the serving ones only on
// a serving evaluation); a note on failure.
std::vector<Table> all_analyses(const ReportEvaluation& e, std::string& html) {
  try {
    std::vector<std::string> ids = analysis_ids();
    if (!is_generation_evaluation(e.record))
      std::erase_if(ids, [](const std::string& id) {
        const auto& g = generation_analysis_ids();
        return std::find(g.begin(), g.end(), id) != g.end();
      });
    if (!is_serving_evaluation(e.record))
      for (const AnalysisSpec& spec : analysis_registry())
        if (spec.family == AnalysisFamily::kServing) std::erase(ids, spec.id);
    return run_analyses(e.record, ids, e.options);
  } catch (const std::exception& ex) {
    html += "<p class=\"note\">analyses failed: " + escape_html(ex.what()) + "</p>";
    return {};
  }
}

// The analyses with rows, each a chart and its table; those without rows in one line per reason (their first
// note: usually the deeper run they need), not a section each.
std::string analyses_html(const std::vector<Table>& tables, const std::function<std::string()>& next_id,
                          std::vector<ReportChart>& charts) {
  std::string html;
  std::vector<std::pair<std::string, std::vector<std::string>>> empty;  // reason → ids, in order
  for (const Table& t : tables) {
    if (t.rows.empty()) {
      const std::string reason = t.notes.empty() ? "no rows" : t.notes.front();
      auto it = std::find_if(empty.begin(), empty.end(), [&](const auto& p) { return p.first == reason; });
      if (it == empty.end()) it = empty.insert(empty.end(), {reason, {}});
      if (std::find(it->second.begin(), it->second.end(), t.id) == it->second.end()) it->second.push_back(t.id);
      continue;
    }
    html += "<article class=\"analysis\" id=\"" + escape_html(next_id() + "-" + t.id) + "\"><h4>" +
            escape_html(t.id + " " + t.title) + "</h4>";
    if (const AnalysisSpec* spec = spec_of(t); spec != nullptr && !spec->meaning.empty())
      html += "<p class=\"meaning\">" + escape_html(spec->meaning) + "</p>";
    nlohmann::json spec = vega_lite_chart(t);
    if (!spec.is_null()) {
      ReportChart c;
      c.element_id = next_id();
      c.title = t.id + " " + t.title;
      c.spec = std::move(spec);
      c.expected_marks = expected_marks(c.spec);
      // The article's heading names the analysis already; the chart carries its own title.
      html += "<div class=\"chart\" id=\"" + c.element_id + "\"></div>";
      charts.push_back(std::move(c));
    }
    html += "<details><summary>table (" + std::to_string(t.rows.size()) + " rows)</summary>" + html_table(t) +
            "</details></article>";
  }
  if (!empty.empty()) {
    html += "<div class=\"not-shown\"><h4>Not in this evaluation</h4><ul>";
    for (const auto& [reason, ids] : empty) {
      std::string list;
      for (const std::string& id : ids) list += (list.empty() ? "" : ", ") + id;
      html += "<li><b>" + escape_html(list) + "</b>: " + escape_html(reason) + "</li>";
    }
    html += "</ul></div>";
  }
  return html;
}

std::string facts_html(const EvaluationRecord& r) {
  std::string html = "<dl class=\"facts\">";
  auto fact = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) html += "<dt>" + escape_html(k) + "</dt><dd>" + escape_html(v) + "</dd>";
  };
  fact("framework", r.framework_name + " " + r.framework_version);
  fact("device", r.device);
  const MachineIdentity machine = evaluation_machine(r);
  fact("GPU", machine.gpu_name);
  fact("host", machine.hostname);
  fact("scenario", r.scenario);
  std::string batches;
  for (int b : r.batch_sizes) batches += (batches.empty() ? "" : ", ") + std::to_string(b);
  fact("batch sizes", batches);
  fact("trace level", std::string(to_string(r.trace_level)) + (r.leveled ? " (leveled: one run per level)" : ""));
  fact("status", r.status);
  fact("created", r.created_at);
  fact("uuid", r.uuid);
  return html + "</dl>";
}

// Appends the charts and HTML of one evaluation to `charts` and returns its section: facts, the headline, the
// summary tables, then what the workload that made it has to show, the analyses, the timeline and the outputs.
std::string evaluation_section(const ReportEvaluation& e, std::size_t index, const ReportOptions& options,
                               std::vector<ReportChart>& charts) {
  const EvaluationRecord& r = e.record;
  const std::string prefix = "e" + std::to_string(index) + "-";
  std::size_t n = 0;
  const std::function<std::string()> next_id = [&] { return prefix + "c" + std::to_string(n++); };
  std::string html = "<section class=\"evaluation\" id=\"evaluation-" + std::to_string(r.id) + "\"><h2>" +
                     escape_html("Evaluation " + std::to_string(r.id) + ": " + r.model_name + " " + r.model_version) +
                     "</h2>" + facts_html(r);
  std::string failures;
  const std::vector<Table> tables = all_analyses(e, failures);
  html += report_detail::headline_html(r, tables) + failures;

  if (!r.runs.empty()) {  // a serving evaluation without a server window has none
    html += "<details class=\"summary\"><summary>Summary tables: runs, stability, overheads</summary>";
    for (const Table& t : evaluation_summary(r)) html += "<h4>" + escape_html(t.title) + "</h4>" + html_table(t);
    html += "</details>";
  }

  if (auto acc = accuracy_chart(r, next_id())) {
    html += "<h3>Accuracy</h3>" + chart_figure(*acc);
    charts.push_back(std::move(*acc));
  }
  const RecordKind kind = r.kind();
  if (kind == RecordKind::kGeneration) {
    html += report_detail::generation_section(r, options, next_id, charts);
  } else if (kind == RecordKind::kServing) {
    html += report_detail::serving_section(r, tables, options, next_id, charts);
  } else if (kind == RecordKind::kScenario) {
    html += "<h3>Latency distributions</h3>";
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
      if (r.runs[i].predict_latency_ns.empty()) continue;
      ReportChart c = latency_histogram(r, i, options.max_histogram_values, next_id());
      html += chart_figure(c);
      charts.push_back(std::move(c));
    }
  }
  html += "<h3>Analyses</h3>" + analyses_html(tables, next_id, charts);
  if (kind != RecordKind::kGeneration) {
    if (const RunRecord* run = timeline_run(r)) {
      if (auto tl = timeline_chart(*run, next_id(), options.max_timeline_spans)) {
        html += "<h3>Trace timeline</h3>" + chart_figure(*tl);
        charts.push_back(std::move(*tl));
      }
    }
  }
  html += outputs_section(r, next_id, charts);
  html += "</section>";
  return html;
}

std::string comparison_section(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options,
                               std::vector<ReportChart>& charts) {
  std::vector<EvaluationRecord> records;
  for (const auto& e : evaluations) records.push_back(e.record);
  std::string html = "<section class=\"comparison\" id=\"comparison\"><h2>Comparison</h2>";
  std::vector<Table> tables;
  try {
    tables = compare_evaluations(records, options.compare);
  } catch (const std::exception& ex) {
    html += "<p class=\"note\">comparison failed: " + escape_html(ex.what()) + "</p>";
  }
  const std::vector<std::string> sentences = report_detail::comparison_sentences(tables);
  if (!sentences.empty()) {
    html += "<ul class=\"verdicts\">";
    for (const std::string& s : sentences) html += "<li>" + escape_html(s) + "</li>";
    html += "</ul>";
  }
  if (auto c = comparison_chart(evaluations, "cmp-c0")) {
    html += chart_figure(*c);
    charts.push_back(std::move(*c));
  }
  std::string empty;  // tables without rows: one line each, their first note saying why
  for (const Table& t : tables) {
    if (t.rows.empty()) {
      empty += "<li><b>" + escape_html(t.title) +
               "</b>: " + escape_html(t.notes.empty() ? std::string("no rows") : t.notes.front()) + "</li>";
      continue;
    }
    // The ratios first: they are what a comparison is read for.
    std::vector<std::string> ratios;
    for (const Column& c : t.columns)
      if (c.name.ends_with("_ratio") || c.name == "median_diff_ms" || c.name == "p_value") ratios.push_back(c.name);
    html += "<h4>" + escape_html(t.title) + "</h4>" + html_table(t, ratios);
  }
  if (!empty.empty()) html += "<div class=\"not-shown\"><h4>Not in this comparison</h4><ul>" + empty + "</ul></div>";
  return html + "</section>";
}

struct Page {
  std::string body;
  std::vector<ReportChart> charts;
};

Page build_page(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options) {
  if (evaluations.empty()) throw std::invalid_argument("report: no evaluation given");
  Page p;
  if (evaluations.size() >= 2) p.body += comparison_section(evaluations, options, p.charts);
  for (std::size_t i = 0; i < evaluations.size(); ++i)
    p.body += evaluation_section(evaluations[i], i, options, p.charts);
  return p;
}

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 2em 3em; color: #1d1d1f; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1em; }
nav a { margin-right: 1em; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dl.facts dt { font-weight: 600; }
figure { margin: 1em 0; }
figcaption { font-weight: 600; margin-bottom: 0.3em; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.4em 0; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { color: #555; font-size: 12px; margin: 0.2em 0; }
article.analysis { border-top: 1px solid #eee; padding-top: 0.5em; }
#xsp-status { color: #555; }
.headline { display: flex; flex-wrap: wrap; gap: 0.6em; margin: 0.8em 0 1.2em; }
.headline .card { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.5em 0.8em; min-width: 14em;
  max-width: 28em; background: #f6f8fa; }
.headline .label { font-size: 12px; color: #555; }
.headline .value { font-size: 20px; font-weight: 600; overflow-wrap: anywhere; }
.headline .value.long { font-size: 13px; font-family: ui-monospace, monospace; }
.headline .detail { font-size: 12px; color: #333; }
p.meaning { color: #444; margin: 0.1em 0 0.4em; }
.not-shown { border-top: 1px solid #eee; margin-top: 1em; color: #444; }
.not-shown li { margin: 0.2em 0; }
ul.verdicts { font-size: 15px; }
details.summary > summary { font-weight: 600; cursor: pointer; margin: 0.6em 0; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; }
.row figure { max-width: 430px; }
.table-wrap { max-width: 100%; max-height: 32em; overflow: auto; }
thead th { position: sticky; top: 0; background: #fff; }
button.perfetto { margin: 0.3em 0; }
.vega-bindings { margin: 0.3em 0; }
)css";

// Renders every chart with vega-embed (SVG), then records per chart the marks drawn by the unit named "main"
// (window.xspReport), so that a browser test can count them without knowing Vega's internals.
constexpr const char* kBoot = R"js(
(function () {
  const charts = JSON.parse(document.getElementById('xsp-charts').textContent);
  const report = { total: charts.length, rendered: 0, errors: [], marks: {}, expected: {} };
  window.xspReport = report;
  function countMain(node) {
    let n = 0;
    (function walk(item) {
      if (!item) return;
      if (item.marktype && item.name === 'main_marks') n += (item.items || []).length;
      const children = item.items || [];
      for (const c of children) walk(c);
    })(node);
    return n;
  }
  // A timeline's spans as a Chrome trace JSON file (Trace Event Format, "X" events in µs), which Perfetto's UI
  // (ui.perfetto.dev) and chrome://tracing open: one thread per lane.
  function addTraceDownload(c) {
    const button = document.createElement('button');
    button.className = 'perfetto';
    button.textContent = 'Save these spans as a Chrome trace JSON (open it in ui.perfetto.dev)';
    button.addEventListener('click', function () {
      const lanes = {};
      const events = c.spec.data.values.map(function (v) {
        if (!(v.lane in lanes)) lanes[v.lane] = Object.keys(lanes).length + 1;
        return { name: v.name, cat: v.level, ph: 'X', pid: 1, tid: lanes[v.lane],
                 ts: v.start_ms * 1000, dur: (v.end_ms - v.start_ms) * 1000 };
      });
      for (const [lane, tid] of Object.entries(lanes))
        events.push({ name: 'thread_name', ph: 'M', pid: 1, tid: tid, args: { name: lane } });
      const blob = new Blob([JSON.stringify({ traceEvents: events, displayTimeUnit: 'ns' })],
                            { type: 'application/json' });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = c.id + '.trace.json';
      a.click();
    });
    document.getElementById(c.id).after(button);
  }
  const status = document.getElementById('xsp-status');
  const jobs = charts.map(function (c) {
    report.expected[c.id] = c.expected_marks;
    return vegaEmbed('#' + c.id, c.spec, { renderer: 'svg', actions: false })
      .then(function (result) {
        report.marks[c.id] = countMain(result.view.scenegraph().root);
        report.rendered += 1;
        if (c.timeline) addTraceDownload(c);
      })
      .catch(function (e) { report.errors.push(c.id + ': ' + e); });
  });
  Promise.all(jobs).then(function () {
    report.done = true;
    status.textContent = report.rendered + ' of ' + report.total + ' charts rendered' +
      (report.errors.length ? '; errors: ' + report.errors.join('; ') : '');
  });
})();
)js";

}  // namespace

std::vector<ReportChart> report_charts(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options) {
  return build_page(evaluations, options).charts;
}

std::string render_report(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options,
                          std::size_t* chart_count) {
  if (!report_assets_available())
    throw std::runtime_error(
        "this build has no report assets: Vega, Vega-Lite and vega-embed were not found in "
        "tools/vega/node_modules at configure time (run scripts/install-deps.sh, then rebuild)");
  Page page = build_page(evaluations, options);
  if (chart_count) *chart_count = page.charts.size();
  std::string title = options.title;
  if (title.empty()) {
    title = "XSP report:";
    for (const auto& e : evaluations) title += " " + evaluation_label(e.record);
  }
  nlohmann::json charts = nlohmann::json::array();
  for (const ReportChart& c : page.charts)
    charts.push_back({{"id", c.element_id},
                      {"title", c.title},
                      {"spec", c.spec},
                      {"expected_marks", c.expected_marks},
                      {"timeline", c.timeline}});
  std::string nav;
  for (const auto& [text, href] : options.links)
    nav += "<a href=\"" + escape_html(href) + "\">" + escape_html(text) + "</a>";
  if (evaluations.size() >= 2) nav += "<a href=\"#comparison\">comparison</a>";
  for (const auto& e : evaluations)
    nav += "<a href=\"#evaluation-" + std::to_string(e.record.id) + "\">" + escape_html(evaluation_label(e.record)) +
           "</a>";

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + escape_html(title) +
                     "</title>\n<!--\n" + std::string(report_assets::licences()) + "\n-->\n<style>" + kStyle +
                     "</style>\n";
  // The libraries are inlined, never linked: the file must open offline.
  html += "<script>" + std::string(report_assets::vega()) + "</script>\n";
  html += "<script>" + std::string(report_assets::vega_lite()) + "</script>\n";
  html += "<script>" + std::string(report_assets::vega_embed()) + "</script>\n";
  html += "</head><body><header><h1>" + escape_html(title) + "</h1><nav>" + nav +
          "</nav><p id=\"xsp-status\">rendering charts…</p></header>\n";
  html += page.body;
  html += "\n<script id=\"xsp-charts\" type=\"application/json\">" + json_for_script(charts) + "</script>\n";
  html += "<script>" + std::string(kBoot) + "</script>\n</body></html>\n";
  return html;
}

}  // namespace xsp
