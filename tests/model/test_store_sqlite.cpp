// How a database is opened (issue 18, "Databases"): what each mode refuses with one line naming
// the file, and that a command which only reads never writes, migrates or creates anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "core/error.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

/// The message of the DatabaseError that f throws; a test failure when it throws anything else.
template <typename F>
std::string database_error(F&& f) {
  try {
    f();
  } catch (const DatabaseError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected DatabaseError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected DatabaseError, nothing was thrown";
  return "";
}


/// A database with one device in it, closed again.
void make_database(const fs::path& file) {
  Store store(file);
  DeviceRecord d;
  d.uuid = "GPU-access";
  d.name = "Test GPU";
  store.upsert_device(d);
}

TEST(StoreAccess, MissingFileIsNotCreatedByReadOrWrite) {
  test::TempDir dir;
  const fs::path file = dir / "sub" / "none.db";
  for (const OpenMode mode : {OpenMode::read, OpenMode::write})
    EXPECT_EQ(database_error([&] { Store store(file, mode); }),
              "database " + file.string() + " does not exist; run cm-tune tune first");
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{}) << "no folder or file may be created";
}

TEST(StoreAccess, EmptyFileIsRefusedByReadAndWriteAndLeftEmpty) {
  test::TempDir dir;
  const fs::path file = dir / "empty.db";
  test::write_file(file, "");
  for (const OpenMode mode : {OpenMode::read, OpenMode::write})
    EXPECT_EQ(database_error([&] { Store store(file, mode); }),
              "database " + file.string() + " is empty (no cm-tune data yet); run cm-tune tune first");
  EXPECT_EQ(fs::file_size(file), 0u) << "no schema may be written into it";
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"empty.db"}) << "no -wal, -shm or -journal";
  // create is the mode that sets up a new database, as tune does.
  EXPECT_EQ(Store(file, OpenMode::create).schema_version(), latest_schema_version());
}

TEST(StoreAccess, FolderDeviceAndPipeAreRefusedInEveryMode) {
  test::TempDir dir;
  const fs::path fifo = dir / "pipe.db";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const OpenMode mode : {OpenMode::create, OpenMode::write, OpenMode::read}) {
    EXPECT_EQ(database_error([&] { Store store(dir.path(), mode); }),
              "database " + dir.path().string() + " is a folder; name a database file, e.g. " +
                  (dir / "cm-tune.db").string());
    EXPECT_EQ(database_error([&] { Store store("/dev/null", mode); }),
              "database /dev/null is a character device, not a database file");
    EXPECT_EQ(database_error([&] { Store store(fifo, mode); }),
              "database " + fifo.string() + " is a named pipe, not a database file");
  }
  // SQLite would have created a journal beside them.
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"pipe.db"});
}

TEST(StoreAccess, NonSqliteFileIsOneLineInEveryMode) {
  test::TempDir dir;
  const fs::path file = dir / "notes.txt";
  const std::string text(300, 'x');
  test::write_file(file, text);
  for (const OpenMode mode : {OpenMode::create, OpenMode::write, OpenMode::read})
    EXPECT_EQ(database_error([&] { Store store(file, mode); }),
              file.string() + " is not a cm-tune database (not an SQLite file)");
  EXPECT_EQ(test::read_file(file), text);
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"notes.txt"});
}

TEST(StoreAccess, NegativeSchemaVersionIsDamageInEveryMode) {
  // A flipped header byte made user_version negative: compile then re-ran migration 0001 over the
  // existing tables (exit 4), and a read said "schema version -16777211, older than ...".
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  make_database(file);
  { Database(file).exec("PRAGMA user_version = -16777211"); }
  const std::string before = test::read_file(file);
  for (const OpenMode mode : {OpenMode::create, OpenMode::write, OpenMode::read})
    EXPECT_EQ(database_error([&] { Store store(file, mode); }),
              "database " + file.string() +
                  " is damaged (its schema version reads -16777211); restore it from a backup, or remove it and tune "
                  "again");
  EXPECT_EQ(test::read_file(file), before);
}

TEST(StoreAccess, DamagedPagesAreRefusedBeforeAWriteAndMetByAReadThatTouchesThem) {
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  make_database(file);
  int64_t root = 0, page = 0;
  {
    Database db(file, OpenMode::read);
    Statement s = db.prepare(
        "SELECT (SELECT rootpage FROM sqlite_master WHERE name = 'devices'), (SELECT page_size FROM pragma_page_size)");
    ASSERT_TRUE(s.step());
    root = s.column_int(0);
    page = s.column_int(1);
  }
  std::string bytes = test::read_file(file);
  ASSERT_GT(root, 1);
  for (int64_t i = 0; i < 64; ++i) bytes[static_cast<size_t>((root - 1) * page + i)] = '\xa5';
  test::write_file(file, bytes);
  const std::string advice = "; restore it from a backup, or remove it and tune again";
  // Opening to write runs quick_check first, which names the page (in SQLite's words, e.g.
  // "btreeInitPage() returns error code 11").
  for (const OpenMode mode : {OpenMode::create, OpenMode::write}) {
    const std::string message = database_error([&] { Store store(file, mode); });
    EXPECT_EQ(message.rfind(fmt::format("database {} is damaged (quick_check: Page {}: ", file.string(), root), 0), 0u)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_TRUE(message.size() > advice.size() && message.substr(message.size() - advice.size()) == advice) << message;
  }
  EXPECT_EQ(test::read_file(file), bytes);
  // A read opens (it does not check every page) and meets the damage where it reads.
  Store store(file, OpenMode::read);
  EXPECT_EQ(database_error([&] { store.devices(); }),
            fmt::format("database {} is damaged (SQLite: database disk image is malformed){}", file.string(), advice));
  try {
    store.devices();
  } catch (const DamagedDatabaseError& e) {
    EXPECT_EQ(e.what_is_wrong(), "SQLite: database disk image is malformed");
  }
}

TEST(StoreAccess, ReadModeWritesNothing) {
  test::TempDir dir;
  const fs::path file = dir / "tune.db";
  make_database(file);
  const std::string before = test::read_file(file);
  {
    Store store(file, OpenMode::read);
    EXPECT_EQ(store.devices().size(), 1u);
    // A write through a read-only store is cm-tune's own mistake: an infrastructure error, not a
    // line blaming the user's file.
    EXPECT_THROW(store.put_source(SourceRecord{"hash", "t", "t.cuh", "text", {}}), InfraError);
    EXPECT_THROW(store.db().exec("CREATE TABLE extra (x)"), InfraError);
  }
  EXPECT_EQ(test::read_file(file), before);
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"tune.db"}) << "the -wal and -shm files are removed again";
}

TEST(StoreAccess, OlderSchemaIsRefusedByReadAndMigratedByWrite) {
  test::TempDir dir;
  const fs::path file = dir / "v1.db";
  make_database(file);
  test::downgrade_schema(file, 1);
  const std::string before = test::read_file(file);
  EXPECT_EQ(database_error([&] { Store store(file, OpenMode::read); }),
            "database " + file.string() + " has schema version 1, older than this cm-tune's " +
                std::to_string(latest_schema_version()) +
                ", and a command that only reads does not migrate it; run cm-tune db migrate --db " + file.string() +
                " once");
  EXPECT_EQ(Store(file, OpenMode::read, OlderSchema::accept).schema_version(), 1);
  EXPECT_EQ(test::read_file(file), before) << "reading must not migrate";

  EXPECT_EQ(Store(file, OpenMode::write).schema_version(), latest_schema_version());
  EXPECT_EQ(Store(file, OpenMode::read).devices().size(), 1u);
}

TEST(StoreAccess, NewerSchemaIsRefusedByReadToo) {
  test::TempDir dir;
  const fs::path file = dir / "new.db";
  make_database(file);
  Database(file).exec("PRAGMA user_version = " + std::to_string(latest_schema_version() + 1));
  const std::string message = test::usage_error([&] { Store store(file, OpenMode::read, OlderSchema::accept); });
  EXPECT_NE(message.find("newer than this cm-tune"), std::string::npos) << message;
}

TEST(StoreAccess, LockTimeoutComesFromTheEnvironment) {
  const char* saved = std::getenv("CMTUNE_LOCK_TIMEOUT");
  const std::string old = saved ? saved : "";
  unsetenv("CMTUNE_LOCK_TIMEOUT");
  EXPECT_EQ(lock_timeout(), k_default_lock_timeout);
  setenv("CMTUNE_LOCK_TIMEOUT", "2.5", 1);
  EXPECT_EQ(lock_timeout(), std::chrono::milliseconds(2500));
  setenv("CMTUNE_LOCK_TIMEOUT", "0", 1);
  EXPECT_EQ(lock_timeout(), std::chrono::milliseconds(0));
  for (const char* bad : {"soon", "-1", "nan", "inf", "1e9", "2s"}) {
    setenv("CMTUNE_LOCK_TIMEOUT", bad, 1);
    EXPECT_EQ(test::usage_error([] { lock_timeout(); }),
              std::string("CMTUNE_LOCK_TIMEOUT: '") + bad + "' is not a number of seconds (0 to 604800)");
  }
  if (saved)
    setenv("CMTUNE_LOCK_TIMEOUT", old.c_str(), 1);
  else
    unsetenv("CMTUNE_LOCK_TIMEOUT");
}

}  // namespace
}  // namespace cmt
