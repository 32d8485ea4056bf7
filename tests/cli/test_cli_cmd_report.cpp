// `cm-tune report` through the real binary: it writes the one file --out names (never the database,
// its side files, another SQLite database or a folder), only reads the database, touches no GPU, and
// refuses bad input in one line (exit 2). A browser opens the page on a real tune's database in
// tests/report/check_report.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::report_cli_tests {
namespace {

/// `cm-tune report` on a tuned database in a fresh folder (test::ReadingCommand).
class Report : public test::ReadingCommand {
 protected:
  Report() : ReadingCommand("report", "GPU-report") {}
  test::SplitResult report(const std::string& args) const { return run_command(args); }
};

TEST_F(Report, WritesThePageItNamesAndOnlyReadsTheDatabase) {
  const test::SplitResult r = report("--out report.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "wrote report.html: NVIDIA H100 80GB HBM3, 1 tuned problem (f32); the landscape of 1024x1024x1024; "
            "dispatch map at K=1024\n");
  const std::string page = test::read_file(m_dir / "report.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("data-plot=\"speed-f32\" data-points=\"1\""), std::string::npos);
  EXPECT_NE(page.find("data-plot=\"roofline\" data-points=\"1\""), std::string::npos);
  EXPECT_NE(page.find("data-plot=\"landscape-trials\" data-points=\"1\""), std::string::npos);
  EXPECT_NE(page.find("data-plot=\"dispatch-f32\" data-points=\"576\""), std::string::npos);
  EXPECT_NE(page.find("data-table=\"winners\" data-rows=\"1\""), std::string::npos);
  // The fixture's device has no clock stored: the roofline says so instead of drawing a compute roof.
  EXPECT_NE(page.find("It stores no clock for this GPU, so no compute roof is drawn."), std::string::npos);
  EXPECT_EQ(test::read_file(m_dir / "tune.db"), m_db_bytes) << "the database changed";
  EXPECT_EQ(test::entries(m_dir.path()), (std::vector<std::string>{"report.html", "tune.db"}));

  // Again: the same bytes, replacing the file the user named; through a link, its destination.
  test::write_file(m_dir / "report.html", "an older report\n");
  ASSERT_EQ(report("-o report.html --device 0 --dtype all").exit_code, 0);
  EXPECT_TRUE(test::read_file(m_dir / "report.html") == page) << "another page for the same database";
  fs::create_directory(m_dir / "real");
  fs::create_symlink("real/page.html", m_dir / "page.html");
  ASSERT_EQ(report("--out page.html --device GPU-report --problem 1024").exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(m_dir / "page.html"));
  ASSERT_EQ(report("--out named.html --problem 1024x1024x1024 --k 512").exit_code, 0);
  const std::string named = test::read_file(m_dir / "named.html");
  EXPECT_TRUE(test::read_file(m_dir / "real" / "page.html") != named) << "--k changed nothing";
  EXPECT_NE(named.find("The problem --problem names."), std::string::npos);
  EXPECT_NE(named.find("Dispatch map, f32 NN at K=512"), std::string::npos);
}

TEST_F(Report, OutNamingTheDatabaseItsSideFilesAnotherDatabaseOrAFolderIsRefused) {
  const std::string itself = "is the database tune.db itself; refusing to overwrite it with a report";
  expect_refused("--out tune.db", "--out tune.db: " + itself);
  expect_refused("--out ./tune.db", "--out ./tune.db: " + itself);
  expect_refused("--out tune.db-wal",
                 "--out tune.db-wal: is the -wal file of the database tune.db, which SQLite deletes or replays; "
                 "refusing to write a report there");
  Database(m_dir / "other.db").exec("CREATE TABLE t (x)");
  expect_refused("--out other.db", "--out other.db: is a SQLite database, not a report; refusing to overwrite it");
  fs::create_directory(m_dir / "pages");
  expect_refused("--out pages", "--out pages: is a folder; name the HTML file to write, e.g. report.html");
}

TEST_F(Report, BadOptionsAreOneLineUsageErrors) {
  expect_refused("--out r.html --problem 12x", "bad size '12x' in --problem: dimension '' is not a whole number");
  expect_refused("--out r.html --problem 256..1024",   // one problem, not a list
                 "bad size '256..1024' in --problem: dimension '256..1024' is not a whole number");
  expect_refused("--out r.html --problem 512",
                 "--problem 512x512x512: not tuned on NVIDIA H100 80GB HBM3 in tune.db; tuned problems: 1024x1024x1024");
  expect_refused("--out r.html --dtype f64",
                 "NVIDIA H100 80GB HBM3 has no tuned problems of type f64 in tune.db; its tuned problems are of type f32");
  expect_refused("--out r.html --dtype f16", "--dtype: unknown type 'f16' (f32, f64, i32, tf32x3 or all)");
  expect_refused("--out r.html --device A100",
                 "device 'A100' has not been tuned in tune.db; tuned devices: [0] NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, "
                 "GPU-report)");
  expect_refused("--out r.html --k 0", "--k: '0' must be at least 1");
  expect_refused("--out ''", "--out: the file name is empty");
  const test::SplitResult no_out = report("");
  EXPECT_EQ(no_out.exit_code, cli::k_exit_usage);
  EXPECT_NE(no_out.err.find("--out"), std::string::npos) << no_out.err;
  EXPECT_EQ(std::count(no_out.err.begin(), no_out.err.end(), '\n'), 1) << no_out.err;
}

TEST(ReportDatabase, AMissingOrEmptyDatabaseIsOneLine) {
  test::TempDir dir;
  // Not there: not created, and no page written.
  test::expect_error("report --db missing.db --out r.html", cli::k_exit_usage,
                     {"database missing.db does not exist; run cm-tune tune first"});
  // A database with nothing tuned.
  Store(dir / "empty.db");
  const test::SplitResult r = test::run_split(dir, "report --db empty.db --out r.html");
  test::expect_line(r, cli::k_exit_usage,
                    "database empty.db has no tuned problems (no winners) to report; run `cm-tune tune` first");
  EXPECT_FALSE(fs::exists(dir / "r.html"));
}

}  // namespace
}  // namespace cmt::report_cli_tests
