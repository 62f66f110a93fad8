// The one table type every analysis returns, and its three renderings (terminal, CSV, JSON) (SPEC §4).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace xsp {

/// A table cell: empty, integer, real, or text.
using Cell = std::variant<std::monostate, std::int64_t, double, std::string>;

struct Column {
  std::string name;  ///< machine name with unit suffix where it has one, e.g. "latency_ms", "allocated_bytes"
  std::string title; ///< short human title for the terminal ("" = use name)
  /// false: CSV and JSON only. For numbers that the terminal shows inside a worded column instead (an overhead
  /// with its interval and significance), so that a bare figure is never printed without its reading.
  bool in_text = true;
};

struct Table {
  std::string id;     ///< analysis id, e.g. "A2"
  std::string title;  ///< e.g. "Layer information"
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  ///< each row has columns.size() cells
  std::vector<std::string> notes;       ///< caveats printed under the table (which run the values come from...)
  /// Index of a numeric column to draw as a horizontal bar in the terminal rendering (-1 = none).
  int bar_column = -1;
};

enum class TableFormat { kText, kCsv, kJson };
/// Parses "table"|"text"|"csv"|"json"; throws std::invalid_argument naming the value otherwise.
TableFormat parse_table_format(const std::string& name);

/// Aligned text with a title line, header, rows and notes; reals with `precision` significant decimals;
/// a unicode bar column when bar_column >= 0.
std::string render_text(const Table& table, int precision = 3);
/// RFC 4180 CSV: header of column names, then rows; reals printed with full precision (%.17g trimmed).
std::string render_csv(const Table& table);
/// {"id","title","columns":[names],"rows":[[...]],"notes":[...]}; empty cells are null.
nlohmann::json to_json(const Table& table);
/// Renders in the chosen format (JSON pretty-printed with 2 spaces).
std::string render(const Table& table, TableFormat format);

}  // namespace xsp
