// The HTML report: see include/xsp/report/report.h.
#include "xsp/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "report_assets.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/roofline.h"
#include "xsp/analysis/summary.h"

namespace xsp {
namespace {

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

std::string html_table(const Table& t) {
  std::string out = "<div class=\"table-wrap\"><table><thead><tr>";
  for (const Column& c : t.columns)
    out += "<th title=\"" + escape_html(c.name) + "\">" + escape_html(c.title.empty() ? c.name : c.title) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const Cell& c : row) {
      const bool number = std::holds_alternative<std::int64_t>(c) || std::holds_alternative<double>(c);
      out += number ? "<td class=\"num\">" : "<td>";
      out += escape_html(cell_text(c)) + "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table></div>";
  for (const std::string& n : t.notes) out += "<p class=\"note\">" + escape_html(n) + "</p>";
  return out;
}

// The unit drawn as "main": the spec itself, or the first unit of its (possibly nested) layers.
nlohmann::json* main_unit(nlohmann::json& spec) {
  nlohmann::json* unit = &spec;
  while (unit->contains("layer") && (*unit)["layer"].is_array() && !(*unit)["layer"].empty())
    unit = &(*unit)["layer"][0];
  return unit->contains("mark") ? unit : nullptr;
}

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
       {{"x",
         {{"field", "batch_size"},
          {"type", "quantitative"},
          {"scale", {{"type", "log"}, {"base", 2}}},
          {"title", "batch size"}}},
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

std::optional<ReportChart> timeline_chart(const RunRecord& run, const std::string& element_id, std::size_t max_spans) {
  const auto& spans = run.trace.spans;
  const Span* predict = nullptr;
  for (const Span& s : spans)
    if (s.level == Level::kModel && s.name == "predict" && (predict == nullptr || s.start_ns > predict->start_ns))
      predict = &s;
  if (predict == nullptr) return std::nullopt;
  std::unordered_map<SpanId, const Span*> by_id;
  by_id.reserve(spans.size());
  for (const Span& s : spans) by_id.emplace(s.id, &s);
  // Descendants of the predict span: a span is in when its parent chain reaches it (memoised, cycles tolerated).
  std::unordered_map<SpanId, bool> under;
  under[predict->id] = true;
  auto is_under = [&](const Span& s) {
    std::vector<SpanId> chain;
    SpanId id = s.id;
    bool result = false;
    for (std::size_t guard = 0; guard <= spans.size(); ++guard) {
      if (auto it = under.find(id); it != under.end()) {
        result = it->second;
        break;
      }
      chain.push_back(id);
      auto p = by_id.find(id);
      if (p == by_id.end() || p->second->parent_id == kNoSpan) break;
      id = p->second->parent_id;
    }
    for (SpanId c : chain) under[c] = result;
    return result;
  };
  std::vector<const Span*> kept;
  for (const Span& s : spans)
    if (is_under(s)) kept.push_back(&s);
  if (kept.size() > max_spans) {
    std::sort(kept.begin(), kept.end(),
              [](const Span* a, const Span* b) { return a->duration_ns() > b->duration_ns(); });
    kept.resize(max_spans);
  }
  std::sort(kept.begin(), kept.end(), [](const Span* a, const Span* b) {
    return a->level != b->level ? a->level < b->level : a->start_ns < b->start_ns;
  });
  nlohmann::json values = nlohmann::json::array();
  for (const Span* s : kept) {
    std::string row = std::string(to_string(s->level));
    if (s->track.is_device()) row += " · " + to_string(s->track);
    values.push_back({{"name", s->name},
                      {"level", std::string(to_string(s->level))},
                      {"row", row},
                      {"start_ms", (s->start_ns - predict->start_ns) / 1e6},
                      {"end_ms", (s->end_ns - predict->start_ns) / 1e6},
                      {"duration_ms", s->duration_ns() / 1e6}});
  }
  ReportChart c;
  c.element_id = element_id;
  c.title = "Timeline of the last measured batch (batch size " + std::to_string(run.batch_size) + ", trace level " +
            std::string(to_string(run.trace_level)) + ", " + std::to_string(kept.size()) +
            " spans); drag to pan, scroll to zoom";
  c.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"width", 900},
      {"data", {{"values", values}}},
      {"params", {{{"name", "zoom"}, {"select", {{"type", "interval"}, {"encodings", {"x"}}}}, {"bind", "scales"}}}},
      {"mark", {{"type", "rect"}, {"tooltip", true}}},
      {"encoding",
       {{"x", {{"field", "start_ms"}, {"type", "quantitative"}, {"title", "time from the batch's predict start (ms)"}}},
        {"x2", {{"field", "end_ms"}}},
        {"y", {{"field", "row"}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}}},
        {"color", {{"field", "level"}, {"type", "nominal"}, {"sort", nullptr}}},
        {"tooltip",
         {{{"field", "name"}, {"type", "nominal"}},
          {{"field", "level"}, {"type", "nominal"}},
          {{"field", "duration_ms"}, {"type", "quantitative"}, {"format", ".4f"}, {"title", "duration (ms)"}}}}}}};
  c.expected_marks = expected_marks(c.spec);
  return c;
}

namespace {

// Appends the charts and HTML of one evaluation to `charts` and returns its section.
std::string evaluation_section(const ReportEvaluation& e, std::size_t index, const ReportOptions& options,
                               std::vector<ReportChart>& charts) {
  const EvaluationRecord& r = e.record;
  const std::string prefix = "e" + std::to_string(index) + "-";
  std::size_t n = 0;
  auto next_id = [&] { return prefix + "c" + std::to_string(n++); };
  auto chart_div = [](const ReportChart& c) {
    return "<figure><figcaption>" + escape_html(c.title) + "</figcaption><div class=\"chart\" id=\"" + c.element_id +
           "\"></div></figure>";
  };
  std::string html = "<section class=\"evaluation\" id=\"evaluation-" + std::to_string(r.id) + "\"><h2>" +
                     escape_html("Evaluation " + std::to_string(r.id) + ": " + r.model_name + " " + r.model_version) +
                     "</h2><dl class=\"facts\">";
  auto fact = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) html += "<dt>" + escape_html(k) + "</dt><dd>" + escape_html(v) + "</dd>";
  };
  fact("framework", r.framework_name + " " + r.framework_version);
  fact("device", r.device);
  const MachineIdentity machine = evaluation_machine(r);
  fact("GPU", machine.gpu_name);
  fact("host", machine.hostname);
  fact("scenario", r.scenario);
  fact("trace level", std::string(to_string(r.trace_level)) + (r.leveled ? " (leveled)" : ""));
  fact("status", r.status);
  fact("created", r.created_at);
  fact("uuid", r.uuid);
  html += "</dl>";

  html += "<h3>Summary</h3>";
  for (const Table& t : evaluation_summary(r)) html += "<h4>" + escape_html(t.title) + "</h4>" + html_table(t);

  if (auto acc = accuracy_chart(r, next_id())) {
    html += "<h3>Accuracy</h3>" + chart_div(*acc);
    charts.push_back(std::move(*acc));
  }

  if (r.scenario != "batch-sweep") {
    html += "<h3>Latency distributions</h3>";
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
      if (r.runs[i].predict_latency_ns.empty()) continue;
      ReportChart c = latency_histogram(r, i, options.max_histogram_values, next_id());
      html += chart_div(c);
      charts.push_back(std::move(c));
    }
  } else {
    html += "<h3>Analyses</h3>";
    std::vector<Table> tables;
    try {
      // Every analysis, the generation ones (G1-G5) only on a generation evaluation.
      std::vector<std::string> ids = analysis_ids();
      if (!is_generation_evaluation(r))
        std::erase_if(ids, [](const std::string& id) {
          const auto& g = generation_analysis_ids();
          return std::find(g.begin(), g.end(), id) != g.end();
        });
      tables = run_analyses(r, ids, e.options);
    } catch (const std::exception& ex) {
      html += "<p class=\"note\">analyses failed: " + escape_html(ex.what()) + "</p>";
    }
    for (const Table& t : tables) {
      html += "<article class=\"analysis\"><h4>" + escape_html(t.id + " " + t.title) + "</h4>";
      if (t.rows.empty()) {
        for (const std::string& note : t.notes) html += "<p class=\"note\">" + escape_html(note) + "</p>";
        html += "</article>";
        continue;
      }
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
  }

  if (const RunRecord* run = timeline_run(r)) {
    if (auto tl = timeline_chart(*run, next_id(), options.max_timeline_spans)) {
      html += "<h3>Trace timeline</h3>" + chart_div(*tl);
      charts.push_back(std::move(*tl));
    }
  }
  // After every existing chart, so that their element ids stay as they were.
  html += outputs_section(r, next_id, charts);
  html += "</section>";
  return html;
}

std::string comparison_section(const std::vector<ReportEvaluation>& evaluations, const ReportOptions& options,
                               std::vector<ReportChart>& charts) {
  std::vector<EvaluationRecord> records;
  for (const auto& e : evaluations) records.push_back(e.record);
  std::string html = "<section class=\"comparison\" id=\"comparison\"><h2>Comparison</h2>";
  if (auto c = comparison_chart(evaluations, "cmp-c0")) {
    html += "<figure><figcaption>" + escape_html(c->title) +
            "</figcaption><div class=\"chart\" id=\"cmp-c0\"></div></figure>";
    charts.push_back(std::move(*c));
  }
  try {
    for (const Table& t : compare_evaluations(records, options.compare))
      html += "<h4>" + escape_html(t.title) + "</h4>" + html_table(t);
  } catch (const std::exception& ex) {
    html += "<p class=\"note\">comparison failed: " + escape_html(ex.what()) + "</p>";
  }
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
  const status = document.getElementById('xsp-status');
  const jobs = charts.map(function (c) {
    report.expected[c.id] = c.expected_marks;
    return vegaEmbed('#' + c.id, c.spec, { renderer: 'svg', actions: false })
      .then(function (result) {
        report.marks[c.id] = countMain(result.view.scenegraph().root);
        report.rendered += 1;
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
    charts.push_back(
        {{"id", c.element_id}, {"title", c.title}, {"spec", c.spec}, {"expected_marks", c.expected_marks}});
  std::string nav;
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
