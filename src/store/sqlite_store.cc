// SQLite results store (SPEC §7). One file, WAL journal: `xsp list` reads while an evaluation saves, and an
// evaluation starts while `xsp show` reads. SQLite checkpoints the -wal file into the store and removes it when the
// last connection closes, so a store no process has open is still that one file (copy or mail it as is). Every
// write is one transaction: a failed save() leaves nothing.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "builtin_backends.h"
#include "record_columns.h"
#include "xsp/manifest/files.h"
#include "xsp/store/backend.h"
#include "xsp/store/schema.h"
#include "xsp/store/store.h"
#include "xsp/trace/serialize.h"

namespace xsp {
namespace {

using namespace store_columns;

using store_schema::Dialect;

// The schema this build writes: declared once in src/store/schema.cc, the same versions as the PostgreSQL store.
int current_version() { return store_schema::results_schema().version(); }

/// Owns a prepared statement (finalized on scope exit, also when an error unwinds).
class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

// A REAL column that may be NULL (a figure that does not exist): NaN then, as bind_double() wrote it.
double column_real(sqlite3_stmt* q, int col) {
  return sqlite3_column_type(q, col) == SQLITE_NULL ? kNaN : sqlite3_column_double(q, col);
}

// The WHERE clause of a filtered listing: ?1..?6 are model, framework, device, host, since, until, ?9 a tag; an empty
// value matches any (so that one prepared text serves every combination of filters). Devices are stored as "cpu" or
// "cuda:N": "cuda" matches every ordinal. Tags are a JSON array (schema 11), read with json_each.
constexpr const char* kFilterSql =
    "(?1 = '' OR e.model_name = ?1) AND (?2 = '' OR e.framework_name = ?2) AND (?3 = '' OR e.device = ?3 OR "
    "substr(e.device, 1, length(?3) + 1) = ?3 || ':') AND "
    "(?4 = '' OR json_extract(e.system, '$.host.hostname') = ?4) AND (?5 = '' OR e.created_at >= ?5) AND "
    "(?6 = '' OR e.created_at <= ?6) AND "
    "(?9 = '' OR EXISTS (SELECT 1 FROM json_each(e.tags) AS t WHERE t.value = ?9))";

class SqliteStore final : public Store {
 public:
  SqliteStore(std::filesystem::path file, StoreOptions options) : file_(std::move(file)), options_(std::move(options)) {
    short_wait_.max_wait_ms = std::chrono::milliseconds(5'000);
  }
  ~SqliteStore() override {
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }

  const std::filesystem::path& file() const override { return file_; }

  void open(StoreAccess access) {
    if (file_.empty())
      throw StoreError(
          "xsp store: expected a file path, got an empty one (SQLite would open a temporary database "
          "and lose every result)");
    const bool exists = refuse_other_than_regular_file();
    if (access == StoreAccess::kRead) {
      if (!exists)
        fail("open",
             "no such file (a command that only reads does not create a store; `xsp evaluate` or `xsp import` "
             "does)");
      open_to_read();
    } else {
      const std::filesystem::path parent = file_.parent_path();
      if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec) fail("create parent folder " + parent.string(), ec.message());
      }
      // SQLite writes its -wal and -shm (or -journal) files beside the store: without them nothing can be saved.
      if (!folder_writable())
        fail("open", "its folder " + folder().string() + " cannot be written (" + folder_error_ +
                         "), and SQLite keeps its journal files beside the store, so nothing could be saved; choose "
                         "another --store file");
      open_connection(file_.c_str(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    }
    refuse_foreign_database();
    if (access == StoreAccess::kReadWrite) {
      use_wal();
      check_btrees();
      // Opening a store we cannot write would only fail at the end of a long evaluation; fail now instead. A file
      // of mode 0444 is opened read-only without an error, and in WAL mode BEGIN IMMEDIATE still succeeds on it
      // (the write lock lives in the -shm file): only the first page written says "readonly", so write one.
      if (sqlite3_db_readonly(db_, "main") == 1)
        fail("open",
             "the file can only be read (check its permissions and its folder's), so nothing could be saved "
             "in it; choose another --store file");
      exec("BEGIN IMMEDIATE", "check the store is writable (BEGIN IMMEDIATE)");
      try {
        exec("CREATE TABLE xsp_write_probe (x)", "check the store is writable (write a page)");
      } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
      }
      exec("ROLLBACK", "check the store is writable (ROLLBACK)");
    }
    migrate(access);
  }

  int schema_version() override {
    std::lock_guard lock(mu_);
    return read_schema_version();
  }

  std::int64_t save(EvaluationRecord& record) override {
    std::lock_guard lock(mu_);
    return save_locked(record, false).first;
  }

  std::pair<std::int64_t, bool> save_if_new(EvaluationRecord& record) override {
    std::lock_guard lock(mu_);
    return save_locked(record, true);
  }

  std::optional<std::int64_t> find_by_uuid(const std::string& uuid) override {
    std::lock_guard lock(mu_);
    return id_of_uuid(uuid);
  }

  std::optional<EvaluationRecord> load(std::int64_t id) override { return load_impl(id, true); }
  std::optional<EvaluationRecord> load_without_traces(std::int64_t id) override { return load_impl(id, false); }

  std::unique_ptr<BlobReader> open_trace_blob(std::int64_t run_id) override {
    std::lock_guard lock(mu_);
    const std::string op = "read the trace of run " + std::to_string(run_id);
    sqlite3_blob* blob = nullptr;
    const int rc = sqlite3_blob_open(db_, "main", "runs", "trace", run_id, 0, &blob);
    if (rc != SQLITE_OK) {
      sqlite3_blob_close(blob);  // a handle is set even on failure in some versions; closing nullptr is a no-op
      // No row with that rowid: sqlite3_blob_open says "no such rowid: N" with SQLITE_ERROR.
      const std::string msg = sqlite3_errmsg(db_);
      if (rc == SQLITE_ERROR && msg.rfind("no such rowid", 0) == 0) return nullptr;
      fail(op, msg);
    }
    return std::make_unique<SqliteBlobReader>(*this, blob, op);
  }

 private:
  // An open sqlite3_blob on runs.trace; reads under the store's mutex, as every other use of the connection.
  class SqliteBlobReader final : public BlobReader {
   public:
    SqliteBlobReader(SqliteStore& store, sqlite3_blob* blob, std::string op)
        : store_(store), blob_(blob), size_(static_cast<std::uint64_t>(sqlite3_blob_bytes(blob))), op_(std::move(op)) {}
    ~SqliteBlobReader() override {
      std::lock_guard lock(store_.mu_);
      sqlite3_blob_close(blob_);
    }
    SqliteBlobReader(const SqliteBlobReader&) = delete;
    SqliteBlobReader& operator=(const SqliteBlobReader&) = delete;
    std::uint64_t size_bytes() const override { return size_; }
    std::size_t read(std::uint8_t* out, std::size_t max_bytes) override {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes, size_ - offset_));
      if (n == 0) return 0;
      std::lock_guard lock(store_.mu_);
      const int rc =
          sqlite3_blob_read(blob_, out, static_cast<int>(std::min<std::size_t>(n, INT_MAX)), static_cast<int>(offset_));
      if (rc == SQLITE_ABORT) store_.fail(op_, "the run was deleted or changed while its trace was read");
      if (rc != SQLITE_OK) store_.fail_sqlite(op_);
      offset_ += n;
      return n;
    }

   private:
    SqliteStore& store_;
    sqlite3_blob* blob_;
    std::uint64_t size_, offset_ = 0;
    std::string op_;
  };

  std::optional<EvaluationRecord> load_impl(std::int64_t id, bool traces) {
    std::lock_guard lock(mu_);
    const std::string op = "load evaluation " + std::to_string(id);
    // One read transaction, so an evaluation and its runs are read from the same snapshot.
    exec("BEGIN", op + " (BEGIN)");
    try {
      auto record = read_evaluation(id, op, traces);
      exec("COMMIT", op + " (COMMIT)");
      return record;
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  // save() and save_if_new(), under mu_.
  std::pair<std::int64_t, bool> save_locked(EvaluationRecord& record, bool skip_if_stored) {
    // The uuid and trace ids are given before the transaction and stay in `record` even when the save fails, so that
    // a copy saved elsewhere (evaluate()'s recovery file) is the same evaluation when imported.
    if (record.created_at.empty()) record.created_at = util::utc_now_iso8601();
    if (record.uuid.empty()) record.uuid = random_uuid();
    for (RunRecord& run : record.runs) {
      if (run.trace_id.empty()) run.trace_id = random_trace_id();
    }
    // Ids are only published into `record` once the transaction has committed, so a failed save leaves the
    // caller's record exactly as it was (id 0: "not stored").
    std::vector<std::int64_t> run_ids;
    std::int64_t evaluation_id = 0;
    SaveWait waiting(*this);
    exec("BEGIN IMMEDIATE", "save evaluation (BEGIN IMMEDIATE)");
    try {
      if (skip_if_stored) {
        if (const auto stored = id_of_uuid(record.uuid)) {
          exec("COMMIT", "save evaluation (COMMIT)");
          return {*stored, false};
        }
      }
      evaluation_id = insert_evaluation(record);
      run_ids.reserve(record.runs.size());
      for (std::size_t i = 0; i < record.runs.size(); ++i) {
        run_ids.push_back(insert_run(evaluation_id, record.runs[i], i));
      }
      insert_level_overheads(evaluation_id, record);
      exec("COMMIT", "save evaluation (COMMIT)");
    } catch (...) {
      // ROLLBACK can itself fail when SQLite already rolled back (e.g. on SQLITE_FULL); nothing to add then.
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    record.id = evaluation_id;
    for (std::size_t i = 0; i < run_ids.size(); ++i) record.runs[i].id = run_ids[i];
    return {evaluation_id, true};
  }

  std::optional<std::int64_t> id_of_uuid(const std::string& uuid) {
    if (uuid.empty()) return std::nullopt;
    const std::string op = "find evaluation " + uuid;
    Statement st = prepare("SELECT id FROM evaluations WHERE uuid = ?1 ORDER BY id LIMIT 1", op);
    bind_text(st, 1, uuid, op);
    if (!step(st, op)) return std::nullopt;
    return sqlite3_column_int64(st.get(), 0);
  }

  // Waiting for another writer's lock (sqlite3_busy_handler): saves wait long, everything else up to 5 s.
  static int on_busy(void* self, int count) { return static_cast<SqliteStore*>(self)->wait_for_lock(count); }

  int wait_for_lock(int count) {
    using std::chrono::milliseconds;
    const auto now = std::chrono::steady_clock::now();
    const LockWait& w = *wait_;
    if (count == 0) {  // SQLite counts per locking event: 0 is the first call of a new wait
      busy_since_ = now;
      next_progress_ = w.progress_every_ms;
    }
    const auto waited = std::chrono::duration_cast<milliseconds>(now - busy_since_);
    if (waited >= w.max_wait_ms) return 0;  // SQLite fails the statement with SQLITE_BUSY
    if (w.progress && w.progress_every_ms.count() > 0 && waited >= next_progress_) {
      try {
        w.progress(waited, w.max_wait_ms);
      } catch (...) {
        // An exception must not unwind through SQLite's C frames; a failed progress line is no reason to give up.
      }
      while (next_progress_ <= waited) next_progress_ += w.progress_every_ms;
    }
    // 1, 2, 4 ... 64, then 100 ms: a lock released soon is taken at once, a long wait costs next to no CPU.
    milliseconds sleep(count < 7 ? (1 << count) : 100);
    sleep = std::max(milliseconds(1), std::min(sleep, w.max_wait_ms - waited));
    std::this_thread::sleep_for(sleep);
    return 1;
  }

  // Saves wait with options_.save_wait while this lives.
  class SaveWait {
   public:
    explicit SaveWait(SqliteStore& s) : s_(s) { s_.wait_ = &s_.options_.save_wait; }
    ~SaveWait() { s_.wait_ = &s_.short_wait_; }
    SaveWait(const SaveWait&) = delete;
    SaveWait& operator=(const SaveWait&) = delete;

   private:
    SqliteStore& s_;
  };

  // PRAGMA quick_check reads every page of every b-tree and checks its structure (page types, cell pointers, key
  // order, overflow chains, free-list), which covers every page a save can touch; it skips integrity_check's
  // comparison of each index entry with its table row. Cost: reading the file once (bench/bench_store_check: a
  // 300 MB store takes 0.1 s from the page cache, 1.5 s from disk). A save into a damaged file can spread the damage
  // or fail half-way through the writes of a finished evaluation, so a damaged store is refused before the first
  // batch.
  void check_btrees() {
    const std::string op = "check the file's structure (PRAGMA quick_check)";
    Statement st = prepare("PRAGMA quick_check(5)", op);
    std::vector<std::string> findings;
    while (step(st, op)) findings.push_back(text(st.get(), 0));
    if (findings.size() == 1 && findings[0] == "ok") return;
    std::string joined;
    for (const std::string& f : findings) joined += (joined.empty() ? "" : "; ") + f;
    fail("open", "the file is damaged, refusing to save into it (PRAGMA quick_check: " + joined +
                     "); save to another file with --store, and restore this one from a backup or rescue its "
                     "contents with `sqlite3 " +
                     file_.string() + " .recover`");
  }

 public:
  std::int64_t save_ceilings(const MachineCeilings& m) override {
    std::lock_guard lock(mu_);
    const std::string op = "save ceilings of " + m.gpu_name + " on host " + m.hostname;
    SaveWait waiting(*this);
    exec("BEGIN IMMEDIATE", op + " (BEGIN IMMEDIATE)");
    try {
      Statement st = prepare(
          "INSERT INTO machine_ceilings (hostname, gpu_name, gpu_uuid, measured_at, clocks_note) "
          "VALUES (?1, ?2, ?3, ?4, ?5)",
          op);
      bind_text(st, 1, m.hostname, op);
      bind_text(st, 2, m.gpu_name, op);
      bind_text(st, 3, m.gpu_uuid, op);
      bind_text(st, 4, m.measured_at.empty() ? util::utc_now_iso8601() : m.measured_at, op);
      bind_text(st, 5, m.clocks_note, op);
      if (step(st, op)) fail(op, "INSERT returned a row");
      const std::int64_t id = sqlite3_last_insert_rowid(db_);
      Statement cs = prepare(
          "INSERT INTO ceilings (machine_ceilings_id, position, name, value, unit, method) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
          op);
      for (std::size_t i = 0; i < m.ceilings.size(); ++i) {
        const Ceiling& c = m.ceilings[i];
        const std::string cop = op + ": ceiling '" + c.name + "' = " + std::to_string(c.value) + " " + c.unit;
        sqlite3_reset(cs.get());
        bind_int(cs, 1, id, cop);
        bind_int(cs, 2, static_cast<std::int64_t>(i), cop);
        bind_text(cs, 3, c.name, cop);
        bind_double(cs, 4, c.value, cop);
        bind_text(cs, 5, c.unit, cop);
        bind_text(cs, 6, c.method, cop);
        if (step(cs, cop)) fail(cop, "INSERT returned a row");
      }
      exec("COMMIT", op + " (COMMIT)");
      return id;
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::vector<MachineCeilings> list_ceilings() override {
    std::lock_guard lock(mu_);
    return read_ceilings("", {}, false);
  }

  std::optional<MachineCeilings> latest_ceilings(const std::string& hostname, const std::string& gpu_name,
                                                 const std::string& gpu_uuid) override {
    std::lock_guard lock(mu_);
    if (!gpu_uuid.empty()) {
      auto by_uuid = read_ceilings("gpu_uuid = ?1", {gpu_uuid}, true);
      if (!by_uuid.empty()) return std::move(by_uuid.front());
    }
    auto found = read_ceilings("hostname = ?1 AND gpu_name = ?2", {hostname, gpu_name}, true);
    if (found.empty()) return std::nullopt;
    return std::move(found.front());
  }

  std::vector<EvaluationListing> list() override { return list(EvaluationFilter{}); }

  std::vector<EvaluationListing> list(const EvaluationFilter& filter) override {
    std::lock_guard lock(mu_);
    const std::string op = "list evaluations";
    // LIMIT -1 is SQLite's "no limit"; every filter value is a bound parameter.
    Statement st = prepare(
        "SELECT e.id, e.created_at, e.status, e.model_name, e.model_version, e.framework_name, e.device, "
        "e.scenario, e.trace_level, e.batch_sizes, "
        "(SELECT COUNT(*) FROM runs r WHERE r.evaluation_id = e.id), "
        "COALESCE(json_extract(e.system, '$.host.hostname'), ''), e.name, e.tags, e.note "
        "FROM evaluations e WHERE " +
            std::string(kFilterSql) + " ORDER BY e.created_at DESC, e.id DESC LIMIT ?7 OFFSET ?8",
        op);
    bind_filter(st, filter, op);
    bind_int(st, 7, filter.limit ? static_cast<std::int64_t>(std::min<std::size_t>(*filter.limit, INT64_MAX)) : -1, op);
    bind_int(st, 8, static_cast<std::int64_t>(std::min<std::size_t>(filter.offset, INT64_MAX)), op);
    std::vector<EvaluationListing> out;
    while (step(st, op)) {
      EvaluationListing l;
      sqlite3_stmt* s = st.get();
      l.id = sqlite3_column_int64(s, 0);
      l.created_at = text(s, 1);
      l.status = text(s, 2);
      l.model_name = text(s, 3);
      l.model_version = text(s, 4);
      l.framework_name = text(s, 5);
      l.device = text(s, 6);
      l.scenario = text(s, 7);
      l.trace_level = text(s, 8);
      const std::string what = op + ": batch_sizes of evaluation " + std::to_string(l.id);
      try {
        l.batch_sizes = parse_json(text(s, 9), what).get<std::vector<int>>();
      } catch (const nlohmann::json::exception& e) {
        fail(what, e.what());
      }
      l.run_count = static_cast<std::size_t>(sqlite3_column_int64(s, 10));
      l.hostname = text(s, 11);
      l.labels = labels_from(text(s, 12), text(s, 13), text(s, 14), op + ": evaluation " + std::to_string(l.id));
      out.push_back(std::move(l));
    }
    read_run_figures(out, op);
    return out;
  }

  std::size_t count(const EvaluationFilter& filter) override {
    std::lock_guard lock(mu_);
    const std::string op = "count evaluations";
    Statement st = prepare("SELECT COUNT(*) FROM evaluations e WHERE " + std::string(kFilterSql), op);
    bind_filter(st, filter, op);
    if (!step(st, op)) fail(op, "COUNT returned no row");
    return static_cast<std::size_t>(sqlite3_column_int64(st.get(), 0));
  }

  std::optional<EvaluationLabels> update_labels(
      std::int64_t id, const std::function<EvaluationLabels(const EvaluationLabels&)>& change) override {
    std::lock_guard lock(mu_);
    const std::string op = "label evaluation " + std::to_string(id);
    // BEGIN IMMEDIATE: the read and the write are one transaction, so a concurrent label is not lost.
    exec("BEGIN IMMEDIATE", op + " (BEGIN IMMEDIATE)");
    try {
      Statement st = prepare("SELECT name, tags, note FROM evaluations WHERE id = ?1", op);
      bind_int(st, 1, id, op);
      if (!step(st, op)) {
        exec("COMMIT", op + " (COMMIT)");
        return std::nullopt;
      }
      const EvaluationLabels now = labels_from(text(st.get(), 0), text(st.get(), 1), text(st.get(), 2), op);
      EvaluationLabels next = change(now);
      Statement up = prepare("UPDATE evaluations SET name = ?2, tags = ?3, note = ?4 WHERE id = ?1", op);
      bind_int(up, 1, id, op);
      bind_text(up, 2, next.name, op);
      bind_text(up, 3, nlohmann::json(next.tags).dump(), op);
      bind_text(up, 4, next.note, op);
      if (step(up, op)) fail(op, "UPDATE returned a row");
      exec("COMMIT", op + " (COMMIT)");
      return next;
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  bool remove(std::int64_t id) override {
    std::lock_guard lock(mu_);
    const std::string op = "delete evaluation " + std::to_string(id);
    exec("BEGIN IMMEDIATE", op + " (BEGIN IMMEDIATE)");
    try {
      // Runs, predictions and level overheads go with it: ON DELETE CASCADE (foreign_keys is on per connection).
      Statement st = prepare("DELETE FROM evaluations WHERE id = ?1", op);
      bind_int(st, 1, id, op);
      if (step(st, op)) fail(op, "DELETE returned a row");
      const bool deleted = sqlite3_changes(db_) > 0;
      exec("COMMIT", op + " (COMMIT)");
      return deleted;
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& operation, const std::string& message) const {
    throw StoreError("xsp store " + file_.string() + ": " + operation + ": " + message);
  }
  [[noreturn]] void fail_sqlite(const std::string& operation) const {
    fail(operation, db_ != nullptr ? sqlite3_errmsg(db_) : "no database handle");
  }

  void exec(const std::string& sql, const std::string& operation) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err != nullptr ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      fail(operation, msg);
    }
  }

  Statement prepare(const std::string& sql, const std::string& operation) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
      sqlite3_finalize(stmt);
      fail_sqlite(operation);
    }
    return Statement(stmt);
  }

  /// Steps once: true when a row is ready, false when done; StoreError on any error.
  bool step(Statement& st, const std::string& operation) {
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail_sqlite(operation);
  }

  static std::string text(sqlite3_stmt* s, int col) {
    const auto* p = sqlite3_column_text(s, col);
    return p != nullptr
               ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s, col)))
               : std::string();
  }

  nlohmann::json parse_json(const std::string& text, const std::string& what) const {
    try {
      return nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      fail(what, std::string("invalid JSON: ") + e.what());
    }
  }

  void bind_text(Statement& st, int i, const std::string& v, const std::string& op) {
    if (sqlite3_bind_text(st.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) != SQLITE_OK)
      fail_sqlite(op);
  }
  void bind_int(Statement& st, int i, std::int64_t v, const std::string& op) {
    if (sqlite3_bind_int64(st.get(), i, v) != SQLITE_OK) fail_sqlite(op);
  }
  void bind_filter(Statement& st, const EvaluationFilter& f, const std::string& op) {
    bind_text(st, 1, f.model, op);
    bind_text(st, 2, f.framework, op);
    bind_text(st, 3, f.device, op);
    bind_text(st, 4, f.host, op);
    bind_text(st, 5, f.since, op);
    bind_text(st, 6, f.until, op);
    bind_text(st, 9, f.tag, op);
  }

  // The labels columns of schema 11 (tags: a JSON array of strings).
  EvaluationLabels labels_from(std::string name, const std::string& tags, std::string note, const std::string& op) {
    EvaluationLabels l;
    l.name = std::move(name);
    l.note = std::move(note);
    try {
      l.tags = parse_json(tags, op + ": tags").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
      fail(op + ": tags", e.what());
    }
    return l;
  }

  // Each listed evaluation's run figures, from typed columns and the predict stage's p50 inside stage_latency_ns
  // (json_extract reads it without parsing the rest); no blob is read.
  void read_run_figures(std::vector<EvaluationListing>& listings, const std::string& op) {
    Statement st = prepare(
        "SELECT batch_size, trace_level, throughput_samples_per_s, json_extract(stage_latency_ns, '$.predict.p50'), "
        "stability FROM runs WHERE evaluation_id = ?1 ORDER BY id",
        op);
    for (EvaluationListing& l : listings) {
      sqlite3_reset(st.get());
      bind_int(st, 1, l.id, op);
      while (step(st, op)) {
        sqlite3_stmt* q = st.get();
        RunFigures f;
        f.batch_size = sqlite3_column_int(q, 0);
        f.trace_level = trace_level_from(text(q, 1), op + ": run of evaluation " + std::to_string(l.id));
        f.throughput_samples_per_s = column_real(q, 2);
        f.predict_p50_ns = column_real(q, 3);
        f.stability = text(q, 4);
        l.runs.push_back(std::move(f));
      }
    }
  }
  void bind_double(Statement& st, int i, double v, const std::string& op) {
    // SQLite stores NaN as NULL on its own; do it explicitly so reading back knows NULL means NaN.
    const int rc = std::isnan(v) ? sqlite3_bind_null(st.get(), i) : sqlite3_bind_double(st.get(), i, v);
    if (rc != SQLITE_OK) fail_sqlite(op);
  }
  void bind_null(Statement& st, int i, const std::string& op) {
    if (sqlite3_bind_null(st.get(), i) != SQLITE_OK) fail_sqlite(op);
  }
  void bind_blob(Statement& st, int i, const std::vector<std::uint8_t>& v, const std::string& op) {
    // An empty vector must still be a (zero-length) blob, not NULL: the columns are NOT NULL.
    const int rc = v.empty() ? sqlite3_bind_zeroblob(st.get(), i, 0)
                             : sqlite3_bind_blob64(st.get(), i, v.data(), v.size(), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) fail_sqlite(op);
  }

  // A FIFO, a device (/dev/null), a folder or a socket given as the store is refused before SQLite opens it: it would
  // block on the FIFO, or open /dev/null as an empty database and, as root, create /dev/null-journal beside it.
  // Returns whether the file exists.
  bool refuse_other_than_regular_file() const {
    struct stat st {};
    if (::stat(file_.c_str(), &st) != 0) {
      if (errno == ENOENT) return false;
      fail("open", std::generic_category().message(errno));
    }
    if (!S_ISREG(st.st_mode))
      fail("open", "not a regular file (it is " + file_kind(st.st_mode) +
                       "); a store is an SQLite file: choose another --store file");
    return true;
  }

  std::filesystem::path folder() const {
    return file_.parent_path().empty() ? std::filesystem::path(".") : file_.parent_path();
  }

  // Whether this process may create files in the store's folder (access(2): a read-only file system says EROFS even
  // to root); why not in folder_error_.
  bool folder_writable() {
    if (::faccessat(AT_FDCWD, folder().c_str(), W_OK, AT_EACCESS) == 0) return true;
    folder_error_ = std::generic_category().message(errno);
    return false;
  }

  void open_connection(const char* name, int flags) {
    if (db_ != nullptr) {
      sqlite3_close_v2(db_);
      db_ = nullptr;
    }
    const int rc = sqlite3_open_v2(name, &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      // sqlite3_open_v2 may hand back a handle even on failure; its message is the useful part.
      const std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      fail("open", msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    // A second writer (another xsp process on the same file) is waited for instead of failing at once: up to 5 s
    // here and for reads, options_.save_wait when saving (sqlite3_busy_timeout would be one fixed, silent wait).
    sqlite3_busy_handler(db_, &SqliteStore::on_busy, this);
    // foreign_keys must be set outside a transaction and per connection: SQLite's default is off.
    exec("PRAGMA foreign_keys = ON", "enable foreign keys");
  }

  // kRead: SQLITE_OPEN_READONLY, no folder created, journal mode left as it is. A WAL store is read through its -wal
  // and -shm files, which SQLite creates beside it when they are missing; on a read-only mount (or in a folder this
  // user cannot write) it cannot, and every read fails with "unable to open database file" (issue 31). Then, and only
  // then, the file is opened as immutable (URI file:PATH?immutable=1: no locks, no -wal or -shm): nobody can be
  // writing to it meanwhile, as a writer needs those files in that same folder. An -wal left there by a writer that
  // died is not read in that mode (its last transactions are missing from what is shown).
  void open_to_read() {
    open_connection(file_.c_str(), SQLITE_OPEN_READONLY);
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return;
    const std::string msg = err != nullptr ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    if (folder_writable()) fail("open", msg);
    open_connection(immutable_uri().c_str(), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    immutable_ = true;
  }

  // file:ABSOLUTE-PATH?immutable=1, with the characters a URI gives a meaning to percent-encoded (RFC 3986).
  std::string immutable_uri() const {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(file_, ec);
    if (ec) abs = file_;
    std::string uri = "file://";
    for (const char c : abs.string()) {
      if (c == '%' || c == '?' || c == '#') {
        static const char* hex = "0123456789ABCDEF";
        uri += '%';
        uri += hex[static_cast<unsigned char>(c) >> 4];
        uri += hex[static_cast<unsigned char>(c) & 0xf];
      } else {
        uri += c;
      }
    }
    return uri + "?immutable=1";
  }

  int read_schema_version() {
    const std::string op = "read schema version";
    Statement exists = prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'", op);
    if (!step(exists, op)) return 0;
    Statement st = prepare("SELECT MAX(version) FROM schema_version", op);
    if (!step(st, op) || sqlite3_column_type(st.get(), 0) == SQLITE_NULL) return 0;
    return sqlite3_column_int(st.get(), 0);
  }

  // A SQLite file of another application (tables, no schema_version) is refused: adding XSP's tables to it would
  // change someone else's database. An empty file, or one with XSP's schema_version table, is a store.
  void refuse_foreign_database() {
    const std::string op = "open";
    Statement st = prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY name = 'schema_version' DESC, name",
        op);
    if (!step(st, op)) return;  // no table yet: a new store
    const std::string first = text(st.get(), 0);
    if (first == "schema_version") return;
    fail(op, "not an XSP results store: it holds table '" + first +
                 "' and no schema_version table (another application's database?); choose another --store file");
  }

  // WAL persists in the file, so this is a no-op after the first open. A file SQLite can only read stays in its
  // journal mode (reads still work); a rollback-journal store another process holds open switches next time.
  void use_wal() {
    if (sqlite3_db_readonly(db_, "main") == 1) return;
    Statement st = prepare("PRAGMA journal_mode = WAL", "use the WAL journal");
    const int rc = sqlite3_step(st.get());
    if (rc != SQLITE_ROW && rc != SQLITE_DONE && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_READONLY)
      fail_sqlite("use the WAL journal");
  }

  // Reads the version without a transaction of its own (a plain SELECT, no lock beyond it) and takes the write
  // lock only when there is something to migrate; the version is read again under that lock, as another process
  // may have migrated in between. A store opened to read (kRead) is migrated too, on a read-write connection, when it
  // can be written; when it cannot (a read-only mount, a file or folder without write permission), it cannot be read
  // by this build at all and the message says how to migrate it.
  void migrate(StoreAccess access) {
    const int latest = current_version();
    const int seen = read_schema_version();
    if (seen > latest) {
      fail("open", "schema version " + std::to_string(seen) + " is newer than this build of XSP supports (" +
                       std::to_string(latest) + "); use a newer XSP");
    }
    if (seen == latest) return;
    if (access == StoreAccess::kRead) {
      const std::string older = "schema version " + std::to_string(seen) + " is older than this build's (" +
                                std::to_string(latest) + ") and must be migrated before it can be read";
      const std::string how = "; migrate it where it can be written with any xsp command on it, e.g. `xsp --store " +
                              file_.string() + " list` (or on a copy: `cp " + file_.string() +
                              " /tmp/xsp.db && xsp --store /tmp/xsp.db list`)";
      if (immutable_ || !folder_writable())
        fail("open", older + ", but its folder " + folder().string() + " cannot be written (" +
                         (immutable_ && folder_error_.empty() ? std::string("read-only") : folder_error_) + ")" + how);
      open_connection(file_.c_str(), SQLITE_OPEN_READWRITE);
      if (sqlite3_db_readonly(db_, "main") == 1)
        fail("open", older + ", but the file can only be read (check its permissions)" + how);
    }
    exec("BEGIN IMMEDIATE", "migrate schema (BEGIN IMMEDIATE)");
    try {
      const int found = read_schema_version();
      if (found > latest) {
        fail("open", "schema version " + std::to_string(found) + " is newer than this build of XSP supports (" +
                         std::to_string(latest) + "); use a newer XSP");
      }
      if (found < latest) {
        const store_schema::Schema& schema = store_schema::results_schema();
        exec(store_schema::version_table_sql(Dialect::kSqlite, schema.version_table),
             "migrate schema: create " + schema.version_table);
        for (const store_schema::MigrationStep& m : store_schema::results_migrations(Dialect::kSqlite)) {
          if (m.version <= found) continue;
          exec(m.sql, "migrate schema to version " + std::to_string(m.version));
        }
        exec("DELETE FROM schema_version", "migrate schema: record version");
        exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(latest) + ")",
             "migrate schema: record version");
      }
      exec("COMMIT", "migrate schema (COMMIT)");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::int64_t insert_evaluation(const EvaluationRecord& r) {
    const std::string op = "save evaluation of model " + r.model_name;
    Statement st = prepare(
        "INSERT INTO evaluations (created_at, status, model_name, model_version, manifest_yaml, framework_name, "
        "framework_version, device, scenario, batch_sizes, trace_level, leveled, settings, system, uuid, kind, name, "
        "tags, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
        op);
    bind_text(st, 1, r.created_at, op);
    bind_text(st, 2, r.status, op);
    bind_text(st, 3, r.model_name, op);
    bind_text(st, 4, r.model_version, op);
    bind_text(st, 5, r.manifest_yaml, op);
    bind_text(st, 6, r.framework_name, op);
    bind_text(st, 7, r.framework_version, op);
    bind_text(st, 8, r.device, op);
    bind_text(st, 9, r.scenario, op);
    bind_text(st, 10, nlohmann::json(r.batch_sizes).dump(), op);
    bind_text(st, 11, std::string(to_string(r.trace_level)), op);
    bind_int(st, 12, r.leveled ? 1 : 0, op);
    bind_text(st, 13, json_text(r.settings), op);
    bind_text(st, 14, json_text(r.system), op);
    bind_text(st, 15, r.uuid, op);
    if (const auto kind = store_schema::evaluation_kind(r.scenario))
      bind_text(st, 16, *kind, op);
    else if (sqlite3_bind_null(st.get(), 16) != SQLITE_OK)
      fail_sqlite(op);
    bind_text(st, 17, r.labels.name, op);
    bind_text(st, 18, nlohmann::json(r.labels.tags).dump(), op);
    bind_text(st, 19, r.labels.note, op);
    if (step(st, op)) fail(op, "INSERT returned a row");
    return sqlite3_last_insert_rowid(db_);
  }

  std::int64_t insert_run(std::int64_t evaluation_id, const RunRecord& run, std::size_t index) {
    const std::string op = "save run " + std::to_string(index) + " (batch size " + std::to_string(run.batch_size) +
                           ", trace level " + std::string(to_string(run.trace_level)) + ")";
    EncodedRun enc;
    try {
      enc = encode_run(run);
    } catch (const std::exception& e) {
      fail(op + ": encode trace", e.what());
    }

    Statement st = prepare(
        "INSERT INTO runs (evaluation_id, batch_size, trace_level, warmup_iterations, iterations, "
        "throughput_samples_per_s, stage_latency_ns, predict_latency_ns, span_count, unparented_spans, "
        "counters, trace, stability, latency_median_ns, latency_ci95_low_ns, latency_ci95_high_ns, latency_cv, "
        "drift_fraction, warmup_ns, measurement, machine_state, warnings, trace_id, generation, scenario_result, qps, "
        "latency_p99_ns, meets_bound, ttft_p50_ns, ttft_p99_ns, tpot_p50_ns, tpot_p99_ns, output_tokens_per_s) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, "
        "?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33)",
        op);
    bind_int(st, 1, evaluation_id, op);
    bind_int(st, 2, run.batch_size, op);
    bind_text(st, 3, std::string(to_string(run.trace_level)), op);
    bind_int(st, 4, run.warmup_iterations, op);
    bind_int(st, 5, run.iterations, op);
    bind_double(st, 6, run.throughput_samples_per_s, op);
    bind_text(st, 7, enc.stage_latency_ns, op);
    bind_blob(st, 8, enc.predict_latency_ns, op);
    bind_int(st, 9, static_cast<std::int64_t>(run.trace.spans.size()), op);
    bind_int(st, 10, static_cast<std::int64_t>(run.trace.assembly.unparented), op);
    bind_text(st, 11, enc.counters, op);
    bind_blob(st, 12, enc.trace, op);
    const StabilityAssessment& a = run.measurement.stability;
    bind_text(st, 13, std::string(to_string(a.verdict)), op);
    bind_double(st, 14, a.median_ns, op);
    bind_double(st, 15, a.ci95_ns.low, op);
    bind_double(st, 16, a.ci95_ns.high, op);
    bind_double(st, 17, a.cv, op);
    bind_double(st, 18, a.drift_fraction, op);
    bind_int(st, 19, run.measurement.warmup_ns, op);
    bind_text(st, 20, enc.measurement, op);
    bind_text(st, 21, enc.machine_state, op);
    bind_text(st, 22, enc.warnings, op);
    bind_text(st, 23, run.trace_id, op);
    bind_text(st, 24, enc.generation, op);
    if (enc.scenario_result)
      bind_text(st, 25, *enc.scenario_result, op);
    else
      bind_null(st, 25, op);
    bind_double(st, 26, enc.qps, op);
    bind_double(st, 27, enc.latency_p99_ns, op);
    if (enc.meets_bound)
      bind_int(st, 28, *enc.meets_bound, op);
    else
      bind_null(st, 28, op);
    bind_double(st, 29, enc.ttft_p50_ns, op);
    bind_double(st, 30, enc.ttft_p99_ns, op);
    bind_double(st, 31, enc.tpot_p50_ns, op);
    bind_double(st, 32, enc.tpot_p99_ns, op);
    bind_double(st, 33, enc.output_tokens_per_s, op);
    if (step(st, op)) fail(op, "INSERT returned a row");
    const std::int64_t run_id = sqlite3_last_insert_rowid(db_);
    if (!run.predictions.empty()) {
      Statement ps = prepare(
          "INSERT INTO predictions (run_id, position, input_id, top_classes, probabilities, outputs) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
          op + ": predictions");
      for (std::size_t i = 0; i < run.predictions.size(); ++i) {
        const InputPrediction& p = run.predictions[i];
        const std::string pop = op + ": prediction of input '" + p.input_id + "'";
        sqlite3_reset(ps.get());
        bind_int(ps, 1, run_id, pop);
        bind_int(ps, 2, static_cast<std::int64_t>(i), pop);
        bind_text(ps, 3, p.input_id, pop);
        bind_text(ps, 4, nlohmann::json(p.top_classes).dump(), pop);
        bind_blob(ps, 5, floats_to_blob(p.probabilities), pop);
        bind_text(ps, 6, prediction_outputs(p), pop);
        if (step(ps, pop)) fail(pop, "INSERT returned a row");
      }
    }
    return run_id;
  }

  // Ceilings newest first (measured_at, then id). `where` filters machine_ceilings with `params` as ?1, ?2...;
  // `only_latest` stops after the first measurement.
  std::vector<MachineCeilings> read_ceilings(const std::string& where, const std::vector<std::string>& params,
                                             bool only_latest) {
    const std::string op = "read machine ceilings";
    exec("BEGIN", op + " (BEGIN)");
    try {
      Statement st = prepare("SELECT id, hostname, gpu_name, gpu_uuid, measured_at, clocks_note FROM machine_ceilings" +
                                 (where.empty() ? std::string() : " WHERE " + where) +
                                 " ORDER BY measured_at DESC, id DESC" + (only_latest ? " LIMIT 1" : ""),
                             op);
      for (std::size_t i = 0; i < params.size(); ++i) bind_text(st, static_cast<int>(i + 1), params[i], op);
      std::vector<MachineCeilings> out;
      std::vector<std::int64_t> ids;
      while (step(st, op)) {
        sqlite3_stmt* q = st.get();
        ids.push_back(sqlite3_column_int64(q, 0));
        MachineCeilings m;
        m.hostname = text(q, 1);
        m.gpu_name = text(q, 2);
        m.gpu_uuid = text(q, 3);
        m.measured_at = text(q, 4);
        m.clocks_note = text(q, 5);
        out.push_back(std::move(m));
      }
      Statement cs = prepare(
          "SELECT name, value, unit, method FROM ceilings WHERE machine_ceilings_id = ?1 ORDER BY position", op);
      for (std::size_t i = 0; i < out.size(); ++i) {
        sqlite3_reset(cs.get());
        bind_int(cs, 1, ids[i], op);
        while (step(cs, op)) {
          sqlite3_stmt* q = cs.get();
          out[i].ceilings.push_back({text(q, 0), sqlite3_column_double(q, 1), text(q, 2), text(q, 3)});
        }
      }
      exec("COMMIT", op + " (COMMIT)");
      return out;
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  TraceLevel trace_level_from(const std::string& name, const std::string& op) const {
    auto level = parse_trace_level(name);
    if (!level) fail(op, "unknown trace level '" + name + "'");
    return *level;
  }

  // `traces` false: the trace column is not read (NULL in its place) and runs keep an empty trace.
  std::optional<EvaluationRecord> read_evaluation(std::int64_t id, const std::string& op, bool traces = true) {
    Statement st = prepare(
        "SELECT id, created_at, status, model_name, model_version, manifest_yaml, framework_name, "
        "framework_version, device, scenario, batch_sizes, trace_level, leveled, settings, system, uuid, name, tags, "
        "note FROM evaluations WHERE id = ?1",
        op);
    bind_int(st, 1, id, op);
    if (!step(st, op)) return std::nullopt;
    sqlite3_stmt* s = st.get();
    EvaluationRecord r;
    r.id = sqlite3_column_int64(s, 0);
    r.created_at = text(s, 1);
    r.status = text(s, 2);
    r.model_name = text(s, 3);
    r.model_version = text(s, 4);
    r.manifest_yaml = text(s, 5);
    r.framework_name = text(s, 6);
    r.framework_version = text(s, 7);
    r.device = text(s, 8);
    r.scenario = text(s, 9);
    try {
      r.batch_sizes = parse_json(text(s, 10), op + ": batch_sizes").get<std::vector<int>>();
    } catch (const nlohmann::json::exception& e) {
      fail(op + ": batch_sizes", e.what());
    }
    r.trace_level = trace_level_from(text(s, 11), op);
    r.leveled = sqlite3_column_int(s, 12) != 0;
    r.settings = parse_json(text(s, 13), op + ": settings");
    r.system = parse_json(text(s, 14), op + ": system");
    r.uuid = text(s, 15);
    r.labels = labels_from(text(s, 16), text(s, 17), text(s, 18), op);

    // ORDER BY id: runs were inserted in the record's order, so this restores it.
    Statement rs = prepare(
        std::string("SELECT id, batch_size, trace_level, warmup_iterations, iterations, throughput_samples_per_s, "
                    "stage_latency_ns, predict_latency_ns, ") +
            (traces ? "trace" : "NULL") +
            ", measurement, machine_state, warnings, trace_id, generation, scenario_result FROM runs "
            "WHERE evaluation_id = ?1 ORDER BY id",
        op);
    bind_int(rs, 1, id, op);
    while (step(rs, op)) {
      sqlite3_stmt* q = rs.get();
      RunRecord run;
      run.id = sqlite3_column_int64(q, 0);
      const std::string run_op = op + ": run " + std::to_string(run.id);
      run.batch_size = sqlite3_column_int(q, 1);
      run.trace_level = trace_level_from(text(q, 2), run_op);
      run.warmup_iterations = sqlite3_column_int(q, 3);
      run.iterations = sqlite3_column_int(q, 4);
      run.throughput_samples_per_s = column_real(q, 5);
      try {
        // Named, not iterated as a temporary: items() only refers to the json it is called on.
        const nlohmann::json stages = parse_json(text(q, 6), run_op + ": stage_latency_ns");
        for (const auto& [stage, summary] : stages.items()) {
          run.stage_latency_ns[stage] = latency_summary_from_json(summary);
        }
      } catch (const std::exception& e) {
        fail(run_op + ": stage_latency_ns", e.what());
      }
      {
        const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(q, 7));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(q, 7));
        if (n % 8 != 0)
          fail(run_op + ": predict_latency_ns",
               "blob of " + std::to_string(n) + " bytes is not a whole number of doubles");
        if (p != nullptr) run.predict_latency_ns = doubles_from_blob(p, n);
      }
      if (traces) {
        const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(q, 8));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(q, 8));
        std::vector<std::uint8_t> blob =
            p != nullptr ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
        try {
          run.trace = decode_trace(blob);
        } catch (const std::exception& e) {
          fail(run_op + ": decode trace", e.what());
        }
      }
      try {
        run.measurement = run_measurement_from_json(parse_json(text(q, 9), run_op + ": measurement"));
      } catch (const std::invalid_argument& e) {
        fail(run_op + ": measurement", e.what());
      }
      run.machine_state = parse_json(text(q, 10), run_op + ": machine_state");
      try {
        run.warnings = parse_json(text(q, 11), run_op + ": warnings").get<std::vector<std::string>>();
      } catch (const nlohmann::json::exception& e) {
        fail(run_op + ": warnings", e.what());
      }
      run.trace_id = text(q, 12);
      try {
        decode_outcomes(run, text(q, 13),
                        sqlite3_column_type(q, 14) == SQLITE_NULL ? std::nullopt : std::optional(text(q, 14)));
      } catch (const std::invalid_argument& e) {
        fail(run_op, e.what());
      }
      read_predictions(run, run_op);
      r.runs.push_back(std::move(run));
    }
    read_level_overheads(r, op);
    return r;
  }

  void read_level_overheads(EvaluationRecord& r, const std::string& eval_op) {
    const std::string op = eval_op + ": level overheads";
    Statement st = prepare(
        "SELECT batch_size, trace_level, baseline_trace_level, design, rounds, latency_ns, baseline_latency_ns, "
        "overhead_fraction, ci95_low_fraction, ci95_high_fraction, note FROM level_overheads "
        "WHERE evaluation_id = ?1 ORDER BY position",
        op);
    bind_int(st, 1, r.id, op);
    while (step(st, op)) {
      sqlite3_stmt* q = st.get();
      LevelOverhead o;
      o.batch_size = sqlite3_column_int(q, 0);
      o.level = trace_level_from(text(q, 1), op);
      o.baseline = trace_level_from(text(q, 2), op);
      o.design = text(q, 3);
      o.overhead.rounds = static_cast<std::size_t>(sqlite3_column_int64(q, 4));
      o.latency_ns = column_real(q, 5);
      o.baseline_latency_ns = column_real(q, 6);
      o.overhead.overhead_fraction = column_real(q, 7);
      o.overhead.ci95_fraction = {column_real(q, 8), column_real(q, 9)};
      o.note = text(q, 10);
      r.level_overheads.push_back(std::move(o));
    }
  }

  void insert_level_overheads(std::int64_t evaluation_id, const EvaluationRecord& r) {
    const std::string op = "save level overheads of model " + r.model_name;
    Statement st = prepare(
        "INSERT INTO level_overheads (evaluation_id, position, batch_size, trace_level, baseline_trace_level, design, "
        "rounds, latency_ns, baseline_latency_ns, overhead_fraction, ci95_low_fraction, ci95_high_fraction, "
        "significant, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        op);
    for (std::size_t i = 0; i < r.level_overheads.size(); ++i) {
      const LevelOverhead& o = r.level_overheads[i];
      sqlite3_reset(st.get());
      bind_int(st, 1, evaluation_id, op);
      bind_int(st, 2, static_cast<std::int64_t>(i), op);
      bind_int(st, 3, o.batch_size, op);
      bind_text(st, 4, std::string(to_string(o.level)), op);
      bind_text(st, 5, std::string(to_string(o.baseline)), op);
      bind_text(st, 6, o.design, op);
      bind_int(st, 7, static_cast<std::int64_t>(o.overhead.rounds), op);
      bind_double(st, 8, o.latency_ns, op);
      bind_double(st, 9, o.baseline_latency_ns, op);
      bind_double(st, 10, o.overhead.overhead_fraction, op);
      bind_double(st, 11, o.overhead.ci95_fraction.low, op);
      bind_double(st, 12, o.overhead.ci95_fraction.high, op);
      bind_int(st, 13, o.overhead.significant() ? 1 : 0, op);
      bind_text(st, 14, o.note, op);
      if (step(st, op)) fail(op, "INSERT returned a row");
    }
  }

  void read_predictions(RunRecord& run, const std::string& run_op) {
    const std::string op = run_op + ": predictions";
    Statement st = prepare(
        "SELECT input_id, top_classes, probabilities, outputs FROM predictions WHERE run_id = ?1 ORDER BY position",
        op);
    bind_int(st, 1, run.id, op);
    while (step(st, op)) {
      sqlite3_stmt* q = st.get();
      InputPrediction p;
      p.input_id = text(q, 0);
      try {
        p.top_classes = parse_json(text(q, 1), op + " of input '" + p.input_id + "'").get<std::vector<int>>();
      } catch (const nlohmann::json::exception& e) {
        fail(op + " of input '" + p.input_id + "': top_classes", e.what());
      }
      const auto* data = static_cast<const std::uint8_t*>(sqlite3_column_blob(q, 2));
      const auto n = static_cast<std::size_t>(sqlite3_column_bytes(q, 2));
      if (n % 4 != 0)
        fail(op + " of input '" + p.input_id + "'",
             "probabilities blob of " + std::to_string(n) + " bytes is not a whole number of float32");
      if (data != nullptr) p.probabilities = floats_from_blob(data, n);
      try {
        read_prediction_outputs(parse_json(text(q, 3), op + " of input '" + p.input_id + "'"), p);
      } catch (const std::invalid_argument& e) {
        fail(op + " of input '" + p.input_id + "'", e.what());
      }
      run.predictions.push_back(std::move(p));
    }
  }

  std::filesystem::path file_;
  StoreOptions options_;
  LockWait short_wait_;                  // reads, the open-time checks, migrations
  const LockWait* wait_ = &short_wait_;  // the wait in force (SaveWait switches it)
  std::chrono::steady_clock::time_point busy_since_;
  std::chrono::milliseconds next_progress_{0};
  sqlite3* db_ = nullptr;
  bool immutable_ = false;    // kRead on a folder that cannot be written: opened as file:PATH?immutable=1
  std::string folder_error_;  // why folder_writable() said no
  std::mutex mu_;             // one connection: serialize this object's users instead of relying on SQLite's own mode
};

}  // namespace

StoreBackend sqlite_store_backend() {
  StoreBackend b;
  b.name = "SQLite";
  b.open = [](const std::filesystem::path& file, StoreAccess access, StoreOptions options) -> std::unique_ptr<Store> {
    auto store = std::make_unique<SqliteStore>(file, std::move(options));
    store->open(access);
    return store;
  };
  return b;
}

}  // namespace xsp
