// Internal to xsp_report: the JavaScript libraries the report inlines (generated at build time by
// cmake/embed_report_assets.cmake from tools/vega/node_modules, versions pinned in tools/vega/package.json).
#pragma once

#include <string_view>

namespace xsp::report_assets {

/// Whether the libraries were found at build time; when false every text below is empty.
bool available();
std::string_view vega();        ///< vega/build/vega.min.js
std::string_view vega_lite();   ///< vega-lite/build/vega-lite.min.js
std::string_view vega_embed();  ///< vega-embed/build/vega-embed.min.js
/// Name, version and licence text of each library, for the report's header comment.
std::string_view licences();

}  // namespace xsp::report_assets
