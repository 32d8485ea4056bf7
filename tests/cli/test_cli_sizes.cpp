#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cli/sizes.hpp"
#include "test_support.hpp"

#include <csignal>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cmt {
namespace {

std::vector<std::string> as_strings(const std::vector<Problem>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.to_string());
  return out;
}

TEST(Sizes, PowersOfTwoRange) {
  EXPECT_EQ(as_strings(parse_sizes("256..4096")),
            (std::vector<std::string>{"256x256x256", "512x512x512", "1024x1024x1024", "2048x2048x2048", "4096x4096x4096"}));
}

TEST(Sizes, SteppedRange) {
  EXPECT_EQ(as_strings(parse_sizes("256..1024:256")),
            (std::vector<std::string>{"256x256x256", "512x512x512", "768x768x768", "1024x1024x1024"}));
  EXPECT_EQ(parse_sizes("100..350:100").size(), 3u);  // 100, 200, 300: the end need not be hit
}

TEST(Sizes, ListsRectanglesAndMixes) {
  EXPECT_EQ(as_strings(parse_sizes("1000,1023,2049")),
            (std::vector<std::string>{"1000x1000x1000", "1023x1023x1023", "2049x2049x2049"}));
  EXPECT_EQ(as_strings(parse_sizes("4096x1024x512")), (std::vector<std::string>{"4096x1024x512"}));
  EXPECT_EQ(as_strings(parse_sizes("256..1024, 1023,4096x1024x512")),
            (std::vector<std::string>{"256x256x256", "512x512x512", "1024x1024x1024", "1023x1023x1023", "4096x1024x512"}));
}

TEST(Sizes, DuplicatesDroppedInOrder) {
  EXPECT_EQ(as_strings(parse_sizes("512,256..512,512x512x512")),
            (std::vector<std::string>{"512x512x512", "256x256x256"}));
}

void expect_bad(const std::string& text, const std::string& token) {
  try {
    parse_sizes(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + token + "'"), std::string::npos) << e.what();
  }
}

TEST(Sizes, BadTokensAreNamed) {
  expect_bad("256,abc,512", "abc");
  expect_bad("256..", "256..");
  expect_bad("4096..256", "4096..256");
  expect_bad("256..1024:0", "256..1024:0");
  expect_bad("4096x1024", "4096x1024");
  expect_bad("4096x1024x512x2", "4096x1024x512x2");
  expect_bad("0", "0");
  expect_bad("-5", "-5");
  expect_bad("1,,2", "");
  expect_bad("12.5", "12.5");
  expect_bad("99999999999", "99999999999");
  EXPECT_THROW(parse_sizes(""), UsageError);
}

void write(const std::filesystem::path& file, const std::string& text) { std::ofstream(file) << text; }

TEST(Sizes, FilesHoldOneSizePerLineWithComments) {
  test::TempDir dir;
  write(dir / "shapes.txt", "# a suite\n256x256x256\n\n  1x4096x8192   # GEMV-like\r\n1000\n256x256x256\n");
  EXPECT_EQ(as_strings(parse_sizes("@" + (dir / "shapes.txt").string())),
            (std::vector<std::string>{"256x256x256", "1x4096x8192", "1000x1000x1000"}));
  // Mixed with other items; duplicates across them dropped.
  EXPECT_EQ(as_strings(parse_sizes("512,@" + (dir / "shapes.txt").string() + ",256")),
            (std::vector<std::string>{"512x512x512", "256x256x256", "1x4096x8192", "1000x1000x1000"}));
}

TEST(Sizes, BadFilesNameTheFileAndLine) {
  test::TempDir dir;
  write(dir / "bad.txt", "256x256x256\n# fine\n4096x1024\n");
  const std::string bad = (dir / "bad.txt").string();
  const std::string what = test::usage_error([&] { parse_sizes("@" + bad); });
  EXPECT_NE(what.find(bad + ":3:"), std::string::npos) << what;
  EXPECT_NE(what.find("'4096x1024'"), std::string::npos) << what;

  write(dir / "empty.txt", "# nothing\n\n");
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + (dir / "empty.txt").string()); }).find("holds no sizes"),
            std::string::npos);
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + (dir / "missing.txt").string()); }).find("cannot read it"),
            std::string::npos);
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + dir.path().string()); }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(test::usage_error([&] { parse_sizes("@"); }).find("no file named"), std::string::npos);
  write(dir / "nested.txt", "@other.txt\n");
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + (dir / "nested.txt").string()); }).find("may not name another"),
            std::string::npos);
}

// A large file, each line once, then every line again: each kept once, in order. (The time it takes
// is the benchmark's business; the dedup is by a set, not a scan of what was kept.)
TEST(Sizes, ALargeFileKeepsEachSizeOnceInOrder) {
  test::TempDir dir;
  std::string text;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 1; i <= 50000; ++i) text += fmt::format("{}x{}x7\n", i % 1000 + 1, i / 1000 + 1);
  write(dir / "big.txt", text);
  const auto problems = parse_sizes("@" + (dir / "big.txt").string());
  ASSERT_EQ(problems.size(), 50000u);
  EXPECT_EQ(problems.front().to_string(), "2x1x7");
  EXPECT_EQ(problems.back().to_string(), "1x51x7");
}

// A FIFO: read as its writer writes, however late the writer comes.
TEST(Sizes, AFifoIsReadWhenItsWriterComes) {
  test::TempDir dir;
  const std::string fifo = (dir / "sizes.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::ofstream(fifo) << "64\n96x80x72\n";
  });
  const auto problems = parse_sizes("@" + fifo);
  writer.join();
  EXPECT_EQ(as_strings(problems), (std::vector<std::string>{"64x64x64", "96x80x72"}));
}

// A FIFO that no writer opens: SIGINT and SIGTERM still stop the tune, with 128 + the signal.
TEST(Sizes, ASignalStopsATuneWaitingForItsSizesFile) {
  test::TempDir dir;
  const std::string fifo = (dir / "sizes.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const int sig : {SIGINT, SIGTERM}) {
    const pid_t pid = test::spawn_cmtune({"--db", (dir / "t.db").string(), "tune", "--sizes", "@" + fifo},
                                         dir / "out.txt", dir / "err.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(pid, sig);
    // A tune that ignored the signal would wait for ever: the test gives up after 60 s.
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 600 && (done = ::waitpid(pid, &status, WNOHANG)) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (done != pid) {
      ADD_FAILURE() << "the tune still runs 60 s after signal " << sig;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_NE(test::read_file(dir / "err.txt").find(fmt::format("stopped by {} while reading --sizes @{}",
                                                              sig == SIGINT ? "SIGINT" : "SIGTERM", fifo)),
              std::string::npos)
        << test::read_file(dir / "err.txt");
    EXPECT_FALSE(std::filesystem::exists(dir / "t.db")) << "nothing was written";
  }
}

}  // namespace
}  // namespace cmt
