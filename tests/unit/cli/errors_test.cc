// Issue 12, the CLI: bad input never crashes, loses or lies. Every error is one line "xsp: error: MESSAGE" on stderr
// with a documented exit code (0 ok, 1 the work failed, 2 usage, 3 I/O or store); option values are checked (no
// NaN, infinite or negative durations, no wrapped-around seed, no empty analysis list) with messages that name the
// option and the valid range; an empty store path stores nothing; reads do not wait for a writer; a failed write of
// a file leaves no temporary file. In-process, on a fake framework of its own name.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli_harness.h"
#include "xsp/manifest/manifest.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

/// Sets an environment variable for a scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// A raw SQLite connection, as another xsp process holds one.
class OtherConnection {
 public:
  explicit OtherConnection(const fs::path& file) {
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  }
  ~OtherConnection() {
    sqlite3_finalize(st_);
    sqlite3_close_v2(db_);
  }
  void exec(const std::string& sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
  }
  void start_query(const std::string& sql) {
    ASSERT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st_, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    ASSERT_EQ(sqlite3_step(st_), SQLITE_ROW) << sqlite3_errmsg(db_);
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
};

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class Errors : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("errors-fake", "errors_model"); }

  std::string store() const { return (dir_ / "s.db").string(); }
  // A quick evaluation of the fake model into store(); returns the exit code.
  int evaluate(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--zoo",    (dir_ / "zoo").string(), "--store",     store(),
                                  "evaluate", "errors_model",          "--synthetic", "--warmup-min-ms",
                                  "50",       "--min-duration-ms",     "50",          "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return xsp(args);
  }

  // The error is exactly one line "xsp: error: ..." holding `expected`, and no number of 20 or more digits.
  void expect_error(const std::string& expected) const {
    expect_one_line_error(expected);
    EXPECT_FALSE(std::regex_search(err_, std::regex("[0-9]{20}"))) << err_;
  }
};

TEST_F(Errors, AnEmptyStorePathIsAUsageErrorAndNothingIsEvaluated) {
  {
    ScopedEnv env("XSP_STORE", "");
    EXPECT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "evaluate", "errors_model", "--synthetic", "--no-progress"}), 2);
  }
  expect_error("--store: expected a file path, got an empty one");
  EXPECT_EQ(out_.find("stored as evaluation"), std::string::npos) << out_;
  EXPECT_EQ(xsp({"--store", "", "list"}), 2);
  expect_error("--store: expected a file path, got an empty one");
}

struct UsageCase {
  std::vector<std::string> args;
  std::string message;
};

TEST_F(Errors, ParseErrorsAreUsageErrorsInXspsFormatNamingTheOptionAndTheRange) {
  const std::string zoo = (dir_ / "zoo").string();
  const std::vector<UsageCase> cases = {
      {{"machine", "ceilings", "--repetitions", "0"}, "--repetitions: must be at least 1, got 0"},
      {{"machine", "ceilings", "--device", "-1"}, "--device: must be at least 0, got -1"},
      {{"frobnicate"}, "unknown command 'frobnicate' for xsp; expected models, evaluate, list"},
      {{}, "xsp needs a command: models, evaluate, list"},
      {{"trace"}, "xsp trace needs a command: export or convert"},
      {{"trace", "exprot", "1"}, "unknown command 'exprot' for xsp trace; expected export or convert"},
      {{"evaluate"}, "model is required"},
      {{"list", "--no-such-flag"}, "--no-such-flag"},
      {{"evaluate", "errors_model", "--seed", "-1"}, "--seed: must be a whole number of at least 0, got -1"},
      {{"evaluate", "errors_model", "--seed", "abc"}, "--seed"},
      {{"evaluate", "errors_model", "--scenario", "server", "--latency-bound-ms", "-1"},
       "--latency-bound-ms: must be at least 0, got -1"},
      {{"evaluate", "errors_model", "--scenario", "server", "--latency-bound-ms", "nan"},
       "--latency-bound-ms: must be a finite number, got nan"},
      {{"evaluate", "errors_model", "--scenario", "server", "--target-qps", "inf"},
       "--target-qps: must be a finite number, got inf"},
      {{"evaluate", "errors_model", "--stability-tolerance", "-0.5"}, "--stability-tolerance: must be at least 0"},
      {{"analyze", "1", "--latency-bound-ms", "nan"}, "--latency-bound-ms: must be a finite number, got nan"},
      {{"analyze", "1", "--latency-bound-ms", "1e999"}, "--latency-bound-ms: must be a finite number"},
      {{"analyze", "1", "--analysis", ""}, "--analysis: expected a comma-separated list of analysis ids"},
      {{"analyze", "1", "--analysis", ","}, "--analysis: expected a comma-separated list of analysis ids"},
      {{"evaluate", "errors_model", "--analysis", ""}, "--analysis: expected a comma-separated list of analysis ids"},
      {{"evaluate", "errors_model", "--max-batch-bytes", "-1"},
       "--max-batch-bytes: must be a whole number of at least 0, got -1"},
      {{"evaluate", "errors_model", "--max-batch-bytes", "8 parsecs"}, "--max-batch-bytes"},
  };
  for (const UsageCase& c : cases) {
    std::vector<std::string> args{"--zoo", zoo, "--store", store()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : c.args) shown += " '" + a + "'";
    SCOPED_TRACE("xsp" + shown);
    EXPECT_EQ(xsp(args), 2) << err_;
    expect_error(c.message);
    EXPECT_EQ(out_, "");
  }
  EXPECT_FALSE(fs::exists(store())) << "a usage error opened (and created) the store";
}

// Scenario combinations that cannot run are refused by validation, the one place a request is checked (the
// scenario workload trusts its plan), naming the flag.
TEST_F(Errors, ScenarioCombinationsThatCannotRunAreRefusedNamingTheFlag) {
  EXPECT_EQ(evaluate({"--scenario", "offline", "--trace-tail", "3"}), 2) << err_;
  expect_error("--trace-tail: 0 with offline (it has a single query), got 3");
  EXPECT_EQ(evaluate({"--scenario", "single-stream", "--trace-level", "framework", "--trace-tail", "0"}), 2) << err_;
  expect_error("--trace-tail: >= 1 with trace level framework");
  EXPECT_EQ(evaluate({"--scenario", "single-stream", "--trace-level", "kernel"}), 2) << err_;
  expect_error("--trace-level: model or framework");
  EXPECT_EQ(evaluate({"--scenario", "single-stream", "--batch-sizes", "2"}), 2) << err_;
  expect_error("--batch-sizes: empty except for offline");
  EXPECT_EQ(evaluate({"--scenario", "single-stream", "--trace-level", "framework", "--leveled"}), 2) << err_;
  expect_error("--leveled: false with a scenario");
}

// Issue 12 defect 9: `--batch-sizes 1000000000` was a bare std::bad_alloc after loading the model. Every batch
// size is now checked against a documented limit before the model loads, and the limit can be raised.
TEST_F(Errors, BatchMemoryIsCheckedBeforeRunningAgainstALimitThatCanBeRaised) {
  // The fake model's input is 4 float32 values: a batch of 100 needs 1600 bytes.
  EXPECT_EQ(evaluate({"--batch-sizes", "100", "--max-batch-bytes", "1000"}), 2) << err_;
  expect_error("--batch-sizes: batch sizes whose batch fits in max_batch_bytes");
  expect_error("needs 1600 bytes, more than the limit of 1000 bytes");
  EXPECT_EQ(evaluate({"--batch-sizes", "1000000000"}), 2) << err_;
  expect_error("batch sizes from 1 to 1048576, got 1000000000");
  EXPECT_EQ(evaluate({"--max-batch-bytes", "2TiB"}), 2) << err_;
  expect_error("--max-batch-bytes: a number of bytes from 1 to 1099511627776, got 2199023255552");
  EXPECT_EQ(evaluate({"--max-batch-bytes", "0"}), 2) << err_;
  expect_error("--max-batch-bytes: a number of bytes from 1 to 1099511627776, got 0");

  ASSERT_EQ(evaluate({"--batch-sizes", "100", "--max-batch-bytes", "2KiB"}), 0) << err_;
  const auto record = Store::open(store(), StoreAccess::kRead)->load(1);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->settings["request"]["max_batch_bytes"], 2048);
  EXPECT_EQ(record->batch_sizes, std::vector<int>{100});
}

TEST_F(Errors, ValidValuesAtTheLimitsStillWork) {
  ASSERT_EQ(evaluate({"--seed", "0", "--stability-tolerance", "0.1"}), 0) << err_;
  ASSERT_EQ(evaluate({"--seed", "18446744073709551615"}), 0) << err_;
  EXPECT_EQ(xsp({"--store", store(), "analyze", "1", "--analysis", "A1", "--latency-bound-ms", "0"}), 0) << err_;
}

TEST_F(Errors, HelpAndReadmeDocumentTheExitCodes) {
  ASSERT_EQ(xsp({"--help"}), 0);
  const std::size_t at = out_.find("Exit codes:\n");
  ASSERT_NE(at, std::string::npos) << out_;
  const std::string block = out_.substr(at);
  for (const char* line : {"  0    success", "  1    the work failed", "  2    usage error",
                           "  3    I/O or store error", "  130  interrupted (SIGINT); 143: terminated (SIGTERM)"})
    EXPECT_NE(block.find(line), std::string::npos) << line << " missing from --help:\n" << block;

  std::ifstream in(fs::path(XSP_SOURCE_DIR) / "README.md");
  std::stringstream readme;
  readme << in.rdbuf();
  const std::string r = readme.str();
  const std::size_t section = r.find("\n## Exit codes\n");
  ASSERT_NE(section, std::string::npos) << "README has no section 'Exit codes'";
  // Every line of --help's block is in the README section, as is.
  std::istringstream lines(block.substr(std::string("Exit codes:\n").size()));
  for (std::string line; std::getline(lines, line) && !line.empty();)
    EXPECT_NE(r.find(line, section), std::string::npos) << "README's Exit codes lack: " << line;
}

TEST_F(Errors, EachKindOfFailureHasItsExitCode) {
  // 1: the work failed (no such evaluation).
  ASSERT_EQ(evaluate(), 0) << err_;
  EXPECT_EQ(xsp({"--store", store(), "show", "99"}), 1);
  expect_error("no evaluation 99 in store " + store());

  // 3: the store is another application's database.
  const fs::path foreign = dir_ / "contacts.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE customers (id INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_EQ(xsp({"--store", foreign.string(), "list"}), 3);
  expect_error(foreign.string());
  expect_error("'customers'");

  // 3: an export that cannot be written (the output is a directory); nothing left beside it.
  fs::create_directories(dir_ / "out" / "t.json");
  EXPECT_EQ(xsp({"--store", store(), "trace", "export", "1", "-o", (dir_ / "out" / "t.json").string()}), 3);
  expect_error("cannot write " + (dir_ / "out" / "t.json").string());
  EXPECT_EQ(files_in(dir_ / "out"), std::vector<std::string>{"t.json"});
}

// Issue 12 B: `xsp list`/`show` while an evaluation saves; `xsp evaluate` while another command reads.
TEST_F(Errors, ReadsDoNotWaitForAWriterAndAWriterDoesNotWaitForReaders) {
  ASSERT_EQ(evaluate(), 0) << err_;
  {
    OtherConnection writer(store());
    writer.exec("BEGIN IMMEDIATE");
    writer.exec("UPDATE evaluations SET model_name = 'uncommitted'");
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(xsp({"--store", store(), "list"}), 0) << err_;
    EXPECT_NE(out_.find("errors_model"), std::string::npos) << out_;
    EXPECT_EQ(xsp({"--store", store(), "show", "1"}), 0) << err_;
    EXPECT_EQ(xsp({"--store", store(), "analyze", "1", "--analysis", "A1"}), 0) << err_;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0)
        << "the reads waited for the writer";
    writer.exec("ROLLBACK");
  }
  {
    OtherConnection reader(store());
    reader.exec("BEGIN");
    reader.start_query("SELECT id FROM evaluations");
    EXPECT_EQ(evaluate(), 0) << err_;
    EXPECT_NE(out_.find("stored as evaluation 2"), std::string::npos) << out_;
  }
}

/// Files may grow to `bytes` at most while this lives (writes past it fail with EFBIG, as on a full disk).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_;
};

// Issue 12 C: a chart that cannot be written (a full disk) is an I/O error and leaves no temporary file.
TEST_F(Errors, AChartThatCannotBeWrittenLeavesNoTemporaryFile) {
  const fs::path h = dir_ / "H.db";  // a copy: opening a store migrates it
  fs::copy_file(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "counters" / "resnet18_bs1_hardware_h200.db", h);
  ASSERT_EQ(xsp({"--store", h.string(), "show", "1"}), 0) << err_;  // migrated before the limit
  fs::create_directories(dir_ / "charts");
  OtherConnection keep_open(h);  // SQLite's shared-memory file exists already: reading writes nothing
  keep_open.exec("SELECT COUNT(*) FROM evaluations");
  int rc = 0;
  {
    FileSizeLimit full(2048);
    rc = xsp({"--store", h.string(), "analyze", "1", "--analysis", "A9", "--format", "csv", "--chart",
              (dir_ / "charts" / "r.vl.json").string()});
  }
  EXPECT_EQ(rc, 3) << err_;
  expect_error("cannot write " + (dir_ / "charts" / "r.vl.json").string());
  EXPECT_EQ(files_in(dir_ / "charts"), std::vector<std::string>{}) << "a temporary or partial chart was left";
}

}  // namespace
}  // namespace xsp
