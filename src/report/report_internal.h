// What the report's source files share (src/report/*.cc); not a public header.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/report/report.h"

namespace xsp::report_detail {

/// `text` with & < > " ' as HTML entities.
std::string escape_html(std::string_view text);
/// `t` as a scrolling HTML table with its notes under it; `first` names columns moved to the front (the key column
/// stays first), e.g. a comparison's ratio columns.
std::string html_table(const Table& t, const std::vector<std::string>& first = {});
/// Names the main unit of `spec` "main" and returns the marks it draws from its data, or -1 when it aggregates.
long expected_marks(nlohmann::json& spec);
/// A figure with the chart's title as caption and its (empty) div.
std::string chart_figure(const ReportChart& c);
/// "1.23", "12.3", "123": three significant digits for the headline's figures.
std::string figure(double value);

/// The headline of an evaluation: its latency with the interval and stability verdict, its throughput, where the
/// time goes (slowest layer, layer type, kernel, op by self time) and each level's overhead, from the analysis
/// `tables` already run and the record. "" when there is nothing to say.
std::string headline_html(const EvaluationRecord& r, const std::vector<Table>& tables);

/// The cell of column `name` in `row` of `t` as a number (an integer or a finite real), else std::nullopt.
std::optional<double> number(const Table& t, const std::vector<Cell>& row, std::string_view name);
/// The cell of column `name` as text (a string, or an integer written out), else "".
std::string text(const Table& t, const std::vector<Cell>& row, std::string_view name);

/// A histogram (40 bins) of `values_ms` (at most 20,000 of them, evenly strided) titled `title`, its axis "`what`
/// (ms)".
ReportChart distribution(const std::vector<double>& values_ms, const std::string& what, const std::string& title,
                         const std::string& element_id);

/// The serving part of an evaluation's section (xsp bench-serve, docs/serving.md): a sentence per point, the S1–S3
/// tables, each point's TTFT, TPOT, ITL and E2E distributions, and for a sweep the throughput–latency curve (output
/// tokens/s against TTFT and TPOT p50 and p99, one point per sweep value), and, when the serving-tail analysis in
/// `tables` joined slow intervals to a server trace, the slowest TTFT and the slowest ITL each in words and as a
/// timeline of the server's spans during it (window_timeline_chart, at most options.max_timeline_spans).
std::string serving_section(const EvaluationRecord& r, const std::vector<Table>& tables, const ReportOptions& options,
                            const std::function<std::string()>& next_id, std::vector<ReportChart>& charts);

/// The generation part of an evaluation's section: TTFT, TPOT and ITL distributions of each batch size's timing
/// run, and the timeline of the p99 decode step (by duration, among the decode steps whose ops were traced).
std::string generation_section(const EvaluationRecord& r, const ReportOptions& options,
                               const std::function<std::string()>& next_id, std::vector<ReportChart>& charts);

/// One sentence per (batch size, evaluation) of the comparison's significance table, ratio first:
/// "#6 is 1.39× slower than #5 at batch size 1 (median 12.3 ms vs 8.85 ms; p < 0.001)".
std::vector<std::string> comparison_sentences(const std::vector<Table>& compare_tables);

}  // namespace xsp::report_detail
