// scripts/block_times.cu times every block of a multistage build on the GPU machine, through a hook
// the kernel compiles only with CMT_BLOCK_TIMES. This keeps the hook and the script building as the
// template changes (nvcc, no GPU needed).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

TEST(BlockTimes, DiagnosticBuildOfTheMultistageKernelCompiles) {
  test::TempDir dir;
  // The 1025^3 winner's build: thin workers and an inline thin row, the paths with early returns.
  test::write_file(dir / "block_times_build.h", "#define BUILD 64,128,32,32,64,2,4,4,3,1,4,2,1,4,4,1,8\n");
  const auto templates = default_templates_dir();
  const auto script = templates.parent_path() / "scripts" / "block_times.cu";
  const auto built = test::run_command(fmt::format(
      "'{}' -std=c++17 -O3 -arch=sm_90 -cubin -DCMT_BLOCK_TIMES=64 -I'{}' -I'{}' -o '{}' '{}' 2>&1",
      test::nvcc_path(), dir.path().string(), templates.string(), (dir / "bt.cubin").string(), script.string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const std::string cubin = test::read_file(dir / "bt.cubin");
  EXPECT_NE(cubin.find("cmt_block_times"), std::string::npos) << "the timing array is missing from the build";
  EXPECT_NE(cubin.find("cmt_sgemm_multistage"), std::string::npos) << "the kernel is missing from the build";
}

}  // namespace
}  // namespace cmt
