// Issue 12, defects 3 and 4: a save waits for another writer's lock long enough and visibly (LockWait), importing
// an evaluation into a second store is exact and never duplicates it (save_if_new, find_by_uuid), and a damaged or
// unwritable store is refused when opened to write, before any measuring.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "other_user.h"
#include "temp_dir.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::TempDir;

EvaluationRecord record_with_trace(const std::string& model, std::size_t latencies = 16) {
  EvaluationRecord r;
  r.created_at = "2026-11-24T09:00:00Z";
  r.model_name = model;
  r.model_version = "1.0.0";
  r.manifest_yaml = "name: " + model + "\n";
  r.framework_name = "fake";
  r.framework_version = "1.0.0";
  r.batch_sizes = {1, 2};
  r.trace_level = TraceLevel::kFramework;
  r.leveled = true;
  r.settings = {{"seed", 7}, {"note", "µs ✓"}};
  r.system = {{"cpu", {{"logical_cores", 2}}}};
  for (int batch : {1, 2}) {
    RunRecord run;
    run.batch_size = batch;
    run.trace_level = TraceLevel::kFramework;
    run.iterations = static_cast<int>(latencies);
    for (std::size_t i = 0; i < latencies; ++i)
      run.predict_latency_ns.push_back(1e6 + 37.0 * static_cast<double>(i * i % 1009));
    for (SpanId s = 1; s <= 50; ++s) {
      Span span;
      span.id = s;
      span.parent_id = s == 1 ? kNoSpan : 1;
      span.level = s == 1 ? Level::kModel : Level::kFramework;
      span.parent_rule = s == 1 ? ParentRule::kNone : ParentRule::kContext;
      span.name = s == 1 ? "predict" : "aten::op_" + std::to_string(s * batch);
      span.start_ns = 1000 * static_cast<std::int64_t>(s);
      span.end_ns = span.start_ns + 900;
      span.track = Track::host_thread(11);
      span.tags = {{"shape", "[" + std::to_string(batch) + ", 4]"}};
      run.trace.spans.push_back(std::move(span));
    }
    run.trace.counters["framework.dropped_spans"] = batch;
    run.predictions.push_back({"a.jpg", {1, 0}, {0.25f, 0.75f}});
    run.warnings = {"a warning of batch " + std::to_string(batch)};
    run.machine_state = {{"gpu", nullptr}};
    r.runs.push_back(std::move(run));
  }
  return r;
}

/// Another connection to the store, as another xsp process would hold one.
class OtherWriter {
 public:
  explicit OtherWriter(const fs::path& file) {
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  }
  ~OtherWriter() { sqlite3_close_v2(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << sql << ": " << (err ? err : "");
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    std::string out;
    while (sqlite3_step(st) == SQLITE_ROW)
      out += (out.empty() ? "" : "\n") + std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(StoreLockWait, ASaveGivesUpAfterItsMaximumWaitAndReportsProgressMeanwhile) {
  TempDir dir;
  const fs::path file = dir.path() / "s.db";
  std::vector<std::pair<milliseconds, milliseconds>> calls;
  StoreOptions options;
  options.save_wait.max_wait_ms = milliseconds(300);
  options.save_wait.progress_every_ms = milliseconds(100);
  options.save_wait.progress = [&calls](milliseconds waited, milliseconds max) { calls.emplace_back(waited, max); };
  auto store = Store::open(file, StoreAccess::kReadWrite, options);
  OtherWriter other(file);
  other.exec("BEGIN IMMEDIATE");

  EvaluationRecord r = record_with_trace("m");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    store->save(r);
    FAIL() << "saved while another connection held the write lock";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  const double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 3.0) << "the save did not stop at its maximum wait";
  ASSERT_GE(calls.size(), 1u) << "no progress while waiting";
  for (const auto& [w, max] : calls) {
    EXPECT_EQ(max, milliseconds(300));
    EXPECT_GE(w, milliseconds(100));
    EXPECT_LT(w, milliseconds(300));
  }
  EXPECT_EQ(r.id, 0) << "a failed save published an id";
  other.exec("ROLLBACK");
  EXPECT_EQ(store->list().size(), 0u);
}

TEST(StoreLockWait, ASaveWaitsForALockReleasedWithinItsMaximumWait) {
  TempDir dir;
  const fs::path file = dir.path() / "s.db";
  StoreOptions options;
  options.save_wait.max_wait_ms = milliseconds(5000);
  auto store = Store::open(file, StoreAccess::kReadWrite, options);
  OtherWriter other(file);
  other.exec("BEGIN IMMEDIATE");
  std::thread release([&other] {
    std::this_thread::sleep_for(milliseconds(200));
    other.exec("ROLLBACK");
  });
  EvaluationRecord r = record_with_trace("m");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(store->save(r));
  const double waited = seconds_since(t0);
  release.join();
  EXPECT_GE(waited, 0.19) << "the save did not wait for the lock at all";
  EXPECT_EQ(r.id, 1);
  EXPECT_EQ(store->list().size(), 1u);
}

// The default: saves wait far longer than the old fixed 5 s.
TEST(StoreLockWait, SavesWaitTwoMinutesByDefault) {
  EXPECT_EQ(StoreOptions{}.save_wait.max_wait_ms, milliseconds(120'000));
  EXPECT_EQ(StoreOptions{}.save_wait.progress_every_ms, milliseconds(5'000));
}

// What save() writes, load() gives back, also after a copy into a second store through save_if_new (xsp import).
TEST(StoreImport, ARecordCopiedIntoAnotherStoreLoadsEqualAndIsNeverStoredTwice) {
  TempDir dir;
  auto first = Store::open(dir.path() / "a.db");
  EvaluationRecord original = record_with_trace("m");
  first->save(original);
  const auto loaded = first->load(original.id);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(*loaded, original);
  EXPECT_EQ(first->find_by_uuid(original.uuid), original.id);
  EXPECT_EQ(first->find_by_uuid("00000000-0000-4000-8000-000000000000"), std::nullopt);
  EXPECT_EQ(first->find_by_uuid(""), std::nullopt);

  auto second = Store::open(dir.path() / "b.db");
  EvaluationRecord filler = record_with_trace("filler");
  second->save(filler);  // so that the copy gets other ids than in the first store
  EvaluationRecord copy = *loaded;
  copy.id = 0;
  for (RunRecord& run : copy.runs) run.id = 0;
  const auto [id, saved] = second->save_if_new(copy);
  EXPECT_TRUE(saved);
  EXPECT_EQ(id, 2);
  auto back = second->load(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->uuid, original.uuid);
  EXPECT_EQ(back->runs[0].trace_id, original.runs[0].trace_id);
  back->id = original.id;
  ASSERT_EQ(back->runs.size(), original.runs.size());
  for (std::size_t i = 0; i < back->runs.size(); ++i) back->runs[i].id = original.runs[i].id;
  EXPECT_EQ(*back, original);

  EvaluationRecord again = *loaded;
  again.id = 0;
  const auto [existing, saved_again] = second->save_if_new(again);
  EXPECT_FALSE(saved_again);
  EXPECT_EQ(existing, 2);
  EXPECT_EQ(again.id, 0) << "a skipped record was changed";
  EXPECT_EQ(second->list().size(), 2u);
  EXPECT_EQ(second->find_by_uuid(original.uuid), 2);
}

// A page in the middle of the file overwritten (a bad sector, a copy cut short and patched): refused before any
// measuring when opened to write, naming the file.
TEST(StoreIntegrity, AStoreWithADamagedPageIsRefusedWhenOpenedToWrite) {
  TempDir dir;
  const fs::path file = dir.path() / "damaged.db";
  {
    auto store = Store::open(file);
    for (int i = 0; i < 12; ++i) {
      EvaluationRecord r = record_with_trace("m" + std::to_string(i), 2000);
      store->save(r);
    }
  }
  int page_size = 0;
  long long pages = 0;
  {
    OtherWriter c(file);
    page_size = std::stoi(c.text("PRAGMA page_size"));
    pages = std::stoll(c.text("PRAGMA page_count"));
    ASSERT_EQ(c.text("PRAGMA quick_check"), "ok");
  }
  ASSERT_GT(pages, 20) << "too small a file to damage a page in its middle";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(pages / 2) * page_size);
    const std::string garbage(static_cast<std::size_t>(page_size), '\xA5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    ASSERT_TRUE(f.good());
  }
  {
    OtherWriter c(file);
    ASSERT_NE(c.text("PRAGMA quick_check"), "ok") << "the overwritten page went unnoticed by SQLite itself";
  }
  try {
    Store::open(file, StoreAccess::kReadWrite);
    FAIL() << "a damaged store was opened to write";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("damaged"), std::string::npos) << what;
    EXPECT_NE(what.find("quick_check"), std::string::npos) << what;
  }
}

TEST(StoreIntegrity, AReadOnlyStoreIsRefusedWhenOpenedToWrite) {
  // Root writes to a file of mode 0444 (nothing to refuse): the opens run as nobody then (other_user.h), in a folder
  // nobody may write, so that only the file is read-only.
  TempDir dir;
  const fs::path file = dir.path() / "ro.db";
  {
    auto store = Store::open(file);
    EvaluationRecord r = record_with_trace("m");
    store->save(r);
  }
  fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  if (::geteuid() == 0) ASSERT_EQ(::chown(dir.path().c_str(), testing::kNobody, testing::kNobody), 0);
  const std::string refused = testing::as_other_user([&] {
    Store::open(file, StoreAccess::kReadWrite);
    return std::string("a read-only store was opened to write");
  });
  EXPECT_NE(refused.find("error: xsp store " + file.string()), std::string::npos) << refused;
  EXPECT_NE(refused.find("can only be read"), std::string::npos) << refused;
  const std::string read = testing::as_other_user(
      [&] { return std::to_string(Store::open(file, StoreAccess::kRead)->list().size()) + " evaluation(s)"; });
  EXPECT_EQ(read, "1 evaluation(s)") << "reading a read-only store must still work";
}

}  // namespace
}  // namespace xsp
