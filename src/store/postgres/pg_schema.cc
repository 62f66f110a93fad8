// The PostgreSQL results schema, generated from the declaration (include/xsp/store/schema.h, src/store/schema.cc) as
// the SQLite store's is, and the versioned migration both it and the job queue run; and connecting.
#include <string>
#include <vector>

#include "pg_errors.h"
#include "xsp/store/postgres.h"
#include "xsp/store/schema.h"

namespace xsp::pg {
namespace {

// The version recorded in `steps.version_table` (0: none yet).
int read_version(pqxx::transaction_base& tx, const SchemaSteps& steps, const std::string& location) {
  if (!tx.exec_params1("SELECT to_regclass($1) IS NOT NULL", steps.version_table)[0].as<bool>()) {
    if (steps.on_unversioned) steps.on_unversioned(tx, location);
    return 0;
  }
  const pqxx::row v = tx.exec1("SELECT MAX(version) FROM " + steps.version_table);
  return v[0].is_null() ? 0 : v[0].as<int>();
}

}  // namespace

std::unique_ptr<pqxx::connection> connect(const std::string& location) {
  try {
    return std::make_unique<pqxx::connection>(location);
  } catch (const std::exception& e) {
    fail(location, "connect", first_line(e.what()));
  }
}

void migrate(pqxx::connection& connection, const std::string& location, const SchemaSteps& steps) {
  const int latest = steps.steps.empty() ? 0 : steps.steps.back().version;
  auto refuse_newer = [&](int found) {
    if (found > latest)
      fail(location, "open",
           steps.what + " version " + std::to_string(found) + " is newer than this build of XSP supports (" +
               std::to_string(latest) + "); use a newer XSP");
  };
  try {
    // A plain read first: an up-to-date database (the usual case) takes no lock and needs no write privilege.
    {
      pqxx::read_transaction tx(connection);
      const int seen = read_version(tx, steps, location);
      refuse_newer(seen);
      if (seen == latest) return;
    }
    pqxx::work tx(connection);
    // Agents starting together on an empty database: the first migrates, the others wait here and find it done.
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", steps.lock_key);
    const int found = read_version(tx, steps, location);
    refuse_newer(found);
    if (found < latest) {
      tx.exec0(store_schema::version_table_sql(store_schema::Dialect::kPostgres, steps.version_table));
      for (const Migration& m : steps.steps) {
        if (m.version <= found) continue;
        try {
          tx.exec(m.sql);
        } catch (const pqxx::sql_error& e) {
          fail(location, "migrate " + steps.what + " to version " + std::to_string(m.version), reason(e));
        }
      }
      tx.exec0("DELETE FROM " + steps.version_table);
      tx.exec_params0("INSERT INTO " + steps.version_table + " (version) VALUES ($1)", latest);
    }
    tx.commit();
  } catch (const StoreError&) {
    throw;
  } catch (const pqxx::sql_error& e) {
    fail(location, "migrate " + steps.what, reason(e));
  } catch (const std::exception& e) {
    fail(location, "migrate " + steps.what, first_line(e.what()));
  }
}

void migrate_store_schema(pqxx::connection& connection, const std::string& location) {
  static const SchemaSteps steps = [] {
    const store_schema::Schema& schema = store_schema::results_schema();
    std::vector<Migration> migrations;
    // results_migrations() lives as long as the program: its texts outlive `steps`.
    for (const store_schema::MigrationStep& m : store_schema::results_migrations(store_schema::Dialect::kPostgres))
      migrations.push_back({m.version, m.sql.c_str()});
    return SchemaSteps{
        "schema", schema.version_table, kSchemaLockKey, std::move(migrations),
        [](pqxx::transaction_base& tx, const std::string& location) {
          if (tx.exec1("SELECT to_regclass('evaluations') IS NOT NULL")[0].as<bool>())
            fail(location, "open",
                 "not an XSP results store: it holds a table 'evaluations' and no schema_version table (another "
                 "application's database?); choose another database for --store");
        }};
  }();
  migrate(connection, location, steps);
}

}  // namespace xsp::pg
