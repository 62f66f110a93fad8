// xsp models: the model zoo, one row per framework graph, then the manifest files that could not be used.
#include <algorithm>
#include <iostream>

#include "common.h"
#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"

namespace xsp::cli {

void add_models_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("models", "list the model zoo");
  sub->footer("A manifest that cannot be used (malformed, invalid, unreadable) is listed under 'Problems:' with its\n"
              "file and what is wrong; the other models are listed as usual and the exit status stays 0.");
  out.push_back({sub, [&g] {
                   namespace fs = std::filesystem;
                   // A bad file is reported after the table, never the end of the listing (issue 12).
                   const Zoo scanned = scan_zoo(g.zoo_path);
                   const auto& zoo = scanned.models;
                   Table t;
                   t.id = "models";
                   t.title = "Model zoo (" + g.zoo_path + ")";
                   t.columns = {{"name", ""},     {"version", ""},  {"framework", ""},
                                {"graph", ""},    {"exported", ""}, {"built_in", "in this build"},
                                {"input_shape", ""}, {"source", ""}};
                   const auto built = registered_predictors();
                   for (const auto& m : zoo) {
                     std::string shape;
                     for (long d : m.inputs.front().dimensions) shape += (shape.empty() ? "" : "x") + std::to_string(d);
                     auto attr = [&](const std::string& k) {
                       return m.attributes.count(k) ? m.attributes.at(k) : std::string();
                     };
                     // One row per framework graph: what `xsp evaluate NAME --framework F` would load.
                     for (const auto& graph : m.graphs) {
                       const bool first = &graph == &m.graphs.front();
                       const bool in_build = std::find(built.begin(), built.end(), graph.framework) != built.end();
                       t.rows.push_back({Cell(first ? m.name : std::string()), Cell(first ? m.version : std::string()),
                                         Cell(graph.framework + " " + graph.constraint), Cell(graph.graph_path),
                                         Cell(std::string(fs::exists(m.resolved_graph_path(graph.framework)) ? "yes" : "no")),
                                         Cell(std::string(in_build ? "yes" : "no")), Cell(first ? shape : std::string()),
                                         Cell(first ? attr("source") : std::string())});
                     }
                   }
                   std::string names;
                   for (const auto& n : built) names += (names.empty() ? "" : ", ") + n;
                   t.notes.push_back("predictors in this build: " + (names.empty() ? std::string("none") : names));
                   t.notes.push_back("export missing models with: /usr/bin/python3 scripts/export_zoo.py --models NAME");
                   std::cout << render_text(t);
                   if (!scanned.problems.empty()) {
                     std::cout << "\nProblems: " << scanned.problems.size() << " manifest file"
                               << (scanned.problems.size() == 1 ? "" : "s")
                               << " of the zoo could not be used (fix or remove them):\n";
                     for (const auto& p : scanned.problems) {
                       std::string line = p.message;  // names the file (and line and field when known)
                       std::replace(line.begin(), line.end(), '\n', ' ');
                       std::cout << "  " << line << "\n";
                     }
                   }
                   return 0;
                 }});
}

}  // namespace xsp::cli
