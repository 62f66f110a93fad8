// PostgreSQL store: replaced by the implementation on branch issue14-pgstore.
#include <stdexcept>

#include "pg_internal.h"

namespace xsp::pg {
std::unique_ptr<Store> open_store(const std::string& location, StoreAccess, StoreOptions) {
  throw StoreError("xsp store " + redact_location(location) + ": PostgreSQL store not built yet");
}
}  // namespace xsp::pg
