// xsp compare ID1 ID2 ...: evaluations side by side (A1 with intervals and verdicts, significance, A6, outputs).
#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {

void add_compare_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("compare", "compare stored evaluations side by side (A1, A6, outputs)");
  struct Args {
    std::vector<std::int64_t> ids;
    std::string format = "table";
    std::optional<int> batch;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("ids", a->ids, "two or more evaluation ids")->required()->expected(2, 1 << 20);
  sub->add_option("--format", a->format, "how to print: an aligned table, CSV or JSON")
      ->check(table_format_check())
      ->capture_default_str();
  sub->add_option("--batch-size", a->batch, "only this batch size in the layer tables");
  out.push_back({sub, [&g, a] {
                   const auto format = parse_table_format(a->format);
                   auto store = open_store(g, StoreAccess::kRead);
                   print_tables(service::compare(*store, {a->ids, a->batch}), format);
                   return 0;
                 }});
}

}  // namespace xsp::cli
