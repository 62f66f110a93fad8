// The registry of analyses: the one place that says what each analysis is (id, title, meaning, the span levels it
// reads), what its columns are (name, unit, one-line meaning, terminal title) and how it is drawn by default.
// The analyses build their tables from it (empty_table(), RowBuilder), and every front end renders from it: the
// terminal and CSV/JSON tables (table.h), `xsp analyze --list`, the Vega-Lite charts (vega_lite_chart()), the
// HTML report and the web UI. Each analysis entry also carries the function that computes it, whether it runs
// once per batch size, and for which evaluations it is a default, so run_analyses() (analyses.h) only iterates the
// registry. Adding an analysis = one entry in src/analysis/registry.cc + the function that fills its rows
// (docs/architecture.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/trace/span.h"

namespace xsp {

/// One column of an analysis table.
struct ColumnSpec {
  std::string name;     ///< machine name (CSV header, JSON key), with its unit suffix: "latency_ms"
  std::string unit;     ///< unit of the values: "ms", "bytes", "FLOP/s", "%", "count"...; "" for text and ids
  std::string meaning;  ///< one line: what the value is and which run it comes from
  std::string title;    ///< short terminal title ("" = the name)
  bool in_text = true;  ///< false: CSV and JSON only (Column::in_text)
  bool symbol = false;  ///< a C++ symbol the terminal shortens (Column::symbol)
};

enum class ChartKind { kNone, kLine, kBar, kArc /*pie*/, kStackedBar, kRoofline, kScatter };

/// "none", "line", "bar", "arc", "stacked-bar", "roofline", "scatter".
std::string_view to_string(ChartKind kind);

/// The default chart of an analysis. x, y and color are column names of the analysis ("" = not used). For
/// kStackedBar, y is the first stacked column and `series` lists all of them (the bars are their sum); for kArc, y
/// is the angle (the share) and color the category.
struct ChartSpec {
  ChartKind kind = ChartKind::kNone;
  std::string x, y, color;
  bool log_x = false, log_y = false;
  std::string title;
  /// kStackedBar: the columns stacked in each bar, bottom first; kLine: one line per column (same unit).
  /// Empty: the single column y.
  std::vector<std::string> series;
  /// kLine: a second quantity with its own unit, drawn dashed on an independent right-hand axis ("" = none).
  std::string y2;
  /// kLine: columns of an interval drawn at each x as a vertical rule on y's axis (A1: the median's 95% interval,
  /// whose spread is what the stability verdict reads); "" = none.
  std::string y_low, y_high;
  /// kBar: a text column whose value names each bar beside x ("12 layer4.0.conv1" for x = layer_index): bars then
  /// lie horizontally, one per distinct (x, label), the values of rows sharing it summed ("" = bars named by x).
  std::string label;
  /// kBar with named bars (label, or a text x): at most this many bars, the largest; the others summed into one
  /// bar "other (N)" (0 = every bar).
  std::size_t top_n = 0;
};

class AnalysisContext;  // analyses.h: what run_analyses() hands each analysis function

/// How run_analyses() calls an analysis: exactly one of the two is set for an analysis_registry() entry (the one
/// its per_batch_size asks for); neither for the further tables of table_registry().
struct AnalysisFunction {
  /// per_batch_size analyses: the table of `batch_size`, one of context.batch_sizes(). Called once per batch size,
  /// ascending.
  Table (*per_batch)(AnalysisContext& context, int batch_size) = nullptr;
  /// The other analyses: their tables over context.batch_sizes(), called once; usually one table (launch-stats
  /// adds one "launch-top" table per batch size with a kernel run).
  std::vector<Table> (*over_batches)(AnalysisContext& context) = nullptr;
  /// Whether either is set.
  explicit operator bool() const { return per_batch != nullptr || over_batches != nullptr; }
};

/// Which header an analysis belongs to and what it needs: kModel (A1–A7, analyses.h: MODEL and FRAMEWORK spans),
/// kGpu (gpu_analyses.h: a KERNEL-level run, for some a HARDWARE counter run), kGeneration (generation_analyses.h:
/// generation runs), kServing (serving_join.h: a serving evaluation's client timings and the server's trace).
/// gpu_analysis_ids() and generation_analysis_ids() list the ids of one family.
enum class AnalysisFamily { kNone, kModel, kGpu, kGeneration, kServing };

/// For which evaluations an analysis is one of default_analysis_ids() (the analyses `xsp analyze` and the report
/// run when none are named).
enum class DefaultFor {
  kNone,        ///< only when named (the GPU analyses: they need a KERNEL-level run)
  kEvery,       ///< every evaluation (A1)
  kInference,   ///< evaluations that are neither generation nor serving ones (A2–A7: layers under predict spans)
  kGeneration,  ///< generation evaluations only (G1–G5; generation_analyses.h is_generation_evaluation())
  kServing,     ///< serving evaluations only (serving-tail; serving_join.h is_serving_evaluation())
};

/// One analysis (or one further fixed-column table an analysis or the summary returns).
struct AnalysisSpec {
  std::string id;               ///< Table::id: "A2", "gpu-idle"
  std::string title;            ///< Table::title without the " (batch size N)" suffix
  std::string meaning;          ///< one line: what the analysis answers
  std::vector<Level> levels;    ///< the span levels whose runs it reads (SPEC §3: one run per level)
  bool per_batch_size = false;  ///< one table per batch size (title suffix " (batch size N)") or one over all
  std::vector<ColumnSpec> columns;
  ChartSpec chart;
  int bar_column = -1;  ///< Table::bar_column: index into columns of the terminal bar (-1 = none)
  /// Unique key in table_registry(): the id for an analysis; for a further table of an analysis or the summary,
  /// its own key ("launch-top", "summary.runs").
  std::string key;
  /// What run_analyses() calls (set exactly as per_batch_size asks for every analysis_registry() entry; unset for
  /// the further tables of table_registry()).
  AnalysisFunction function;
  AnalysisFamily family = AnalysisFamily::kNone;  ///< kNone for the further tables
  DefaultFor default_for = DefaultFor::kNone;
  /// Index of the column named `name`; throws std::logic_error naming the analysis and the column when absent.
  std::size_t column_index(std::string_view name) const;
};

/// Every analysis run_analyses() accepts, each once with its function, in analysis_ids() order: A1..A7 (family
/// kModel), the GPU analyses (kGpu), the generation ones (kGeneration), then serving-tail (kServing).
const std::vector<AnalysisSpec>& analysis_registry();
/// analysis_registry() followed by the further fixed-column tables: "launch-top" (id launch-stats, the
/// kernels with the largest launch delay), "summary.runs" and "summary.overheads" (summary.h), and the comparison
/// tables "compare.evaluations", "compare.A1.significance", "compare.A6.totals", "compare.predictions" (compare.h;
/// compare.A1 has columns per compared evaluation and is not registered). Keys are unique.
const std::vector<AnalysisSpec>& table_registry();

/// The analysis `id` (case-insensitive). Throws std::invalid_argument naming the id and listing the valid ones.
const AnalysisSpec& analysis_spec(std::string_view id);
/// The table_registry() entry with key `key` (exact). Throws std::invalid_argument naming it otherwise.
const AnalysisSpec& table_spec(std::string_view key);
/// The spec `table` was built from (Table::spec), or nullptr for a table outside the registry (compare.A1, whose
/// columns depend on the evaluations compared).
const AnalysisSpec* spec_of(const Table& table);

/// A table with the spec's id, title (plus " (batch size N)" and Table::batch_size when `batch_size` is given),
/// columns, bar column and Table::spec = spec.key; no rows, no notes.
Table empty_table(const AnalysisSpec& spec);
Table empty_table(const AnalysisSpec& spec, int batch_size);

/// Builds one row of a registry table by column name, so that no code depends on column positions:
///   RowBuilder row(table); row.set("latency_ms", 1.5); table.rows.push_back(row.take());
/// Cells not set stay empty.
class RowBuilder {
 public:
  /// A row for `table` (its columns; the table must have been made by empty_table() or have the same columns).
  explicit RowBuilder(const Table& table);
  /// Sets column `name`; throws std::logic_error naming the column and the table when it has no such column.
  RowBuilder& set(std::string_view name, Cell value);
  /// The finished row (columns.size() cells); the builder is empty afterwards.
  std::vector<Cell> take();

 private:
  const Table* table_;
  std::vector<Cell> cells_;
};

/// The cell of `row` in column `name` of `table`; throws std::logic_error when the table has no such column.
const Cell& cell(const Table& table, const std::vector<Cell>& row, std::string_view name);
/// Index of column `name` in `table`, or -1 when absent.
int column_index(const Table& table, std::string_view name);

/// `spec` as JSON, for front ends that describe the analyses (`xsp analyze --list --format json`, the web UI):
/// {"key","id","title","meaning","levels":[level names],"per_batch_size","chart":{"kind","x","y","color","series",
/// "y2","log_x","log_y","title"},"bar_column":name or null,"columns":[{"name","unit","meaning","title","in_text",
/// "symbol"}]}.
nlohmann::ordered_json to_json(const AnalysisSpec& spec);
/// Every table_registry() entry as text: per entry a header line (key, title, levels, per batch size or not, chart)
/// and one line per column (name, unit, meaning).
std::string describe_registry();

/// The default chart of `table` (its analysis's ChartSpec) as a Vega-Lite v5 JSON spec
/// (https://vega.github.io/schema/vega-lite/v5.json) with the table's rows inlined as data values (`data.values`,
/// objects keyed by column name as in to_json()), axis titles with units, and tooltips on every column shown in
/// the terminal. A batch size on x is ordinal (one evenly spaced tick per measured batch size). Bars named by text
/// (a nominal x, or ChartSpec::label) lie horizontally, largest first; ChartSpec::top_n groups the rest into one
/// "other (N)" bar (data values are then the drawn bars, not the table's rows). Lines with a second quantity (y2)
/// have a legend naming each line, and the interval (y_low, y_high) is drawn as an error bar at each x. Rooflines are
/// log-log scatters of ai_dram (FLOP/byte) against achieved_flops_per_s, with a horizontal rule per precision at its
/// peak_flops_per_s when the table has that column. A null json when the table is outside the registry, its analysis
/// has no chart, or the table has no rows.
nlohmann::json vega_lite_chart(const Table& table);

}  // namespace xsp
