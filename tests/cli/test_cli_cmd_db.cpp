// `cm-tune db check | info | vacuum | migrate` through the real binary: what each prints, its exit
// code, and that vacuum gives space back without changing what export writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "model/test_store_processes.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::cmd_db_tests {
namespace {

constexpr int64_t k_cubin_bytes = 1024 * 1024;

/// A tuned database: one synthetic winner with a 1 MiB cubin, and a binary no winner uses (also
/// 1 MiB) with its trial. Returns the winner's source hash.
std::string build_database(const fs::path& file) {
  const std::string source = test::tuned_database(file, "GPU-db-command");
  Store store(file);
  BinaryRecord b = *store.find_binary(hash_hex("binary-fast"));
  b.key = "unused";
  b.params = "V=2";
  store.put_binary(b);
  // Both stored as an earlier cm-tune did, uncompressed, so the sizes below are exact.
  store.db().prepare("UPDATE binaries SET cubin = zeroblob(?)").bind(1, k_cubin_bytes).run();
  TrialRecord t = *store.find_trial("trial-fast");
  t.trial_key = "trial-unused";
  t.binary_key = "unused";
  t.params = "V=2";
  t.name_expression = "cmt_sgemm_fast<2>";
  t.median_ms = 2.0;
  store.insert_trial(t);
  return source;
}

test::CommandResult db_command(const fs::path& db, const std::string& args) {
  return test::run_command(fmt::format("{} --quiet db {} --db '{}'", test::cmtune_binary(), args, db.string()));
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = text.find('\n', pos);
    out.push_back(text.substr(pos, end - pos));
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

TEST(DbCommand, CheckPrintsOneLinePerCheckAndExitsByTheResult) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  const std::string source = build_database(db);
  const test::CommandResult good = db_command(db, "check");
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_EQ(lines(good.output),
            (std::vector<std::string>{
                "ok    integrity        ok",
                fmt::format("ok    schema           version {}, the latest this cm-tune knows", latest_schema_version()),
                "ok    orphans          every row names existing rows",
                "ok    winners          1 winner names a passing trial of its problem",
                "ok    winner binaries  the 1 binary of winners is compiled, with its cubin and source",
                "ok    cubins           2 cubins read back (0 compressed, 2 stored uncompressed by an earlier cm-tune)",
                "ok    sources          1 source bundle matches its hash",
                db.string() + ": all 7 checks passed"}));

  Database(db).exec("UPDATE sources SET main_text = main_text || ' '");
  const test::CommandResult bad = db_command(db, "check");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find(fmt::format("FAIL  sources          source {} (template fast) does not match its hash\n", source)),
            std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find(db.string() + ": 1 of 7 checks failed\n"), std::string::npos) << bad.output;

  const test::CommandResult json = db_command(db, "check --json");
  EXPECT_EQ(json.exit_code, 1) << json.output;
  const nlohmann::json doc = nlohmann::json::parse(json.output);
  EXPECT_EQ(doc.at("ok"), false);
  EXPECT_EQ(doc.at("database"), db.string());
  ASSERT_EQ(doc.at("checks").size(), 7u);
  EXPECT_EQ(doc.at("checks")[6].at("name"), "sources");
  EXPECT_EQ(doc.at("checks")[6].at("ok"), false);
  EXPECT_EQ(doc.at("checks")[0].at("ok"), true);
}

TEST(DbCommand, InfoSummarizesWhatIsStored) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_database(db);
  const test::CommandResult text = db_command(db, "info");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  const std::vector<std::string> got = lines(text.output);
  ASSERT_EQ(got.size(), 9u) << text.output;
  EXPECT_EQ(got[0].rfind("database " + db.string() + ": ", 0), 0u) << got[0];
  EXPECT_NE(got[0].find(fmt::format(" MiB, schema version {}", latest_schema_version())), std::string::npos) << got[0];
  EXPECT_EQ(got[1], "devices: 1");
  EXPECT_EQ(got[2], "  [0] NVIDIA H100 80GB HBM3 (sm_90, GPU-db-command): 1 problem, 2 trials, 1 winner");
  EXPECT_EQ(got[3], "problems: 1");
  EXPECT_EQ(got[4], "trials: 2 (ok 2)");
  EXPECT_EQ(got[5], "winners: 1");
  EXPECT_EQ(got[6], "runs: 1");
  EXPECT_EQ(got[7], "binaries: 2 cubins (2.0 MiB), 0 failed compiles, 0 dropped by db vacuum");
  EXPECT_EQ(got[8], "sources: 1");

  const test::CommandResult json = db_command(db, "info --json");
  EXPECT_EQ(json.exit_code, 0) << json.output;
  const nlohmann::json doc = nlohmann::json::parse(json.output);
  EXPECT_EQ(doc.at("devices").size(), 1u);
  EXPECT_EQ(doc.at("devices")[0].at("uuid"), "GPU-db-command");
  EXPECT_EQ(doc.at("devices")[0].at("arch"), "sm_90");
  EXPECT_EQ(doc.at("trials_by_outcome").at("ok"), 2);
  EXPECT_EQ(doc.at("binaries").at("cubin_bytes"), 2 * k_cubin_bytes);
  EXPECT_EQ(doc.at("binaries").at("cubin_raw_bytes"), 2 * k_cubin_bytes);
  EXPECT_EQ(doc.at("schema_version"), latest_schema_version());

  // A cubin this cm-tune stored is compressed: info tells stored bytes from the cubins' own.
  {
    Store store(db);
    BinaryRecord b = *store.find_binary("unused");
    b.key = "compressed";
    store.put_binary(b);   // 1 MiB of zeros: a few bytes compressed
  }
  const std::vector<std::string> after = lines(db_command(db, "info").output);
  ASSERT_EQ(after.size(), 9u);
  EXPECT_EQ(after[7], "binaries: 3 cubins (2.0 MiB stored, 3.0 MiB uncompressed), 0 failed compiles, 0 dropped by db vacuum");
  const nlohmann::json doc2 = nlohmann::json::parse(db_command(db, "info --json").output);
  EXPECT_EQ(doc2.at("binaries").at("cubin_raw_bytes"), 3 * k_cubin_bytes);
  EXPECT_LT(doc2.at("binaries").at("cubin_bytes").get<int64_t>(), 2 * k_cubin_bytes + 1024);
}

TEST(DbCommand, VacuumDropsUnusedCubinsAndExportStaysTheSame) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_database(db);
  const auto export_header = [&](const std::string& name) {
    const test::CommandResult r = test::run_command(fmt::format("{} --quiet export --db '{}' --out '{}'",
                                                                test::cmtune_binary(), db.string(), (dir / name).string()));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return test::read_file(dir / name);
  };
  const std::string header = export_header("before.cuh");
  const std::string bytes = test::read_file(db);

  const test::CommandResult dry = db_command(db, "vacuum --dry-run");
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_EQ(lines(dry.output)[0], "would drop 1 cubin that no winner uses (1.0 MiB); kept 1 that winners use");
  EXPECT_NE(dry.output.find("; nothing was changed"), std::string::npos) << dry.output;
  EXPECT_EQ(test::read_file(db), bytes);

  const test::CommandResult vacuum = db_command(db, "vacuum");
  EXPECT_EQ(vacuum.exit_code, 0) << vacuum.output;
  EXPECT_EQ(lines(vacuum.output)[0], "dropped 1 cubin that no winner uses (1.0 MiB); kept 1 that winners use");
  EXPECT_LT(fs::file_size(db), bytes.size() - static_cast<size_t>(k_cubin_bytes) / 2) << vacuum.output;
  EXPECT_EQ(export_header("after.cuh"), header);
  const test::CommandResult check = db_command(db, "check");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  Store store(db, OpenMode::read);
  EXPECT_TRUE(store.find_trial("trial-unused")) << "trials are the tuning history: vacuum keeps them";
  EXPECT_FALSE(store.find_binary("unused"));
  EXPECT_TRUE(store.find_binary(hash_hex("binary-fast")));
}

TEST(DbCommand, VacuumRefusesWhileAnotherProcessHasTheDatabaseOpen) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_database(db);
  test::DatabaseHolder tune(db, test::DatabaseHolder::Hold::open);
  const test::CommandResult r = db_command(db, "vacuum");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.rfind(fmt::format("cm-tune: error: database {} is open in process {} (cmt_cli_tests", db.string(),
                                       tune.pid()),
                           0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("; run cm-tune db vacuum when it has finished\n"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(db_command(db, "vacuum --dry-run").exit_code, 0);
}

TEST(DbCommand, MigrateBringsAnOlderDatabaseUpToDate) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_database(db);
  test::downgrade_schema(db, 1);
  const int latest = latest_schema_version();
  const test::CommandResult info = db_command(db, "info");
  EXPECT_EQ(info.exit_code, 2) << info.output;
  EXPECT_EQ(info.output, fmt::format("cm-tune: error: database {} has schema version 1, older than this cm-tune's {}, and "
                                     "a command that only reads does not migrate it; run cm-tune db migrate --db {} once\n",
                                     db.string(), latest, db.string()));
  const test::CommandResult check = db_command(db, "check");
  EXPECT_EQ(check.exit_code, 1) << check.output;
  EXPECT_NE(check.output.find(fmt::format("FAIL  schema           version 1, older than this cm-tune's {}; run cm-tune db "
                                          "migrate\n",
                                          latest)),
            std::string::npos)
      << check.output;

  const test::CommandResult migrate = db_command(db, "migrate");
  EXPECT_EQ(migrate.exit_code, 0) << migrate.output;
  EXPECT_EQ(migrate.output, fmt::format("database {}: schema version 1 -> {}\n", db.string(), latest));
  const test::CommandResult again = db_command(db, "migrate");
  EXPECT_EQ(again.output, fmt::format("database {}: schema version {}, the latest; nothing to do\n", db.string(), latest));
  EXPECT_EQ(db_command(db, "info").exit_code, 0);
  EXPECT_EQ(db_command(db, "check").exit_code, 0);
}

// A file whose header says schema 2 while its tables are a later version's (its user_version
// rewritten): the next migration step fails on it, which db migrate says in one line, changing nothing.
TEST(DbCommand, MigrateOfAFileWhoseTablesAreNotItsVersionsIsOneLine) {
  test::TempDir dir;
  const fs::path db = dir / "t.db";
  build_database(db);
  Database(db).exec("PRAGMA user_version = 2");
  const std::string before = test::read_file(db);
  const test::CommandResult migrate = db_command(db, "migrate");
  EXPECT_EQ(migrate.exit_code, 2) << migrate.output;
  EXPECT_EQ(migrate.output.rfind(fmt::format("cm-tune: error: database {} says schema version 2, but its tables are not "
                                             "that version's: migration 0003_layout_batch fails on it (",
                                             db.string()),
                                 0),
            0u)
      << migrate.output;
  EXPECT_NE(migrate.output.find("); nothing was changed\n"), std::string::npos) << migrate.output;
  EXPECT_EQ(std::count(migrate.output.begin(), migrate.output.end(), '\n'), 1) << migrate.output;
  EXPECT_EQ(migrate.output.find(".cpp"), std::string::npos) << "no source path: " << migrate.output;
  Database after(db, OpenMode::read);
  Statement version = after.prepare("PRAGMA user_version");
  ASSERT_TRUE(version.step());
  EXPECT_EQ(version.column_int(0), 2) << "the failed step was rolled back";
}

TEST(DbCommand, WithoutASubcommandListsThem) {
  const test::CommandResult r = test::run_command(test::cmtune_binary() + " db");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "cm-tune: error: db needs a subcommand: check, info, vacuum, migrate, merge or export\n");
}

}  // namespace
}  // namespace cmt::cmd_db_tests
