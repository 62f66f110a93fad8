// xsp analyze ID: analyses of a stored evaluation (SPEC §4), as tables; A9/A14 also as a Vega-Lite roofline.
#include <algorithm>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "common.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/op_table.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/roofline.h"
#include "xsp/service/service.h"
#include "xsp/trace/run_statistics.h"

namespace xsp::cli {
namespace {

std::string join_ids(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
  return out;
}

// Why a roofline chart has no point: the tables' own explanation (no kernel run, no counter run), or the rows left
// out.
std::string why_no_points(const std::vector<Table>& tables, const RooflineChart& chart) {
  if (chart.rows > 0) return chart.left_out_note();
  for (const Table& t : tables)
    for (const std::string& note : t.notes)
      if (note == kNoKernelRun || note == kNoCounterRun || note.rfind("no measured ceilings", 0) == 0)
        return t.title + " has no rows (" + note + ")";
  return tables.front().title + " has no rows (no compute kernel with hardware counters)";
}

// The registries of analyses and run statistics: what every table column and statistic means (one source for the
// docs, the report and the web UI).
void print_registry(TableFormat format) {
  if (format == TableFormat::kJson) {
    nlohmann::ordered_json j = {{"analyses", nlohmann::ordered_json::array()},
                                {"run_statistics", nlohmann::ordered_json::array()}};
    for (const AnalysisSpec& s : table_registry()) j["analyses"].push_back(to_json(s));
    for (const RunStatisticSpec& s : run_statistics_registry())
      j["run_statistics"].push_back(
          {{"key", s.key}, {"severity", std::string(to_string(s.severity))}, {"unit", s.unit}, {"meaning", s.meaning}});
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (format == TableFormat::kCsv) throw CLI::ValidationError("--list", "prints text or JSON (--format table|json)");
  std::cout << "analyses (xsp analyze ID --analysis ...):\n" << describe_registry();
  std::cout << "run statistics (shown by xsp show, severity: error / data loss / info):\n";
  for (const RunStatisticSpec& s : run_statistics_registry())
    std::cout << "  " << s.key << " [" << to_string(s.severity) << (s.unit == "ns" ? ", ns" : "") << "]: " << s.meaning
              << "\n";
}

// --chart for analyses other than the rooflines: the registry's default chart of the one table asked for.
void write_default_chart(const std::vector<Table>& tables, const std::string& path) {
  std::vector<const Table*> drawable;
  for (const Table& t : tables)
    if (const AnalysisSpec* s = spec_of(t); s && s->chart.kind != ChartKind::kNone) drawable.push_back(&t);
  if (drawable.empty()) throw CLI::ValidationError("--chart", "none of the analyses asked for has a chart");
  if (drawable.size() > 1)
    throw CLI::ValidationError("--chart",
                               "draws one table: ask for one analysis, and for one batch size "
                               "(--batch-size) of a per-batch-size analysis");
  const Table& t = *drawable.front();
  const nlohmann::json chart = vega_lite_chart(t);
  if (chart.is_null()) throw std::runtime_error(t.title + " has no rows to draw; " + path + " not written");
  write_file_atomically(path, chart.dump(2));
  std::cerr << "wrote the " << to_string(spec_of(t)->chart.kind) << " chart of " << t.title << " (Vega-Lite v5, "
            << t.rows.size() << " rows) to " << path << "\n";
}

// --chart: the roofline scatter with the machine's ceilings for A9 or A14, else the registry's default chart.
void write_chart(const service::AnalysisResult& result, const std::string& path) {
  std::vector<Table> roofline;
  for (const auto& t : result.tables)
    if (t.id == "A9" || t.id == "A14") roofline.push_back(t);
  if (roofline.empty()) {
    write_default_chart(result.tables, path);
    return;
  }
  if (std::any_of(roofline.begin(), roofline.end(), [&](const Table& t) { return t.id != roofline[0].id; }))
    throw CLI::ValidationError("--chart", "draws one roofline: ask for A9 or A14, not both");
  const auto& ceilings = result.options.ceilings;
  const RooflineChart chart = make_roofline_chart(roofline, ceilings ? &*ceilings : nullptr);
  const std::string id = std::to_string(result.record.id);
  if (chart.drawn == 0)
    throw std::runtime_error("evaluation " + id + " (" + result.record.model_name + "): no " + chart.what +
                             " to draw on the " + roofline[0].id + " roofline: " + why_no_points(roofline, chart) +
                             "; " + path + " not written");
  write_file_atomically(path, chart.spec.dump(2));
  std::cerr << "wrote " << roofline[0].id << " roofline chart (Vega-Lite v5) of evaluation " << id << " to " << path
            << ": " << chart.drawn << " of " << chart.rows << " " << chart.what << "s drawn\n";
  if (!chart.left_out.empty()) std::cerr << chart.left_out_note() << "\n";
}

// A validator accepting the values `parse` knows; CLI11 puts the flag before its message: "--sort: expected one of
// self, total, ..., got 'x'" (a usage error, exit 2).
template <typename Parse>
CLI::Validator one_of(const std::string& values, Parse parse) {
  return CLI::Validator(
      [values, parse](std::string& text) -> std::string {
        return parse(text) ? "" : "expected one of " + values + ", got '" + text + "'";
      },
      "");
}

}  // namespace

void add_analyze_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("analyze", "print analyses of a stored evaluation");
  struct Args {
    std::optional<std::int64_t> id;
    std::string analyses = "A1,A2,A3,A4,A5,A6,A7,ops", format = "table", chart;
    std::optional<int> batch;
    std::optional<double> latency_bound_ms;
    bool list = false;
    std::string group_by = "name", sort = "self";
    std::size_t top = 0;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("id", a->id, "evaluation id (required unless --list)");
  sub->add_flag("--list", a->list,
                "print the registry of analyses (id, title, levels, chart, each column's unit and meaning) and of run "
                "statistics, and exit; --format json for a machine-readable list");
  auto* analysis_opt = sub->add_option("--analysis", a->analyses,
                                       "comma-separated analysis ids: " + join_ids(analysis_ids()) +
                                           " (default: A1-A7 and ops, and G1-G5 for a generation evaluation)")
                           ->capture_default_str()
                           ->check(non_empty_list("analysis ids (" + join_ids(analysis_ids()) + ")"));
  sub->add_option("--format", a->format, "how to print: an aligned table, CSV or JSON")
      ->check(table_format_check())
      ->capture_default_str();
  sub->add_option("--batch-size", a->batch, "only this batch size (layer analyses)");
  sub->add_option("--latency-bound-ms", a->latency_bound_ms, "A1: optimal batch under this p99 bound");
  sub->add_option("--group-by", a->group_by,
                  std::string("ops: one row per op name, per op name and input shapes, or per module (") +
                      kOpGroupByValues + ")")
      ->capture_default_str()
      ->check(one_of(kOpGroupByValues, [](const std::string& v) { return parse_op_group_by(v); }));
  sub->add_option("--top", a->top,
                  "ops: only the first N rows, the rest summed into one \"(other K ops)\" row (0 = all)")
      ->capture_default_str();
  sub->add_option("--sort", a->sort,
                  std::string("ops: order of the rows, largest first: self time, total time, calls, average self "
                              "time per call, self CUDA time (") +
                      kOpSortValues + ")")
      ->capture_default_str()
      ->check(one_of(kOpSortValues, [](const std::string& v) { return parse_op_sort(v); }));
  sub->add_option("--chart", a->chart,
                  "also write a Vega-Lite v5 chart to this file (.vl.json): A9 or A14 the roofline scatter with its "
                  "ceilings; another analysis (one table) its default chart from the registry (xsp analyze --list)");
  out.push_back({sub, [&g, a, analysis_opt] {
                   const auto format = parse_table_format(a->format);
                   if (a->list) {
                     print_registry(format);
                     return 0;
                   }
                   if (!a->id) throw CLI::RequiredError("id (the evaluation to analyze; or --list)");
                   auto store = open_store(g, StoreAccess::kRead);
                   // Without --analysis: A1-A7 and ops, plus G1-G5 on a generation evaluation (the service's default).
                   service::AnalysisRequest request{
                       *a->id, analysis_opt->count() == 0 ? std::vector<std::string>{} : split_ids(a->analyses),
                       a->batch, a->latency_bound_ms};
                   request.op_group_by = *parse_op_group_by(a->group_by);  // checked by --group-by's validator
                   request.op_top = a->top;
                   request.op_sort = *parse_op_sort(a->sort);
                   const service::AnalysisResult result = service::analyze(*store, request);
                   if (!a->chart.empty()) write_chart(result, a->chart);
                   print_tables(result.tables, format);
                   return 0;
                 }});
}

}  // namespace xsp::cli
