// xsp report ID [ID ...] -o report.html: a self-contained HTML report of stored evaluations (xsp/report/report.h).
#include <iostream>

#include "common.h"
#include "xsp/report/report.h"
#include "xsp/store/trace_export.h"

namespace xsp::cli {

void add_report_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("report", "write a self-contained HTML report (charts, tables, timeline) of stored "
                                           "evaluations; two or more are compared side by side");
  struct Args {
    std::vector<std::int64_t> ids;
    std::string output, title;
    std::optional<int> batch;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("ids", a->ids, "evaluation ids")->required()->expected(1, 1 << 20);
  sub->add_option("-o,--output", a->output, "the HTML file to write")->required();
  sub->add_option("--title", a->title, "page title (default: the evaluations' ids, models, frameworks, devices)");
  sub->add_option("--batch-size", a->batch, "only this batch size in the per-batch-size analyses");
  out.push_back({sub, [&g, a] {
                   auto store = open_store(g, StoreAccess::kRead);
                   std::vector<ReportEvaluation> evaluations;
                   for (std::int64_t id : a->ids) {
                     ReportEvaluation e;
                     e.record = load_or_fail(*store, id, g);
                     e.options = analysis_options_for(e.record, *store);
                     e.options.batch_size = a->batch;
                     evaluations.push_back(std::move(e));
                   }
                   ReportOptions options;
                   options.title = a->title;
                   options.compare.batch_size = a->batch;
                   std::size_t charts = 0;
                   const std::string html = render_report(evaluations, options, &charts);
                   write_file_atomically(a->output, html);
                   std::cout << "wrote report of " << evaluations.size() << " evaluation"
                             << (evaluations.size() == 1 ? "" : "s") << " (" << charts << " charts, " << html.size() << " bytes) to " << a->output << "\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
