// Internal to xsp_server: the web UI's page (src/server/ui.cc).
#pragma once

#include <string_view>

namespace xsp::detail {

/// The HTML of GET /: models, evaluations (filters, open, compare), submit and jobs, over the REST API.
std::string_view ui_html();

}  // namespace xsp::detail
