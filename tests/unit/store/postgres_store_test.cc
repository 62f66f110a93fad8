// The PostgreSQL store: hostile text in every user field on both backends, one record read back the same from
// SQLite and PostgreSQL, save_if_new racing across two connections, a newer or foreign schema refused, reconnecting
// after the server ended the session, and a role that may not insert refused at open.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "minimal_record.h"
#include "store_backends.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

using testing::Backend;

const std::vector<std::string> kHostile = {
    "x'); DROP TABLE evaluations; --",
    "\" OR 1=1 --",
    "$1",
    "%_\\",
    "?1 ' OR '1'='1",
    "\\x00ff E'\\\\' $$ $tag$",
    "unicode \u00b5s \u2713 \u65e5\u672c \U0001F600",
};

// Every user text field set from `text` (field-specific suffixes keep them distinct).
EvaluationRecord hostile_record(const std::string& text, int n) {
  EvaluationRecord r;
  r.status = "complete";
  r.created_at = "2026-11-2" + std::to_string(n) + "T10:00:00Z";
  r.model_name = text + " model";
  r.model_version = text + " version";
  r.manifest_yaml = "name: " + text + "\n";
  r.framework_name = text + " framework";
  r.framework_version = text + " fw version";
  r.device = text + " device";
  r.scenario = text + " scenario";
  r.batch_sizes = {1};
  r.settings = {{"note", text}, {text, 1}};
  r.system = {{"host", {{"hostname", text + " host"}}}, {"cpu", {{"model", text}}}};
  RunRecord run;
  run.batch_size = 1;
  run.predict_latency_ns = {1e6};
  run.warnings = {text, text + " second"};
  run.predictions.push_back({text + " input", {1, 2}, {0.5f, 0.25f}});
  run.predictions.back().detections = {{1.f, 2.f, 3.f, 4.f, 0.5f, 1}};
  run.predictions.back().mask = SegmentationMask{1, 2, {1, 2}};
  run.trace.spans.push_back(testing::make_span(1, kNoSpan, Level::kModel, text, 0, 10, {{text, text}}));
  run.trace.assembly.roots = 1;
  r.runs.push_back(run);
  return r;
}

class StoreHostileText : public testing::StoreBackends {};

TEST_P(StoreHostileText, EveryUserFieldIsStoredAndReadBackByteExact) {
  auto store = open();
  int n = 0;
  for (const std::string& text : kHostile) {
    SCOPED_TRACE(text);
    EvaluationRecord r = hostile_record(text, n++);
    store->save(r);
    EXPECT_EQ(store->load(r.id), r);
    // Each filter field finds exactly this evaluation, and the value never reaches the SQL text.
    EvaluationFilter f{
        .model = r.model_name, .framework = r.framework_name, .device = r.device, .host = text + " host"};
    const auto found = store->list(f);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].id, r.id);
    EXPECT_EQ(found[0].hostname, text + " host");
    EXPECT_EQ(store->count(f), 1u);
    EXPECT_EQ(store->list({.model = text}).size(), 0u);
    EXPECT_EQ(store->count({.since = text, .until = text}), 0u);
    EXPECT_EQ(store->find_by_uuid(text), std::nullopt);

    MachineCeilings m;
    m.hostname = text + " node";
    m.gpu_name = text + " gpu";
    m.gpu_uuid = text + " uuid";
    m.measured_at = r.created_at;
    m.clocks_note = text;
    m.ceilings = {{text, 1e12, "flop/s", text + " method"}};
    store->save_ceilings(m);
    EXPECT_EQ(store->latest_ceilings(m.hostname, m.gpu_name), m);
    EXPECT_EQ(store->latest_ceilings("?", "?", m.gpu_uuid), m);
  }
  // The tables are all still there, holding exactly what was saved.
  store.reset();
  EXPECT_EQ(rows("xsp.db", "evaluations"), static_cast<int>(kHostile.size()));
  EXPECT_EQ(rows("xsp.db", "runs"), static_cast<int>(kHostile.size()));
  EXPECT_EQ(rows("xsp.db", "predictions"), static_cast<int>(kHostile.size()));
  EXPECT_EQ(rows("xsp.db", "ceilings"), static_cast<int>(kHostile.size()));
  EXPECT_EQ(open()->list().size(), kHostile.size());
}

XSP_STORE_BACKENDS_INSTANTIATE(StoreHostileText);

// PostgreSQL only: each test makes its database with XSP_PG_TEST_DATABASE (skipped without a server).
#ifdef XSP_TEST_HAVE_PG

/// `url` connecting as `user` instead of the user it names.
std::string with_user(const std::string& url, const std::string& user) {
  const auto scheme = url.find("://") + 3;
  const auto at = url.find('@', scheme);
  const auto slash = url.find('/', scheme);
  if (at != std::string::npos && (slash == std::string::npos || at < slash))
    return url.substr(0, scheme) + user + url.substr(at);
  return url.substr(0, scheme) + user + "@" + url.substr(scheme);
}

EvaluationRecord full_record() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EvaluationRecord r = hostile_record("resnet", 1);
  r.trace_level = TraceLevel::kFramework;
  r.leveled = true;
  r.batch_sizes = {1, 4};
  RunRecord& run = r.runs[0];
  run.throughput_samples_per_s = nan;
  run.predict_latency_ns = {1.5e6, 0.1 + 0.2, 1.7e6 / 3.0, nan};
  run.stage_latency_ns[kStagePredict] = LatencySummary{5, 1.1, 1.0 / 3.0, 0.2, 0.9, 1.7, 1.0, 1.5, 1.6, 1.69, 1.699};
  run.trace.spans.push_back(
      testing::make_span(2, 1, Level::kFramework, "aten::conv2d", 2, 8, {{"shape", "[1, 3, 224, 224]"}}));
  run.trace.counters["framework.dropped_spans"] = 3;
  run.trace.clock.unix_offset_ns = 1'700'000'000'000'000'000;
  run.measurement.design = "single";
  run.measurement.stability = assess_windows({{2e6, 2.1e6}}, StabilityRule{});  // NaN drift and spread
  run.machine_state = {{"samples", 3}};
  RunRecord second = run;
  second.batch_size = 4;
  second.throughput_samples_per_s = 2666.5;
  second.predictions.clear();
  r.runs.push_back(second);
  LevelOverhead o;
  o.batch_size = 1;
  o.level = TraceLevel::kFramework;
  o.baseline = TraceLevel::kModel;
  o.design = "residual";
  o.latency_ns = 1.6e6;
  o.baseline_latency_ns = nan;
  o.overhead = paired_overhead({1.6}, {1.5});  // one round: NaN interval
  o.note = "note";
  r.level_overheads.push_back(o);
  return r;
}

TEST(PostgresStore, OneRecordReadsBackTheSameFromSqliteAndPostgres) {
  XSP_PG_TEST_DATABASE(db);
  testing::TempDir dir;
  auto lite = Store::open(dir.path() / "xsp.db");
  auto pg = Store::open(db.url());
  EXPECT_TRUE(pg->is_postgres());
  EXPECT_FALSE(lite->is_postgres());
  EXPECT_EQ(pg->schema_version(), Store::current_schema_version());
  EXPECT_EQ(lite->schema_version(), pg->schema_version());
  EvaluationRecord record = full_record();
  lite->save(record);  // gives the uuid and trace ids, which the PostgreSQL copy then keeps
  EvaluationRecord copy = record;
  pg->save(copy);
  EXPECT_EQ(copy.id, record.id);
  const auto a = lite->load(record.id), b = pg->load(copy.id);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->runs.size(), 2u);
  ASSERT_EQ(b->runs.size(), 2u);
  EXPECT_EQ(a->uuid, b->uuid);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a->runs[i].trace.spans.size(), b->runs[i].trace.spans.size());
    EXPECT_EQ(a->runs[i].trace, b->runs[i].trace);
    EXPECT_EQ(a->runs[i].predictions, b->runs[i].predictions);
    EXPECT_EQ(a->runs[i].trace_id, b->runs[i].trace_id);
    EXPECT_EQ(a->runs[i].stage_latency_ns, b->runs[i].stage_latency_ns);
  }
  EXPECT_TRUE(std::isnan(a->runs[0].throughput_samples_per_s));
  EXPECT_TRUE(std::isnan(b->runs[0].throughput_samples_per_s));
  EXPECT_TRUE(std::isnan(b->runs[0].predict_latency_ns.back()));
  EXPECT_TRUE(std::isnan(b->runs[0].measurement.stability.drift_fraction));
  EXPECT_TRUE(std::isnan(b->level_overheads[0].baseline_latency_ns));
  EXPECT_TRUE(std::isnan(b->level_overheads[0].overhead.ci95_fraction.low));
  // NaN != NaN: blank the NaN fields outside the NaN-aware types on every side, then compare whole records.
  EvaluationRecord x = *a, y = *b, z = record;
  for (EvaluationRecord* r : {&x, &y, &z}) {
    r->runs[0].throughput_samples_per_s = 0;
    r->runs[0].predict_latency_ns.pop_back();
    r->runs[1].predict_latency_ns.pop_back();
    r->level_overheads[0].baseline_latency_ns = 0;
  }
  EXPECT_EQ(x, y);
  EXPECT_EQ(y, z);
  EXPECT_EQ(lite->list()[0].hostname, pg->list()[0].hostname);
  EXPECT_EQ(lite->list()[0].batch_sizes, pg->list()[0].batch_sizes);
  EXPECT_EQ(lite->list()[0].run_count, pg->list()[0].run_count);
}

TEST(PostgresStore, SaveIfNewFromTwoConnectionsSavesOnce) {
  XSP_PG_TEST_DATABASE(db);
  auto first = Store::open(db.url());
  auto second = Store::open(db.url());
  for (int round = 0; round < 10; ++round) {
    EvaluationRecord r = full_record();
    r.uuid = random_uuid();
    std::atomic<int> ready{0}, saved{0};
    std::vector<std::int64_t> ids(2);
    auto race = [&](Store& store, int slot) {
      EvaluationRecord mine = r;
      for (RunRecord& run : mine.runs) run.trace_id = random_trace_id();  // trace ids are unique in a store
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
      const auto [id, now] = store.save_if_new(mine);
      ids[slot] = id;
      if (now) ++saved;
    };
    std::thread a(race, std::ref(*first), 0), b(race, std::ref(*second), 1);
    a.join();
    b.join();
    EXPECT_EQ(saved.load(), 1) << "round " << round;
    EXPECT_EQ(ids[0], ids[1]) << "round " << round;
  }
  EXPECT_EQ(first->count({}), 10u);
}

TEST(PostgresStore, NewerSchemaAndForeignDatabaseAreRefused) {
  XSP_PG_TEST_DATABASE(db);
  Store::open(db.url());
  {
    pqxx::connection c(db.url());
    pqxx::work tx(c);
    tx.exec0("UPDATE schema_version SET version = 99");
    tx.commit();
  }
  try {
    Store::open(db.url());
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(redact_location(db.url())), std::string::npos) << what;
    EXPECT_NE(what.find("schema version 99 is newer"), std::string::npos) << what;
  }
  XSP_PG_TEST_DATABASE(foreign);
  {
    pqxx::connection c(foreign.url());
    pqxx::work tx(c);
    tx.exec0("CREATE TABLE evaluations (x INTEGER)");
    tx.commit();
  }
  try {
    Store::open(foreign.url(), StoreAccess::kRead);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not an XSP results store"), std::string::npos) << e.what();
  }
}

TEST(PostgresStore, ReconnectsAfterTheServerEndedTheSession) {
  XSP_PG_TEST_DATABASE(db);
  auto store = Store::open(db.url());
  EvaluationRecord r = full_record();
  store->save(r);
  auto terminate = [&] {
    pqxx::connection admin(*db_admin);
    pqxx::nontransaction tx(admin);
    const auto killed = tx.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        db.name());
    EXPECT_EQ(killed.size(), 1u);
  };
  terminate();
  const auto listing = store->list();  // the dead connection is found, replaced, and the read run again
  ASSERT_EQ(listing.size(), 1u);
  EXPECT_EQ(listing[0].id, r.id);
  const auto loaded = store->load(r.id);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->uuid, r.uuid);
  EXPECT_EQ(loaded->runs.size(), r.runs.size());
  terminate();
  EvaluationRecord next = full_record();
  next.created_at = "2026-12-01T00:00:00Z";
  store->save(next);  // the lost connection is found when the transaction begins, before anything was written
  EXPECT_EQ(store->count({}), 2u);
}

TEST(PostgresStore, ReadWriteOpenByARoleThatMayNotInsertFails) {
  XSP_PG_TEST_DATABASE(db);
  Store::open(db.url());  // the schema, created by the owner
  const std::string role = "xsp_reader_" + db.name().substr(6);
  {
    pqxx::connection c(db.url());
    pqxx::work tx(c);
    tx.exec0("CREATE ROLE " + tx.quote_name(role) + " LOGIN");
    tx.exec0("GRANT CONNECT ON DATABASE " + tx.quote_name(db.name()) + " TO " + tx.quote_name(role));
    tx.exec0("GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + tx.quote_name(role));
    tx.commit();
  }
  const std::string url = with_user(db.url(), role);
  try {
    Store::open(url, StoreAccess::kReadWrite);
    ADD_FAILURE() << "expected StoreError";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(redact_location(url)), std::string::npos) << what;
    EXPECT_NE(what.find("may not INSERT into table evaluations"), std::string::npos) << what;
  }
  // Reading is all it may do, and that works.
  EXPECT_TRUE(Store::open(url, StoreAccess::kRead)->list().empty());
  // Roles belong to the cluster, not the test's database: drop it again.
  pqxx::connection c(db.url());
  pqxx::work tx(c);
  tx.exec0("DROP OWNED BY " + tx.quote_name(role));
  tx.exec0("DROP ROLE " + tx.quote_name(role));
  tx.commit();
}

TEST(PostgresStore, PasswordIsNeverShown) {
  XSP_PG_TEST_DATABASE(db);
  auto store = Store::open(with_user(db.url(), "xsp:s3cret"));  // trust authentication ignores the password
  EXPECT_EQ(store->file().string().find("s3cret"), std::string::npos) << store->file();
  EXPECT_NE(store->file().string().find("xsp:***@"), std::string::npos) << store->file();
}

#endif

}  // namespace
}  // namespace xsp
