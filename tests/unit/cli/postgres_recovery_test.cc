// `xsp evaluate --store postgresql://...` whose save the database refuses: a PostgreSQL store has no folder, so the
// recovery file goes to the current folder, and the message names the store without its password and the
// `xsp import` that loads it. In-process on a fake framework that, once the model runs, makes the database refuse
// every run (a CHECK constraint added through another connection, after xsp opened and checked the store).
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_harness.h"
#include "xsp/store/store.h"

#if __has_include("pg_test_db.h")
#include "pg_test_db.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

class PgRecovery : public testing::CliHarness {
 protected:
  void SetUp() override {
    make_zoo("pg-recovery-fake", "pg_recovery_model", [this](const Tensor&) {
      if (refuse_url_.empty() || refused_) return;
      pqxx::connection c(refuse_url_);
      pqxx::work tx(c);
      tx.exec0("ALTER TABLE runs ADD CONSTRAINT xsp_test_refuse CHECK (batch_size < 0) NOT VALID");
      tx.commit();
      refused_ = true;
    });
    previous_cwd_ = fs::current_path();
    fs::current_path(dir_);
  }
  void TearDown() override {
    fs::current_path(previous_cwd_);
    CliHarness::TearDown();
  }
  std::string refuse_url_;
  bool refused_ = false;
  fs::path previous_cwd_;
};

TEST_F(PgRecovery, ARefusedSaveGoesToARecoveryFileInTheCurrentFolder) {
  XSP_PG_TEST_DATABASE(db);
  const std::string url = db.url();
  refuse_url_ = url;
  ASSERT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "--store", url, "evaluate", "pg_recovery_model", "--framework",
                 "pg-recovery-fake", "--batch-sizes", "1", "--synthetic", "--warmup-min-ms", "20", "--min-duration-ms",
                 "20", "--no-progress"}),
            3)
      << err_;
  ASSERT_TRUE(refused_) << "the fake framework never ran";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().filename().string().rfind("xsp-recovered-", 0) == 0) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "expected one recovery file in the current folder; stderr: " << err_;
  EXPECT_NE(err_.find("check constraint"), std::string::npos) << err_;
  EXPECT_NE(err_.find("xsp import ./" + files[0].filename().string() + " --store " + redact_location(url)),
            std::string::npos)
      << err_;

  // Once the database accepts runs again, the import loads it.
  {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec0("ALTER TABLE runs DROP CONSTRAINT xsp_test_refuse");
    tx.commit();
  }
  ASSERT_EQ(xsp({"--store", url, "import", files[0].string()}), 0) << err_;
  EXPECT_EQ(Store::open(url, StoreAccess::kRead)->list().size(), 1u);
}

}  // namespace
}  // namespace xsp

#endif
