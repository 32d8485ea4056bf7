// Bad input to the real cm-tune binary: one line "cm-tune: error: ..." on stderr naming what is
// wrong, the usage exit code, never a crash, and nothing created on disk. Every case fails while
// parsing or validating, before any GPU is touched.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

using test::expect_error;

namespace fs = std::filesystem;

using Split = test::SplitResult;
using test::run_split;

TEST(BadInput, ConversionErrorIsOneLineNamingTheOption) {
  expect_error("query --size 128x4096x4096", cli::k_exit_usage, {"--size", "'128x4096x4096'", "not a whole number"});
  expect_error("tune --sizes 256 --time-limit soon", cli::k_exit_usage, {"--time-limit", "'soon'"});
}

TEST(BadInput, UnknownCommandListsCommandsAndSuggests) {
  expect_error("tunee", cli::k_exit_usage, {"unknown command 'tunee'", "commands: devices, list", "did you mean 'tune'"});
  expect_error("--quiet frobnicate", cli::k_exit_usage, {"unknown command 'frobnicate'", "bench"});
  expect_error("", cli::k_exit_usage, {"no command given", "commands:"});
}

TEST(BadInput, UnknownOptionAndMissingRequiredAreOneLine) {
  expect_error("tune --sizes 256 --bogus", cli::k_exit_usage, {"unknown option", "--bogus"});
  expect_error("tune --config quick", cli::k_exit_usage, {"--sizes", "required"});
  expect_error("query --size", cli::k_exit_usage, {"--size"});
}

TEST(BadInput, HelpAndVersionStillExitZero) {
  test::TempDir dir;
  const Split help = run_split(dir, "tune --help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("--jobs"), std::string::npos) << help.out;
  EXPECT_EQ(help.err, "");
  const Split version = run_split(dir, "--version");
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("cm-tune "), std::string::npos) << version.out;
}

TEST(BadInput, JobsMustBeOneToTheMaximum) {
  expect_error("tune --sizes 256 --config quick --jobs -1 --db t.db", cli::k_exit_usage, {"--jobs", "'-1'", "at least 1"});
  expect_error("tune --sizes 256 --config quick --jobs 0 --db t.db", cli::k_exit_usage, {"--jobs", "'0'", "at least 1"});
  expect_error("tune --sizes 256 --config quick -j 100000 --db t.db", cli::k_exit_usage, {"--jobs", "'100000'", "at most 1024"});
  expect_error("compile --config quick --arch sm_90 --jobs 100000 --db t.db", cli::k_exit_usage, {"--jobs", "'100000'", "at most 1024"});
  expect_error("compile --config quick --arch sm_90 --jobs 99999999999999999999 --db t.db", cli::k_exit_usage,
               {"--jobs", "'99999999999999999999'", "out of range"});
}

TEST(BadInput, TopMustNotBeNegative) {
  expect_error("query --size 256 --top -1 --db q.db", cli::k_exit_usage, {"--top", "'-1'", "at least 0"});
}

TEST(BadInput, TimeLimitMustBeFiniteAndPositive) {
  for (const char* value : {"nan", "inf", "-5", "0"})
    expect_error(std::string("tune --sizes 256 --config quick --db t.db --time-limit ") + value, cli::k_exit_usage,
                 {"--time-limit", std::string("'") + value + "'"});
}

TEST(BadInput, SeedIsUnsigned) {
  expect_error("tune --sizes 256 --config quick --db t.db --seed -1", cli::k_exit_usage, {"--seed", "'-1'"});
  expect_error("tune --sizes 256 --config quick --db t.db --seed 99999999999999999999", cli::k_exit_usage,
               {"--seed", "out of range"});
}

TEST(BadInput, EmptyDatabaseNameIsAnError) {
  expect_error("tune --sizes 256 --config quick --db ''", cli::k_exit_usage, {"--db", "empty"});
  expect_error("--db '' query --size 256", cli::k_exit_usage, {"--db", "empty"});
  expect_error("--log-file '' list --config quick", cli::k_exit_usage, {"--log-file", "empty"});
}

TEST(BadInput, LogFileInAMissingFolderCreatesNothing) {
  test::TempDir dir;
  const fs::path missing = dir / "missing";
  const Split r = run_split(dir, "--log-file '" + (missing / "x.log").string() + "' list --config quick");
  EXPECT_EQ(r.exit_code, cli::k_exit_usage) << r.err;
  EXPECT_EQ(r.err.rfind("cm-tune: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--log-file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(missing)) << "--log-file created " << missing;
  EXPECT_EQ(r.out, "");  // failed before listing
}

TEST(BadInput, DevicesJsonWithoutDriverSaysSo) {
  if (test::gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present; this checks the no-GPU path";
  test::TempDir dir;
  const Split plain = run_split(dir, "devices");
  const Split json = run_split(dir, "devices --json");
  EXPECT_EQ(plain.exit_code, cli::k_exit_no_device) << plain.err;
  EXPECT_EQ(json.exit_code, plain.exit_code) << json.err;
  EXPECT_EQ(json.err, plain.err);  // the same one line
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(json.out)) << json.out;
  EXPECT_EQ(doc.at("devices"), nlohmann::json::array()) << json.out;
  EXPECT_NE(doc.at("error").get<std::string>().find("no CUDA driver found"), std::string::npos) << json.out;
}

TEST(BadInput, HugeSizeIsOutOfRangeAndZeroStepNamed) {
  expect_error("tune --sizes 99999999999999999999 --config quick --db t.db", cli::k_exit_usage,
               {"'99999999999999999999'", "out of range"});
  expect_error("tune --sizes 256..4096:0 --config quick --db t.db", cli::k_exit_usage, {"'256..4096:0'", "the step must be at least 1"});
}

TEST(BadInput, QueryEnforcesTheSizeLimitsOfTune) {
  expect_error("query --size 2000000 --db q.db", cli::k_exit_usage, {"--size", "'2000000'", "at most 1048576"});
  expect_error("query --m 0 --n 16 --k 16 --db q.db", cli::k_exit_usage, {"--m", "'0'", "at least 1"});
  expect_error("query --m 16 --n 16 --k 99999999999999999999 --db q.db", cli::k_exit_usage, {"--k", "out of range"});
  expect_error("query --size -4 --db q.db", cli::k_exit_usage, {"--size", "'-4'"});
}

TEST(BadInput, OtherNumericOptionsAreChecked) {
  expect_error("tune --sizes 256 --config quick --db t.db --budget 0", cli::k_exit_usage, {"--budget", "'0'"});
  expect_error("tune --sizes 256 --config quick --db t.db --device -1", cli::k_exit_usage, {"--device", "'-1'"});
  expect_error("bench --sizes 256 --db b.db --rounds 2", cli::k_exit_usage, {"--rounds", "'2'", "at least 5"});
}

}  // namespace
}  // namespace cmt
