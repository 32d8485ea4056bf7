// The real cm-tune binary: help, version, errors, and GPU commands without a GPU.
#include <gtest/gtest.h>

#include "store/sqlite.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, HelpAndVersion) {
  const auto help = test::run_command(test::cmtune_binary() + " --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* sub : {"devices", "list", "compile", "tune", "query", "bench", "precision"})
    EXPECT_NE(help.output.find(sub), std::string::npos) << sub << " missing from --help";
  const auto version = test::run_command(test::cmtune_binary() + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("cm-tune " CMTUNE_VERSION), std::string::npos) << version.output;
  EXPECT_NE(version.output.find("NVRTC"), std::string::npos);
}

TEST(Cli, DevicesWithoutGpuExitsCleanlyWithOneLine) {
  if (test::gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present; this checks the no-GPU path";
  const auto r = test::run_command(test::cmtune_binary() + " devices");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("no CUDA driver found"), std::string::npos) << r.output;
  const auto tune = test::run_command(test::cmtune_binary() + " tune --sizes 256 --config quick --db /dev/null/x.db");
  EXPECT_EQ(tune.exit_code, 3) << tune.output;
  EXPECT_EQ(count_lines(tune.output), 1) << tune.output;
}

TEST(Cli, BadSizesNameTheToken) {
  const auto r = test::run_command(test::cmtune_binary() + " tune --sizes 256,12x,512 --config quick");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'12x'"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
}

TEST(Cli, BadPresetNamesFile) {
  test::TempDir dir;
  test::write_file(dir / "bad.toml", "name = \"bad\"\n[templates.naive]\nBLOCK = [\"x\"]\n");
  const auto r = test::run_command(test::cmtune_binary() + " list --config " + (dir / "bad.toml").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:3"), std::string::npos) << r.output;
}

TEST(Cli, CompileNeedsArchWithoutGpu) {
  if (test::gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present; this checks the no-GPU path";
  test::TempDir dir;
  const auto r = test::run_command(test::cmtune_binary() + " compile --config quick --db " + (dir / "c.db").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("--arch"), std::string::npos) << r.output;
  const auto bad = test::run_command(test::cmtune_binary() + " compile --config quick --arch sm_42 --db " + (dir / "c.db").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("sm_42"), std::string::npos) << bad.output;
}

TEST(Cli, CompileTemplateWithJsonSummary) {
  test::TempDir dir;
  const std::string cmd = test::cmtune_binary() + " --quiet compile --config quick --template coalesced --arch sm_90 --json --db " +
                          (dir / "c.db").string();
  const auto first = test::run_command(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("\"cache_hits\": 0"), std::string::npos) << first.output;
  const auto second = test::run_command(cmd);
  EXPECT_EQ(second.exit_code, 0);
  EXPECT_NE(second.output.find("\"compiled\": 0"), std::string::npos) << second.output;
  EXPECT_EQ(second.output.find("\"cache_hits\": 0"), std::string::npos) << second.output;
}

TEST(Cli, NewerDatabaseIsRefused) {
  test::TempDir dir;
  const std::string db = (dir / "new.db").string();
  ASSERT_EQ(test::run_command(test::cmtune_binary() + " --quiet compile --config quick --template naive --arch sm_90 --db " + db).exit_code, 0);
  Database(db).exec("PRAGMA user_version = 999");
  const auto r = test::run_command(test::cmtune_binary() + " compile --config quick --template naive --arch sm_90 --db " + db);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("newer than this cm-tune"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cmt
