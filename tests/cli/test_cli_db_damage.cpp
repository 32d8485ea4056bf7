// Damaged databases through the real binary: a file truncated, with damaged b-tree pages, or with
// a damaged header gives one line naming the file and what is wrong (exit 2) in every command,
// `db check` reports the damage as a failed check, and nothing is ever written into such a file.
// Also a database file a killed run left empty: the next run that creates the database uses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::db_damage_tests {
namespace {

constexpr const char* k_advice = "; restore it from a backup, or remove it and tune again\n";


/// The first page of each of these tables, 1-based, and the page size.
std::pair<std::vector<int64_t>, int64_t> root_pages(const fs::path& file, const std::vector<std::string>& tables) {
  Database db(file, OpenMode::read);
  std::vector<int64_t> roots;
  for (const std::string& table : tables) {
    Statement s = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = ?");
    s.bind(1, table);
    if (!s.step()) throw std::runtime_error("no table " + table);
    roots.push_back(s.column_int(0));
  }
  Statement s = db.prepare("PRAGMA page_size");
  s.step();
  return {roots, s.column_int(0)};
}

/// How a test damages the file.
enum class Damage { truncated, btree_pages, header };

const char* damage_name(Damage d) {
  switch (d) {
    case Damage::truncated: return "truncated to 8 KiB";
    case Damage::btree_pages: return "b-tree pages overwritten";
    case Damage::header: return "header bytes flipped";
  }
  return "";
}

/// Builds a tuned database at file and damages it.
void build_damaged(const fs::path& file, Damage damage) {
  test::tuned_database(file, "GPU-db-damage");
  std::string bytes = test::read_file(file);
  switch (damage) {
    case Damage::truncated:
      ASSERT_GT(bytes.size(), 8192u);
      bytes.resize(8192);
      break;
    case Damage::btree_pages: {
      // The first 64 bytes (the b-tree page header and the first cell pointers) of the pages of two
      // tables in the middle of the file; the schema on the first pages stays readable, so SQLite
      // opens the file and only a read of those tables, or quick_check, meets the damage.
      const auto [roots, page_size] = root_pages(file, {"trials", "winners"});
      for (const int64_t root : roots) {
        ASSERT_GT(root, 1);
        ASSERT_LE(root * page_size, static_cast<int64_t>(bytes.size()));
        for (int64_t i = 0; i < 64; ++i) bytes[static_cast<size_t>((root - 1) * page_size + i)] = '\xa5';
      }
      break;
    }
    case Damage::header:
      // Bytes 28..31: the database size in pages, now far past the end of the file.
      for (size_t i = 28; i < 32; ++i) bytes[i] = static_cast<char>(~bytes[i]);
      break;
  }
  test::write_file(file, bytes);
}

std::string cmtune(const std::string& args, const fs::path& db) {
  return fmt::format("{} --quiet {} --db '{}'", test::cmtune_binary(), args, db.string());
}

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

/// The run failed as a usage error with one line saying that db is damaged; returns what it says is
/// wrong (the text in the parentheses).
std::string expect_damaged_line(const test::CommandResult& r, const fs::path& db, const std::string& context) {
  EXPECT_EQ(r.exit_code, cli::k_exit_usage) << context << "\n" << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << context << "\n" << r.output;
  const std::string head = fmt::format("cm-tune: error: database {} is damaged (", db.string());
  const bool starts = r.output.rfind(head, 0) == 0;
  const bool ends = r.output.size() > std::string(k_advice).size() &&
                    r.output.compare(r.output.size() - std::string(k_advice).size(), std::string::npos, k_advice) == 0;
  EXPECT_TRUE(starts && ends) << context << "\n" << r.output;
  if (!starts || !ends || r.output.size() < head.size() + std::string(k_advice).size() + 1) return "";
  return r.output.substr(head.size(), r.output.size() - head.size() - std::string(k_advice).size() - 1);
}

/// Only the database itself in the folder: nothing beside it (no -wal, -shm, -journal, header).
void expect_only(const fs::path& folder, const std::string& name, const std::string& context) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{name}) << context;
}

void check_every_command(Damage damage) {
  test::TempDir dir;
  const fs::path original = dir / "original.db";
  build_damaged(original, damage);
  const std::string bytes = test::read_file(original);
  test::TempDir work;
  const fs::path db = work / "t.db";
  const std::string malformed = "SQLite: database disk image is malformed";
  // Commands that only read (also `export`, which would write its header only at the end), then
  // those that would write the database.
  for (const char* command : {"query --size 1024", "export --out t.cuh", "db info", "db vacuum --dry-run", "db vacuum",
                              "db migrate", "compile --config quick --template naive --arch sm_90"}) {
    const std::string context = fmt::format("{}: cm-tune {}", damage_name(damage), command);
    test::write_file(db, bytes);
    const test::CommandResult r =
        test::run_command(fmt::format("cd '{}' && {}", work.path().string(), cmtune(command, db)));
    const std::string what = expect_damaged_line(r, db, context);
    const bool writes = std::string(command) == "db vacuum" || std::string(command) == "db migrate" ||
                        std::string(command).rfind("compile", 0) == 0;
    if (damage == Damage::btree_pages && writes) {
      // Only quick_check, run before the first write, finds these pages: the command itself never
      // reads them.
      EXPECT_EQ(what.rfind("quick_check: ", 0), 0u) << context << "\n" << r.output;
      EXPECT_NE(what.find("Page "), std::string::npos) << context << "\n" << r.output;
    } else {
      EXPECT_EQ(what, malformed) << context;
    }
    EXPECT_TRUE(test::read_file(db) == bytes) << context << ": the database was written";
    expect_only(work.path(), "t.db", context);
  }
  // db check: its usual report, the damage a failed check, exit 1.
  test::write_file(db, bytes);
  const test::CommandResult check = test::run_command(cmtune("db check", db));
  EXPECT_EQ(check.exit_code, cli::k_exit_failure) << check.output;
  EXPECT_EQ(check.output.rfind("FAIL  integrity        ", 0), 0u) << check.output;
  EXPECT_EQ(line_count(check.output), 8u) << check.output;
  EXPECT_NE(check.output.find(fmt::format("\n{}: ", db.string())), std::string::npos) << check.output;
  EXPECT_NE(check.output.find(" of 7 checks failed\n"), std::string::npos) << check.output;
  EXPECT_EQ(check.output.find("cm-tune: error"), std::string::npos) << check.output;
  EXPECT_TRUE(test::read_file(db) == bytes) << "db check wrote the database";
}

TEST(DbDamage, TruncatedFileIsOneLineInEveryCommandAndNeverWritten) { check_every_command(Damage::truncated); }

TEST(DbDamage, DamagedBtreePagesAreOneLineInEveryCommandAndNeverWritten) { check_every_command(Damage::btree_pages); }

TEST(DbDamage, DamagedHeaderIsOneLineInEveryCommandAndNeverWritten) { check_every_command(Damage::header); }

TEST(DbDamage, CheckNamesTheDamagedPagesAndChecksWhatItCanRead) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_damaged(db, Damage::btree_pages);
  const test::CommandResult r = test::run_command(cmtune("db check", db));
  EXPECT_EQ(r.exit_code, cli::k_exit_failure) << r.output;
  // integrity_check names the pages; the checks that do not read them still run and pass.
  EXPECT_EQ(r.output.rfind("FAIL  integrity        Page ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\nok    schema           version "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nok    sources          "), std::string::npos) << r.output;
}

TEST(DbDamage, CheckOfAFileItCannotOpenFailsEveryCheck) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_damaged(db, Damage::truncated);
  const test::CommandResult r = test::run_command(cmtune("db check", db));
  EXPECT_EQ(r.exit_code, cli::k_exit_failure) << r.output;
  const std::string malformed = "SQLite: database disk image is malformed";
  std::string expected = fmt::format("FAIL  {:<15}  {}\n", "integrity", malformed);
  for (const char* name : {"schema", "orphans", "winners", "winner binaries", "cubins", "sources"})
    expected += fmt::format("FAIL  {:<15}  not checked: the database cannot be opened ({})\n", name, malformed);
  expected += db.string() + ": 7 of 7 checks failed\n";
  EXPECT_EQ(r.output, expected);
  // --json says the same.
  const test::CommandResult json = test::run_command(cmtune("db check --json", db));
  EXPECT_EQ(json.exit_code, cli::k_exit_failure) << json.output;
  EXPECT_NE(json.output.find("\"ok\": false"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find(malformed), std::string::npos) << json.output;
}

TEST(DbDamage, EmptyFileLeftByAKilledRunIsSetUpByTheNextRun) {
  // A run killed right after SQLite created the file leaves it 0 bytes long: the next run that
  // creates the database sets it up, and the file then passes every check.
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  test::write_file(db, "");
  const std::string command = cmtune("compile --config quick --template naive --arch sm_90", db);
  const test::CommandResult compile = test::run_command(fmt::format("cd '{}' && {}", dir.path().string(), command));
  EXPECT_EQ(compile.exit_code, 0) << compile.output;
  const test::CommandResult check = test::run_command(cmtune("db check", db));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find(db.string() + ": all 7 checks passed\n"), std::string::npos) << check.output;
}

}  // namespace
}  // namespace cmt::db_damage_tests
