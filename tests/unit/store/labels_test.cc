// Names, tags and notes on evaluations (schema 11, EvaluationLabels): an old store gains the columns with its data
// kept, labels round trip through save/load/list and Store::update_labels, the tag filter, and the run figures a
// listing carries; on SQLite and PostgreSQL.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "minimal_record.h"
#include "schema_fixtures.h"
#include "store_backends.h"
#include "temp_dir.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

void run_sql(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

int exec_rc(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return rc;
}

// stage_latency_ns as the store writes it, with the predict stage's p50.
std::string stages(double p50_ns) {
  LatencySummary s;
  s.n = 3;
  s.p50 = p50_ns;
  return nlohmann::json{{"predict", to_json(s)}}.dump();
}

// A version-10 store (the frozen hand-written steps) with one evaluation and two runs, opened by this build: it is
// migrated to 11, every value kept, and the new columns hold "no labels".
TEST(LabelsMigration, AVersion10SqliteStoreGainsTheColumnsAndKeepsItsData) {
  testing::TempDir dir;
  const auto file = dir.path() / "v10.db";
  run_sql(file, testing::frozen_store_sql("sqlite_steps.sql", 10));
  run_sql(file,
          "INSERT INTO evaluations (id, created_at, status, model_name, model_version, manifest_yaml, framework_name, "
          "framework_version, device, scenario, batch_sizes, trace_level, leveled, settings, system, kind) VALUES "
          "(7, '2026-05-01T00:00:00Z', 'complete', 'ResNet-18', '1.0', '', 'libtorch', '2.1', 'cuda:0', "
          "'batch-sweep', '[1,8]', 'model', 0, '{}', '{\"host\":{\"hostname\":\"gpu-7\"}}', 'batch-sweep');\n"
          "INSERT INTO runs (id, evaluation_id, batch_size, trace_level, warmup_iterations, iterations, "
          "throughput_samples_per_s, stage_latency_ns, predict_latency_ns, span_count, unparented_spans, counters, "
          "trace, stability) VALUES (1, 7, 1, 'model', 0, 3, 500.0, '" +
              stages(2e6) + "', x'', 0, 0, '{}', x'', 'stable'), (2, 7, 8, 'model', 0, 3, 2400.0, '" + stages(3.3e6) +
              "', x'', 0, 0, '{}', x'', 'unstable');\n");
  auto store = Store::open(file, StoreAccess::kRead);  // a read-only open migrates too (on its own connection)
  EXPECT_EQ(store->schema_version(), 12);
  const std::vector<EvaluationListing> listed = store->list();
  ASSERT_EQ(listed.size(), 1u);
  const EvaluationListing& e = listed.front();
  EXPECT_EQ(e.id, 7);
  EXPECT_EQ(e.model_name, "ResNet-18");
  EXPECT_EQ(e.hostname, "gpu-7");
  EXPECT_EQ(e.batch_sizes, (std::vector<int>{1, 8}));
  EXPECT_TRUE(e.labels.empty());
  ASSERT_EQ(e.runs.size(), 2u);
  EXPECT_EQ(e.runs[0].batch_size, 1);
  EXPECT_DOUBLE_EQ(e.runs[0].predict_p50_ns, 2e6);
  EXPECT_DOUBLE_EQ(e.runs[1].throughput_samples_per_s, 2400.0);
  EXPECT_EQ(e.runs[1].stability, "unstable");
  store.reset();

  auto writer = Store::open(file);
  const auto stored = writer->update_labels(7, [](const EvaluationLabels&) {
    return EvaluationLabels{"before the driver update", {"baseline", "h200"}, "clocks locked"};
  });
  ASSERT_TRUE(stored.has_value());
  // (list(), not load(): the hand-made runs have no trace blob to decode)
  EXPECT_EQ(writer->list().front().labels, *stored);
  EXPECT_EQ(writer->list().front().runs.size(), 2u);
  // The database itself refuses what validation would: a name over 120 characters, a note over 4000.
  EXPECT_EQ(exec_rc(file, "UPDATE evaluations SET name = '" + std::string(121, 'n') + "' WHERE id = 7"),
            SQLITE_CONSTRAINT);
  EXPECT_EQ(exec_rc(file, "UPDATE evaluations SET note = '" + std::string(4001, 'n') + "' WHERE id = 7"),
            SQLITE_CONSTRAINT);
}

class StoreLabels : public testing::StoreBackends {
 protected:
  void SetUp() override {
    StoreBackends::SetUp();
    if (IsSkipped()) return;
    store_ = open("labels.db");
  }
  void TearDown() override { store_.reset(); }
  std::int64_t save(const std::string& model, EvaluationLabels labels = {}) {
    EvaluationRecord r = testing::minimal_record(model);
    r.labels = std::move(labels);
    return store_->save(r);
  }
  std::vector<std::int64_t> tagged(const std::string& tag) {
    EvaluationFilter f;
    f.tag = tag;
    std::vector<std::int64_t> out;
    for (const EvaluationListing& e : store_->list(f)) out.push_back(e.id);
    EXPECT_EQ(store_->count(f), out.size()) << tag;
    return out;
  }
  std::unique_ptr<Store> store_;
};

TEST_P(StoreLabels, SavedLabelsLoadAndListAsWritten) {
  const EvaluationLabels labels{"fp16 run — ünïcode", {"baseline", "fp16"}, "line one\nline two"};
  const std::int64_t id = save("m", labels);
  EXPECT_EQ(store_->load(id)->labels, labels);
  EXPECT_EQ(store_->list().front().labels, labels);
  EXPECT_TRUE(store_->load(save("plain"))->labels.empty());
}

TEST_P(StoreLabels, UpdateReadsAndWritesInOneStepAndReportsAMissingEvaluation) {
  const std::int64_t id = save("m", {"old", {"a"}, ""});
  const auto stored = store_->update_labels(id, [](const EvaluationLabels& now) {
    EvaluationLabels next = now;
    EXPECT_EQ(now.name, "old");
    next.tags.push_back("b");
    next.note = "n";
    return next;
  });
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(*stored, (EvaluationLabels{"old", {"a", "b"}, "n"}));
  EXPECT_EQ(store_->load(id)->labels, *stored);
  EXPECT_EQ(store_->update_labels(id + 100, [](const EvaluationLabels& l) { return l; }), std::nullopt);
  // A change that throws writes nothing, and its exception reaches the caller as it was.
  EXPECT_THROW(store_->update_labels(
                   id, [](const EvaluationLabels&) -> EvaluationLabels { throw std::invalid_argument("refused"); }),
               std::invalid_argument);
  EXPECT_EQ(store_->load(id)->labels, *stored);
}

TEST_P(StoreLabels, TheTagFilterMatchesWholeTagsOnly) {
  const std::int64_t a = save("m", {"", {"baseline", "h200"}, ""});
  const std::int64_t b = save("m", {"", {"h200"}, ""});
  save("m");
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(tagged("h200"), (V{b, a}));
  EXPECT_EQ(tagged("baseline"), (V{a}));
  EXPECT_EQ(tagged("base"), V{});  // part of a tag is not the tag
  EXPECT_EQ(tagged("H200"), V{});  // exact, as stored
  EXPECT_EQ(tagged("").size(), 3u);
  EvaluationFilter both;
  both.tag = "h200";
  both.limit = 1;
  EXPECT_EQ(store_->list(both).size(), 1u);
  EXPECT_EQ(store_->count(both), 2u);
}

TEST_P(StoreLabels, AListingCarriesEachRunsFigures) {
  EvaluationRecord r = testing::minimal_record("m");
  r.batch_sizes = {1, 4};
  r.runs.front().stage_latency_ns["predict"].p50 = 1.5e6;
  r.runs.front().throughput_samples_per_s = 640;
  r.runs.front().measurement.stability.verdict = Verdict::kStable;
  RunRecord second = r.runs.front();
  second.batch_size = 4;
  second.trace_level = TraceLevel::kFramework;
  second.stage_latency_ns.clear();
  second.throughput_samples_per_s = std::nan("");
  second.trace_id.clear();
  r.runs.push_back(second);
  store_->save(r);
  const EvaluationListing e = store_->list().front();
  ASSERT_EQ(e.runs.size(), 2u);
  EXPECT_EQ(e.runs[0].batch_size, 1);
  EXPECT_EQ(e.runs[0].trace_level, TraceLevel::kModel);
  EXPECT_DOUBLE_EQ(e.runs[0].predict_p50_ns, 1.5e6);
  EXPECT_DOUBLE_EQ(e.runs[0].throughput_samples_per_s, 640);
  EXPECT_EQ(e.runs[0].stability, "stable");
  EXPECT_EQ(e.runs[1].batch_size, 4);
  EXPECT_EQ(e.runs[1].trace_level, TraceLevel::kFramework);
  EXPECT_TRUE(std::isnan(e.runs[1].predict_p50_ns));
  EXPECT_TRUE(std::isnan(e.runs[1].throughput_samples_per_s));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreLabels,
                         ::testing::Values(testing::Backend::kSqlite, testing::Backend::kPostgres),
                         testing::backend_name);

}  // namespace
}  // namespace xsp
