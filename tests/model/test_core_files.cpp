// core/files: reading and writing whole files, with the reason the system gave when it fails (a
// failed iostream write carries none, and its message used to read "Success").
#include <gtest/gtest.h>

#include <csignal>
#include <sys/resource.h>

#include "core/files.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;

TEST(Files, ReadSaysWhyItCannot) {
  test::TempDir dir;
  EXPECT_EQ(test::usage_error([&] { read_text_file(dir / "missing.toml", "preset"); }),
            "cannot read preset '" + (dir / "missing.toml").string() + "': No such file or directory");
  EXPECT_EQ(test::usage_error([&] { read_text_file(dir.path(), "preset"); }),
            "cannot read preset '" + dir.path().string() + "': Is a directory");
  test::write_file(dir / "p.toml", "name = \"p\"\n");
  EXPECT_EQ(read_text_file(dir / "p.toml", "preset"), "name = \"p\"\n");
}

TEST(Files, WriteSaysWhyItCannot) {
  test::TempDir dir;
  const fs::path missing = dir / "missing" / "x.cuh";
  EXPECT_EQ(test::usage_error([&] { write_file_atomically(missing, "text"); }),
            "cannot write " + missing.string() + ": folder " + (dir / "missing").string() + " does not exist");
  EXPECT_EQ(test::usage_error([&] { write_file_atomically("/dev/full", "text"); }),
            "cannot write /dev/full: No space left on device");
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

TEST(Files, DeviceIsWrittenInPlaceNeverReplaced) {
  EXPECT_TRUE(is_stream_file("/dev/null"));
  write_file_atomically("/dev/null", "text");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::exists("/dev/null.tmp"));
  test::TempDir dir;
  test::write_file(dir / "x.cuh", "old");
  EXPECT_FALSE(is_stream_file(dir / "x.cuh"));
  EXPECT_FALSE(is_stream_file(dir / "none.cuh"));
}

TEST(Files, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  test::TempDir dir;
  test::write_file(dir / "x.cuh", "old header\n");
  // A file-size limit makes the write fail half-way (EFBIG) after the temporary file exists.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string message = test::usage_error([&] { write_file_atomically(dir / "x.cuh", std::string(10000, 'x')); });
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  std::signal(SIGXFSZ, SIG_DFL);
  EXPECT_EQ(message, "cannot write " + (dir / "x.cuh").string() + ": File too large");
  EXPECT_EQ(test::read_file(dir / "x.cuh"), "old header\n");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"x.cuh"}) << "the temporary file was left behind";
}

// A file of the database is recognised by its resolved path, whether or not it exists: relative or
// absolute, through ./ and .., through a folder link, and through the database's own link.
TEST(Files, DatabaseFileKindComparesResolvedPathsOfFilesThatNeedNotExist) {
  test::TempDir dir;
  fs::create_directory(dir / "real");
  fs::create_directory(dir / "sub");
  test::write_file(dir / "real" / "t.db", std::string("SQLite format 3\0", 16));
  fs::create_symlink("real/t.db", dir / "link.db");       // the database used through a link
  fs::create_directory_symlink("real", dir / "alias");    // a second name of its folder
  const auto what = [&](const fs::path& file, const fs::path& db) {
    const auto kind = database_file_kind(file, db);
    return kind ? (kind->side_file ? "side: " : "db: ") + kind->what : std::string("none");
  };
  const fs::path db = dir / "real" / "t.db";
  EXPECT_EQ(what(dir / "alias" / "t.db", db), "db: the database " + db.string() + " itself");
  EXPECT_EQ(what(dir / "link.db", db), "db: the database " + db.string() + " itself");
  for (const std::string suffix : {"-wal", "-shm", "-journal"}) {
    const std::string side = "side: the " + suffix + " file of the database ";
    EXPECT_EQ(what(dir / "sub" / ".." / "real" / ("t.db" + suffix), db), side + db.string());
    EXPECT_EQ(what(dir / "alias" / ("t.db" + suffix), db), side + db.string());
    // SQLite follows the database's link: its side files lie beside real/t.db (and, refused too in
    // case, beside the link).
    EXPECT_EQ(what(dir / "real" / ("t.db" + suffix), dir / "link.db"), side + (dir / "link.db").string());
    EXPECT_EQ(what(dir / ("link.db" + suffix), dir / "link.db"), side + (dir / "link.db").string());
    // Beside another SQLite database, with no database in use.
    EXPECT_EQ(what(dir / "real" / ("t.db" + suffix), ""),
              "side: the " + suffix + " file of the SQLite database " + (dir / "real" / "t.db").string());
    EXPECT_EQ(what(dir / "sub" / ("t.db" + suffix), db), "none");   // no database beside it
    EXPECT_FALSE(fs::exists(dir / "real" / ("t.db" + suffix)));
  }
  EXPECT_EQ(what(dir / "real" / "t.db-walrus", db), "none");
  EXPECT_EQ(what(dir / "real" / "tuned.cuh", db), "none");
}

}  // namespace
}  // namespace cmt
