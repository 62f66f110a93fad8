// Results store (SPEC §7): one SQLite file by default, or a shared PostgreSQL database (docs/deploy.md). Both
// backends have the same schema, versioned and migrated the same way; writes are transactional.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xsp/record/ceilings.h"
#include "xsp/record/record.h"

namespace xsp {

/// A file could not be created, read or written (an export, a chart); what() names the file and the reason.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Any store failure; what() names the store (file, or PostgreSQL location without its password) and the operation.
class StoreError : public IoError {
 public:
  using IoError::IoError;
};

/// The stored figures of one run that a listing shows (read from typed columns: no blob, no trace is decoded).
struct RunFigures {
  int batch_size = 1;
  TraceLevel trace_level = TraceLevel::kModel;
  double predict_p50_ns =
      std::numeric_limits<double>::quiet_NaN();  ///< stage_latency_ns.predict.p50; NaN when the run has none
  double throughput_samples_per_s = std::numeric_limits<double>::quiet_NaN();  ///< NaN when not recorded
  std::string stability = "not_assessed";  ///< the stored verdict: stable | unstable | not_assessed
};

/// One line of `xsp list`.
struct EvaluationListing {
  std::int64_t id = 0;
  std::string created_at, status, model_name, model_version, framework_name, device, scenario;
  std::string trace_level;
  std::vector<int> batch_sizes;
  std::size_t run_count = 0;
  std::string hostname;          ///< system.host.hostname of the machine it ran on ("" when not recorded)
  EvaluationLabels labels;       ///< name, tags, note (schema 11)
  std::vector<RunFigures> runs;  ///< per run, in the record's order (service::listing_metrics() reads them)
};

/// Which evaluations Store::list(const EvaluationFilter&) returns. Text fields match exactly; "" matches any.
struct EvaluationFilter {
  std::string model;      ///< model name
  std::string framework;  ///< framework name
  std::string device;     ///< "cpu", "cuda" (any ordinal) or "cuda:N" (as stored)
  std::string host;       ///< system.host.hostname
  /// Inclusive bounds on created_at ("2026-11-24T12:00:00Z"), compared as text, which orders ISO 8601 UTC times
  /// correctly; a bare date "2026-11-24" as `until` ends before that day's times (the server widens it to
  /// "2026-11-24T23:59:59Z"). "" = unbounded.
  std::string since, until;
  std::string tag;                   ///< evaluations whose labels have this tag (exact, case-sensitive); "" = any
  std::optional<std::size_t> limit;  ///< at most this many (newest first); nullopt = all
  std::size_t offset = 0;            ///< skip this many of the matching ones first
};

/// What the opener of a store means to do with it.
enum class StoreAccess {
  kReadWrite,  ///< will save: open() checks the file's b-trees and that it can be written (waits up to 5 s for
               ///< another writer)
  /// only reads: an SQLite file is opened read-only (SQLITE_OPEN_READONLY; as file:PATH?immutable=1 when its folder
  /// cannot be written, e.g. a read-only mount, where SQLite could not create the WAL's -wal and -shm files), never
  /// created, and its folder and journal mode are left as they are; never takes a write lock, unless the file's
  /// schema must be migrated first (then on a read-write connection, which needs the file and its folder writable)
  kRead,
};

/// How long a write (save(), save_ceilings(), save_if_new()) waits for another connection's write lock before it
/// fails with SQLite's "database is locked", and what it says meanwhile. A finished evaluation is worth waiting for:
/// another `xsp evaluate` saving gigabytes of traces may hold the lock for a minute.
struct LockWait {
  /// Give up after waiting this long in all (0: fail at once when the lock is taken).
  std::chrono::milliseconds max_wait_ms{120'000};
  /// Call `progress` each time about this much more waiting has passed.
  std::chrono::milliseconds progress_every_ms{5'000};
  /// Optional; called on the saving thread with the time waited so far and max_wait_ms. Exceptions it throws are
  /// swallowed (it runs inside SQLite).
  std::function<void(std::chrono::milliseconds waited_ms, std::chrono::milliseconds max_wait_ms)> progress;
};

/// Options of Store::open().
struct StoreOptions {
  /// Waiting for the write lock when saving. Reads, the open-time checks and migrations wait at most 5 s.
  LockWait save_wait;
};

/// True when `location` is a libpq connection URI ("postgresql://..." or "postgres://..."): Store::open() then opens
/// the PostgreSQL backend. Anything else is an SQLite file path.
bool is_postgres_location(std::string_view location);

/// `location` for messages and logs: a PostgreSQL URI with its password (user:PASSWORD@ or password=...) replaced by
/// "***"; a file path as it is.
std::string redact_location(std::string_view location);

/// True when this build has the PostgreSQL backend (libpqxx found at configure time).
bool have_postgres_store();

/// One stored trace blob read in pieces (Store::open_trace_blob), so that a trace of any size is never held whole.
/// It must not outlive the Store that opened it, and is used by one thread at a time.
class BlobReader {
 public:
  virtual ~BlobReader() = default;
  /// The blob's size in bytes.
  virtual std::uint64_t size_bytes() const = 0;
  /// Copies the next at most `max_bytes` bytes of the blob into `out` and returns how many, 0 only at the end.
  /// Throws StoreError naming the store and the run when the database fails or the run was deleted meanwhile.
  virtual std::size_t read(std::uint8_t* out, std::size_t max_bytes) = 0;
};

/// Results store: evaluations and measured machine ceilings. Schema versioned (table schema_version) and
/// migrated forward on open (version 3 added the ceilings). WAL journal: readers never wait for a writer and a
/// writer never waits for readers (only for another writer: StoreOptions::save_wait).
class Store {
 public:
  /// PostgreSQL (is_postgres_location(file)): connects with libpq's URI, creates or migrates the schema (same
  /// versions as SQLite, in one transaction under an advisory lock so that agents starting together migrate once),
  /// and for kReadWrite checks that the role may insert evaluations. Throws StoreError naming the redacted location
  /// when the server cannot be reached, refuses the role, the schema is newer than this build, or the build has no
  /// PostgreSQL support (have_postgres_store()). LockWait does not apply: PostgreSQL writers do not block each other
  /// on whole-database locks.
  ///
  /// SQLite: opens the store at `file`, or with kReadWrite creates it (parent folders are created), migrating it to
  /// the current schema in one transaction when (and only when) its schema is older (see StoreAccess::kRead). Throws
  /// StoreError naming the file when `file` is empty (SQLite would open a temporary database and lose every result),
  /// exists and is not a regular file (a FIFO, /dev/null, a folder: the message says which, and nothing is created
  /// beside it), cannot be created or opened, is missing (kRead), is not an SQLite database, holds another
  /// application's tables, has a newer schema than this build knows, has an older one and cannot be written (kRead:
  /// the message says how to migrate it), or (kReadWrite) is damaged (`PRAGMA quick_check` finds a b-tree page in
  /// error: the message names the file and SQLite's first findings) or cannot be written, nor its folder (checked
  /// with a write transaction that is rolled back).
  static std::unique_ptr<Store> open(const std::filesystem::path& file, StoreAccess access = StoreAccess::kReadWrite,
                                     StoreOptions options = {});
  virtual ~Store() = default;

  /// The file this store was opened on, as given to open(); for PostgreSQL the redacted location.
  virtual const std::filesystem::path& file() const = 0;
  /// True for the PostgreSQL backend: there is no local file (recovery files go to the current folder).
  virtual bool is_postgres() const { return false; }

  /// Schema version this build writes.
  static int current_schema_version();
  /// Schema version of the opened file (after migration).
  virtual int schema_version() = 0;

  /// Stores a whole evaluation (record, runs, summaries, compressed traces) in one transaction and returns
  /// its id (also set in `record.id` and each run's id). On failure nothing is written; throws StoreError.
  virtual std::int64_t save(EvaluationRecord& record) = 0;
  /// As save(), unless an evaluation with the record's uuid (non-empty) is already stored: then nothing is written
  /// and the record's ids stay as they were. The check and the insert are one write transaction, so two imports of the
  /// same evaluation never both store it. Returns the evaluation's id in this store and whether it was saved now.
  /// Throws StoreError as save().
  virtual std::pair<std::int64_t, bool> save_if_new(EvaluationRecord& record) = 0;
  /// The id of the evaluation with this uuid, std::nullopt when none (or `uuid` is empty). Throws StoreError.
  virtual std::optional<std::int64_t> find_by_uuid(const std::string& uuid) = 0;
  /// Reads back evaluation `id` with runs and traces. std::nullopt if there is none.
  virtual std::optional<EvaluationRecord> load(std::int64_t id) = 0;
  /// As load(), without the traces: each run's `trace` is left empty and no trace blob is read or decoded (read one
  /// with open_trace_blob()). Everything else (record, runs' figures, predictions, level overheads) is as load()
  /// gives it.
  virtual std::optional<EvaluationRecord> load_without_traces(std::int64_t id) = 0;
  /// The stored trace blob (xsp-trace format, xsp/trace/serialize.h) of run `run_id` (RunRecord::id), read in
  /// pieces: SQLite reads it with sqlite3_blob_read (one implicit read transaction, so the pieces are one snapshot),
  /// PostgreSQL with substring() on the bytea, one query per piece (a run's blob never changes once saved; a run
  /// deleted meanwhile fails the next read). nullptr when there is no such run. Throws StoreError.
  virtual std::unique_ptr<BlobReader> open_trace_blob(std::int64_t run_id) = 0;
  /// Every evaluation, newest first (no traces loaded).
  virtual std::vector<EvaluationListing> list() = 0;
  /// The evaluations matching `filter`, newest first (created_at, then id), after `offset`, at most `limit`. One
  /// parameterized query: filter values are never part of the SQL text.
  virtual std::vector<EvaluationListing> list(const EvaluationFilter& filter) = 0;
  /// How many evaluations match `filter` (its limit and offset ignored): the total behind a page of list().
  virtual std::size_t count(const EvaluationFilter& filter) = 0;
  /// Deletes evaluation `id` with its runs, predictions and overheads in one transaction. Returns false when there
  /// is none; throws StoreError when the database refuses (then nothing is deleted).
  virtual bool remove(std::int64_t id) = 0;
  /// Replaces the labels of evaluation `id` with change(its current labels), read and written in one write
  /// transaction (two concurrent `xsp label --tag` never lose a tag). `change` may throw to abort (nothing is
  /// written; the exception passes through). Returns the labels stored, std::nullopt when there is no evaluation
  /// `id`. Throws StoreError when the database refuses (a CHECK of schema 11: name over 120 or note over 4000
  /// characters).
  virtual std::optional<EvaluationLabels> update_labels(
      std::int64_t id, const std::function<EvaluationLabels(const EvaluationLabels&)>& change) = 0;

  /// Stores one measurement of a machine's ceilings (all its ceilings, one transaction) and returns its id. An
  /// empty measured_at is set to now. Throws StoreError naming the ceiling when the database refuses it (empty
  /// hostname/gpu_name, non-positive value, unit other than flop/s, op/s, bytes/s, a name twice).
  virtual std::int64_t save_ceilings(const MachineCeilings& ceilings) = 0;
  /// Every stored measurement, newest first (measured_at, then insertion).
  virtual std::vector<MachineCeilings> list_ceilings() = 0;
  /// The latest measurement with `gpu_uuid` when it is non-empty and stored, else the latest for (hostname,
  /// gpu_name); std::nullopt when none. (select_ceilings() in xsp/analysis/roofline.h applies the same rule, and
  /// the host-only fallback, to list_ceilings().)
  virtual std::optional<MachineCeilings> latest_ceilings(const std::string& hostname, const std::string& gpu_name,
                                                         const std::string& gpu_uuid = "") = 0;
};

}  // namespace xsp
