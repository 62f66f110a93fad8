// xsp list: stored evaluations, newest first, filtered by model and date, as a table, CSV or JSON.
#include <iostream>
#include <regex>

#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {
namespace {

struct ListArgs {
  std::string format = "table";
  std::size_t limit = 0;  // 0: all
  std::string model;
  std::string since;
};

// --since as the store compares it (ISO 8601 UTC text): "2026-11-24" as is, "2026-11-24T12:00" and
// "2026-11-24T12:00:00" with seconds and "Z" added. The value is a UTC date or time.
std::string since_bound(const std::string& text) {
  static const std::regex form(R"((\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?Z?)?)");
  std::smatch m;
  auto in = [&](int group, int lo, int hi) {
    if (!m[group].matched) return true;
    const int v = std::stoi(m[group].str());
    return v >= lo && v <= hi;
  };
  if (!std::regex_match(text, m, form) || !in(2, 1, 12) || !in(3, 1, 31) || !in(4, 0, 23) || !in(5, 0, 59) ||
      !in(6, 0, 60))
    throw CLI::ValidationError("--since",
                               "expected a UTC date YYYY-MM-DD or time YYYY-MM-DDTHH:MM[:SS][Z], got '" + text + "'");
  if (!m[4].matched) return m[1].str() + "-" + m[2].str() + "-" + m[3].str();
  return m[1].str() + "-" + m[2].str() + "-" + m[3].str() + "T" + m[4].str() + ":" + m[5].str() + ":" +
         (m[6].matched ? m[6].str() : std::string("00")) + "Z";
}

Table listing_table(const std::vector<EvaluationListing>& listings, const std::string& store) {
  Table t;
  t.id = "evaluations";
  t.title = "Evaluations in " + store;
  // The id, the model and when stay on a narrow terminal; the run count and trace level go first.
  t.columns = {{"id", "", true, false, 9},          {"created_at", "", true, false, 8},  {"status", "", true, false, 5},
               {"model", "", true, false, 8},       {"framework", "", true, false, 4},   {"device", "", true, false, 3},
               {"trace_level", "", true, false, 2}, {"batch_sizes", "", true, false, 6}, {"runs", "", true, false, 1}};
  for (const auto& e : listings) {
    std::string batches;
    for (int b : e.batch_sizes) batches += (batches.empty() ? "" : ",") + std::to_string(b);
    t.rows.push_back({Cell(e.id), Cell(e.created_at), Cell(e.status), Cell(e.model_name + " " + e.model_version),
                      Cell(e.framework_name), Cell(e.device), Cell(e.trace_level), Cell(batches),
                      Cell(static_cast<std::int64_t>(e.run_count))});
  }
  return t;
}

int run_list(const Globals& g, const ListArgs& a) {
  const TableFormat format = parse_table_format(a.format);
  EvaluationFilter filter;
  if (!a.since.empty()) filter.since = since_bound(a.since);
  if (a.limit > 0) filter.limit = a.limit;
  auto store = open_store(g, StoreAccess::kRead);
  const service::EvaluationPage page = service::list_evaluations_matching(*store, filter, a.model);
  Table t = listing_table(page.evaluations, redact_location(g.store_path));
  if (page.total > page.evaluations.size())
    t.notes.push_back("the newest " + std::to_string(page.evaluations.size()) + " of " + std::to_string(page.total) +
                      " matching evaluations (--limit)");
  if (format == TableFormat::kText)
    std::cout << render_text(t, 3, terminal_width());
  else
    std::cout << render(t, format);
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("list", "list stored evaluations, newest first");
  auto a = std::make_shared<ListArgs>();
  sub->add_option("--format", a->format, "how to print: an aligned table, CSV or JSON")
      ->check(table_format_check())
      ->capture_default_str();
  sub->add_option("--limit", a->limit, "at most N evaluations, the newest")->check(integer_at_least(1));
  sub->add_option("--model", a->model,
                  "only evaluations of models whose name contains NAME (case and '_'/'-' ignored: resnet, "
                  "mobilenet-v2)");
  sub->add_option("--since", a->since,
                  "only evaluations created at or after DATE: YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z], in UTC")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              (void)since_bound(text);
              return "";
            } catch (const CLI::ValidationError& e) {
              return std::string(e.what()).substr(std::string_view("--since: ").size());
            }
          },
          "DATE"));
  out.push_back({sub, [&g, a] { return run_list(g, *a); }});
}

}  // namespace xsp::cli
