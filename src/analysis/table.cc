// Table renderings (SPEC §4: every analysis is available as a terminal table, CSV and JSON).
#include "xsp/analysis/table.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/util/strings.h"

namespace xsp {
namespace {

// Display width of UTF-8 text in terminal columns: one per code point (titles use "—", bars use block
// characters; none of them is double-width).
std::size_t display_width(std::string_view s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

bool is_numeric(const Cell& c) { return std::holds_alternative<std::int64_t>(c) || std::holds_alternative<double>(c); }

std::string format_real_text(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const double smallest = std::pow(10.0, -precision);
  if (v != 0 && std::fabs(v) < smallest) {
    // A fixed rendering would print 0.000 for a real, non-zero value; keep its significant digits instead.
    std::snprintf(buf, sizeof buf, "%.*g", std::max(precision, 1), v);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f", std::max(precision, 0), v);
  }
  return buf;
}

// Shortest text that reads back as the same double (what "%.17g trimmed" is meant to achieve, but exact).
std::string format_real_full(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

std::string cell_text(const Cell& c, int precision) {
  switch (c.index()) {
    case 1:
      return std::to_string(std::get<std::int64_t>(c));
    case 2:
      return format_real_text(std::get<double>(c), precision);
    case 3:
      return std::get<std::string>(c);
    default:
      return "";
  }
}

std::optional<double> cell_number(const Cell& c) {
  if (auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&c)) return *d;
  return std::nullopt;
}

// A bar of `fraction` (0..1) of `width` cells, in eighths of a cell.
std::string bar(double fraction, int width) {
  static const char* const kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  if (!(fraction > 0)) return "";
  fraction = std::min(fraction, 1.0);
  const long eighths = std::lround(fraction * width * 8);
  std::string out;
  for (long i = 0; i < eighths / 8; ++i) out += "█";
  out += kEighths[eighths % 8];
  return out;
}

void csv_field(std::string& out, std::string_view s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos;
  if (!quote) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

// `text` broken at spaces into lines of at most `width` columns where a space allows, the later lines indented
// by `indent`; each line ends in '\n'. `break_words`: a word longer than a line (a long path) is cut across lines.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent, bool break_words = false) {
  std::vector<std::string> words;
  const std::size_t room = width > display_width(indent) + 1 ? width - display_width(indent) : 1;
  for (std::size_t p = 0; p < text.size();) {
    std::size_t q = text.find(' ', p);
    if (q == std::string::npos) q = text.size();
    std::string word = text.substr(p, q - p);
    // A word wider than a line is cut into pieces of a line each, at code-point boundaries.
    while (break_words && display_width(word) > room) {
      std::size_t cut = 0;
      for (std::size_t cols = 0; cut < word.size() && cols < room; ++cols) {
        ++cut;
        while (cut < word.size() && (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80) ++cut;
      }
      words.push_back(word.substr(0, cut));
      word.erase(0, cut);
    }
    words.push_back(std::move(word));
    p = q + 1;
  }
  std::string out, line;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const std::size_t line_width = display_width(line);
    if (line_width > display_width(indent) && line_width + 1 + display_width(word) > width) {
      out += line + '\n';
      line = indent + word;
    } else {
      line += (line.empty() || i == 0 ? "" : " ") + word;
    }
  }
  return out + line + '\n';
}

constexpr std::size_t kNoteWidth = 120;
constexpr int kBarWidth = 30;
constexpr std::size_t kMinSymbolWidth = 24;

// The terminal rendering's cells and column widths, before any line is written.
struct TextLayout {
  std::vector<std::vector<std::string>> text;  // per row, per column
  std::vector<std::size_t> width;              // display width of each column (header included)
  std::vector<bool> right;                     // numbers align on the right, text on the left
  std::vector<bool> shown;                     // columns printed
  int bar_width = kBarWidth;                   // 0: no bar
  double bar_max = 0;
};

// A cell as the terminal shows it: symbols shortened to `symbol_width`, no line breaks.
std::string terminal_cell(const Column& col, const Cell& cell, int precision, std::size_t symbol_width) {
  std::string text = cell_text(cell, precision);
  if (col.symbol && std::holds_alternative<std::string>(cell)) text = short_symbol(text, symbol_width);
  // A line break inside a cell would tear the table apart; CSV and JSON keep the text as is.
  for (char& ch : text) {
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  }
  return text;
}

TextLayout lay_out(const Table& table, int precision) {
  const std::size_t ncol = table.columns.size();
  const bool has_bar = table.bar_column >= 0 && static_cast<std::size_t>(table.bar_column) < ncol;
  TextLayout l;
  l.text.resize(table.rows.size());
  l.width.assign(ncol, 0);
  l.right.assign(ncol, false);
  for (std::size_t c = 0; c < ncol; ++c) {
    const Column& col = table.columns[c];
    l.width[c] = display_width(col.title.empty() ? col.name : col.title);
  }
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    l.text[r].resize(ncol);
    for (std::size_t c = 0; c < ncol && c < row.size(); ++c) {
      l.text[r][c] = terminal_cell(table.columns[c], row[c], precision, 60);
      l.width[c] = std::max(l.width[c], display_width(l.text[r][c]));
      if (is_numeric(row[c])) l.right[c] = true;
    }
    if (has_bar && static_cast<std::size_t>(table.bar_column) < row.size()) {
      if (auto v = cell_number(row[table.bar_column]); v && std::isfinite(*v)) l.bar_max = std::max(l.bar_max, *v);
    }
  }
  // Columns shown: those meant for the terminal that hold a value in some row (all of them when there is no row,
  // so that the header still says what the table would hold). CSV and JSON keep every column.
  l.shown.assign(ncol, false);
  for (std::size_t c = 0; c < ncol; ++c) {
    l.shown[c] = table.columns[c].in_text;
    if (l.shown[c] && !table.rows.empty())
      l.shown[c] = std::any_of(table.rows.begin(), table.rows.end(),
                               [&](const auto& row) { return c < row.size() && row[c].index() != 0; });
  }
  if (!has_bar) l.bar_width = 0;
  return l;
}

// Width of a table line: the shown columns, two spaces between them, and the bar.
std::size_t layout_width(const TextLayout& l, bool has_bar) {
  std::size_t total = 0;
  bool any = false;
  for (std::size_t c = 0; c < l.width.size(); ++c) {
    if (!l.shown[c]) continue;
    total += l.width[c] + (any ? 2 : 0);
    any = true;
  }
  if (has_bar && l.bar_width > 0) total += 2 + static_cast<std::size_t>(l.bar_width);
  return total;
}

// Narrows `l` to `max_width` columns: a narrower bar or none, symbols cut further, then columns left out (lowest
// Column::priority first, rightmost first among equals; never the first shown). Returns the names left out.
std::vector<std::string> fit_width(const Table& table, TextLayout& l, bool has_bar, std::size_t max_width) {
  auto total = [&] { return layout_width(l, has_bar); };
  std::vector<std::string> left_out;
  if (total() <= max_width) return left_out;
  if (has_bar && l.bar_width > 0) {
    const std::size_t without = total() - 2 - static_cast<std::size_t>(l.bar_width);
    const std::size_t room = max_width > without + 2 ? max_width - without - 2 : 0;
    l.bar_width = room >= 8 ? static_cast<int>(std::min<std::size_t>(room, kBarWidth)) : 0;
  }
  for (std::size_t c = 0; c < l.width.size() && total() > max_width; ++c) {
    if (!l.shown[c] || !table.columns[c].symbol || l.width[c] <= kMinSymbolWidth) continue;
    const std::size_t target = std::max(kMinSymbolWidth, l.width[c] - std::min(l.width[c], total() - max_width));
    const Column& col = table.columns[c];
    l.width[c] = display_width(col.title.empty() ? col.name : col.title);
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      if (c >= table.rows[r].size()) continue;
      l.text[r][c] = terminal_cell(col, table.rows[r][c], 3, target);
      l.width[c] = std::max(l.width[c], display_width(l.text[r][c]));
    }
  }
  std::vector<std::size_t> order;
  const auto key = std::find(l.shown.begin(), l.shown.end(), true) - l.shown.begin();
  for (std::size_t c = 0; c < l.width.size(); ++c)
    if (l.shown[c] && static_cast<std::ptrdiff_t>(c) != key) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (table.columns[a].priority != table.columns[b].priority)
      return table.columns[a].priority < table.columns[b].priority;
    return a > b;
  });
  for (std::size_t c : order) {
    if (total() <= max_width) break;
    l.shown[c] = false;
    left_out.push_back(table.columns[c].name);
  }
  // Named in the table's order, as the CSV header has them.
  std::sort(left_out.begin(), left_out.end(), [&](const std::string& a, const std::string& b) {
    auto at = [&](const std::string& n) {
      return std::find_if(table.columns.begin(), table.columns.end(), [&](const Column& c) { return c.name == n; });
    };
    return at(a) < at(b);
  });
  return left_out;
}

}  // namespace

TableFormat parse_table_format(const std::string& name) {
  const std::string n = util::to_lower(name);
  if (n == "table" || n == "text") return TableFormat::kText;
  if (n == "csv") return TableFormat::kCsv;
  if (n == "json") return TableFormat::kJson;
  throw std::invalid_argument("unknown table format '" + name + "' (expected table, text, csv or json)");
}

std::string render_text(const Table& table, int precision, std::size_t max_width) {
  const std::size_t ncol = table.columns.size();
  const bool has_bar = table.bar_column >= 0 && static_cast<std::size_t>(table.bar_column) < ncol;
  TextLayout l = lay_out(table, precision);
  std::vector<std::string> left_out;
  if (max_width > 0) left_out = fit_width(table, l, has_bar, max_width);
  const std::size_t line_width = max_width > 0 ? max_width : std::size_t{1} << 20;
  const std::size_t note_width = max_width > 0 ? std::min(kNoteWidth, max_width) : kNoteWidth;

  std::string out;
  std::string title;
  if (!table.id.empty()) {
    title += table.id;
    if (!table.title.empty()) title += " — ";
  }
  title += table.title;
  out += wrap(title, line_width, "  ", max_width > 0);

  auto emit_row = [&](const std::vector<std::string>& cells, const std::string& bar_text) {
    std::string line;
    bool first = true;
    for (std::size_t c = 0; c < ncol; ++c) {
      if (!l.shown[c]) continue;
      const std::string& s = c < cells.size() ? cells[c] : std::string();
      const std::size_t pad = l.width[c] - std::min(l.width[c], display_width(s));
      if (!first) line += "  ";
      first = false;
      if (l.right[c]) line.append(pad, ' ');
      line += s;
      if (!l.right[c]) line.append(pad, ' ');
    }
    if (!bar_text.empty()) line += "  " + bar_text;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };

  std::vector<std::string> header(ncol);
  for (std::size_t c = 0; c < ncol; ++c)
    header[c] = table.columns[c].title.empty() ? table.columns[c].name : table.columns[c].title;
  emit_row(header, "");
  std::string rule;
  for (std::size_t i = 0, n = layout_width(l, has_bar); i < n; ++i) rule += "─";
  out += rule + '\n';
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    std::string b;
    if (has_bar && l.bar_width > 0 && l.bar_max > 0 &&
        static_cast<std::size_t>(table.bar_column) < table.rows[r].size()) {
      if (auto v = cell_number(table.rows[r][table.bar_column]); v && std::isfinite(*v))
        b = bar(*v / l.bar_max, l.bar_width);
    }
    emit_row(l.text[r], b);
  }
  if (table.rows.empty()) out += "(no rows)\n";
  for (const std::string& note : table.notes) out += wrap("note: " + note, note_width, "      ", max_width > 0);
  if (!left_out.empty()) {
    std::string names;
    for (const std::string& n : left_out) names += (names.empty() ? "" : ", ") + n;
    out += wrap("note: " + std::to_string(left_out.size()) + " column" + (left_out.size() == 1 ? "" : "s") +
                    " left out to fit " + std::to_string(max_width) + " terminal columns: " + names +
                    "; see every column with --format csv (or json), or in a wider terminal",
                note_width, "      ");
  }
  return out;
}

std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent) {
  return wrap(text, width, indent);
}

std::size_t terminal_width() {
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (*end == '\0' && n > 0) return static_cast<std::size_t>(n);
  }
  winsize size{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 0;
}

std::string render_csv(const Table& table) {
  std::string out;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    if (c > 0) out += ',';
    csv_field(out, table.columns[c].name);
  }
  out += '\n';
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (c > 0) out += ',';
      if (c >= row.size()) continue;
      const Cell& cell = row[c];
      if (auto* d = std::get_if<double>(&cell)) {
        out += format_real_full(*d);
      } else {
        csv_field(out, cell_text(cell, 0));
      }
    }
    out += '\n';
  }
  return out;
}

nlohmann::ordered_json to_json(const Table& table) {
  nlohmann::ordered_json j;
  j["id"] = table.id;
  j["title"] = table.title;
  nlohmann::ordered_json cols = nlohmann::ordered_json::array();
  for (const Column& c : table.columns) cols.push_back(c.name);
  j["columns"] = std::move(cols);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : table.rows) {
    nlohmann::ordered_json r = nlohmann::ordered_json::object();
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      auto& v = r[table.columns[c].name];  // null unless the cell has a value
      if (c >= row.size()) continue;
      const Cell& cell = row[c];
      switch (cell.index()) {
        case 1:
          v = std::get<std::int64_t>(cell);
          break;
        case 2: {
          const double d = std::get<double>(cell);
          // JSON has no NaN/Inf; null says "no value" like an empty cell.
          if (std::isfinite(d)) v = d;
          break;
        }
        case 3:
          v = std::get<std::string>(cell);
          break;
        default:
          break;
      }
    }
    rows.push_back(std::move(r));
  }
  j["rows"] = std::move(rows);
  j["notes"] = table.notes;
  return j;
}

std::vector<Table> merge_batch_tables(const std::vector<Table>& tables) {
  struct Group {
    std::size_t out_index;
    std::vector<std::pair<int, std::vector<std::string>>> notes;  // per member: batch size, notes
  };
  std::vector<Table> out;
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (const Table& t : tables) {
    if (!t.batch_size) {
      out.push_back(t);
      continue;
    }
    const int b = *t.batch_size;
    std::string base = t.title;
    const std::string suffix = " (batch size " + std::to_string(b) + ")";
    if (base.size() >= suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0)
      base.erase(base.size() - suffix.size());
    const std::string key = t.id + '\x1f' + base;
    auto it = groups.find(key);
    if (it == groups.end()) {
      Table m;
      m.id = t.id;
      m.title = base;
      m.columns = t.columns;
      m.bar_column = t.bar_column;
      const bool has_batch =
          std::any_of(t.columns.begin(), t.columns.end(), [](const Column& c) { return c.name == "batch_size"; });
      if (!has_batch) {
        m.columns.insert(m.columns.begin(), Column{"batch_size", "batch size"});
        if (m.bar_column >= 0) ++m.bar_column;
      }
      it = groups.emplace(key, Group{out.size(), {}}).first;
      order.push_back(key);
      out.push_back(std::move(m));
    }
    Table& m = out[it->second.out_index];
    const bool prepend = m.columns.size() == t.columns.size() + 1;
    for (const auto& row : t.rows) {
      if (!prepend) {
        m.rows.push_back(row);
        continue;
      }
      std::vector<Cell> r;
      r.reserve(row.size() + 1);
      r.emplace_back(std::int64_t{b});
      r.insert(r.end(), row.begin(), row.end());
      m.rows.push_back(std::move(r));
    }
    it->second.notes.emplace_back(b, t.notes);
  }
  for (const std::string& key : order) {
    const Group& g = groups.at(key);
    Table& m = out[g.out_index];
    auto everywhere = [&](const std::string& note) {
      return std::all_of(g.notes.begin(), g.notes.end(), [&](const auto& member) {
        return std::find(member.second.begin(), member.second.end(), note) != member.second.end();
      });
    };
    for (const std::string& note : g.notes.front().second)
      if (everywhere(note) && std::find(m.notes.begin(), m.notes.end(), note) == m.notes.end()) m.notes.push_back(note);
    for (const auto& [b, notes] : g.notes)
      for (const std::string& note : notes)
        if (!everywhere(note)) m.notes.push_back("batch size " + std::to_string(b) + ": " + note);
  }
  return out;
}

std::string short_symbol(std::string_view symbol, std::size_t max_width) {
  // Template arguments -> "<…>" (nested ones disappear inside); an unbalanced name is kept as it is.
  std::string s;
  int depth = 0;
  for (char c : symbol) {
    if (c == '<') {
      if (depth++ == 0) s += "<…>";
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      s += c;
    }
  }
  if (depth != 0) s = std::string(symbol);
  // Only C++ names lose parameters and return type: "Memcpy HtoD (Pageable -> Device)" stays as it is.
  const bool cxx = symbol.find("::") != std::string_view::npos || symbol.find('<') != std::string_view::npos;
  // The parameter list: the parenthesized group that ends the name, right after it ("f(int)", not "f (int)").
  std::size_t name_end = s.size();
  if (cxx && !s.empty() && s.back() == ')') {
    int parens = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++parens;
      if (s[i] == '(' && --parens == 0) {
        name_end = i;
        break;
      }
    }
    if (name_end == 0 || name_end == s.size() || s[name_end - 1] == ' ') {
      name_end = s.size();
    } else if (s.size() - name_end > 2) {
      s = s.substr(0, name_end) + "(…)";
    }
  }
  // The return type: everything up to the last space outside parentheses before the parameter list
  // ("(anonymous namespace)" has a space of its own).
  int parens = 0;
  std::size_t last_space = std::string::npos;
  for (std::size_t i = 0; i < std::min(name_end, s.size()); ++i) {
    if (s[i] == '(') ++parens;
    if (s[i] == ')') --parens;
    if (s[i] == ' ' && parens == 0) last_space = i;
  }
  if (cxx && last_space != std::string::npos) s.erase(0, last_space + 1);
  if (display_width(s) <= max_width || max_width == 0) return s;
  // Keep the end (the function's own name), cut at a code-point boundary.
  std::size_t keep = max_width - 1, start = s.size();
  while (start > 0 && keep > 0) {
    --start;
    if ((static_cast<unsigned char>(s[start]) & 0xC0) != 0x80) --keep;
  }
  return "…" + s.substr(start);
}

std::string render(const Table& table, TableFormat format) {
  switch (format) {
    case TableFormat::kText:
      return render_text(table);
    case TableFormat::kCsv:
      return render_csv(table);
    case TableFormat::kJson:
      return to_json(table).dump(2) + "\n";
  }
  return {};
}

}  // namespace xsp
