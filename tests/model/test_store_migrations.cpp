// Schema migrations: versioning, refusal of foreign and newer databases, all steps in one transaction.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <optional>
#include <sqlite3.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"
#include "store/maintenance.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

using cmt::Database;
using cmt::Migration;
using cmt::Store;
using cmt::test::TempDir;

int64_t query_int(Database& db, const std::string& sql) {
  cmt::Statement s = db.prepare(sql);
  EXPECT_TRUE(s.step()) << sql;
  return s.column_int(0);
}

std::string query_text(Database& db, const std::string& sql) {
  cmt::Statement s = db.prepare(sql);
  EXPECT_TRUE(s.step()) << sql;
  return s.column_text(0);
}

bool has_table(Database& db, const std::string& name) {
  cmt::Statement s = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  s.bind(1, name);
  s.step();
  return s.column_int(0) == 1;
}

/// The message of the UsageError that fn throws, or a failure when it throws nothing or another type.
template <typename Fn>
std::string usage_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const cmt::UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected UsageError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected UsageError, nothing was thrown";
  return "";
}

TEST(Migration, BuiltinMigrationsAreNumberedFromOne) {
  const auto& migrations = cmt::builtin_migrations();
  ASSERT_FALSE(migrations.empty());
  EXPECT_EQ(migrations.front().version, 1);
  EXPECT_EQ(migrations.front().name, "initial");
  int previous = 0;
  for (const Migration& m : migrations) {
    EXPECT_GT(m.version, previous) << m.name;
    EXPECT_FALSE(m.sql.empty()) << m.name;
    previous = m.version;
  }
  EXPECT_EQ(cmt::latest_schema_version(), migrations.back().version);
}

TEST(Migration, EmptyDatabaseReachesLatestVersion) {
  TempDir dir;
  const fs::path file = dir / "nested/folders/cm-tune.db";
  Store store(file);
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(store.schema_version(), cmt::latest_schema_version());
  EXPECT_EQ(query_int(store.db(), "PRAGMA user_version"), cmt::latest_schema_version());
  EXPECT_EQ(query_int(store.db(), "PRAGMA application_id"), cmt::k_application_id);
  EXPECT_EQ(query_text(store.db(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_int(store.db(), "PRAGMA foreign_keys"), 1);
  for (const char* table :
       {"binaries", "sources", "source_headers", "devices", "runs", "trials", "baselines", "winners"})
    EXPECT_TRUE(has_table(store.db(), table)) << table;
  EXPECT_EQ(query_int(store.db(), "SELECT count(*) FROM sqlite_master WHERE name = 'trials_device_problem'"), 1);
}

TEST(Migration, ReopeningIsIdempotent) {
  TempDir dir;
  const fs::path file = dir / "cm-tune.db";
  int64_t objects = 0;
  {
    Store store(file);
    cmt::DeviceRecord device;
    device.uuid = "GPU-1";
    device.name = "Test GPU";
    store.upsert_device(device);
    objects = query_int(store.db(), "SELECT count(*) FROM sqlite_master");
  }
  for (int i = 0; i < 2; ++i) {
    Store store(file);
    EXPECT_EQ(store.schema_version(), cmt::latest_schema_version());
    EXPECT_EQ(query_int(store.db(), "SELECT count(*) FROM sqlite_master"), objects);
    ASSERT_EQ(store.devices().size(), 1u);
    EXPECT_EQ(store.devices()[0].name, "Test GPU");
    // Migrating an up-to-date database again is a no-op.
    cmt::migrate(store.db(), cmt::builtin_migrations());
    EXPECT_EQ(store.schema_version(), cmt::latest_schema_version());
    EXPECT_EQ(store.devices().size(), 1u);
  }
}

TEST(Migration, NewerDatabaseIsRefusedAndLeftAlone) {
  TempDir dir;
  const fs::path file = dir / "cm-tune.db";
  const int newer = cmt::latest_schema_version() + 6;
  {
    Store store(file);
    cmt::DeviceRecord device;
    device.uuid = "GPU-future";
    store.upsert_device(device);
    store.db().exec("PRAGMA user_version = " + std::to_string(newer));
  }
  const std::string before = cmt::test::read_file(file);

  const std::string message = usage_error_of([&] { Store store(file); });
  EXPECT_NE(message.find("database " + file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("has schema version " + std::to_string(newer)), std::string::npos) << message;
  EXPECT_NE(message.find("newer than this cm-tune (knows up to " + std::to_string(cmt::latest_schema_version()) + ")"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("upgrade cm-tune"), std::string::npos) << message;

  EXPECT_EQ(cmt::test::read_file(file), before) << "a refused database must not be modified";
  Database raw(file);
  EXPECT_EQ(query_int(raw, "PRAGMA user_version"), newer);
  EXPECT_EQ(query_text(raw, "SELECT uuid FROM devices"), "GPU-future");
}

TEST(Migration, ForeignSqliteFileIsRefused) {
  TempDir dir;
  for (const int application_id : {0, 0x12345678}) {
    const fs::path file = dir / ("other-" + std::to_string(application_id) + ".db");
    {
      Database other(file);
      other.exec("PRAGMA application_id = " + std::to_string(application_id));
      other.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('keep me')");
    }
    const std::string before = cmt::test::read_file(file);
    const std::string message = usage_error_of([&] { Store store(file); });
    EXPECT_EQ(message, file.string() + " is not a cm-tune database");
    EXPECT_EQ(cmt::test::read_file(file), before) << "a refused file must not be modified";
    Database raw(file);
    EXPECT_FALSE(has_table(raw, "trials"));
    EXPECT_EQ(query_text(raw, "SELECT text FROM notes"), "keep me");
    EXPECT_EQ(query_text(raw, "PRAGMA journal_mode"), "delete");
  }
}

TEST(Migration, NonSqliteFileIsRefused) {
  TempDir dir;
  const fs::path file = dir / "notes.txt";
  const std::string text(300, 'x');
  cmt::test::write_file(file, text);
  const std::string message = usage_error_of([&] { Store store(file); });
  EXPECT_NE(message.find(file.string() + " is not a cm-tune database"), std::string::npos) << message;
  EXPECT_EQ(cmt::test::read_file(file), text);
}

TEST(Migration, SyntheticMigrationsApplyInOrder) {
  TempDir dir;
  Database db(dir / "synthetic.db");
  // The second script only works after the first: it reads the table the first one filled.
  const std::vector<Migration> migrations{
      {1, "first", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (10);"},
      {2, "second", "INSERT INTO a SELECT x + 1 FROM a; CREATE TABLE b (y TEXT);"},
  };
  cmt::migrate(db, migrations);
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 2);
  EXPECT_EQ(query_int(db, "PRAGMA application_id"), cmt::k_application_id);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM a"), 2);
  EXPECT_EQ(query_int(db, "SELECT max(x) FROM a"), 11);
  EXPECT_TRUE(has_table(db, "b"));

  // Already applied: nothing runs twice.
  cmt::migrate(db, migrations);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM a"), 2);
}

TEST(Migration, AppliesOnlyMissingSteps) {
  TempDir dir;
  Database db(dir / "steps.db");
  const Migration first{1, "first", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);"};
  const Migration second{2, "second", "INSERT INTO a VALUES (2);"};
  cmt::migrate(db, {first});
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 1);
  cmt::migrate(db, {first, second});
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 2);
  EXPECT_EQ(query_text(db, "SELECT group_concat(x) FROM (SELECT x FROM a ORDER BY x)"), "1,2");
}

TEST(Migration, FailingMigrationIsRolledBack) {
  TempDir dir;
  Database db(dir / "broken.db");
  const Migration first{1, "first", "CREATE TABLE a (x INTEGER);"};
  // The second creates a table, then fails: the table must not survive.
  const Migration broken{2, "broken", "CREATE TABLE b (y INTEGER); INSERT INTO no_such_table VALUES (1);"};
  try {
    cmt::migrate(db, {first, broken});
    FAIL() << "migrate did not throw";
  } catch (const cmt::InfraError& e) {
    EXPECT_EQ(e.library(), "SQLite");
    EXPECT_NE(e.call().find("migration 0002_broken"), std::string::npos) << e.call();
    EXPECT_NE(e.library_message().find("no_such_table"), std::string::npos) << e.library_message();
  }
  // Every step runs in one transaction: the first step, which succeeded, is rolled back too.
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 0);
  EXPECT_FALSE(has_table(db, "a"));
  EXPECT_FALSE(has_table(db, "b"));

  // A fixed migration then applies normally.
  const Migration fixed{2, "fixed", "CREATE TABLE b (y INTEGER);"};
  cmt::migrate(db, {first, fixed});
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 2);
  EXPECT_TRUE(has_table(db, "b"));
}

/// SQL function pause_here(): tells the test over the pipe in its user data that the migration got
/// there, then waits to be killed.
void pause_here(sqlite3_context* context, int, sqlite3_value**) {
  const int fd = *static_cast<const int*>(sqlite3_user_data(context));
  const char byte = 'p';
  if (::write(fd, &byte, 1) != 1) ::_exit(3);
  while (true) ::pause();
}

TEST(Migration, ProcessKilledHalfWayLeavesNoSchemaAndTheNextOpenCreatesIt) {
  TempDir dir;
  const fs::path file = dir / "killed.db";
  // The built-in migrations as Store applies them to a new file, with a pause after 0003: a process
  // killed there used to leave schema version 3, which `db check` and every read then refused.
  std::vector<Migration> migrations = cmt::builtin_migrations();
  ASSERT_GE(migrations.size(), 4u);
  migrations[2].sql += "\nSELECT pause_here();";
  int paused[2];
  ASSERT_EQ(::pipe(paused), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(paused[0]);
    try {
      Database db(file);
      sqlite3_create_function(db.handle(), "pause_here", 0, SQLITE_UTF8, &paused[1], pause_here, nullptr, nullptr);
      db.exec("PRAGMA journal_mode = WAL");
      cmt::migrate(db, migrations);
    } catch (...) {
    }
    ::_exit(1);   // only reached when it did not pause
  }
  ::close(paused[1]);
  char byte = 0;
  const bool got_there = ::read(paused[0], &byte, 1) == 1;
  ::close(paused[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(got_there) << "the migrating process ended before the pause";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  // What any process sees now: no schema at all, so a read says the file is empty.
  {
    Database db(file, cmt::OpenMode::read);
    EXPECT_EQ(query_int(db, "PRAGMA user_version"), 0);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM sqlite_master"), 0);
  }
  EXPECT_EQ(usage_error_of([&] { Store store(file, cmt::OpenMode::read, cmt::OlderSchema::accept); }),
            "database " + file.string() + " is empty (no cm-tune data yet); run cm-tune tune first");
  // The next run that creates the database creates all of it, and every check passes.
  Store store(file);
  EXPECT_EQ(store.schema_version(), cmt::latest_schema_version());
  for (const cmt::CheckResult& check : cmt::check_database(store))
    EXPECT_TRUE(check.ok) << check.name << ": " << check.detail;
}

TEST(Migration, ForeignKeyViolationAbortsMigration) {
  TempDir dir;
  Database db(dir / "fk.db");
  db.exec("PRAGMA foreign_keys = ON");
  const Migration orphan{1, "orphan",
                         "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
                         "CREATE TABLE child (parent_id INTEGER REFERENCES parent(id));"
                         "INSERT INTO child VALUES (42);"};
  EXPECT_THROW(cmt::migrate(db, {orphan}), cmt::InfraError);
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 0);
  EXPECT_FALSE(has_table(db, "child"));
  EXPECT_EQ(query_int(db, "PRAGMA foreign_keys"), 1) << "migrate must restore foreign key enforcement";
}

TEST(Migration, OlderBinaryRefusesNewerSyntheticSchema) {
  TempDir dir;
  const fs::path file = dir / "two.db";
  Database db(file);
  cmt::migrate(db, {{1, "one", "CREATE TABLE a (x);"}, {2, "two", "CREATE TABLE b (y);"}});
  const std::string message = usage_error_of([&] { cmt::migrate(db, {{1, "one", "CREATE TABLE a (x);"}}); });
  EXPECT_EQ(message, "database " + file.string() +
                         " has schema version 2, newer than this cm-tune (knows up to 1); upgrade cm-tune");
}

TEST(Migration, OutOfOrderListIsAProgrammingError) {
  TempDir dir;
  Database db(dir / "order.db");
  EXPECT_THROW(cmt::migrate(db, {{2, "two", "CREATE TABLE b (y);"}, {1, "one", "CREATE TABLE a (x);"}}),
               std::logic_error);
  EXPECT_EQ(query_int(db, "PRAGMA user_version"), 0);
  EXPECT_FALSE(has_table(db, "a"));
}

/// Sets or unsets environment variables for a test, restoring them afterwards.
class EnvGuard {
 public:
  void set(const char* name, const std::optional<std::string>& value) {
    const char* old = std::getenv(name);
    m_saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~EnvGuard() {
    for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

TEST(Migration, DefaultDatabasePathFollowsEnvironment) {
  EnvGuard env;
  env.set("CMTUNE_DB", "/data/tuning.db");
  env.set("XDG_CACHE_HOME", "/xdg-cache");
  env.set("HOME", "/home/someone");
  EXPECT_EQ(cmt::default_database_path(), fs::path("/data/tuning.db"));

  env.set("CMTUNE_DB", std::nullopt);
  EXPECT_EQ(cmt::default_database_path(), fs::path("/xdg-cache/cm-tune/cm-tune.db"));

  env.set("XDG_CACHE_HOME", "");
  EXPECT_EQ(cmt::default_database_path(), fs::path("/home/someone/.cache/cm-tune/cm-tune.db"));

  env.set("XDG_CACHE_HOME", std::nullopt);
  EXPECT_EQ(cmt::default_database_path(), fs::path("/home/someone/.cache/cm-tune/cm-tune.db"));

  env.set("HOME", std::nullopt);
  EXPECT_THROW(cmt::default_database_path(), cmt::UsageError);
}

}  // namespace
