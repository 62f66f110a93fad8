// PostgreSQL results store (docs/store.md): the SQLite store's semantics (src/store/sqlite_store.cc) on a shared
// database. One connection per Store, used under a mutex; every value is a bound parameter of exec_params, never
// part of the SQL text; every write is one transaction whose ids are published only after it committed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../builtin_backends.h"
#include "../record_columns.h"
#include "pg_errors.h"
#include "xsp/store/postgres.h"
#include "xsp/store/schema.h"
#include "xsp/trace/serialize.h"

namespace xsp::pg {
namespace {

/// A DOUBLE PRECISION parameter: NaN (a figure that does not exist) is bound as NULL, as the SQLite store does, and
/// every other value with 17 significant digits, which reads back bit-exact.
struct Real {
  double value;
};

}  // namespace
}  // namespace xsp::pg

namespace pqxx {
template <>
struct string_traits<xsp::pg::Real> {
  static constexpr const char* name() noexcept { return "xsp::pg::Real"; }
  static constexpr bool has_null() noexcept { return true; }
  static bool is_null(const xsp::pg::Real& r) { return std::isnan(r.value); }
  static xsp::pg::Real null() { return {std::numeric_limits<double>::quiet_NaN()}; }
  static void from_string(const char str[], xsp::pg::Real& r) { string_traits<double>::from_string(str, r.value); }
  static std::string to_string(const xsp::pg::Real& r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", r.value);
    return buf;
  }
};
}  // namespace pqxx

namespace xsp::pg {
namespace {

using namespace store_columns;

pqxx::binarystring bytes(const std::vector<std::uint8_t>& v) {
  // From a std::string so that an empty vector is an empty BYTEA, not NULL (the columns are NOT NULL).
  return pqxx::binarystring(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
}

std::vector<std::uint8_t> bytes_of(const pqxx::field& f) {
  if (f.is_null()) return {};
  const pqxx::binarystring b(f);
  return std::vector<std::uint8_t>(b.data(), b.data() + b.size());
}

std::string text(const pqxx::field& f) { return f.is_null() ? std::string() : std::string(f.c_str(), f.size()); }

/// A DOUBLE PRECISION column: NULL reads back as NaN (what Real wrote for NaN).
double real(const pqxx::field& f) { return f.is_null() ? kNaN : f.as<double>(); }

nlohmann::json parse_json(const std::string& s, const std::string& location, const std::string& what) {
  try {
    return nlohmann::json::parse(s);
  } catch (const std::exception& e) {
    fail(location, what, std::string("invalid JSON: ") + e.what());
  }
}

TraceLevel trace_level_from(const std::string& name, const std::string& location, const std::string& op) {
  auto level = parse_trace_level(name);
  if (!level) fail(location, op, "unknown trace level '" + name + "'");
  return *level;
}

// The WHERE clause of a filtered listing, as in the SQLite store: $1..$7 are model, framework, device, host, since,
// until, tag; "" matches any. Tags are a JSON array in TEXT (schema 11): jsonb containment of a one-tag array.
// created_at compares in byte order (COLLATE "C") like SQLite, whatever the database's collation. system is TEXT
// holding JSON: hostname is read with the jsonb path operator.
constexpr const char* kFilterSql =
    "($1::text = '' OR e.model_name = $1) AND ($2::text = '' OR e.framework_name = $2) AND "
    "($3::text = '' OR e.device = $3 OR substr(e.device, 1, length($3) + 1) = $3 || ':') AND "
    "($4::text = '' OR (e.system::jsonb #>> '{host,hostname}') = $4) AND "
    "($5::text = '' OR e.created_at COLLATE \"C\" >= $5) AND ($6::text = '' OR e.created_at COLLATE \"C\" <= $6) AND "
    "($7::text = '' OR e.tags::jsonb @> jsonb_build_array($7::text))";

// The labels columns of schema 11 (tags: a JSON array of strings).
EvaluationLabels labels_from(const pqxx::field& name, const pqxx::field& tags, const pqxx::field& note,
                             const std::string& location, const std::string& op) {
  EvaluationLabels l;
  l.name = text(name);
  l.note = text(note);
  try {
    l.tags = parse_json(text(tags), location, op + ": tags").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    fail(location, op + ": tags", e.what());
  }
  return l;
}

std::int64_t insert_run(pqxx::dbtransaction& tx, std::int64_t evaluation_id, const RunRecord& run, std::size_t index,
                        const std::string& location) {
  const std::string op = "save run " + std::to_string(index) + " (batch size " + std::to_string(run.batch_size) +
                         ", trace level " + std::string(to_string(run.trace_level)) + ")";
  EncodedRun enc;
  try {
    enc = encode_run(run);
  } catch (const std::exception& e) {
    fail(location, op + ": encode trace", e.what());
  }
  const StabilityAssessment& a = run.measurement.stability;
  std::int64_t run_id = 0;
  try {
    run_id =
        tx.exec_params1(
              "INSERT INTO runs (evaluation_id, batch_size, trace_level, warmup_iterations, iterations, "
              "throughput_samples_per_s, stage_latency_ns, predict_latency_ns, span_count, unparented_spans, "
              "counters, trace, stability, latency_median_ns, latency_ci95_low_ns, latency_ci95_high_ns, "
              "latency_cv, drift_fraction, warmup_ns, measurement, machine_state, warnings, trace_id, generation, "
              "scenario_result, qps, latency_p99_ns, meets_bound, ttft_p50_ns, ttft_p99_ns, tpot_p50_ns, "
              "tpot_p99_ns, output_tokens_per_s) "
              "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, "
              "$20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33) RETURNING id",
              evaluation_id, run.batch_size, std::string(to_string(run.trace_level)), run.warmup_iterations,
              run.iterations, Real{run.throughput_samples_per_s}, enc.stage_latency_ns, bytes(enc.predict_latency_ns),
              static_cast<std::int64_t>(run.trace.spans.size()),
              static_cast<std::int64_t>(run.trace.assembly.unparented), enc.counters, bytes(enc.trace),
              std::string(to_string(a.verdict)), Real{a.median_ns}, Real{a.ci95_ns.low}, Real{a.ci95_ns.high},
              Real{a.cv}, Real{a.drift_fraction}, static_cast<std::int64_t>(run.measurement.warmup_ns), enc.measurement,
              enc.machine_state, enc.warnings, run.trace_id, enc.generation, enc.scenario_result, Real{enc.qps},
              Real{enc.latency_p99_ns}, enc.meets_bound, Real{enc.ttft_p50_ns}, Real{enc.ttft_p99_ns},
              Real{enc.tpot_p50_ns}, Real{enc.tpot_p99_ns}, Real{enc.output_tokens_per_s})[0]
            .as<std::int64_t>();
  } catch (const pqxx::failure& e) {
    fail(location, op, reason(e));
  }
  for (std::size_t i = 0; i < run.predictions.size(); ++i) {
    const InputPrediction& p = run.predictions[i];
    try {
      tx.exec_params0(
          "INSERT INTO predictions (run_id, position, input_id, top_classes, probabilities, outputs) "
          "VALUES ($1, $2, $3, $4, $5, $6)",
          run_id, static_cast<std::int64_t>(i), p.input_id, nlohmann::json(p.top_classes).dump(),
          bytes(floats_to_blob(p.probabilities)), prediction_outputs(p));
    } catch (const pqxx::failure& e) {
      fail(location, op + ": prediction of input '" + p.input_id + "'", reason(e));
    }
  }
  return run_id;
}

void insert_level_overheads(pqxx::dbtransaction& tx, std::int64_t evaluation_id, const EvaluationRecord& r,
                            const std::string& location) {
  const std::string op = "save level overheads of model " + r.model_name;
  for (std::size_t i = 0; i < r.level_overheads.size(); ++i) {
    const LevelOverhead& o = r.level_overheads[i];
    try {
      tx.exec_params0(
          "INSERT INTO level_overheads (evaluation_id, position, batch_size, trace_level, baseline_trace_level, "
          "design, rounds, latency_ns, baseline_latency_ns, overhead_fraction, ci95_low_fraction, "
          "ci95_high_fraction, significant, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
          evaluation_id, static_cast<std::int64_t>(i), o.batch_size, std::string(to_string(o.level)),
          std::string(to_string(o.baseline)), o.design, static_cast<std::int64_t>(o.overhead.rounds),
          Real{o.latency_ns}, Real{o.baseline_latency_ns}, Real{o.overhead.overhead_fraction},
          Real{o.overhead.ci95_fraction.low}, Real{o.overhead.ci95_fraction.high}, o.overhead.significant() ? 1 : 0,
          o.note);
    } catch (const pqxx::failure& e) {
      fail(location, op, reason(e));
    }
  }
}

class PostgresStore final : public Store {
 public:
  PostgresStore(std::string location, std::unique_ptr<pqxx::connection> connection)
      : location_(std::move(location)), shown_(redact_location(location_)), conn_(std::move(connection)) {}

  const std::filesystem::path& file() const override { return shown_; }
  bool is_postgres() const override { return true; }

  /// kReadWrite: fails now, not at the end of a long evaluation, when the role may not insert evaluations.
  void check_writable() {
    bool may_insert = false;
    try {
      pqxx::read_transaction tx(*conn_);
      may_insert = tx.exec1("SELECT has_table_privilege('evaluations', 'INSERT')")[0].as<bool>();
    } catch (const pqxx::sql_error& e) {
      fail(location_, "open", reason(e));
    }
    if (!may_insert)
      fail(location_, "open",
           "role " + std::string(conn_->username()) +
               " may not INSERT into table evaluations, so nothing could be saved (grant it INSERT on XSP's tables, "
               "or open the store read-only)");
  }

  int schema_version() override {
    return read("read schema version", [](pqxx::read_transaction& tx) {
      const pqxx::row r = tx.exec1("SELECT MAX(version) FROM schema_version");
      return r[0].is_null() ? 0 : r[0].as<int>();
    });
  }

  std::int64_t save(EvaluationRecord& record) override { return save_impl(record, false).first; }
  std::pair<std::int64_t, bool> save_if_new(EvaluationRecord& record) override { return save_impl(record, true); }

  std::optional<std::int64_t> find_by_uuid(const std::string& uuid) override {
    if (uuid.empty()) return std::nullopt;
    return read("find evaluation " + uuid, [&](pqxx::read_transaction& tx) { return id_of_uuid(tx, uuid); });
  }

  std::optional<EvaluationRecord> load(std::int64_t id) override { return load_impl(id, true); }
  std::optional<EvaluationRecord> load_without_traces(std::int64_t id) override { return load_impl(id, false); }

  std::unique_ptr<BlobReader> open_trace_blob(std::int64_t run_id) override {
    const std::string op = "read the trace of run " + std::to_string(run_id);
    const std::optional<std::int64_t> size = read(op, [&](pqxx::read_transaction& tx) -> std::optional<std::int64_t> {
      const pqxx::result r = tx.exec_params("SELECT octet_length(trace) FROM runs WHERE id = $1", run_id);
      if (r.empty()) return std::nullopt;
      return r[0][0].is_null() ? 0 : r[0][0].as<std::int64_t>();
    });
    if (!size) return nullptr;
    return std::make_unique<PgBlobReader>(*this, run_id, static_cast<std::uint64_t>(*size), op);
  }

  std::vector<EvaluationListing> list() override { return list(EvaluationFilter{}); }

  std::vector<EvaluationListing> list(const EvaluationFilter& f) override {
    const std::string op = "list evaluations";
    const std::int64_t limit =
        f.limit ? static_cast<std::int64_t>(std::min<std::size_t>(*f.limit, INT64_MAX)) : INT64_MAX;
    const auto offset = static_cast<std::int64_t>(std::min<std::size_t>(f.offset, INT64_MAX));
    return read(op, [&](pqxx::read_transaction& tx) {
      const pqxx::result rows = tx.exec_params(
          "SELECT e.id, e.created_at, e.status, e.model_name, e.model_version, e.framework_name, e.device, "
          "e.scenario, e.trace_level, e.batch_sizes, (SELECT COUNT(*) FROM runs r WHERE r.evaluation_id = e.id), "
          "COALESCE(e.system::jsonb #>> '{host,hostname}', ''), e.name, e.tags, e.note FROM evaluations e WHERE " +
              std::string(kFilterSql) + " ORDER BY e.created_at COLLATE \"C\" DESC, e.id DESC LIMIT $8 OFFSET $9",
          f.model, f.framework, f.device, f.host, f.since, f.until, f.tag, limit, offset);
      std::vector<EvaluationListing> out;
      for (const pqxx::row& row : rows) {
        EvaluationListing l;
        l.id = row[0].as<std::int64_t>();
        l.created_at = text(row[1]);
        l.status = text(row[2]);
        l.model_name = text(row[3]);
        l.model_version = text(row[4]);
        l.framework_name = text(row[5]);
        l.device = text(row[6]);
        l.scenario = text(row[7]);
        l.trace_level = text(row[8]);
        const std::string what = op + ": batch_sizes of evaluation " + std::to_string(l.id);
        try {
          l.batch_sizes = parse_json(text(row[9]), location_, what).get<std::vector<int>>();
        } catch (const nlohmann::json::exception& e) {
          fail(location_, what, e.what());
        }
        l.run_count = row[10].as<std::size_t>();
        l.hostname = text(row[11]);
        l.labels = labels_from(row[12], row[13], row[14], location_, op + ": evaluation " + std::to_string(l.id));
        out.push_back(std::move(l));
      }
      read_run_figures(tx, out, op);
      return out;
    });
  }

  std::size_t count(const EvaluationFilter& f) override {
    return read("count evaluations", [&](pqxx::read_transaction& tx) {
      return tx
          .exec_params1("SELECT COUNT(*) FROM evaluations e WHERE " + std::string(kFilterSql), f.model, f.framework,
                        f.device, f.host, f.since, f.until, f.tag)[0]
          .as<std::size_t>();
    });
  }

  std::optional<EvaluationLabels> update_labels(
      std::int64_t id, const std::function<EvaluationLabels(const EvaluationLabels&)>& change) override {
    const std::string op = "label evaluation " + std::to_string(id);
    // write() turns every exception into a StoreError; what `change` throws (a refused label) must pass through.
    std::exception_ptr refused;
    auto stored = write(op, [&](pqxx::work& tx) -> std::optional<EvaluationLabels> {
      // FOR UPDATE: a concurrent label of the same evaluation waits for this one, so neither is lost.
      const pqxx::result rows = tx.exec_params("SELECT name, tags, note FROM evaluations WHERE id = $1 FOR UPDATE", id);
      if (rows.empty()) return std::nullopt;
      EvaluationLabels next;
      try {
        next = change(labels_from(rows[0][0], rows[0][1], rows[0][2], location_, op));
      } catch (...) {
        refused = std::current_exception();
        return std::nullopt;
      }
      tx.exec_params0("UPDATE evaluations SET name = $2, tags = $3, note = $4 WHERE id = $1", id, next.name,
                      nlohmann::json(next.tags).dump(), next.note);
      return next;
    });
    if (refused) std::rethrow_exception(refused);
    return stored;
  }

  bool remove(std::int64_t id) override {
    // Runs, predictions and level overheads go with it: ON DELETE CASCADE.
    return write("delete evaluation " + std::to_string(id), [&](pqxx::work& tx) {
      return tx.exec_params("DELETE FROM evaluations WHERE id = $1", id).affected_rows() > 0;
    });
  }

  std::int64_t save_ceilings(const MachineCeilings& m) override {
    const std::string op = "save ceilings of " + m.gpu_name + " on host " + m.hostname;
    return write(op, [&](pqxx::work& tx) {
      const std::int64_t id =
          tx.exec_params1(
                "INSERT INTO machine_ceilings (hostname, gpu_name, gpu_uuid, measured_at, clocks_note) "
                "VALUES ($1, $2, $3, $4, $5) RETURNING id",
                m.hostname, m.gpu_name, m.gpu_uuid, m.measured_at.empty() ? util::utc_now_iso8601() : m.measured_at,
                m.clocks_note)[0]
              .as<std::int64_t>();
      for (std::size_t i = 0; i < m.ceilings.size(); ++i) {
        const Ceiling& c = m.ceilings[i];
        try {
          tx.exec_params0(
              "INSERT INTO ceilings (machine_ceilings_id, position, name, value, unit, method) "
              "VALUES ($1, $2, $3, $4, $5, $6)",
              id, static_cast<std::int64_t>(i), c.name, Real{c.value}, c.unit, c.method);
        } catch (const pqxx::sql_error& e) {
          fail(location_, op + ": ceiling '" + c.name + "' = " + std::to_string(c.value) + " " + c.unit, reason(e));
        }
      }
      return id;
    });
  }

  std::vector<MachineCeilings> list_ceilings() override {
    return read("read machine ceilings", [&](pqxx::read_transaction& tx) {
      return read_ceilings(tx, tx.exec(std::string(kCeilingsSelect) + kCeilingsOrder));
    });
  }

  std::optional<MachineCeilings> latest_ceilings(const std::string& hostname, const std::string& gpu_name,
                                                 const std::string& gpu_uuid) override {
    auto found = read("read machine ceilings", [&](pqxx::read_transaction& tx) {
      if (!gpu_uuid.empty()) {
        auto by_uuid = read_ceilings(
            tx, tx.exec_params(std::string(kCeilingsSelect) + " WHERE gpu_uuid = $1" + kCeilingsOrder + " LIMIT 1",
                               gpu_uuid));
        if (!by_uuid.empty()) return by_uuid;
      }
      return read_ceilings(tx, tx.exec_params(std::string(kCeilingsSelect) + " WHERE hostname = $1 AND gpu_name = $2" +
                                                  kCeilingsOrder + " LIMIT 1",
                                              hostname, gpu_name));
    });
    if (found.empty()) return std::nullopt;
    return std::move(found.front());
  }

 private:
  static constexpr const char* kCeilingsSelect =
      "SELECT id, hostname, gpu_name, gpu_uuid, measured_at, clocks_note FROM machine_ceilings";
  static constexpr const char* kCeilingsOrder = " ORDER BY measured_at COLLATE \"C\" DESC, id DESC";

  std::pair<std::int64_t, bool> save_impl(EvaluationRecord& record, bool skip_if_stored) {
    InsertedIds ids;
    std::optional<std::int64_t> stored;
    write("save evaluation", [&](pqxx::work& tx) {
      if (skip_if_stored && !record.uuid.empty()) {
        // Serializes savers of this uuid, in this and every other process, until commit: the check below and the
        // insert are then atomic without a unique index (the schema stays the SQLite one).
        tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", record.uuid);
        stored = id_of_uuid(tx, record.uuid);
        if (stored) return 0;
      }
      ids = insert_evaluation(tx, record, location_);
      return 0;
    });
    if (stored) return {*stored, false};
    publish_ids(record, ids);
    return {ids.evaluation_id, true};
  }

  std::optional<EvaluationRecord> load_impl(std::int64_t id, bool traces) {
    const std::string op = "load evaluation " + std::to_string(id);
    // One REPEATABLE READ snapshot: the evaluation and its runs as one committed state.
    return read<pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>>(
        op, [&](auto& tx) { return read_evaluation(tx, id, op, traces); });
  }

  // runs.trace in pieces of substring(): one query per piece of kPieceBytes, each in its own read transaction on the
  // store's connection (so other calls on the store may come between pieces). A saved run's blob never changes; a run
  // deleted meanwhile, or a blob of another size, fails the read.
  class PgBlobReader final : public BlobReader {
   public:
    static constexpr std::size_t kPieceBytes = std::size_t{1} << 20;
    PgBlobReader(PostgresStore& store, std::int64_t run_id, std::uint64_t size, std::string op)
        : store_(store), run_id_(run_id), size_(size), op_(std::move(op)) {}
    std::uint64_t size_bytes() const override { return size_; }
    std::size_t read(std::uint8_t* out, std::size_t max_bytes) override {
      if (pos_ == piece_.size()) fetch();
      const std::size_t n = std::min(max_bytes, piece_.size() - pos_);
      std::copy_n(piece_.data() + pos_, n, out);
      pos_ += n;
      return n;
    }

   private:
    void fetch() {
      piece_.clear();
      pos_ = 0;
      if (offset_ == size_) return;
      const auto want = static_cast<std::int64_t>(std::min<std::uint64_t>(kPieceBytes, size_ - offset_));
      // substring() counts from 1.
      const auto from = static_cast<std::int64_t>(offset_) + 1;
      const bool found = store_.read(op_, [&](pqxx::read_transaction& tx) {
        const pqxx::result r =
            tx.exec_params("SELECT substring(trace FROM $2 FOR $3) FROM runs WHERE id = $1", run_id_, from, want);
        if (r.empty()) return false;
        const std::vector<std::uint8_t> bytes = bytes_of(r[0][0]);
        piece_.assign(bytes.begin(), bytes.end());
        return true;
      });
      if (!found) fail(store_.location_, op_, "the run was deleted while its trace was read");
      if (piece_.size() != static_cast<std::size_t>(want))
        fail(store_.location_, op_,
             "the trace changed while it was read (got " + std::to_string(piece_.size()) + " bytes at offset " +
                 std::to_string(offset_) + ", expected " + std::to_string(want) + ")");
      offset_ += piece_.size();
    }

    PostgresStore& store_;
    std::int64_t run_id_;
    std::uint64_t size_, offset_ = 0;
    std::string op_;
    std::vector<std::uint8_t> piece_;
    std::size_t pos_ = 0;
  };

  static std::optional<std::int64_t> id_of_uuid(pqxx::transaction_base& tx, const std::string& uuid) {
    const pqxx::result r = tx.exec_params("SELECT id FROM evaluations WHERE uuid = $1 ORDER BY id LIMIT 1", uuid);
    if (r.empty()) return std::nullopt;
    return r[0][0].as<std::int64_t>();
  }

  // A new connection when the last one was lost (the server restarted, or ended the session).
  void ensure_connected() {
    if (!conn_->is_open()) conn_ = connect(location_);
  }

  /// Runs `f` in a read-only transaction of type Tx. A lost connection is reopened once and `f` run again: it
  /// only reads. Other failures: StoreError naming `op`.
  template <typename Tx = pqxx::read_transaction, typename F>
  std::invoke_result_t<F&, Tx&> read(const std::string& op, F&& f) {
    std::lock_guard lock(mu_);
    for (int attempt = 0;; ++attempt) {
      try {
        ensure_connected();
        Tx tx(*conn_);
        auto out = f(tx);
        tx.commit();
        return out;
      } catch (const StoreError&) {
        throw;
      } catch (const pqxx::broken_connection& e) {
        if (attempt > 0) fail(location_, op, "connection lost: " + first_line(e.what()));
        reconnect(op);
      } catch (const pqxx::sql_error& e) {
        if (attempt > 0 || !connection_lost(e)) fail(location_, op, reason(e));
        reconnect(op);
      } catch (const std::exception& e) {
        fail(location_, op, first_line(e.what()));
      }
    }
  }

  /// Runs `f` in a read-write transaction and commits. A connection found lost before `f` started is reopened
  /// and `f` run; once `f` has written, nothing is retried: a lost connection or a failed commit is a StoreError
  /// (PostgreSQL rolled back what was not committed, and a commit whose outcome is unknown must not be repeated).
  template <typename F>
  std::invoke_result_t<F&, pqxx::work&> write(const std::string& op, F&& f) {
    std::lock_guard lock(mu_);
    for (int attempt = 0;; ++attempt) {
      bool started = false;
      try {
        ensure_connected();
        pqxx::work tx(*conn_);
        started = true;
        auto out = f(tx);
        tx.commit();
        return out;
      } catch (const StoreError&) {
        throw;
      } catch (const pqxx::in_doubt_error& e) {
        fail(location_, op,
             "the connection was lost while committing, so it is unknown whether this was stored: " +
                 first_line(e.what()));
      } catch (const pqxx::broken_connection& e) {
        if (started || attempt > 0) fail(location_, op, "connection lost, nothing stored: " + first_line(e.what()));
        reconnect(op);
      } catch (const pqxx::sql_error& e) {
        if (started || attempt > 0 || !connection_lost(e)) fail(location_, op, reason(e));
        reconnect(op);
      } catch (const std::exception& e) {
        fail(location_, op, first_line(e.what()));
      }
    }
  }

  void reconnect(const std::string& op) {
    try {
      conn_ = std::make_unique<pqxx::connection>(location_);
    } catch (const std::exception& e) {
      fail(location_, op, "connection lost, and reconnecting failed: " + first_line(e.what()));
    }
  }

  // Each listed evaluation's run figures in one query, from typed columns and the predict stage's p50 inside
  // stage_latency_ns; no blob is read.
  void read_run_figures(pqxx::transaction_base& tx, std::vector<EvaluationListing>& listings, const std::string& op) {
    if (listings.empty()) return;
    std::string ids = "{";
    for (const EvaluationListing& l : listings) ids += (ids.size() > 1 ? "," : "") + std::to_string(l.id);
    ids += "}";
    std::map<std::int64_t, std::vector<RunFigures>> by_evaluation;
    for (const pqxx::row& row :
         tx.exec_params("SELECT evaluation_id, batch_size, trace_level, throughput_samples_per_s, "
                        "(stage_latency_ns::jsonb #>> '{predict,p50}')::double precision, stability FROM runs "
                        "WHERE evaluation_id = ANY($1::bigint[]) ORDER BY evaluation_id, id",
                        ids)) {
      RunFigures f;
      f.batch_size = row[1].as<int>();
      f.trace_level = trace_level_from(text(row[2]), location_, op);
      f.throughput_samples_per_s = real(row[3]);
      f.predict_p50_ns = real(row[4]);
      f.stability = text(row[5]);
      by_evaluation[row[0].as<std::int64_t>()].push_back(std::move(f));
    }
    for (EvaluationListing& l : listings) l.runs = std::move(by_evaluation[l.id]);
  }

  std::vector<MachineCeilings> read_ceilings(pqxx::transaction_base& tx, const pqxx::result& rows) {
    std::vector<MachineCeilings> out;
    for (const pqxx::row& row : rows) {
      MachineCeilings m;
      m.hostname = text(row[1]);
      m.gpu_name = text(row[2]);
      m.gpu_uuid = text(row[3]);
      m.measured_at = text(row[4]);
      m.clocks_note = text(row[5]);
      for (const pqxx::row& c : tx.exec_params(
               "SELECT name, value, unit, method FROM ceilings WHERE machine_ceilings_id = $1 ORDER BY position",
               row[0].as<std::int64_t>())) {
        m.ceilings.push_back({text(c[0]), c[1].as<double>(), text(c[2]), text(c[3])});
      }
      out.push_back(std::move(m));
    }
    return out;
  }

  // `traces` false: the trace column is not read (NULL in its place) and runs keep an empty trace.
  std::optional<EvaluationRecord> read_evaluation(pqxx::transaction_base& tx, std::int64_t id, const std::string& op,
                                                  bool traces) {
    const pqxx::result er = tx.exec_params(
        "SELECT id, created_at, status, model_name, model_version, manifest_yaml, framework_name, "
        "framework_version, device, scenario, batch_sizes, trace_level, leveled, settings, system, uuid, name, tags, "
        "note FROM evaluations WHERE id = $1",
        id);
    if (er.empty()) return std::nullopt;
    const pqxx::row s = er[0];
    EvaluationRecord r;
    r.id = s[0].as<std::int64_t>();
    r.created_at = text(s[1]);
    r.status = text(s[2]);
    r.model_name = text(s[3]);
    r.model_version = text(s[4]);
    r.manifest_yaml = text(s[5]);
    r.framework_name = text(s[6]);
    r.framework_version = text(s[7]);
    r.device = text(s[8]);
    r.scenario = text(s[9]);
    try {
      r.batch_sizes = parse_json(text(s[10]), location_, op + ": batch_sizes").get<std::vector<int>>();
    } catch (const nlohmann::json::exception& e) {
      fail(location_, op + ": batch_sizes", e.what());
    }
    r.trace_level = trace_level_from(text(s[11]), location_, op);
    r.leveled = s[12].as<std::int64_t>() != 0;
    r.settings = parse_json(text(s[13]), location_, op + ": settings");
    r.system = parse_json(text(s[14]), location_, op + ": system");
    r.uuid = text(s[15]);
    r.labels = labels_from(s[16], s[17], s[18], location_, op);

    // ORDER BY id: runs were inserted in the record's order, so this restores it.
    const pqxx::result runs = tx.exec_params(
        std::string("SELECT id, batch_size, trace_level, warmup_iterations, iterations, throughput_samples_per_s, "
                    "stage_latency_ns, predict_latency_ns, ") +
            (traces ? "trace" : "NULL::bytea") +
            ", measurement, machine_state, warnings, trace_id, generation, scenario_result FROM runs "
            "WHERE evaluation_id = $1 ORDER BY id",
        id);
    for (const pqxx::row& q : runs) {
      RunRecord run;
      run.id = q[0].as<std::int64_t>();
      const std::string run_op = op + ": run " + std::to_string(run.id);
      run.batch_size = q[1].as<int>();
      run.trace_level = trace_level_from(text(q[2]), location_, run_op);
      run.warmup_iterations = q[3].as<int>();
      run.iterations = q[4].as<int>();
      run.throughput_samples_per_s = real(q[5]);
      try {
        const nlohmann::json stages = parse_json(text(q[6]), location_, run_op + ": stage_latency_ns");
        for (const auto& [stage, summary] : stages.items())
          run.stage_latency_ns[stage] = latency_summary_from_json(summary);
      } catch (const std::exception& e) {
        fail(location_, run_op + ": stage_latency_ns", e.what());
      }
      const std::vector<std::uint8_t> latencies = bytes_of(q[7]);
      if (latencies.size() % 8 != 0)
        fail(location_, run_op + ": predict_latency_ns",
             "blob of " + std::to_string(latencies.size()) + " bytes is not a whole number of doubles");
      run.predict_latency_ns = doubles_from_blob(latencies.data(), latencies.size());
      try {
        if (traces) run.trace = decode_trace(bytes_of(q[8]));
      } catch (const std::exception& e) {
        fail(location_, run_op + ": decode trace", e.what());
      }
      try {
        run.measurement = run_measurement_from_json(parse_json(text(q[9]), location_, run_op + ": measurement"));
      } catch (const std::invalid_argument& e) {
        fail(location_, run_op + ": measurement", e.what());
      }
      run.machine_state = parse_json(text(q[10]), location_, run_op + ": machine_state");
      try {
        run.warnings = parse_json(text(q[11]), location_, run_op + ": warnings").get<std::vector<std::string>>();
      } catch (const nlohmann::json::exception& e) {
        fail(location_, run_op + ": warnings", e.what());
      }
      run.trace_id = text(q[12]);
      try {
        decode_outcomes(run, text(q[13]), q[14].is_null() ? std::nullopt : std::optional(text(q[14])));
      } catch (const std::invalid_argument& e) {
        fail(location_, run_op, e.what());
      }
      read_predictions(tx, run, run_op);
      r.runs.push_back(std::move(run));
    }
    read_level_overheads(tx, r, op);
    return r;
  }

  void read_predictions(pqxx::transaction_base& tx, RunRecord& run, const std::string& run_op) {
    const std::string op = run_op + ": predictions";
    for (const pqxx::row& q : tx.exec_params("SELECT input_id, top_classes, probabilities, outputs FROM predictions "
                                             "WHERE run_id = $1 ORDER BY position",
                                             run.id)) {
      InputPrediction p;
      p.input_id = text(q[0]);
      const std::string pop = op + " of input '" + p.input_id + "'";
      try {
        p.top_classes = parse_json(text(q[1]), location_, pop).get<std::vector<int>>();
      } catch (const nlohmann::json::exception& e) {
        fail(location_, pop + ": top_classes", e.what());
      }
      const std::vector<std::uint8_t> probabilities = bytes_of(q[2]);
      if (probabilities.size() % 4 != 0)
        fail(location_, pop,
             "probabilities blob of " + std::to_string(probabilities.size()) +
                 " bytes is not a whole number of float32");
      p.probabilities = floats_from_blob(probabilities.data(), probabilities.size());
      try {
        read_prediction_outputs(parse_json(text(q[3]), location_, pop), p);
      } catch (const std::invalid_argument& e) {
        fail(location_, pop, e.what());
      }
      run.predictions.push_back(std::move(p));
    }
  }

  void read_level_overheads(pqxx::transaction_base& tx, EvaluationRecord& r, const std::string& eval_op) {
    const std::string op = eval_op + ": level overheads";
    for (const pqxx::row& q : tx.exec_params(
             "SELECT batch_size, trace_level, baseline_trace_level, design, rounds, latency_ns, baseline_latency_ns, "
             "overhead_fraction, ci95_low_fraction, ci95_high_fraction, note FROM level_overheads "
             "WHERE evaluation_id = $1 ORDER BY position",
             r.id)) {
      LevelOverhead o;
      o.batch_size = q[0].as<int>();
      o.level = trace_level_from(text(q[1]), location_, op);
      o.baseline = trace_level_from(text(q[2]), location_, op);
      o.design = text(q[3]);
      o.overhead.rounds = q[4].as<std::size_t>();
      o.latency_ns = real(q[5]);
      o.baseline_latency_ns = real(q[6]);
      o.overhead.overhead_fraction = real(q[7]);
      o.overhead.ci95_fraction = {real(q[8]), real(q[9])};
      o.note = text(q[10]);
      r.level_overheads.push_back(std::move(o));
    }
  }

  const std::string location_;         // as given to open(): the password is only used to connect
  const std::filesystem::path shown_;  // redacted, for file() and messages
  std::unique_ptr<pqxx::connection> conn_;
  std::mutex mu_;  // one connection: this object's users take turns
};

}  // namespace

InsertedIds insert_evaluation(pqxx::dbtransaction& tx, EvaluationRecord& record, const std::string& location) {
  // As SqliteStore::save: the uuid and trace ids are given before inserting and stay in `record` even when the
  // transaction fails, so that a copy saved elsewhere (a recovery file) is the same evaluation when imported.
  if (record.created_at.empty()) record.created_at = util::utc_now_iso8601();
  if (record.uuid.empty()) record.uuid = random_uuid();
  for (RunRecord& run : record.runs) {
    if (run.trace_id.empty()) run.trace_id = random_trace_id();
  }
  const EvaluationRecord& r = record;
  const std::string op = "save evaluation of model " + r.model_name;
  InsertedIds ids;
  try {
    ids.evaluation_id =
        tx.exec_params1(
              "INSERT INTO evaluations (created_at, status, model_name, model_version, manifest_yaml, framework_name, "
              "framework_version, device, scenario, batch_sizes, trace_level, leveled, settings, system, uuid, kind, "
              "name, tags, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, "
              "$18, $19) RETURNING id",
              r.created_at, r.status, r.model_name, r.model_version, r.manifest_yaml, r.framework_name,
              r.framework_version, r.device, r.scenario, nlohmann::json(r.batch_sizes).dump(),
              std::string(to_string(r.trace_level)), r.leveled ? 1 : 0, json_text(r.settings), json_text(r.system),
              r.uuid, store_schema::evaluation_kind(r.scenario), r.labels.name, nlohmann::json(r.labels.tags).dump(),
              r.labels.note)[0]
            .as<std::int64_t>();
  } catch (const pqxx::failure& e) {
    fail(location, op, reason(e));
  }
  ids.run_ids.reserve(r.runs.size());
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    ids.run_ids.push_back(insert_run(tx, ids.evaluation_id, r.runs[i], i, location));
  }
  insert_level_overheads(tx, ids.evaluation_id, r, location);
  return ids;
}

void publish_ids(EvaluationRecord& record, const InsertedIds& ids) {
  record.id = ids.evaluation_id;
  for (std::size_t i = 0; i < ids.run_ids.size() && i < record.runs.size(); ++i) record.runs[i].id = ids.run_ids[i];
}

}  // namespace xsp::pg

namespace xsp {

StoreBackend postgres_store_backend() {
  StoreBackend b;
  b.name = "PostgreSQL";
  b.schemes = postgres_schemes();
  b.open = [](const std::filesystem::path& location, StoreAccess access, StoreOptions) -> std::unique_ptr<Store> {
    auto connection = pg::connect(location.native());
    pg::migrate_store_schema(*connection, location.native());
    auto store = std::make_unique<pg::PostgresStore>(location.native(), std::move(connection));
    if (access == StoreAccess::kReadWrite) store->check_writable();
    return store;
  };
  return b;
}

}  // namespace xsp
