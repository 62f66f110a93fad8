// xsp report ID [ID ...] -o report.html: a self-contained HTML report of stored evaluations (xsp/report/report.h).
#include <iostream>

#include "common.h"
#include "xsp/service/service.h"

namespace xsp::cli {

void add_report_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("report",
                                 "write a self-contained HTML report (charts, tables, timeline) of stored "
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
                   const service::ReportResult report = service::report(*store, {a->ids, a->batch, a->title});
                   write_file_atomically(a->output, report.html);
                   std::cout << "wrote report of " << report.evaluations << " evaluation"
                             << (report.evaluations == 1 ? "" : "s") << " (" << report.charts << " charts, "
                             << report.html.size() << " bytes) to " << a->output << "\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
