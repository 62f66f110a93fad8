// Store::open(), the registry of store backends (include/xsp/store/backend.h) and the location helpers.
#include "xsp/store/store.h"

#include <algorithm>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>

#include "builtin_backends.h"
#include "xsp/store/backend.h"
#include "xsp/store/schema.h"

namespace xsp {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<StoreBackend> backends;

  // Adds or replaces `b` (under mu).
  void add(StoreBackend b) {
    if (b.name.empty()) throw std::invalid_argument("store backend: empty name");
    if (!b.open && b.missing.empty())
      throw std::invalid_argument("store backend " + b.name + ": neither an opener nor a reason it is missing");
    for (const std::string& s : b.schemes) {
      if (s.empty()) throw std::invalid_argument("store backend " + b.name + ": empty scheme");
    }
    for (const StoreBackend& other : backends) {
      if (other.name == b.name) continue;
      if (b.schemes.empty() && other.schemes.empty())
        throw std::invalid_argument("store backend " + b.name + ": " + other.name + " already opens file paths");
      for (const std::string& s : b.schemes) {
        if (std::find(other.schemes.begin(), other.schemes.end(), s) != other.schemes.end())
          throw std::invalid_argument("store backend " + b.name + ": " + other.name + " already opens " + s);
      }
    }
    auto same = std::find_if(backends.begin(), backends.end(), [&](const StoreBackend& o) { return o.name == b.name; });
    if (same != backends.end())
      *same = std::move(b);
    else
      backends.push_back(std::move(b));
  }
};

// The built-in backends are added here, on first use, rather than by static initializers in their own files: those
// would be dropped by the linker from a static library nothing else references.
Registry& registry() {
  static Registry r;
  static const bool built_in = [] {
    r.add(sqlite_store_backend());
#ifdef XSP_WITH_POSTGRES
    r.add(postgres_store_backend());
#else
    StoreBackend pg;
    pg.name = "PostgreSQL";
    pg.schemes = postgres_schemes();
    pg.missing =
        "this build of XSP has no PostgreSQL support (install libpqxx-dev, e.g. with scripts/install-deps.sh, "
        "and rebuild); use an SQLite file as --store";
    r.add(std::move(pg));
#endif
    return true;
  }();
  (void)built_in;
  return r;
}

}  // namespace

void register_store_backend(StoreBackend backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.add(std::move(backend));
}

StoreBackend store_backend_for(std::string_view location) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const StoreBackend* fallback = nullptr;
  for (const StoreBackend& b : r.backends) {
    if (b.schemes.empty()) fallback = &b;
    for (const std::string& s : b.schemes) {
      if (location.rfind(s, 0) == 0) return b;
    }
  }
  if (fallback == nullptr)
    throw StoreError("xsp store " + redact_location(location) + ": no store backend of this build opens it");
  return *fallback;
}

std::vector<std::string> registered_store_backends() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const StoreBackend& b : r.backends) names.push_back(b.name);
  std::sort(names.begin(), names.end());
  return names;
}

bool is_postgres_location(std::string_view location) {
  for (const std::string& s : postgres_schemes()) {
    if (location.rfind(s, 0) == 0) return true;
  }
  return false;
}

std::string redact_location(std::string_view location) {
  if (!is_postgres_location(location)) return std::string(location);
  // user:PASSWORD@host in the authority, and password=... among the query parameters (libpq accepts both).
  static const std::regex userinfo(R"(^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@)");
  static const std::regex param(R"(([?&]password=)[^&]*)");
  std::string out = std::regex_replace(std::string(location), userinfo, "$1:***@");
  return std::regex_replace(out, param, "$1***");
}

bool have_postgres_store() { return static_cast<bool>(store_backend_for(postgres_schemes().front()).open); }

int Store::current_schema_version() { return store_schema::results_schema().version(); }

std::unique_ptr<Store> Store::open(const std::filesystem::path& file, StoreAccess access, StoreOptions options) {
  const StoreBackend backend = store_backend_for(file.native());
  if (!backend.open) throw StoreError("xsp store " + redact_location(file.native()) + ": " + backend.missing);
  return backend.open(file, access, std::move(options));
}

}  // namespace xsp
