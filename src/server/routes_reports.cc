// GET /api/v1/compare and GET /api/v1/report: evaluations side by side and the HTML report, through the service
// (the same calls as `xsp compare` and `xsp report`).
#include "api.h"
#include "xsp/service/service.h"

namespace xsp::detail {
namespace {

std::optional<int> batch_size_param(const httplib::Request& req) {
  if (auto v = param(req, "batch_size")) return static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
  return std::nullopt;
}

}  // namespace

void routes::get_compare(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {"ids", "batch_size"});
  service::CompareRequest c;
  c.ids = id_list(req, 2);
  c.batch_size = batch_size_param(req);
  auto store = api.readers.acquire();
  send_json(res, 200, {{"ids", c.ids}, {"tables", tables_json(service::compare(*store, c))}});
}

// The web UI's evaluation and comparison pages: every analysis as a chart and its table, and the trace timeline of
// one batch (xsp/report/report.h).
void routes::get_report(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {"ids", "batch_size"});
  service::ReportRequest r;
  r.ids = id_list(req, 1);
  r.batch_size = batch_size_param(req);
  // The way back: the list, and from a comparison each evaluation's own page.
  r.links.emplace_back("all evaluations", "/");
  if (r.ids.size() > 1)
    for (std::int64_t id : r.ids)
      r.links.emplace_back("evaluation " + std::to_string(id), "/api/v1/report?ids=" + std::to_string(id));
  service::ReportResult report = [&] {
    auto store = api.readers.acquire();
    return service::report(*store, r);
  }();
  res.status = 200;
  res.set_content(std::move(report.html), "text/html; charset=utf-8");
}

}  // namespace xsp::detail
