// A libpq URI with its database replaced: the test and bench servers' maintenance URL ("postgresql://xsp@/postgres
// ?host=DIR") pointed at another database. Header-only, no test framework, so that bench/ can use it too.
#pragma once

#include <string>

namespace xsp::testing {

/// `url` with its database (the path before any "?") replaced by `database`; the query (host=...) kept.
inline std::string pg_url_for(const std::string& url, const std::string& database) {
  const auto query = url.find('?');
  std::string base = url.substr(0, query);
  const auto slash = base.find('/', base.find("://") + 3);
  base = (slash == std::string::npos ? base : base.substr(0, slash)) + "/" + database;
  return base + (query == std::string::npos ? std::string() : url.substr(query));
}

}  // namespace xsp::testing
