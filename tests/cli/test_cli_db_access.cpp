// The database files a user points cm-tune at (issue 18, "Databases"), run through the real binary:
// read-only files and folders still serve every command that only reads, and nothing is left
// behind; a lock held by another process is waited for, saying who holds it, up to the lock
// timeout; a folder, a device, an empty file or a file that is not a database gives one line
// naming it, and is left as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cli/app.hpp"
#include "model/test_store_processes.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::db_access_tests {
namespace {



/// Makes a database of the latest schema look as one written before migration 2.
void downgrade_to_version_1(const fs::path& file) { test::downgrade_schema(file, 1); }


std::string cmtune(const std::string& args) { return test::cmtune_binary() + " --quiet " + args; }

/// The run failed as a usage error with exactly this one line.
void expect_line(const test::CommandResult& r, const std::string& line) {
  EXPECT_EQ(r.exit_code, cli::k_exit_usage) << r.output;
  EXPECT_EQ(r.output, "cm-tune: error: " + line + "\n");
}

/// Every command that only reads, on `db`; the header and the T4 export go to out_dir.
std::vector<std::string> read_commands(const fs::path& db, const fs::path& out_dir) {
  const std::string at = " --db '" + db.string() + "'";
  return {cmtune("query --size 1024" + at), cmtune("export --out '" + (out_dir / "t.cuh").string() + "'" + at),
          cmtune("db info" + at), cmtune("db check" + at), cmtune("db vacuum --dry-run" + at),
          cmtune("db export --format csv" + at),
          cmtune("db export --format kernel-tuner --out '" + (out_dir / "t.json").string() + "'" + at),
          cmtune("report --out '" + (out_dir / "t.html").string() + "'" + at)};
}

TEST(DbAccess, ReadCommandsWorkOnAReadOnlyFileAndLeaveNothingBehind) {
  test::TempDir dir;
  const fs::path db = dir / "tune.db";
  test::tuned_database(db, "GPU-db-access");
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir.path(), fs::perms::all);   // the folder is writable: SQLite could leave files there
  const std::string before = test::read_file(db);
  for (const std::string& command : read_commands(db, dir.path())) {
    CMT_RUN_UNPRIVILEGED(r, command);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
    EXPECT_EQ(test::read_file(db), before) << command;
    fs::remove(dir / "t.cuh");
    fs::remove(dir / "t.json");
    fs::remove(dir / "t.html");
    EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"tune.db"}) << command << " left files behind";
  }
  CMT_RUN_UNPRIVILEGED(vacuum, cmtune("db vacuum --db " + db.string()));
  expect_line(vacuum, fmt::format("cannot write database {}: Permission denied (query, export, bench, precision, "
                                  "report, db check, db info and db export only read it)",
                                  db.string()));
}

TEST(DbAccess, ReadCommandsWorkInAReadOnlyFolder) {
  test::TempDir dir, out;
  const fs::path folder = dir / "ro";
  const fs::path db = folder / "tune.db";
  test::tuned_database(db, "GPU-db-access");
  fs::permissions(out.path(), fs::perms::all);
  fs::permissions(folder, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  const std::string before = test::read_file(db);
  for (const std::string& command : read_commands(db, out.path())) {
    CMT_RUN_UNPRIVILEGED(r, command);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
    EXPECT_EQ(test::entries(folder), std::vector<std::string>{"tune.db"}) << command;
  }
  EXPECT_EQ(test::read_file(db), before);
  // A file this user may write in a folder it may not: SQLite could not create the -wal and -shm.
  fs::permissions(db, fs::perms::all);
  CMT_RUN_UNPRIVILEGED(vacuum, cmtune("db vacuum --db " + db.string()));
  expect_line(vacuum, fmt::format("cannot write database {}: its folder {} is not writable (Permission denied), and "
                                  "SQLite keeps its -wal and -shm files there",
                                  db.string(), folder.string()));
  CMT_RUN_UNPRIVILEGED(compile, cmtune("compile --config quick --arch sm_90 --db " + (folder / "new.db").string()));
  expect_line(compile, fmt::format("cannot write database {}: its folder {} is not writable (Permission denied), and "
                                   "SQLite keeps its -wal and -shm files there",
                                   (folder / "new.db").string(), folder.string()));
  EXPECT_EQ(test::entries(folder), std::vector<std::string>{"tune.db"});
}

TEST(DbAccess, ReadsADatabaseBeingWrittenInAReadOnlyFolder) {
  test::TempDir dir, out;
  const fs::path folder = dir / "ro";
  const fs::path db = folder / "tune.db";
  test::tuned_database(db, "GPU-db-access");
  fs::permissions(out.path(), fs::perms::all);
  // Another process has it open, so its -wal and -shm exist: the reader uses them read-only.
  test::DatabaseHolder writer(db, test::DatabaseHolder::Hold::open);
  ASSERT_TRUE(fs::exists(db.string() + "-shm"));
  fs::permissions(folder, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  for (const std::string& command : read_commands(db, out.path())) {
    CMT_RUN_UNPRIVILEGED(r, command);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
  }
}

TEST(DbAccess, LockedDatabaseSaysWhoHoldsItAndGivesUpAfterTheTimeout) {
  test::TempDir dir;
  const fs::path db = dir / "tune.db";
  test::tuned_database(db, "GPU-db-access");
  downgrade_to_version_1(db);   // so that db migrate needs the write lock
  test::DatabaseHolder writer(db, test::DatabaseHolder::Hold::write_lock);
  const std::string holder = fmt::format("process {} (cmt_cli_tests", writer.pid());
  const auto start = steady_clock::now();
  const test::CommandResult r =
      test::run_command("CMTUNE_LOCK_TIMEOUT=2 " + test::cmtune_binary() + " db migrate --db " + db.string());
  const auto waited = steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, cli::k_exit_usage) << r.output;
  // One warning after a second of waiting, then one error line.
  const std::string waiting = "warning: waiting for " + holder;
  const std::string error = fmt::format("cm-tune: error: database {} is locked by {}", db.string(), holder);
  ASSERT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 2) << r.output;
  EXPECT_EQ(r.output.rfind(waiting, 0), 0u) << r.output;
  EXPECT_NE(r.output.find(fmt::format("), which holds the write lock on {} (giving up after 2 s)\n", db.string())),
            std::string::npos)
      << r.output;
  const size_t second = r.output.find('\n') + 1;
  EXPECT_EQ(r.output.compare(second, error.size(), error), 0) << r.output;
  EXPECT_NE(r.output.find("); gave up after 2 s (CMTUNE_LOCK_TIMEOUT sets how long to wait)\n", second),
            std::string::npos)
      << r.output;
  EXPECT_GE(waited, milliseconds(2000));
  EXPECT_EQ(writer.wait(), 0);
  EXPECT_EQ(Store(db, OpenMode::read, OlderSchema::accept).schema_version(), 1) << "nothing was migrated";
}

TEST(DbAccess, WriterWaitsForTheLockAndGoesOnWhenItIsReleased) {
  test::TempDir dir;
  const fs::path db = dir / "tune.db";
  test::tuned_database(db, "GPU-db-access");
  downgrade_to_version_1(db);
  // The lock is held until cm-tune has said that it waits, then released: an event, not a time, so
  // a slow start (ASan, a loaded machine) cannot outlast the hold and miss the warning.
  test::DatabaseHolder writer(db, test::DatabaseHolder::Hold::write_lock);
  FILE* child = ::popen((test::cmtune_binary() + " db migrate --db " + db.string() + " 2>&1").c_str(), "r");
  ASSERT_NE(child, nullptr);
  std::string output;
  char line[4096];
  // The first line; a cm-tune that never warns gives up after the lock timeout (60 s) and says so.
  if (std::fgets(line, sizeof line, child)) output += line;
  EXPECT_EQ(writer.wait(), 0);   // releases the lock
  while (std::fgets(line, sizeof line, child)) output += line;
  const int status = ::pclose(child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << output;
  EXPECT_EQ(output.rfind(fmt::format("warning: waiting for process {} (cmt_cli_tests", writer.pid()), 0), 0u)
      << output;
  EXPECT_NE(output.find(fmt::format("(giving up after 60 s)\ndatabase {}: schema version 1 -> ", db.string())),
            std::string::npos)
      << output;
}

TEST(DbAccess, FolderDeviceAndPipeAreOneLineAndNothingIsCreated) {
  test::TempDir dir;
  const fs::path fifo = dir / "pipe.db";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto journal_stamp = [] {
    std::error_code ec;
    const auto t = fs::last_write_time("/dev/null-journal", ec);
    return ec ? std::string("absent") : std::to_string(t.time_since_epoch().count());
  };
  const std::string journal_before = journal_stamp();
  for (const char* command : {"query --size 256", "export --out x.cuh", "db info", "db vacuum", "db migrate",
                              "compile --config quick --arch sm_90"}) {
    expect_line(test::run_command(cmtune(std::string(command) + " --db /dev/null")),
                "database /dev/null is a character device, not a database file");
    expect_line(test::run_command(cmtune(std::string(command) + " --db " + fifo.string())),
                "database " + fifo.string() + " is a named pipe, not a database file");
    expect_line(test::run_command(cmtune(std::string(command) + " --db " + dir.path().string())),
                fmt::format("database {} is a folder; name a database file, e.g. {}", dir.path().string(),
                            (dir / "cm-tune.db").string()));
  }
  EXPECT_EQ(journal_stamp(), journal_before) << "/dev/null-journal was written";
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"pipe.db"});
}

TEST(DbAccess, EmptyFileIsLeftEmpty) {
  test::TempDir dir;
  const fs::path db = dir / "empty.db";
  test::write_file(db, "");
  for (const char* command : {"query --size 256", "export --out x.cuh", "db info", "db check", "db vacuum", "db migrate"})
    expect_line(test::run_command(cmtune(std::string(command) + " --db " + db.string())),
                "database " + db.string() + " is empty (no cm-tune data yet); run cm-tune tune first");
  EXPECT_EQ(fs::file_size(db), 0u);
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"empty.db"});
}

TEST(DbAccess, FileThatIsNoDatabaseIsOneLine) {
  test::TempDir dir;
  const fs::path db = dir / "notes.db";
  const std::string text(1000, 'x');
  test::write_file(db, text);
  for (const char* command : {"query --size 256", "export --out x.cuh", "db info", "db check", "db vacuum", "db migrate",
                              "compile --config quick --arch sm_90"})
    expect_line(test::run_command(cmtune(std::string(command) + " --db " + db.string())),
                db.string() + " is not a cm-tune database (not an SQLite file)");
  EXPECT_EQ(test::read_file(db), text);
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"notes.db"});
}

TEST(DbAccess, MissingDatabaseIsNotCreatedByWhatOnlyReads) {
  test::TempDir dir;
  const fs::path db = dir / "sub" / "none.db";
  for (const char* command : {"db info", "db check", "db vacuum", "db vacuum --dry-run", "db migrate"})
    expect_line(test::run_command(cmtune(std::string(command) + " --db " + db.string())),
                "database " + db.string() + " does not exist; run cm-tune tune first");
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{});
}

TEST(DbAccess, BadLockTimeoutIsOneLine) {
  test::TempDir dir;
  expect_line(test::run_command("CMTUNE_LOCK_TIMEOUT=soon " + cmtune("db info --db " + (dir / "t.db").string())),
              "CMTUNE_LOCK_TIMEOUT: 'soon' is not a number of seconds (0 to 604800)");
}

}  // namespace
}  // namespace cmt::db_access_tests
