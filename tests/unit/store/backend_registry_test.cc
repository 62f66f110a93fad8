// The registry of store backends (include/xsp/store/backend.h): Store::open() goes by the location's scheme to the
// registered backend, says when a known backend is not in this build, and refuses conflicting registrations.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "temp_dir.h"
#include "xsp/store/backend.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

TEST(StoreBackendRegistry, BuiltInBackendsByScheme) {
  const std::vector<std::string> names = registered_store_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "SQLite"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "PostgreSQL"), names.end());
  EXPECT_EQ(store_backend_for("results/xsp.db").name, "SQLite");
  EXPECT_EQ(store_backend_for("/abs/path.db").name, "SQLite");
  EXPECT_EQ(store_backend_for("postgresql://xsp@db/xsp").name, "PostgreSQL");
  EXPECT_EQ(store_backend_for("postgres://xsp@db/xsp").name, "PostgreSQL");
  EXPECT_TRUE(store_backend_for("x.db").open);
  // have_postgres_store() is whether the registered PostgreSQL backend can open.
  EXPECT_EQ(have_postgres_store(), static_cast<bool>(store_backend_for("postgresql://h/d").open));
  EXPECT_EQ(is_postgres_location("postgres://h/d"), true);
  EXPECT_EQ(is_postgres_location("postgres.db"), false);
}

TEST(StoreBackendRegistry, OpenGoesToTheBackendOfTheScheme) {
  std::optional<std::string> opened;
  StoreAccess access = StoreAccess::kReadWrite;
  StoreBackend fake;
  fake.name = "Fake (test)";
  fake.schemes = {"fake-test://"};
  fake.open = [&](const std::filesystem::path& location, StoreAccess a, StoreOptions) -> std::unique_ptr<Store> {
    opened = location.string();
    access = a;
    throw StoreError("fake store opened");
  };
  register_store_backend(fake);
  EXPECT_EQ(store_backend_for("fake-test://somewhere").name, "Fake (test)");
  try {
    Store::open("fake-test://somewhere", StoreAccess::kRead);
    ADD_FAILURE() << "expected the fake backend's StoreError";
  } catch (const StoreError& e) {
    EXPECT_STREQ(e.what(), "fake store opened");
  }
  EXPECT_EQ(opened, "fake-test://somewhere");
  EXPECT_EQ(access, StoreAccess::kRead);
  // A file path still goes to SQLite.
  testing::TempDir dir;
  auto store = Store::open(dir.path() / "x.db");
  EXPECT_EQ(store->schema_version(), Store::current_schema_version());
}

TEST(StoreBackendRegistry, KnownButMissingBackendSaysSo) {
  StoreBackend absent;
  absent.name = "Absent (test)";
  absent.schemes = {"absent-test://"};
  absent.missing = "this build of XSP has no Absent support (rebuild with it)";
  register_store_backend(absent);
  try {
    Store::open("absent-test://db");
    ADD_FAILURE() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_STREQ(e.what(), "xsp store absent-test://db: this build of XSP has no Absent support (rebuild with it)");
  }
}

// In a build without libpqxx, a PostgreSQL location says so, without its password.
TEST(StoreBackendRegistry, PostgresLocationWithoutPostgresBuildSaysSo) {
  if (have_postgres_store()) GTEST_SKIP() << "this build has the PostgreSQL store";
  try {
    Store::open("postgresql://xsp:secret@db.example/xsp");
    ADD_FAILURE() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("xsp store postgresql://xsp:***@db.example/xsp: this build of XSP has no PostgreSQL support"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("secret"), std::string::npos) << what;
  }
}

TEST(StoreBackendRegistry, RefusesConflictingRegistrations) {
  auto backend = [](std::string name, std::vector<std::string> schemes) {
    StoreBackend b;
    b.name = std::move(name);
    b.schemes = std::move(schemes);
    b.missing = "not here";
    return b;
  };
  EXPECT_THROW(register_store_backend(backend("Other", {"postgresql://"})), std::invalid_argument);
  EXPECT_THROW(register_store_backend(backend("Second default", {})), std::invalid_argument);
  EXPECT_THROW(register_store_backend(backend("", {"x://"})), std::invalid_argument);
  EXPECT_THROW(register_store_backend(backend("Empty scheme", {""})), std::invalid_argument);
  StoreBackend nothing = backend("Nothing", {"nothing://"});
  nothing.missing.clear();
  EXPECT_THROW(register_store_backend(nothing), std::invalid_argument);
  // The built-in ones are untouched.
  EXPECT_EQ(store_backend_for("postgresql://h/d").name, "PostgreSQL");
  EXPECT_EQ(store_backend_for("x.db").name, "SQLite");
}

}  // namespace
}  // namespace xsp
