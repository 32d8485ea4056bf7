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

}  // namespace
}  // namespace cmt
