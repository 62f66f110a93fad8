// xsp import FILE...: copies the evaluations of other XSP stores (the recovery files `xsp evaluate` writes when the
// store refused a save, or another machine's store) into --store. Evaluations are matched by uuid, so importing a
// file twice stores nothing the second time.
#include <algorithm>
#include <iostream>
#include <system_error>

#include "common.h"

namespace xsp::cli {
namespace {

namespace fs = std::filesystem;

// Opens FILE to read, refusing what is not an XSP store without creating or changing anything: Store::open would
// create a missing file and turn an empty one into a new store.
std::unique_ptr<Store> open_source(const fs::path& file) {
  const std::string name = file.string();
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  if (!fs::exists(status)) throw IoError("xsp import: " + name + ": no such file (expected an XSP store file)");
  if (!fs::is_regular_file(status))
    throw IoError("xsp import: " + name + ": not a regular file (expected an XSP store file)");
  const auto size = fs::file_size(file, ec);
  if (ec) throw IoError("xsp import: " + name + ": " + ec.message());
  if (size == 0) throw StoreError("xsp import: " + name + ": empty file, not an XSP results store");
  try {
    return Store::open(file, StoreAccess::kRead);
  } catch (const StoreError& e) {
    throw StoreError("xsp import: cannot read " + name + " as an XSP results store: " + e.what());
  }
}

int run_import(const Globals& g, const std::vector<std::string>& files) {
  // Every file is checked before anything is imported: a typo in the last name leaves the store as it was.
  std::vector<std::unique_ptr<Store>> sources;
  for (const std::string& f : files) sources.push_back(open_source(f));
  auto target = open_store(g, StoreAccess::kReadWrite);
  for (std::size_t i = 0; i < files.size(); ++i) {
    Store& source = *sources[i];
    std::vector<std::int64_t> ids;
    for (const EvaluationListing& e : source.list()) ids.push_back(e.id);
    std::sort(ids.begin(), ids.end());  // the source's order (list() is newest first)
    for (const std::int64_t id : ids) {
      std::optional<EvaluationRecord> record = source.load(id);
      if (!record) continue;
      const std::string uuid = record->uuid;
      // Ids are the target's; uuid and trace ids stay, they are the evaluation's identity across stores.
      record->id = 0;
      for (RunRecord& run : record->runs) run.id = 0;
      const auto [stored_id, saved] = target->save_if_new(*record);
      if (saved)
        std::cout << "imported evaluation " << record->uuid << " from " << files[i] << " as " << stored_id << "\n";
      else
        std::cout << "skipped evaluation " << uuid << " from " << files[i] << ": already stored as " << stored_id
                  << "\n";
    }
  }
  return 0;
}

}  // namespace

void add_import_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand(
      "import", "copy the evaluations of other XSP store files (e.g. xsp-recovered-UUID.db) into --store");
  auto files = std::make_shared<std::vector<std::string>>();
  sub->add_option("files", *files, "XSP store files; an evaluation already in --store (same uuid) is skipped")
      ->required();
  out.push_back({sub, [&g, files] { return run_import(g, *files); }});
}

}  // namespace xsp::cli
