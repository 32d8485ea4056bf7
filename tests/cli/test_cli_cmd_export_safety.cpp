// `cm-tune export --out` never destroys what it is pointed at (issue 18): not the database, not any
// other SQLite file, not a folder, not a symbolic link; and a bad --namespace or a source edited in
// the database gives one line and writes nothing. Runs the real binary on a database built through
// the Store API.
#include <gtest/gtest.h>

#include <regex>

#include <algorithm>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "core/source_bundle.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

const std::string k_header_start = "// GEMM kernels tuned by cm-tune";



/// A tuned database in a fresh folder, and `cm-tune export` run in that folder on it.
class ExportSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    db = dir / "tune.db";
    source_hash = test::tuned_database(db, "GPU-export-safety");
    db_bytes = test::read_file(db);
  }

  /// `cm-tune export --db DB ARGS`, run in the database's folder.
  test::CommandResult export_with(const std::string& args) {
    return test::run_command(fmt::format("cd '{}' && {} --quiet export --db '{}' {}", dir.path().string(),
                                         test::cmtune_binary(), db.string(), args));
  }

  /// The run failed as a usage error with exactly this one line, and left the database as it was.
  void expect_refused(const test::CommandResult& r, const std::string& line) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output, "cm-tune: error: " + line + "\n");
    EXPECT_EQ(test::read_file(db), db_bytes) << "the database changed";
  }

  test::TempDir dir;
  fs::path db;
  std::string source_hash;
  std::string db_bytes;
};

TEST_F(ExportSafety, OutNamingTheDatabaseIsRefusedAndTheDatabaseKept) {
  fs::create_directory(dir / "sub");
  const std::vector<std::string> before = test::entries(dir.path());
  const std::string refusal =
      fmt::format("is the database {} itself; refusing to overwrite it with a header", db.string());
  expect_refused(export_with("--out " + db.string()), fmt::format("--out {}: {}", db.string(), refusal));
  expect_refused(export_with("--out tune.db"), "--out tune.db: " + refusal);                 // relative
  expect_refused(export_with("--out ./sub/../tune.db"), "--out ./sub/../tune.db: " + refusal);
  expect_refused(export_with("--check --out tune.db"), "--out tune.db: " + refusal);
  EXPECT_EQ(test::entries(dir.path()), before) << "a file was created or removed";
}

TEST_F(ExportSafety, OutLinkingToTheDatabaseIsRefusedAndTheLinkKept) {
  fs::create_symlink("tune.db", dir / "tuned.cuh");
  fs::create_symlink("tuned.cuh", dir / "again.cuh");
  const std::string refusal =
      fmt::format("is the database {} itself; refusing to overwrite it with a header", db.string());
  expect_refused(export_with("--out tuned.cuh"),
                 "--out tuned.cuh (a symbolic link to tune.db): " + refusal);
  expect_refused(export_with("--out again.cuh"),
                 "--out again.cuh (a symbolic link to tune.db): " + refusal);
  EXPECT_TRUE(fs::is_symlink(dir / "tuned.cuh"));
  EXPECT_EQ(fs::read_symlink(dir / "tuned.cuh"), "tune.db");
  EXPECT_TRUE(fs::is_symlink(dir / "again.cuh"));
}

TEST_F(ExportSafety, OutNamingAnotherSqliteFileIsRefused) {
  Database(dir / "other.db").exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  const std::string other = test::read_file(dir / "other.db");
  ASSERT_EQ(other.substr(0, 16), std::string("SQLite format 3\0", 16));
  expect_refused(export_with("--out other.db"),
                 "--out other.db: is a SQLite database, not a header; refusing to overwrite it");
  EXPECT_EQ(test::read_file(dir / "other.db"), other);
}

// SQLite's side files of the database are refused whether or not they exist (SQLite deletes a -wal
// or -shm left by a header, and takes a -journal for a hot journal), however the name is spelt; so
// is a side-file name beside any other SQLite database.
TEST_F(ExportSafety, OutNamingASideFileOfTheDatabaseIsRefusedWhetherOrNotItExists) {
  fs::create_directory(dir / "sub");
  fs::create_directory_symlink(".", dir / "here");   // a folder link back to the database's folder
  Database(dir / "other.db").exec("CREATE TABLE t (x)");
  for (const std::string suffix : {"-wal", "-shm", "-journal"}) {
    for (const bool exists : {false, true}) {
      SCOPED_TRACE(suffix + (exists ? ", existing" : ", missing"));
      if (exists) test::write_file(dir / ("tune.db" + suffix), "not a header");
      const std::vector<std::string> before = test::entries(dir.path());
      const std::string refusal = fmt::format(
          "is the {} file of the database {}, which SQLite deletes or replays; refusing to write a header there",
          suffix, db.string());
      // Every spelling while the file is missing; two once it exists (equivalent() saw those before).
      std::vector<std::string> outs = {"tune.db" + suffix, (dir / ("tune.db" + suffix)).string()};
      if (!exists) outs.insert(outs.end(), {"./tune.db" + suffix, "sub/../tune.db" + suffix, "here/tune.db" + suffix});
      for (const std::string& out : outs)
        expect_refused(export_with("--out " + out), fmt::format("--out {}: {}", out, refusal));
      expect_refused(export_with("--check --out " + outs.front()), fmt::format("--out {}: {}", outs.front(), refusal));
      expect_refused(export_with("--out other.db" + suffix),
                     fmt::format("--out other.db{0}: is the {0} file of the SQLite database other.db, which SQLite "
                                 "deletes or replays; refusing to write a header there",
                                 suffix));
      EXPECT_EQ(test::entries(dir.path()), before) << "a file was created or removed";
      if (exists) EXPECT_EQ(test::read_file(dir / ("tune.db" + suffix)), "not a header");
      fs::remove(dir / ("tune.db" + suffix));
    }
  }
  // A name that only ends like a side file, with no SQLite database beside it, is a header like any.
  const auto ok = export_with("--out tuned-journal");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST_F(ExportSafety, OutNamingAFolderIsRefused) {
  fs::create_directory(dir / "include");
  expect_refused(export_with("--out include"),
                 "--out include: is a folder; name the header file to write, e.g. tuned_sgemm.cuh");
  EXPECT_TRUE(fs::is_directory(dir / "include"));
  EXPECT_TRUE(fs::is_empty(dir / "include"));
}

TEST_F(ExportSafety, PlainOutIsWrittenWithNoTemporaryFileLeft) {
  const auto r = export_with("--out tuned.cuh");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(dir / "tuned.cuh").rfind(k_header_start, 0), 0u);
  EXPECT_EQ(test::entries(dir.path()), (std::vector<std::string>{"tune.db", "tuned.cuh"}));
}

TEST_F(ExportSafety, OutThroughSymbolicLinksReplacesTheTargetAndKeepsTheLinks) {
  fs::create_directories(dir / "real");
  fs::create_directories(dir / "links");
  test::write_file(dir / "real" / "tuned.cuh", "old header\n");
  fs::create_symlink("../real/tuned.cuh", dir / "links" / "first.cuh");   // relative, resolved from links/
  fs::create_symlink("links/first.cuh", dir / "second.cuh");               // a chain of two
  const auto r = export_with("--out second.cuh");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The sizes of the machine code depend on NVRTC's build of the runtime library: matched, not spelled.
  EXPECT_TRUE(std::regex_match(
      r.output,
      std::regex("wrote second\\.cuh: 1 device table, 1 tuned problem, 13 kernels \\(incl\\. 12 generic defaults, one "
                 "per type and layout\\), 3 images of machine code \\([0-9.]+ MB unpacked\\), [0-9.]+ MB in all\n"
                 "held-out check \\(leave one shape out, 1 shape\\): no kernel was measured at two of them, so there "
                 "is nothing to check\nNVIDIA H100 80GB HBM3: no tuned kernel serves f32 nn batched, nt, tn, tt; f64, "
                 "i32 \\(any layout\\); those calls run the generic default kernels\n")))
      << r.output;
  ASSERT_TRUE(fs::is_symlink(dir / "second.cuh"));
  ASSERT_TRUE(fs::is_symlink(dir / "links" / "first.cuh"));
  EXPECT_EQ(fs::read_symlink(dir / "second.cuh"), "links/first.cuh");
  EXPECT_EQ(fs::read_symlink(dir / "links" / "first.cuh"), "../real/tuned.cuh");
  const std::string header = test::read_file(dir / "real" / "tuned.cuh");
  EXPECT_EQ(header.rfind(k_header_start, 0), 0u) << header.substr(0, 200);
  EXPECT_EQ(test::entries(dir / "real"), std::vector<std::string>{"tuned.cuh"}) << "temporary file left behind";
  EXPECT_EQ(test::entries(dir / "links"), std::vector<std::string>{"first.cuh"});
  EXPECT_EQ(test::read_file(db), db_bytes);

  // Unchanged through the link: --check agrees, and a second export leaves the file alone.
  const auto check = export_with("--check --out second.cuh");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(export_with("--out second.cuh").exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(dir / "second.cuh"));
}

TEST_F(ExportSafety, OutDanglingLinkCreatesItsTargetAndKeepsTheLink) {
  fs::create_symlink("made.cuh", dir / "link.cuh");
  const auto r = export_with("--out link.cuh");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir / "link.cuh"));
  EXPECT_EQ(test::read_file(dir / "made.cuh").rfind(k_header_start, 0), 0u);
}

TEST_F(ExportSafety, OutLinkLoopIsRefused) {
  fs::create_symlink("b.cuh", dir / "a.cuh");
  fs::create_symlink("a.cuh", dir / "b.cuh");
  expect_refused(export_with("--out a.cuh"), "cannot write a.cuh: Too many levels of symbolic links");
  EXPECT_TRUE(fs::is_symlink(dir / "a.cuh"));
  EXPECT_TRUE(fs::is_symlink(dir / "b.cuh"));
}

TEST_F(ExportSafety, KeywordNamespaceIsRefusedAndNothingWritten) {
  expect_refused(export_with("--out tuned.cuh --namespace class"),
                 "--namespace 'class': 'class' is a C++ keyword, so the header would not compile; give identifiers "
                 "joined by ::");
  expect_refused(export_with("--out tuned.cuh --namespace app::and"),
                 "--namespace 'app::and': 'and' is a C++ keyword, so the header would not compile; give identifiers "
                 "joined by ::");
  expect_refused(export_with("--out tuned.cuh --namespace app::_Gemm"),
                 "--namespace 'app::_Gemm': '_Gemm' is reserved to the compiler (_ followed by an uppercase letter), "
                 "so the header would not compile; give identifiers joined by ::");
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "tuned.cuh")));
  const auto ok = export_with("--out tuned.cuh --namespace app::klass");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(test::read_file(dir / "tuned.cuh").find("namespace klass {"), std::string::npos);
}

// Macros where the header is compiled (NULL, EOF from <cuda_runtime.h>'s includes, CUDART_VERSION),
// reserved names, keywords and non-identifiers: one line, exit 2, no file. The macros come from nvcc
// at build time (tuner/header_macros.cmake).
TEST_F(ExportSafety, NamespaceThatCannotBeANamespaceIsRefusedAndNothingWritten) {
  const std::vector<std::string> before = test::entries(dir.path());
  const auto line = [](const std::string& name, const std::string& why) {
    return fmt::format("--namespace '{}': '{}' {}, so the header would not compile; give identifiers joined by ::",
                       name, name, why);
  };
  const std::string macro = "is a macro where the header is compiled (nvcc's own, or from <cuda_runtime.h> or another of the header's includes)";
  for (const char* name : {"NULL", "EOF", "CUDART_VERSION", "stdout"})
    expect_refused(export_with(fmt::format("--out tuned.cuh --namespace {}", name)), line(name, macro));
  expect_refused(export_with("--out tuned.cuh --namespace app::NULL"),
                 "--namespace 'app::NULL': 'NULL' " + macro + ", so the header would not compile; give identifiers "
                 "joined by ::");
  expect_refused(export_with("--out tuned.cuh --namespace __x"), line("__x", "is reserved to the compiler (it contains __)"));
  expect_refused(export_with("--out tuned.cuh --namespace _Foo"),
                 line("_Foo", "is reserved to the compiler (_ followed by an uppercase letter)"));
  expect_refused(export_with("--out tuned.cuh --namespace int"), line("int", "is a C++ keyword"));
  expect_refused(export_with("--out tuned.cuh --namespace 1abc"),
                 line("1abc", "is not a C++ identifier (a letter or _, then letters, digits and _)"));
  EXPECT_EQ(test::entries(dir.path()), before) << "a file was created or removed";
  const auto ok = export_with("--out tuned.cuh --namespace Null::eof");   // not macros: case matters
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(test::read_file(dir / "tuned.cuh").find("namespace Null {\nnamespace eof {"), std::string::npos);
}

TEST_F(ExportSafety, SourceEditedInTheDatabaseIsRefusedAndNothingWritten) {
  Database(db).exec("UPDATE sources SET main_text = replace(main_text, 'int M', 'long M')");
  db_bytes = test::read_file(db);
  const std::string line = fmt::format(
      "the database's source for template fast does not match its hash {} (the database was modified outside "
      "cm-tune); refusing to use it",
      source_hash);
  expect_refused(export_with("--out tuned.cuh"), line);
  expect_refused(export_with("--check --out tuned.cuh"), line);
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "tuned.cuh")));
  EXPECT_EQ(test::entries(dir.path()), std::vector<std::string>{"tune.db"});
}

}  // namespace
}  // namespace cmt
