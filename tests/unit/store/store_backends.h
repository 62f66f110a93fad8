// Store tests that hold for both backends: a TEST_P fixture whose parameter picks SQLite (a file in a fresh folder)
// or PostgreSQL (a fresh database on the server CTest starts, tests/unit/pg/pg_test_db.h; skipped without one).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "temp_dir.h"
#include "xsp/store/store.h"

#if __has_include("pg_test_db.h")
#include "pg_test_db.h"
#define XSP_TEST_HAVE_PG 1
#endif

namespace xsp::testing {

enum class Backend { kSqlite, kPostgres };

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "sqlite" : "postgres";
}

class StoreBackends : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (!postgres()) return;
#ifdef XSP_TEST_HAVE_PG
    admin_ = pg_admin_url();
    if (!admin_) GTEST_SKIP() << "XSP_TEST_PG_URL is not set: run through ctest (tests/pg/pg_cluster.sh)";
#else
    GTEST_SKIP() << "this build has no PostgreSQL store";
#endif
  }

  bool postgres() const { return GetParam() == Backend::kPostgres; }

  /// Where store `name` lives: a file in this test's folder, or its own fresh database.
  std::string location(const std::string& name = "xsp.db") {
    if (!postgres()) return (dir_.path() / name).string();
#ifdef XSP_TEST_HAVE_PG
    auto& db = databases_[name];
    if (!db) db = std::make_unique<PgTestDatabase>(*admin_);
    return db->url();
#else
    return {};
#endif
  }

  /// How messages name store `name` (the PostgreSQL URL without a password).
  std::string shown(const std::string& name = "xsp.db") { return redact_location(location(name)); }

  std::unique_ptr<Store> open(const std::string& name = "xsp.db", StoreAccess access = StoreAccess::kReadWrite) {
    return Store::open(location(name), access);
  }

  /// Rows in `table` of store `name`, read through a separate connection.
  int rows(const std::string& name, const std::string& table) {
    const std::string sql = "SELECT COUNT(*) FROM " + table;
#ifdef XSP_TEST_HAVE_PG
    if (postgres()) {
      pqxx::connection c(location(name));
      pqxx::read_transaction tx(c);
      return tx.exec1(sql)[0].as<int>();
    }
#endif
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(location(name).c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    int n = -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  }

  /// The first column of the first row `sql` (a test-written query) gives on store `name`, as text; nullopt for
  /// NULL or no row. Read through a separate connection.
  std::optional<std::string> value(const std::string& name, const std::string& sql) {
#ifdef XSP_TEST_HAVE_PG
    if (postgres()) {
      pqxx::connection c(location(name));
      pqxx::read_transaction tx(c);
      const pqxx::result r = tx.exec(sql);
      if (r.empty() || r[0][0].is_null()) return std::nullopt;
      return r[0][0].as<std::string>();
    }
#endif
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(location(name).c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    std::optional<std::string> out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }

  /// Runs `sql` (no parameters: test-written statements only) on store `name` through a separate connection.
  void exec(const std::string& name, const std::string& sql) {
#ifdef XSP_TEST_HAVE_PG
    if (postgres()) {
      pqxx::connection c(location(name));
      pqxx::work tx(c);
      tx.exec(sql);
      tx.commit();
      return;
    }
#endif
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(location(name).c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    const std::string msg = err != nullptr ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }

  TempDir dir_;
  std::optional<std::string> admin_;
#ifdef XSP_TEST_HAVE_PG
  std::map<std::string, std::unique_ptr<PgTestDatabase>> databases_;
#endif
};

}  // namespace xsp::testing

/// Instantiates the TEST_P tests of `suite` (a class derived from StoreBackends, one per test file: a suite is
/// instantiated once) for both backends.
#define XSP_STORE_BACKENDS_INSTANTIATE(suite)                                                                       \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                                                         \
                           ::testing::Values(::xsp::testing::Backend::kSqlite, ::xsp::testing::Backend::kPostgres), \
                           ::xsp::testing::backend_name)
