// The pieces of the PostgreSQL store that other XSP code built with PostgreSQL shares (the job queue,
// src/queue/postgres): connecting, versioned schemas, and saving an evaluation inside a transaction the caller owns (so
// that a job is marked done in the transaction that publishes its result). Only for code compiled with libpqxx
// (XSP_WITH_POSTGRES; have_postgres_store()); the store itself is opened with Store::open(), which finds the
// PostgreSQL backend in the registry (xsp/store/backend.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "xsp/record/record.h"
#include "xsp/store/store.h"

namespace xsp::pg {

/// Connects with libpq's URI `location`. Throws StoreError naming redact_location(location) and libpq's reason.
std::unique_ptr<pqxx::connection> connect(const std::string& location);

/// A schema step, applied once, in order; a new version is a new entry at the end, never an edit of an old one
/// (databases in the field already ran it). `sql` must outlive the SchemaSteps holding it.
struct Migration {
  int version;
  const char* sql;
};

/// A versioned set of tables: the results store's (table schema_version) or the job queue's (queue_schema_version).
struct SchemaSteps {
  std::string what;           ///< in messages: "schema", "queue schema"
  std::string version_table;  ///< the table holding the version (a constant, never user input)
  std::int64_t lock_key = 0;  ///< pg_advisory_xact_lock key held while migrating
  std::vector<Migration> steps;
  /// Optional, on a database without the version table: refuse what must not be migrated (the store: another
  /// application's `evaluations` table). Throws StoreError naming the location it is given.
  std::function<void(pqxx::transaction_base& tx, const std::string& location)> on_unversioned;
};

/// Brings `steps`' tables to their last version. A database already there is only read (no lock, no write
/// privilege: roles other than the owner open it); otherwise one transaction under `lock_key` (agents starting
/// together migrate once) creates the version table if missing (store_schema::version_table_sql()), applies the
/// missing steps and records the version. Throws StoreError naming
/// redact_location(location) when the database holds a newer version than `steps` knows, or refuses a step.
void migrate(pqxx::connection& connection, const std::string& location, const SchemaSteps& steps);

/// Creates the results schema on an empty database or migrates it to Store::current_schema_version() with the
/// PostgreSQL steps generated from the declaration (xsp/store/schema.h), in one transaction holding advisory lock
/// kSchemaLockKey (so that agents starting together migrate once). Throws StoreError naming `location` (redacted)
/// when the database holds a newer schema, another application's `evaluations` table, or refuses.
void migrate_store_schema(pqxx::connection& connection, const std::string& location);

/// pg_advisory_xact_lock key taken while creating or migrating schemas ("XSP" schema lock).
inline constexpr std::int64_t kSchemaLockKey = 0x585350'0001;

/// The ids that insert_evaluation() gave; published into the record by the caller once the transaction committed.
struct InsertedIds {
  std::int64_t evaluation_id = 0;
  std::vector<std::int64_t> run_ids;  ///< in the record's run order
};
/// Inserts `record` (evaluation, runs, predictions, level overheads) with `tx`, filling in an empty created_at,
/// uuid and run trace ids in `record` first (as SqliteStore::save does). Does not commit. Throws StoreError naming
/// `location` and the part refused.
InsertedIds insert_evaluation(pqxx::dbtransaction& tx, EvaluationRecord& record, const std::string& location);

/// Publishes `ids` into `record` (record.id, each run's id).
void publish_ids(EvaluationRecord& record, const InsertedIds& ids);

}  // namespace xsp::pg
