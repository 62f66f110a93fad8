// A fresh, empty PostgreSQL database per test on the throw-away server that CTest starts (tests/pg/pg_cluster.sh,
// fixture "postgres"): XSP_TEST_PG_URL names its maintenance database. Dropped when the object dies.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <string>

#include "pg_url.h"

namespace xsp::testing {

/// The maintenance URL from XSP_TEST_PG_URL, or std::nullopt (tests then GTEST_SKIP with the reason).
inline std::optional<std::string> pg_admin_url() {
  const char* url = std::getenv("XSP_TEST_PG_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  return std::string(url);
}

class PgTestDatabase {
 public:
  /// Creates database xsp_t_PID_N_RANDOM; `admin_url` as pg_admin_url().
  explicit PgTestDatabase(const std::string& admin_url) : admin_url_(admin_url) {
    static std::atomic<int> counter{0};
    std::random_device rd;
    name_ =
        "xsp_t_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd() % 100000);
    pqxx::connection c(admin_url_);
    pqxx::nontransaction tx(c);
    tx.exec0("CREATE DATABASE " + tx.quote_name(name_));
    url_ = pg_url_for(admin_url_, name_);
  }
  ~PgTestDatabase() {
    try {
      pqxx::connection c(admin_url_);
      pqxx::nontransaction tx(c);
      // Agents or stores a test left open would make DROP wait; cut them first.
      tx.exec_params(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
          name_);
      tx.exec0("DROP DATABASE IF EXISTS " + tx.quote_name(name_));
    } catch (...) {
    }
  }
  PgTestDatabase(const PgTestDatabase&) = delete;
  PgTestDatabase& operator=(const PgTestDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

 private:
  std::string admin_url_, name_, url_;
};

}  // namespace xsp::testing

/// In a TEST body: skips unless XSP_TEST_PG_URL is set, else declares `db` (a PgTestDatabase).
#define XSP_PG_TEST_DATABASE(db)                                                                             \
  const auto db##_admin = ::xsp::testing::pg_admin_url();                                                    \
  if (!db##_admin) GTEST_SKIP() << "XSP_TEST_PG_URL is not set: run through ctest (tests/pg/pg_cluster.sh)"; \
  ::xsp::testing::PgTestDatabase db(*db##_admin)
