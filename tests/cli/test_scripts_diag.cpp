// scripts/diag/block_times.sh times the blocks of one multistage kernel on the GPU machine: it asks
// cm-tune for the candidate's kernel and launch shape, writes them into a build header and compiles
// scripts/diag/block_times.cu with the kernel's timing hook on. These tests run the script's
// header step (--print-build: no nvcc, no GPU) with the cm-tune built alongside the tests and
// compile the program from that header with nvcc for sm_90 (no GPU needed), so neither can rot
// unnoticed as the templates or the descriptor change.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

// The 1025^3 winner: thin workers and an inline thin row, the paths with early returns.
const std::string k_winner =
    "multistage[BM=64,BN=128,BK=32,WM=32,WN=64,WNITER=2,TM=4,TN=4,STAGES=3,VEC=1,PAD=4,SPLITK=2,SWIZZLE=1,THIN_EDGE=4,"
    "THIN_WORKERS=4,INLINE_THIN_ROWS=1,A_CHUNK=8,TRANS_A=0,TRANS_B=0]";

std::filesystem::path diag_dir() { return default_templates_dir().parent_path() / "scripts" / "diag"; }

// Runs scripts/diag/block_times.sh with `args` (already quoted) against the test build's cm-tune.
test::CommandResult block_times(const std::string& args) {
  return test::run_command(
      fmt::format("CMTUNE_BIN='{}' '{}' {}", test::cmtune_binary(), (diag_dir() / "block_times.sh").string(), args));
}

TEST(BlockTimes, ScriptWritesTheCandidatesKernelAndLaunchShape) {
  const auto printed = block_times(fmt::format("--print-build '{}'", k_winner));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  EXPECT_NE(printed.output.find("\"" + k_winner + "\""), std::string::npos) << printed.output;
  EXPECT_NE(printed.output.find("cmt_sgemm_multistage<64, 128, 32, 32, 64, 2, 4, 4, 3, 1, 4, 2, 1, 4, 4, 1, 8, 0, 0>,"),
            std::string::npos)
      << printed.output;
  // threads = (64/32)*(128/64)*32*2; tile 64 x 128; thin workers ask for 160 KiB; VEC = 1 needs no alignment.
  EXPECT_NE(printed.output.find("256, 64, 128, 163840, 1};"), std::string::npos) << printed.output;
}

TEST(BlockTimes, DiagnosticProgramCompilesFromTheGeneratedHeader) {
  test::TempDir dir;
  const auto printed = block_times(fmt::format("--print-build '{}'", k_winner));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  test::write_file(dir / "block_times_build.h", printed.output);
  const auto cubin = dir / "block_times.cubin";
  const auto built = test::run_command(fmt::format("'{}' -std=c++17 -O3 -arch=sm_90 -cubin -I'{}' -I'{}' -o '{}' '{}'",
                                                   test::nvcc_path(), dir.path().string(),
                                                   default_templates_dir().string(), cubin.string(),
                                                   (diag_dir() / "block_times.cu").string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const std::string code = test::read_file(cubin);
  EXPECT_NE(code.find("cmt_block_times"), std::string::npos) << "the timing array is missing from the build";
  EXPECT_NE(code.find("cmt_sgemm_multistage"), std::string::npos) << "the kernel is missing from the build";
}

// Each bad input is refused before anything is compiled, with one line naming the problem.
TEST(BlockTimes, ScriptRefusesBadIdsAndSizesWithOneLine) {
  const auto replaced = [](const std::string& from, const std::string& to) {
    std::string id = k_winner;
    id.replace(id.find(from), from.size(), to);
    return id;
  };
  const struct {
    std::string args, message;
  } cases[] = {
      {"'64,128,32,32,64,2,4,4,3,1,4,2,1,4,4,1,8' 1025x1024x1025", "is not a candidate id"},
      {fmt::format("'{}' 1025x1024x1025", replaced("multistage[", "clusterk[")), "only multistage kernels"},
      {fmt::format("'{}' 1025x1024x1025", replaced("PAD=4,", "")), "leaves out PAD"},
      {fmt::format("'{}' 1025x1024x1025", replaced("PAD=4", "PAD=0")), "at most PAD"},  // the constraint's reason
      {fmt::format("'{}' 1025x1024x1025", replaced("PAD=4", "PADDING=4")), "unknown parameter 'PADDING'"},
      {fmt::format("'{}' 1025x1024x1025", replaced("BK=32", "BK=32,BM=64")), "names BM more than once"},
      {fmt::format("'{}' 1025x1024", k_winner), "size must be MxNxK"},
      {fmt::format("'{}' 0x1024x1025", k_winner), "size must be MxNxK"},
      {fmt::format("'{}' 1025x1024x1025", replaced("VEC=1", "VEC=4")), "multiples of 4"},
  };
  for (const auto& c : cases) {
    const auto result = block_times(c.args);
    EXPECT_EQ(result.exit_code, 2) << c.args << "\n" << result.output;
    EXPECT_NE(result.output.find("block_times: error: "), std::string::npos) << c.args << "\n" << result.output;
    EXPECT_NE(result.output.find(c.message), std::string::npos) << c.args << "\n" << result.output;
    EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << c.args << "\n" << result.output;
  }
}

}  // namespace
}  // namespace cmt
