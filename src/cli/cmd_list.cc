// xsp list: stored evaluations, newest first.
#include <iostream>

#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {

void add_list_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("list", "list stored evaluations");
  out.push_back({sub, [&g] {
                   auto store = open_store(g, StoreAccess::kRead);
                   Table t;
                   t.id = "evaluations";
                   t.title = "Evaluations in " + redact_location(g.store_path);
                   t.columns = {{"id"},     {"created_at"},  {"status"},      {"model"}, {"framework"},
                                {"device"}, {"trace_level"}, {"batch_sizes"}, {"runs"}};
                   for (const auto& e : service::list_evaluations(*store).evaluations) {
                     std::string batches;
                     for (int b : e.batch_sizes) batches += (batches.empty() ? "" : ",") + std::to_string(b);
                     t.rows.push_back({Cell(e.id), Cell(e.created_at), Cell(e.status),
                                       Cell(e.model_name + " " + e.model_version), Cell(e.framework_name),
                                       Cell(e.device), Cell(e.trace_level), Cell(batches),
                                       Cell(static_cast<std::int64_t>(e.run_count))});
                   }
                   std::cout << render_text(t);
                   return 0;
                 }});
}

}  // namespace xsp::cli
