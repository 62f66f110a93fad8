// The one table type every analysis returns, and its three renderings (terminal, CSV, JSON) (SPEC §4).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace xsp {

/// A table cell: empty, integer, real, or text.
using Cell = std::variant<std::monostate, std::int64_t, double, std::string>;

struct Column {
  std::string name;   ///< machine name with unit suffix where it has one, e.g. "latency_ms", "allocated_bytes"
  std::string title;  ///< short human title for the terminal ("" = use name)
  /// false: CSV and JSON only. For numbers that the terminal shows inside a worded column instead (an overhead
  /// with its interval and significance), so that a bare figure is never printed without its reading.
  bool in_text = true;
  /// A C++ symbol (kernel name): the terminal shows short_symbol() of it, CSV and JSON the full text.
  bool symbol = false;
  /// When a terminal is too narrow for the table (render_text()'s max_width), columns of lower priority are left out
  /// first, the rightmost first among equals; the first column (the row's key) is never left out.
  int priority = 0;
};

struct Table {
  std::string id;     ///< analysis id, e.g. "A2"
  std::string title;  ///< e.g. "Layer information"
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  ///< each row has columns.size() cells
  std::vector<std::string> notes;       ///< caveats printed under the table (which run the values come from...)
  /// Index of a numeric column to draw as a horizontal bar in the terminal rendering (-1 = none).
  int bar_column = -1;
  /// The batch size of a per-batch-size table (its title ends in " (batch size N)"); merge_batch_tables() joins
  /// the tables of one analysis into one with a batch_size column. nullopt: a table over all batch sizes.
  std::optional<int> batch_size;
  /// Key of the registry entry (registry.h AnalysisSpec::key) the table was built from; "" for tables outside
  /// the registry (compare tables). Not rendered: front ends use it to find units, meanings and the chart.
  std::string spec;
};

enum class TableFormat { kText, kCsv, kJson };
/// Parses "table"|"text"|"csv"|"json"; throws std::invalid_argument naming the value otherwise.
TableFormat parse_table_format(const std::string& name);

/// Aligned text with a title line, header, rows and notes; reals with `precision` significant decimals;
/// a unicode bar column when bar_column >= 0. Columns without a value in any row are left out (CSV and JSON keep
/// them), symbol columns are shortened (short_symbol()), notes wrapped at 120 columns.
/// `max_width` > 0: no line is wider than that many terminal columns where it can be helped: the bar narrows or
/// goes, symbol columns are cut further (to 24 columns at least), then columns are left out by Column::priority
/// (the first column is always kept) and a note names them and how to see them (`--format csv` or a wider
/// terminal); title and notes wrap. Only a key column wider than the terminal can still overflow. 0 = no limit.
std::string render_text(const Table& table, int precision = 3, std::size_t max_width = 0);
/// The width of the terminal the tables go to, in columns: $COLUMNS when it is a positive number, else the window
/// size of stdout when it is a terminal (ioctl TIOCGWINSZ), else 0 (no limit: output piped to a file or program).
std::size_t terminal_width();
/// `text` broken at spaces into lines of at most `width` terminal columns (a word wider than a line stays whole on
/// its own line), the later lines indented by `indent`; every line ends in '\n'. Used for the free-text lines beside
/// the tables (`xsp show`), so they fit the same terminal.
std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent);
/// RFC 4180 CSV: header of column names, then rows; reals printed with full precision (%.17g trimmed).
std::string render_csv(const Table& table);
/// {"id","title","columns":[names],"rows":[{name: value, ...}],"notes":[...]}: every row an object keyed by the
/// column names (in column order); empty cells are null. pandas reads the rows of one table as one frame
/// (`pandas.DataFrame(t["rows"])`), or of all tables with `pandas.json_normalize(doc, "rows", ["id"])`.
nlohmann::ordered_json to_json(const Table& table);

/// Joins the per-batch-size tables (Table::batch_size set) of one analysis (same id and title apart from the
/// " (batch size N)" suffix) into one table at the place of the first, for CSV and JSON: one header, and a first
/// column batch_size unless the table has one already; notes common to all once, the others prefixed
/// "batch size N: ". Other tables pass through unchanged.
std::vector<Table> merge_batch_tables(const std::vector<Table>& tables);

/// Short form of a (demangled) C++ symbol for the terminal: no return type, template arguments shown as "<…>",
/// parameter list as "(…)", and at most `max_width` characters (the start cut off with "…", keeping the name).
/// "void at::native::foo<float, 4>(int, float*)" -> "at::native::foo<…>(…)".
std::string short_symbol(std::string_view symbol, std::size_t max_width = 60);
/// Renders in the chosen format (JSON pretty-printed with 2 spaces).
std::string render(const Table& table, TableFormat format);

}  // namespace xsp
