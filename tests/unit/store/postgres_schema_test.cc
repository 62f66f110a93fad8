// The PostgreSQL schema generated from the declaration (include/xsp/store/schema.h) is the one the hand-written steps
// made (tests/unit/store/schema/postgres_steps.sql, frozen): a new database, and databases of every older version
// migrated, have the same columns (types, nullability, defaults, identity), constraints and indexes, as the catalog
// describes them.
#include <gtest/gtest.h>

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "pg_test_db.h"
#include "schema_fixtures.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

// The schema of `url`'s public tables as the catalog describes it, a line per column, constraint and index.
std::string catalog(const std::string& url) {
  pqxx::connection c(url);
  pqxx::read_transaction tx(c);
  std::string out;
  for (const auto& row : tx.exec(
           "SELECT table_name, ordinal_position, column_name, data_type, is_nullable, coalesce(column_default, ''), "
           "is_identity, coalesce(identity_generation, '') FROM information_schema.columns "
           "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position")) {
    out += "column";
    for (const auto& f : row) out += std::string(" | ") + f.c_str();
    out += "\n";
  }
  for (const auto& row :
       tx.exec("SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
               "WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2")) {
    out += "constraint";
    for (const auto& f : row) out += std::string(" | ") + f.c_str();
    out += "\n";
  }
  for (const auto& row :
       tx.exec("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2")) {
    out += "index";
    for (const auto& f : row) out += std::string(" | ") + f.c_str();
    out += "\n";
  }
  return out;
}

void run(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  tx.exec(sql);
}

class PostgresSchema : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = testing::pg_admin_url();
    if (!admin_) GTEST_SKIP() << "XSP_TEST_PG_URL is not set: run through ctest (tests/pg/pg_cluster.sh)";
  }
  std::optional<std::string> admin_;
};

TEST_F(PostgresSchema, NewDatabaseEqualsTheHandWrittenSteps) {
  testing::PgTestDatabase hand(*admin_), declared(*admin_);
  run(hand.url(), testing::frozen_store_sql("postgres_steps.sql", 12));
  Store::open(declared.url());
  const std::string expected = catalog(hand.url());
  EXPECT_NE(expected.find("column | runs | 1 | id | bigint | NO |  | YES | BY DEFAULT"), std::string::npos) << expected;
  EXPECT_NE(expected.find("index | runs | runs_trace_id | CREATE UNIQUE INDEX runs_trace_id ON public.runs USING btree "
                          "(trace_id)"),
            std::string::npos)
      << expected;
  EXPECT_EQ(catalog(declared.url()), expected);
}

TEST_F(PostgresSchema, DatabasesOfEveryOlderVersionMigrateToTheSameSchema) {
  testing::PgTestDatabase hand(*admin_);
  run(hand.url(), testing::frozen_store_sql("postgres_steps.sql", 12));
  const std::string expected = catalog(hand.url());
  for (int version = 1; version < 12; ++version) {
    SCOPED_TRACE("version " + std::to_string(version));
    testing::PgTestDatabase old(*admin_);
    run(old.url(), testing::frozen_store_sql("postgres_steps.sql", version));
    run(old.url(),
        "INSERT INTO evaluations (created_at, status, model_name, model_version, manifest_yaml, framework_name, "
        "framework_version, device, scenario, batch_sizes, trace_level, leveled, settings, system) VALUES "
        "('2026-01-01T00:00:00Z', 'complete', 'm', '1', '', 'f', '1', 'cpu', 'offline', '[1]', 'model', 0, '{}', "
        "'{}')");
    auto store = Store::open(old.url());
    EXPECT_EQ(store->schema_version(), 12);
    EXPECT_EQ(store->list().size(), 1u);
    store.reset();
    EXPECT_EQ(catalog(old.url()), expected);
  }
}

}  // namespace
}  // namespace xsp
