// Issue 12, defect 3: a finished evaluation is never thrown away. When the store stays locked by another writer past
// --store-wait-s, `xsp evaluate` writes the evaluation to a recovery file (itself an XSP store), names it and the
// command that loads it, and exits 3; `xsp import` then loads it exactly once. In-process on a fake framework that
// takes the store's write lock through another connection once the model runs (after xsp opened and checked the
// store).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <thread>

#include "cli_harness.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

/// Another process's write transaction on the store, from construction until release().
class WriteLock {
 public:
  explicit WriteLock(const fs::path& file) {
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
  }
  ~WriteLock() { release(); }
  void release() {
    if (db_ == nullptr) return;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }

 private:
  sqlite3* db_ = nullptr;
};

std::vector<fs::path> recovery_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("xsp-recovered-", 0) == 0) out.push_back(e.path());
  return out;
}

// Ids are the store's own; everything else must be the same evaluation.
EvaluationRecord without_ids(EvaluationRecord r) {
  r.id = 0;
  for (RunRecord& run : r.runs) run.id = 0;
  return r;
}

class Recovery : public testing::CliHarness {
 protected:
  void SetUp() override {
    make_zoo("recovery-fake", "recovery_model", [this](const Tensor&) {
      if (lock_on_predict_ && !lock_) {
        lock_ = std::make_unique<WriteLock>(store_file());
        if (on_lock_) on_lock_();
      }
    });
  }
  fs::path store_file() const { return dir_ / "s.db"; }
  int evaluate(const std::string& wait_s) {
    return xsp({"--zoo",
                (dir_ / "zoo").string(),
                "--store",
                store_file().string(),
                "evaluate",
                "recovery_model",
                "--framework",
                "recovery-fake",
                "--batch-sizes",
                "1,2",
                "--trace-level",
                "framework",
                "--synthetic",
                "--warmup-min-ms",
                "50",
                "--min-duration-ms",
                "50",
                "--no-progress",
                "--store-wait-s",
                wait_s});
  }
  bool lock_on_predict_ = false;
  std::unique_ptr<WriteLock> lock_;
  std::function<void()> on_lock_;  ///< runs once the lock is taken
};

TEST_F(Recovery, AnEvaluationTheLockedStoreRefusedGoesToARecoveryFileThatImportLoadsOnce) {
  lock_on_predict_ = true;
  ASSERT_EQ(evaluate("0"), 3) << err_;
  ASSERT_TRUE(lock_) << "the fake framework never ran";
  lock_->release();

  const auto files = recovery_files(dir_);
  ASSERT_EQ(files.size(), 1u) << "expected one recovery file next to the store; stderr: " << err_;
  const fs::path recovery = files[0];
  EXPECT_TRUE(std::regex_match(
      recovery.filename().string(),
      std::regex("xsp-recovered-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\\.db")))
      << recovery;
  EXPECT_NE(err_.find(store_file().string()), std::string::npos) << err_;
  EXPECT_NE(err_.find("database is locked"), std::string::npos) << err_;
  EXPECT_NE(err_.find("xsp import " + recovery.string()), std::string::npos) << err_;
  for (const auto& e : fs::directory_iterator(dir_))  // no temporary file left beside it
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();

  EvaluationRecord saved;
  {
    auto r = Store::open(recovery, StoreAccess::kRead);
    const auto listing = r->list();
    ASSERT_EQ(listing.size(), 1u);
    saved = *r->load(listing[0].id);
  }
  EXPECT_EQ(saved.model_name, "recovery_model");
  ASSERT_EQ(saved.runs.size(), 2u);  // batch sizes 1 and 2, trace level framework
  EXPECT_FALSE(saved.runs[1].trace.spans.empty());
  EXPECT_FALSE(saved.runs[1].predict_latency_ns.empty());
  EXPECT_NE(recovery.filename().string().find(saved.uuid), std::string::npos);
  EXPECT_EQ(Store::open(store_file(), StoreAccess::kRead)->list().size(), 0u);

  ASSERT_EQ(xsp({"--store", store_file().string(), "import", recovery.string()}), 0) << err_;
  EXPECT_NE(out_.find("imported evaluation " + saved.uuid + " from " + recovery.string() + " as 1"), std::string::npos)
      << out_;
  {
    auto store = Store::open(store_file(), StoreAccess::kRead);
    ASSERT_EQ(store->list().size(), 1u);
    const auto imported = store->load(1);
    ASSERT_TRUE(imported);
    EXPECT_EQ(without_ids(*imported), without_ids(saved));
  }

  ASSERT_EQ(xsp({"--store", store_file().string(), "import", recovery.string()}), 0) << err_;
  EXPECT_NE(out_.find("skipped evaluation " + saved.uuid), std::string::npos) << out_;
  EXPECT_NE(out_.find("already stored as 1"), std::string::npos) << out_;
  EXPECT_EQ(Store::open(store_file(), StoreAccess::kRead)->list().size(), 1u) << "importing twice stored it twice";
}

// Another writer that finishes within --store-wait-s: the save waits, warns every 5 s, and succeeds (so this test
// takes about 6 s).
TEST_F(Recovery, ASaveWaitsForALockReleasedInTimeAndSaysSo) {
  std::thread release;
  lock_on_predict_ = true;
  on_lock_ = [this, &release] {
    release = std::thread([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5600));
      lock_->release();
    });
  };
  const int rc = evaluate("30");
  if (release.joinable()) release.join();
  ASSERT_EQ(rc, 0) << err_;
  EXPECT_NE(err_.find("store " + store_file().string() + " is locked by another writer; waited 5 s of 30 s"),
            std::string::npos)
      << err_;
  EXPECT_TRUE(recovery_files(dir_).empty());
  EXPECT_EQ(Store::open(store_file(), StoreAccess::kRead)->list().size(), 1u);
}

TEST_F(Recovery, StoreWaitOutOfRangeIsAUsageErrorNamingTheOptionAndRange) {
  for (const std::string bad : {"-1", "86401", "ten"}) {
    EXPECT_EQ(evaluate(bad), 2) << bad;
    EXPECT_NE(err_.find("--store-wait-s"), std::string::npos) << err_;
    EXPECT_NE(err_.find("from 0 to 86400"), std::string::npos) << err_;
  }
  EXPECT_FALSE(fs::exists(store_file())) << "a usage error still opened the store";
}

TEST_F(Recovery, ImportOfAMissingFileOrANonStoreNamesItAndChangesNothing) {
  ASSERT_EQ(evaluate("5"), 0) << err_;
  const fs::path text = dir_ / "notes.txt";
  std::ofstream(text) << "these are not the results you are looking for\n";
  const fs::path empty = dir_ / "empty.db";
  std::ofstream{empty};
  const fs::path missing = dir_ / "missing.db";
  for (const fs::path& bad : {text, empty, missing}) {
    SCOPED_TRACE(bad.string());
    EXPECT_EQ(xsp({"--store", store_file().string(), "import", bad.string()}), 3);
    EXPECT_NE(err_.find(bad.string()), std::string::npos) << err_;
    EXPECT_EQ(err_.find("xsp: error: "), 0u) << err_;
    EXPECT_EQ(out_, "");
  }
  EXPECT_FALSE(fs::exists(missing)) << "import created the missing file";
  EXPECT_EQ(fs::file_size(empty), 0u) << "import turned an empty file into a store";
  EXPECT_NE(err_.find("no such file"), std::string::npos) << err_;
  // A good file before a bad one: nothing is imported either, since every file is checked first.
  const fs::path other = dir_ / "other.db";
  {
    auto o = Store::open(other);
    EvaluationRecord r = *Store::open(store_file(), StoreAccess::kRead)->load(1);
    r.uuid.clear();
    for (RunRecord& run : r.runs) run.trace_id.clear();
    o->save(r);
  }
  EXPECT_EQ(xsp({"--store", store_file().string(), "import", other.string(), text.string()}), 3);
  EXPECT_NE(err_.find(text.string()), std::string::npos) << err_;
  EXPECT_NE(err_.find("as an XSP results store"), std::string::npos) << err_;
  EXPECT_NE(err_.find("file is not a database"), std::string::npos) << err_;
  EXPECT_EQ(Store::open(store_file(), StoreAccess::kRead)->list().size(), 1u) << "the target changed";
}

}  // namespace
}  // namespace xsp
