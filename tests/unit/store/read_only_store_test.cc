// Issue 31, finding 10: a store on a read-only mount (here: a folder and a file this user cannot write) is still read,
// and what is not a store file (a FIFO, /dev/null, a folder) is refused before SQLite opens it, naming it.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "../manifest/hostile_files.h"
#include "minimal_record.h"
#include "other_user.h"
#include "temp_dir.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;
using testing::as_other_user;
using testing::has;
using testing::message_within;
using testing::TempDir;

// A store of one evaluation (model "m") at dir/s.db, closed; then the file is made 0444 and the folder 0555, so that
// nobody (or the test's own user, without root) can write neither, as on a read-only mount.
fs::path read_only_store(const TempDir& dir, int schema_version = 0) {
  const fs::path file = dir.path() / "s.db";
  {
    auto store = Store::open(file);
    EvaluationRecord r = testing::minimal_record("m");
    store->save(r);
  }
  if (schema_version > 0) {  // what an older XSP left: only its schema_version row matters here
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    const std::string sql = "UPDATE schema_version SET version = " + std::to_string(schema_version);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file.string() + "-wal")) << "the store was left open";
  fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                  fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  return file;
}

// Gives the folder back to its owner, so that TempDir can remove it without root.
void writable_again(const TempDir& dir) { fs::permissions(dir.path(), fs::perms::owner_all, fs::perm_options::add); }

}  // namespace

// Before: every store was opened SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; on a file it cannot write SQLite falls
// back to reading, but a WAL store is read through its -wal and -shm files, which it cannot create in a folder it
// cannot write: "unable to open database file".
TEST(ReadOnlyStore, AStoreInAFolderThatCannotBeWrittenIsStillRead) {
  TempDir dir;
  const fs::path file = read_only_store(dir);
  const std::string got = as_other_user([&] {
    auto store = Store::open(file, StoreAccess::kRead);
    const auto listing = store->list();
    const auto record = store->load(listing.empty() ? 1 : listing[0].id);
    return std::to_string(listing.size()) + " " + (record ? record->model_name : "(none)") + " schema " +
           std::to_string(store->schema_version());
  });
  EXPECT_EQ(got, "1 m schema " + std::to_string(Store::current_schema_version()));
  EXPECT_FALSE(fs::exists(file.string() + "-wal"));
  EXPECT_FALSE(fs::exists(file.string() + "-shm"));
  writable_again(dir);
}

TEST(ReadOnlyStore, OpeningItToWriteIsRefusedNamingTheFolder) {
  TempDir dir;
  const fs::path file = read_only_store(dir);
  const std::string got = as_other_user([&] {
    Store::open(file, StoreAccess::kReadWrite);
    return std::string("opened");
  });
  EXPECT_TRUE(has(got, "error: xsp store " + file.string())) << got;
  EXPECT_TRUE(has(got, "its folder " + dir.path().string() + " cannot be written")) << got;
  writable_again(dir);
}

// A store of an older schema cannot be migrated where it cannot be written: said so, with the command to run where
// it can, instead of SQLite's "attempt to write a readonly database".
TEST(ReadOnlyStore, AnOlderSchemaThatCannotBeMigratedIsNamedWithTheCommandThatMigratesIt) {
  TempDir dir;
  const int older = Store::current_schema_version() - 1;
  const fs::path file = read_only_store(dir, older);
  const std::string got = as_other_user([&] {
    Store::open(file, StoreAccess::kRead);
    return std::string("opened");
  });
  EXPECT_TRUE(has(got, "error: xsp store " + file.string())) << got;
  EXPECT_TRUE(has(got, "schema version " + std::to_string(older) + " is older than this build's (" +
                           std::to_string(Store::current_schema_version()) + ")"))
      << got;
  EXPECT_TRUE(has(got, "cannot be written")) << got;
  EXPECT_TRUE(has(got, "`xsp --store " + file.string() + " list`")) << got;
  writable_again(dir);
}

// Reading never creates: a missing store is an error naming it, and nothing appears.
TEST(ReadOnlyStore, OpeningToReadCreatesNothing) {
  TempDir dir;
  const fs::path file = dir.path() / "sub" / "none.db";
  try {
    Store::open(file, StoreAccess::kRead);
    FAIL() << "a missing store was opened to read";
  } catch (const StoreError& e) {
    EXPECT_TRUE(has(e.what(), file.string() + ": open: no such file")) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "sub")) << "opening to read created the store's folder";
}

TEST(StoreFiles, AFifoDevNullAndAFolderAreRefusedNamingWhatTheyAre) {
  TempDir dir;
  testing::Fifo fifo(dir.path() / "fifo.db");
  ASSERT_TRUE(fifo.ok());
  const bool journal_before = fs::exists("/dev/null-journal");
  struct Case {
    fs::path file;
    std::string kind;
  };
  for (const Case& c : {Case{fifo.path(), "a FIFO (named pipe)"}, Case{"/dev/null", "a character device"},
                        Case{dir.path(), "a folder"}}) {
    for (const StoreAccess access : {StoreAccess::kReadWrite, StoreAccess::kRead}) {
      SCOPED_TRACE(c.file.string() + (access == StoreAccess::kRead ? " (read)" : " (write)"));
      // Before, SQLite opened the FIFO and waited for data for ever: fail instead of hanging.
      const std::string e = message_within([&] { Store::open(c.file, access); }, std::chrono::seconds(10),
                                           [&] {
                                             const int fd = ::open(c.file.c_str(), O_WRONLY | O_NONBLOCK);
                                             if (fd >= 0) {
                                               const std::string junk(4096, 'x');
                                               (void)!::write(fd, junk.data(), junk.size());
                                               ::close(fd);
                                             }
                                           });
      EXPECT_TRUE(has(e, "xsp store " + c.file.string() + ": open: not a regular file (it is " + c.kind + ")")) << e;
    }
  }
  if (!journal_before) EXPECT_FALSE(fs::exists("/dev/null-journal")) << "SQLite created /dev/null-journal";
  EXPECT_FALSE(fs::exists("/dev/null-wal"));
  EXPECT_FALSE(fs::exists(fifo.path().string() + "-journal"));
  EXPECT_FALSE(fs::exists(fifo.path().string() + "-wal"));
}

}  // namespace xsp
