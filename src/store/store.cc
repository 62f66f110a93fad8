// Store::open() and the location helpers shared by both backends (include/xsp/store/store.h).
#include <regex>
#include <string>

#include "xsp/store/store.h"

#ifdef XSP_WITH_POSTGRES
#include "postgres/pg_internal.h"
#endif

namespace xsp {

std::unique_ptr<Store> open_sqlite_store(const std::filesystem::path& file, StoreAccess access, StoreOptions options);

bool is_postgres_location(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::string redact_location(std::string_view location) {
  if (!is_postgres_location(location)) return std::string(location);
  // user:PASSWORD@host in the authority, and password=... among the query parameters (libpq accepts both).
  static const std::regex userinfo(R"(^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@)");
  static const std::regex param(R"(([?&]password=)[^&]*)");
  std::string out = std::regex_replace(std::string(location), userinfo, "$1:***@");
  return std::regex_replace(out, param, "$1***");
}

bool have_postgres_store() {
#ifdef XSP_WITH_POSTGRES
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Store> Store::open(const std::filesystem::path& file, StoreAccess access, StoreOptions options) {
  if (is_postgres_location(file.native())) {
#ifdef XSP_WITH_POSTGRES
    return pg::open_store(file.native(), access, std::move(options));
#else
    throw StoreError("xsp store " + redact_location(file.native()) +
                     ": this build of XSP has no PostgreSQL support (install libpqxx-dev, e.g. with "
                     "scripts/install-deps.sh, and rebuild); use an SQLite file as --store");
#endif
  }
  return open_sqlite_store(file, access, std::move(options));
}

}  // namespace xsp
