// xsp delete ID [ID ...]: deletes stored evaluations with their runs, predictions and overheads
// (service::delete_evaluation(), as DELETE /api/v1/evaluations/{id}). Asks nothing: scripts call it.
#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {

void add_delete_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("delete",
                                 "delete stored evaluations (runs, traces, predictions with them); every id must "
                                 "exist, or nothing is deleted");
  auto ids = std::make_shared<std::vector<std::int64_t>>();
  sub->add_option("ids", *ids, "evaluation ids")->required()->expected(1, 1 << 20)->check(CLI::PositiveNumber);
  out.push_back({sub, [&g, ids] {
                   auto store = open_store(g, StoreAccess::kReadWrite, 5);
                   // Every id is checked before any is deleted: a mistyped id among several deletes none.
                   std::vector<std::int64_t> stored;
                   for (const EvaluationListing& e : store->list()) stored.push_back(e.id);
                   std::vector<std::int64_t> wanted;
                   for (std::int64_t id : *ids) {
                     if (std::find(stored.begin(), stored.end(), id) == stored.end())
                       throw std::runtime_error("no evaluation " + std::to_string(id) + " in store " +
                                                store->file().string() + "; nothing was deleted");
                     if (std::find(wanted.begin(), wanted.end(), id) == wanted.end()) wanted.push_back(id);
                   }
                   for (std::int64_t id : wanted) {
                     service::delete_evaluation(*store, id);
                     std::cout << "deleted evaluation " << id << "\n";
                   }
                   return 0;
                 }});
}

}  // namespace xsp::cli
