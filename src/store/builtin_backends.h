// The backends the store registry (src/store/store.cc) registers on first use. Internal to src/store.
#pragma once

#include <string>
#include <vector>

#include "xsp/store/backend.h"

namespace xsp {

/// The location prefixes of PostgreSQL (libpq connection URIs); is_postgres_location() and the backend use them.
inline const std::vector<std::string>& postgres_schemes() {
  static const std::vector<std::string> schemes{"postgresql://", "postgres://"};
  return schemes;
}

/// The SQLite backend, the default (src/store/sqlite_store.cc).
StoreBackend sqlite_store_backend();

#ifdef XSP_WITH_POSTGRES
/// The PostgreSQL backend (src/store/postgres/postgres_store.cc), in builds with libpqxx only.
StoreBackend postgres_store_backend();
#endif

}  // namespace xsp
