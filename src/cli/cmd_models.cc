// xsp models: the model zoo, one row per framework graph, then the manifest files that could not be used.
#include <algorithm>
#include <iostream>

#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {

void add_models_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("models", "list the model zoo");
  sub->footer(
      "A manifest that cannot be used (malformed, invalid, unreadable) is listed under 'Problems:' with its\n"
      "file and what is wrong; the other models are listed as usual and the exit status stays 0.");
  out.push_back({sub, [&g] {
                   // A bad file is reported after the table, never the end of the listing (issue 12).
                   const service::ModelListing listing = service::list_models(g.zoo_path);
                   Table t;
                   t.id = "models";
                   t.title = "Model zoo (" + g.zoo_path + ")";
                   t.columns = {{"name", ""},        {"version", ""},  {"framework", ""},
                                {"graph", ""},       {"exported", ""}, {"built_in", "in this build"},
                                {"input_shape", ""}, {"source", ""}};
                   auto yes_no = [](bool b) { return Cell(std::string(b ? "yes" : "no")); };
                   for (const service::ModelEntry& m : listing.models) {
                     std::string shape;
                     if (!m.input_dimensions.empty())
                       for (long d : m.input_dimensions.front())
                         shape += (shape.empty() ? "" : "x") + std::to_string(d);
                     const auto source = m.attributes.find("source");
                     // One row per framework graph: what `xsp evaluate NAME --framework F` would load.
                     for (const service::ModelFramework& f : m.frameworks) {
                       const bool first = &f == &m.frameworks.front();
                       t.rows.push_back({Cell(first ? m.name : std::string()), Cell(first ? m.version : std::string()),
                                         Cell(f.name + " " + f.constraint), Cell(f.graph), yes_no(f.exported),
                                         yes_no(f.in_this_build), Cell(first ? shape : std::string()),
                                         Cell(first && source != m.attributes.end() ? source->second : std::string())});
                     }
                   }
                   std::string names;
                   for (const auto& n : listing.predictors_in_this_build) names += (names.empty() ? "" : ", ") + n;
                   t.notes.push_back("predictors in this build: " + (names.empty() ? std::string("none") : names));
                   t.notes.push_back(
                       "export missing models with: /usr/bin/python3 scripts/export_zoo.py --models NAME");
                   std::cout << render_text(t);
                   if (!listing.problems.empty()) {
                     std::cout << "\nProblems: " << listing.problems.size() << " manifest file"
                               << (listing.problems.size() == 1 ? "" : "s")
                               << " of the zoo could not be used (fix or remove them):\n";
                     for (const auto& p : listing.problems) {
                       std::string line = p.message;  // names the file (and line and field when known)
                       std::replace(line.begin(), line.end(), '\n', ' ');
                       std::cout << "  " << line << "\n";
                     }
                   }
                   return 0;
                 }});
}

}  // namespace xsp::cli
