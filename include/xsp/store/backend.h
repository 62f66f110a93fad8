// Store backends, registered by the location scheme they open (as predictors are by name, xsp/predictor/predictor.h):
// Store::open() asks store_backend_for() and calls its opener, so it names no backend. Built in: "SQLite" for file
// paths (every location no other backend claims) and "PostgreSQL" for "postgresql://" and "postgres://" (in a build
// without libpqxx registered as missing, so that such a location says that this build has no PostgreSQL).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/store/store.h"

namespace xsp {

/// Opens (creating or migrating) the store at `location`, as Store::open() documents. Throws StoreError.
using StoreOpener = std::function<std::unique_ptr<Store>(const std::filesystem::path& location, StoreAccess access,
                                                         StoreOptions options)>;

struct StoreBackend {
  std::string name;  ///< "SQLite", "PostgreSQL": in messages
  /// The location prefixes it opens ("postgresql://"); empty for the default backend, which opens every location no
  /// other backend claims (file paths).
  std::vector<std::string> schemes;
  StoreOpener open;     ///< empty: known, but not in this build
  std::string missing;  ///< when `open` is empty: why, and how to get it (the message of Store::open())
};

/// Registers `backend`, or replaces the one of the same name. Throws std::invalid_argument when its name is empty, it
/// has neither an opener nor a `missing` message, one of its schemes is empty or another backend's, or it is a second
/// default (no schemes) beside another one.
void register_store_backend(StoreBackend backend);

/// The backend that opens `location`: the one with a scheme `location` starts with, else the default one. Throws
/// StoreError naming redact_location(location) when none is registered for it.
StoreBackend store_backend_for(std::string_view location);

/// The registered backends' names, sorted (those without an opener in this build included).
std::vector<std::string> registered_store_backends();

}  // namespace xsp
