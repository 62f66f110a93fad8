// write_recovery_file() (evaluate()'s last resort when the store refuses a finished evaluation): the file is a
// one-evaluation store holding the record exactly, in the first folder that works, and when none works the error
// names every folder and no file is left behind.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "xsp/eval/evaluate.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

class RecoveryFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "xsp-recovery-file-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    // A regular file where a folder is expected: nothing can be created "in" it, whoever runs the test.
    std::ofstream(dir_ / "not-a-folder") << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static EvaluationRecord record() {
    EvaluationRecord r;
    r.created_at = "2026-11-24T09:00:00Z";
    r.uuid = "4e8ce750-5125-41a8-aaa7-efa8515c50fb";
    r.model_name = "m";
    r.batch_sizes = {1};
    RunRecord run;
    run.iterations = 2;
    run.predict_latency_ns = {1e6, 2e6};
    run.trace_id = "0123456789abcdef0123456789abcdef";
    r.runs.push_back(run);
    return r;
  }

  fs::path dir_;
};

TEST_F(RecoveryFile, GoesToTheFirstFolderThatWorksAndHoldsTheRecordExactly) {
  const fs::path good = dir_ / "good";
  fs::create_directory(good);
  const fs::path file = write_recovery_file(record(), {dir_ / "not-a-folder", good});
  EXPECT_EQ(file, good / "xsp-recovered-4e8ce750-5125-41a8-aaa7-efa8515c50fb.db");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(good)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{file.filename().string()}) << "a temporary or journal file was left";
  auto store = Store::open(file, StoreAccess::kRead);
  ASSERT_EQ(store->list().size(), 1u);
  EvaluationRecord loaded = *store->load(store->list()[0].id);
  loaded.id = 0;
  loaded.runs[0].id = 0;
  EXPECT_EQ(loaded, record());
}

TEST_F(RecoveryFile, WhenNoFolderWorksTheErrorNamesEachAndNoFileIsLeft) {
  const fs::path taken = dir_ / "taken";
  fs::create_directory(taken);
  // The recovery file's name exists already there: never overwritten.
  std::ofstream(taken / "xsp-recovered-4e8ce750-5125-41a8-aaa7-efa8515c50fb.db") << "someone else's";
  try {
    write_recovery_file(record(), {dir_ / "not-a-folder", taken});
    FAIL() << "a recovery file was written where none can be";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("could not write a recovery file"), std::string::npos) << what;
    EXPECT_NE(what.find((dir_ / "not-a-folder").string()), std::string::npos) << what;
    EXPECT_NE(what.find(taken.string() + ": "), std::string::npos) << what;
    EXPECT_NE(what.find("exists already"), std::string::npos) << what;
  }
  std::ifstream kept(taken / "xsp-recovered-4e8ce750-5125-41a8-aaa7-efa8515c50fb.db");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "someone else's");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(taken)) ++entries;
  EXPECT_EQ(entries, 1u) << "a temporary file was left";
}

}  // namespace
}  // namespace xsp
