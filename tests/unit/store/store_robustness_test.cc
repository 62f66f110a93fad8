// Issue 12, the store: bad input never loses results (an empty path, another application's SQLite file), and
// readers and writers in other connections never lock each other out (WAL, reads without a write lock, migration
// only when the schema is older).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "minimal_record.h"
#include "temp_dir.h"
#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

EvaluationRecord small_record(const std::string& model) { return testing::minimal_record(model); }

/// A raw SQLite connection, as another process (or another program) would hold one.
class RawConnection {
 public:
  explicit RawConnection(const fs::path& file) {
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
    sqlite3_busy_timeout(db_, 100);
  }
  ~RawConnection() {
    sqlite3_finalize(st_);
    sqlite3_close_v2(db_);
  }
  void exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << sql << ": " << (err ? err : "");
  }
  /// Steps `sql` once and keeps the statement open (a reader in the middle of its query holds its snapshot).
  void start_query(const std::string& sql) {
    ASSERT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st_, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    ASSERT_EQ(sqlite3_step(st_), SQLITE_ROW) << sqlite3_errmsg(db_);
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr)
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
};

std::set<std::string> tables_of(const fs::path& file) {
  RawConnection c(file);
  std::set<std::string> out;
  const std::string names = c.text("SELECT group_concat(name, ',') FROM sqlite_master WHERE type = 'table'");
  std::size_t start = 0;
  while (start < names.size()) {
    const std::size_t comma = names.find(',', start);
    out.insert(names.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(StoreRobustness, EmptyPathIsRefusedInsteadOfATemporaryDatabase) {
  try {
    Store::open("");
    FAIL() << "an empty store path was accepted (SQLite opens a temporary database and loses every result)";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Store::open("", StoreAccess::kRead), StoreError);
}

TEST(StoreRobustness, AnotherApplicationsDatabaseIsRefusedAndLeftAsItWas) {
  TempDir dir;
  const fs::path file = dir.path() / "contacts.db";
  {
    RawConnection c(file);
    c.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('Ada')");
  }
  for (StoreAccess access : {StoreAccess::kReadWrite, StoreAccess::kRead}) {
    try {
      Store::open(file, access);
      FAIL() << "a database holding another application's table 'customers' was opened as a store";
    } catch (const StoreError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find("'customers'"), std::string::npos) << what;
      EXPECT_NE(what.find("not an XSP results store"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(tables_of(file), std::set<std::string>{"customers"}) << "XSP's tables were added to the foreign file";
}

TEST(StoreRobustness, AnEmptyFileAndAnExistingStoreStillOpen) {
  TempDir dir;
  const fs::path file = dir.path() / "empty.db";
  { RawConnection c(file); }  // a zero-length file: SQLite's empty database
  {
    auto store = Store::open(file);
    EvaluationRecord r = small_record("m");
    EXPECT_EQ(store->save(r), 1);
  }
  auto again = Store::open(file, StoreAccess::kRead);
  EXPECT_EQ(again->list().size(), 1u);
  EXPECT_EQ(again->schema_version(), Store::current_schema_version());
}

TEST(StoreRobustness, StoreUsesWalAndIsOneFileOnceClosed) {
  TempDir dir;
  const fs::path file = dir.path() / "s.db";
  {
    auto store = Store::open(file);
    EvaluationRecord r = small_record("m");
    store->save(r);
    RawConnection c(file);
    EXPECT_EQ(c.text("PRAGMA journal_mode"), "wal");
  }
  EXPECT_FALSE(fs::exists(file.string() + "-wal")) << "the WAL file outlived the last connection";
  EXPECT_FALSE(fs::exists(file.string() + "-shm"));
  RawConnection c(file);
  EXPECT_EQ(c.text("SELECT model_name FROM evaluations"), "m") << "the save was not checkpointed into the file";
}

// `xsp evaluate` while `xsp show` reads: opening for writing and saving must not wait for the reader.
TEST(StoreRobustness, AReaderDoesNotStopAWriterFromOpeningAndSaving) {
  TempDir dir;
  const fs::path file = dir.path() / "s.db";
  {
    auto store = Store::open(file);
    EvaluationRecord r = small_record("first");
    store->save(r);
  }
  RawConnection reader(file);
  reader.exec("BEGIN");
  reader.start_query("SELECT model_name FROM evaluations");  // holds its read snapshot

  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Store> writer;
  ASSERT_NO_THROW(writer = Store::open(file)) << "opening for writing waited for the reader";
  EvaluationRecord second = small_record("second");
  ASSERT_NO_THROW(writer->save(second));
  EXPECT_EQ(second.id, 2);
  EXPECT_LT(seconds_since(t0), 2.0) << "the writer waited for the reader";
  EXPECT_EQ(reader.text("SELECT COUNT(*) FROM evaluations"), "1") << "the reader's snapshot changed under it";
}

// `xsp list` while `xsp evaluate` saves: reads must not wait for (or fail on) another connection's write lock,
// and see the last committed state.
TEST(StoreRobustness, AWriterHoldingItsLockDoesNotStopReaders) {
  TempDir dir;
  const fs::path file = dir.path() / "s.db";
  std::int64_t id = 0;
  {
    auto store = Store::open(file);
    EvaluationRecord r = small_record("committed");
    id = store->save(r);
  }
  RawConnection writer(file);
  writer.exec("BEGIN IMMEDIATE");
  writer.exec("UPDATE evaluations SET model_name = 'uncommitted'");

  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Store> reader;
  ASSERT_NO_THROW(reader = Store::open(file, StoreAccess::kRead)) << "opening to read waited for the writer";
  std::vector<EvaluationListing> listing;
  ASSERT_NO_THROW(listing = reader->list());
  ASSERT_EQ(listing.size(), 1u);
  EXPECT_EQ(listing[0].model_name, "committed");
  std::optional<EvaluationRecord> loaded;
  ASSERT_NO_THROW(loaded = reader->load(id));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->model_name, "committed");
  EXPECT_EQ(loaded->runs.size(), 1u);
  EXPECT_NO_THROW(reader->list_ceilings());
  EXPECT_LT(seconds_since(t0), 2.0) << "the reads waited for the writer";

  writer.exec("COMMIT");
  EXPECT_EQ(reader->list()[0].model_name, "uncommitted");
}

// Issue 12, exports: a failed export leaves no temporary file (PATH.tmp-PID, and SQLite's -journal) behind.

/// Files may grow to `bytes` at most while this lives (a full disk, as far as the writes are concerned: they fail
/// with EFBIG); SIGXFSZ is ignored meanwhile so that the failure is an error, not the end of the process.
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

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A stored-looking run whose exports are tens of kilobytes.
std::pair<EvaluationRecord, RunRecord> big_run() {
  EvaluationRecord record = small_record("big");
  record.id = 1;
  record.uuid = "0b6e1a4c-8f1d-4c2e-9a57-3d2f0c1e5b7a";
  RunRecord run = record.runs[0];
  run.id = 1;
  run.trace_id = "0123456789abcdef0123456789abcdef";
  for (SpanId i = 1; i <= 400; ++i) {
    Span s;
    s.id = i;
    s.parent_id = i == 1 ? kNoSpan : 1;
    s.level = i == 1 ? Level::kModel : Level::kFramework;
    s.parent_rule = i == 1 ? ParentRule::kNone : ParentRule::kContext;
    s.name = i == 1 ? "predict" : "aten::op_with_a_rather_long_name_" + std::to_string(i);
    s.start_ns = 1000 * static_cast<std::int64_t>(i);
    s.end_ns = s.start_ns + 900;
    s.track = Track::host_thread(7);
    run.trace.spans.push_back(std::move(s));
  }
  return {record, run};
}

TEST(TraceExportRobustness, AFailedRenameLeavesNoTemporaryFile) {
  TempDir dir;
  const auto [record, run] = big_run();
  const fs::path target = dir.path() / "t.json";
  fs::create_directory(target);  // renaming a file over a directory fails
  for (TraceFormat format : {TraceFormat::kChrome, TraceFormat::kOtlp, TraceFormat::kSqlite}) {
    SCOPED_TRACE(std::string(to_string(format)));
    try {
      export_run_trace(record, run, format, target);
      FAIL() << "exported over a directory";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"t.json"});
    EXPECT_TRUE(fs::is_directory(target));
  }
}

// `-o /dev/null`, `-o /dev/stdout` or a named pipe: written in place. A rename over it would have replaced the pipe
// (as root, /dev/null itself) with a regular file. A named pipe stands for them here, read without a thread: its
// reader is opened non-blocking first, so the export's open for writing does not wait.
TEST(TraceExportRobustness, ANamedPipeIsWrittenInPlaceNeverReplaced) {
  TempDir dir;
  const auto [record, run] = big_run();
  const fs::path pipe = dir.path() / "out.fifo";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0) << std::strerror(errno);
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  write_file_atomically(pipe, std::string("hello"));
  char got[16] = {};
  EXPECT_EQ(::read(reader, got, sizeof got), 5);
  EXPECT_EQ(std::string(got), "hello");
  EXPECT_TRUE(fs::is_fifo(pipe));
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"out.fifo"});  // no temporary beside it
  // The SQLite export needs a file: refused, naming the pipe, and the pipe stays.
  try {
    export_run_trace(record, run, TraceFormat::kSqlite, pipe);
    FAIL() << "an SQLite database was written to a pipe";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(pipe));
  ::close(reader);
}

TEST(TraceExportRobustness, AFailedWriteLeavesNoTemporaryFileAndNoPartialTarget) {
  TempDir dir;
  const auto [record, run] = big_run();
  {
    RawConnection warm(dir.path() / "unused.db");  // SQLite's own start-up writes happen before the limit
  }
  fs::remove(dir.path() / "unused.db");
  for (TraceFormat format : {TraceFormat::kChrome, TraceFormat::kOtlp, TraceFormat::kSqlite}) {
    SCOPED_TRACE(std::string(to_string(format)));
    const fs::path target = dir.path() / ("t." + std::string(to_string(format)));
    {
      FileSizeLimit full(4096);
      EXPECT_THROW(export_run_trace(record, run, format, target), std::runtime_error);
    }
    EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{}) << "a temporary or partial file was left";
  }
  {
    FileSizeLimit full(100);
    try {
      write_file_atomically(dir.path() / "c.vl.json", std::string(10000, 'x'));
      FAIL() << "a write past the file size limit succeeded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("c.vl.json"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{});
  // And without the limit the same export succeeds and leaves only its file.
  export_run_trace(record, run, TraceFormat::kChrome, dir.path() / "t.json");
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"t.json"});
}

// The streaming overload of write_file_atomically, which the JSON exports write through.
TEST(TraceExportRobustness, AWriterThatThrowsLeavesNoFileAndKeepsTheOldOne) {
  TempDir dir;
  const fs::path target = dir.path() / "t.json";
  EXPECT_THROW(write_file_atomically(target,
                                     [](std::ostream& out) {
                                       out << std::string(3 << 20, 'x');  // past the 1 MiB buffer: on disk already
                                       throw std::logic_error("writer failed midway");
                                     }),
               std::logic_error);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{});
  std::ofstream(target) << "old";
  EXPECT_THROW(write_file_atomically(target,
                                     [](std::ostream& out) {
                                       out << "partial";
                                       throw std::runtime_error("writer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"t.json"});
  std::ifstream in(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
}

TEST(TraceExportRobustness, AFullDiskWhileStreamingIsAnIoErrorNamingThePath) {
  TempDir dir;
  const fs::path target = dir.path() / "big.json";
  std::size_t chunks_written = 0;
  {
    FileSizeLimit full(64 * 1024);
    try {
      write_file_atomically(target, [&](std::ostream& out) {
        for (int i = 0; i < 4096 && out; ++i, ++chunks_written) out << std::string(1024, 'y');
      });
      FAIL() << "a streamed write past the file size limit succeeded";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::strerror(EFBIG)), std::string::npos) << e.what();
    }
  }
  EXPECT_LT(chunks_written, 4096u) << "the stream never reported the failure";
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{});
  // The same write without the limit succeeds and leaves only its file, complete.
  write_file_atomically(target, [](std::ostream& out) {
    for (int i = 0; i < 4096; ++i) out << std::string(1024, 'y');
  });
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"big.json"});
  EXPECT_EQ(fs::file_size(target), 4096u * 1024u);
}

}  // namespace
}  // namespace xsp
