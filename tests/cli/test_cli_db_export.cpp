// `cm-tune db export` through the real binary, on databases built through the Store API: it only
// reads the database, writes stdout or the file --out names (never the database, its side files,
// another SQLite database or a folder), and refuses bad input in one line (exit 2). Python reads
// the exports back on a real tune's database: tests/db_export/check_db_export.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::db_export_tests {
namespace {

const std::string k_trials_heading =
    "Problem,Provider,OperationKind,Operation,Disposition,m,n,k,A,B,C,batch_count,cta_m,cta_n,Bytes,Flops,"
    "Flops/Byte,Runtime,GB/s,GFLOPs,trial_id,run_id,device,device_uuid,arch,dtype,layout,stride_a,stride_b,stride_c,"
    "lda,ldb,ldc,template,params,outcome,reason,min_ms,cv,samples,retime_ms,ratio_to_cublas,max_abs_error,"
    "max_error_ratio,simt_error_ratio,registers,smem_bytes,threads,grid_z,problems_per_block,tensor_maps,"
    "align_bytes,ld_multiple,created_at\r\n";

/// `cm-tune db export` on a tuned database in a fresh folder (test::ReadingCommand).
class DbExport : public test::ReadingCommand {
 protected:
  DbExport() : ReadingCommand("db export", "GPU-db-export") {}
  test::SplitResult db_export(const std::string& args) const { return run_command(args); }
};

TEST_F(DbExport, WritesStdoutAndOnlyReadsTheDatabase) {
  for (const std::string format : {"csv", "json"})
    for (const std::string what : {"trials", "winners", "baselines", "devices"}) {
      SCOPED_TRACE(format + " " + what);
      const test::SplitResult r = db_export("--format " + format + " --what " + what);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err, "");
      // The database has no cuBLAS baseline: CSV's heading alone, no JSON line.
      EXPECT_EQ(r.out.empty(), format == "json" && what == "baselines") << r.out;
    }
  const test::SplitResult csv = db_export("--format csv");   // --what trials by default
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, k_trials_heading.size()), k_trials_heading);
  EXPECT_EQ(test::lines_of(csv.out).size(), 2u) << csv.out;   // the heading and the one trial
  EXPECT_NE(csv.out.find(",fast,V=1,ok,,"), std::string::npos) << csv.out;

  const test::SplitResult json = db_export("--format json --what winners");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (const std::string& line : test::lines_of(json.out)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    EXPECT_EQ(row.at("Problem"), "1024x1024x1024");
    EXPECT_EQ(row.at("Disposition"), "passed");
    EXPECT_EQ(row.at("device_uuid"), "GPU-db-export");
  }

  const test::SplitResult t4 = db_export("--format kernel-tuner");
  ASSERT_EQ(t4.exit_code, 0) << t4.err;
  const nlohmann::json doc = nlohmann::json::parse(t4.out);
  EXPECT_EQ(doc.at("schema_version"), "1.0.0");
  ASSERT_EQ(doc.at("results").size(), 1u);
  EXPECT_EQ(doc.at("results")[0].at("invalidity"), "correct");
  EXPECT_EQ(doc.at("results")[0].at("configuration"), (nlohmann::json{{"template", "fast"}, {"V", 1}}));
  EXPECT_EQ(doc.at("metadata").at("timeunit"), "milliseconds");

  EXPECT_EQ(test::read_file(m_dir / "tune.db"), m_db_bytes) << "the database changed";
  EXPECT_EQ(test::entries(m_dir.path()), std::vector<std::string>{"tune.db"}) << "files were left behind";
}

TEST_F(DbExport, OutWritesTheFileItNamesAndSaysSo) {
  const test::SplitResult stdout_csv = db_export("--format csv");
  test::write_file(m_dir / "trials.csv", "an older export\n");   // named by the user: replaced
  const test::SplitResult r = db_export("--format csv --out trials.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote trials.csv: 1 trial (csv)\n");
  EXPECT_EQ(test::read_file(m_dir / "trials.csv"), stdout_csv.out);

  const test::SplitResult devices = db_export("--format json --what devices -o devices.jsonl");
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  EXPECT_EQ(devices.out, "wrote devices.jsonl: 1 device (json)\n");

  // Through a symbolic link: the link's destination is written and the link kept.
  fs::create_directory(m_dir / "real");
  fs::create_symlink("real/t4.json", m_dir / "t4.json");
  const test::SplitResult t4 = db_export("--format kernel-tuner --out t4.json");
  ASSERT_EQ(t4.exit_code, 0) << t4.err;
  EXPECT_EQ(t4.out, "wrote t4.json: 1 trial (kernel-tuner)\n");
  EXPECT_TRUE(fs::is_symlink(m_dir / "t4.json"));
  EXPECT_EQ(nlohmann::json::parse(test::read_file(m_dir / "real" / "t4.json")).at("results").size(), 1u);

  // A device or a pipe is written into, with nothing else on stdout.
  const test::SplitResult piped = db_export("--format json --what devices --out /dev/stdout");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(test::lines_of(piped.out).size(), 1u) << piped.out;
  EXPECT_EQ(test::entries(m_dir.path()),
            (std::vector<std::string>{"devices.jsonl", "real", "t4.json", "trials.csv", "tune.db"}));
  EXPECT_EQ(test::read_file(m_dir / "tune.db"), m_db_bytes);
}

// --out never names a file of the database (whether or not it exists), another SQLite database or
// a folder, however it is spelt.
TEST_F(DbExport, OutNamingTheDatabaseItsSideFilesAnotherDatabaseOrAFolderIsRefused) {
  const std::string db = "tune.db";   // as --db names it
  const std::string itself = fmt::format("is the database {} itself; refusing to overwrite it with a data export", db);
  expect_refused("--format csv --out tune.db", "--out tune.db: " + itself);
  expect_refused("--format kernel-tuner --out ./tune.db", "--out ./tune.db: " + itself);
  fs::create_symlink("tune.db", m_dir / "export.csv");
  expect_refused("--format csv --out export.csv", "--out export.csv (a symbolic link to tune.db): " + itself);
  for (const std::string suffix : {"-wal", "-shm", "-journal"})
    for (const bool exists : {false, true}) {
      if (exists) test::write_file(m_dir / ("tune.db" + suffix), "kept");
      expect_refused("--format json --out tune.db" + suffix,
                     fmt::format("--out tune.db{0}: is the {0} file of the database {1}, which SQLite deletes or "
                                 "replays; refusing to write a data export there",
                                 suffix, db));
      if (exists) EXPECT_EQ(test::read_file(m_dir / ("tune.db" + suffix)), "kept");
      fs::remove(m_dir / ("tune.db" + suffix));
    }
  Database(m_dir / "other.db").exec("CREATE TABLE t (x)");
  expect_refused("--format csv --out other.db",
                 "--out other.db: is a SQLite database, not a data export; refusing to overwrite it");
  fs::create_directory(m_dir / "exports");
  expect_refused("--format csv --out exports", "--out exports: is a folder; name the file to write, e.g. trials.csv");
}

TEST_F(DbExport, BadOptionsAreOneLineUsageErrors) {
  expect_refused("--format kernel-tuner --what winners",
                 "--what winners: --format kernel-tuner exports trials, a T4 results file's rows; --format csv or "
                 "json exports winners");
  expect_refused("--format xml", "--format: 'xml' is not an export format: csv, json or kernel-tuner");
  expect_refused("--format csv --what runs",
                 "--what: 'runs' is not what db export exports: trials, winners, baselines or devices");
  expect_refused("--format csv --out ''", "--out: the file name is empty");
  const test::SplitResult no_format = db_export("--what trials");
  EXPECT_EQ(no_format.exit_code, cli::k_exit_usage);
  EXPECT_NE(no_format.err.find("--format"), std::string::npos) << no_format.err;
  EXPECT_EQ(std::count(no_format.err.begin(), no_format.err.end(), '\n'), 1) << no_format.err;
  // A database that is not there is not created.
  test::expect_error("db export --format csv --db missing.db", cli::k_exit_usage, {"missing.db"});
}

TEST(DbExportEmpty, ADatabaseWithoutRowsExportsTheHeadingAlone) {
  test::TempDir dir;
  Store(dir / "empty.db");
  const auto csv = test::run_split(dir, "db export --db empty.db --format csv --what winners");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(test::lines_of(csv.out).size(), 1u) << csv.out;
  EXPECT_EQ(csv.out.rfind("Problem,Provider,OperationKind,Operation,Disposition,m,n,k,", 0), 0u) << csv.out;
  const auto json = test::run_split(dir, "db export --db empty.db --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out, "");
  const auto t4 = test::run_split(dir, "db export --db empty.db --format kernel-tuner");
  ASSERT_EQ(t4.exit_code, 0) << t4.err;
  EXPECT_EQ(nlohmann::json::parse(t4.out).at("results"), nlohmann::json::array());
}

}  // namespace
}  // namespace cmt::db_export_tests
