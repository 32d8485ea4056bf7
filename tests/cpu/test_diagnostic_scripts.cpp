// The diagnostic programs in scripts/ build multistage kernels with nvcc for the GPU machine. These
// tests compile them (no GPU needed), so they cannot rot unnoticed as the template changes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

// Compiles scripts/<program> to a cubin with `header_name` holding `header` and returns the cubin.
std::string compile_diagnostic(const test::TempDir& dir, const std::string& program, const std::string& header_name,
                               const std::string& header, const std::string& defines) {
  test::write_file(dir / header_name, header);
  const auto templates = default_templates_dir();
  const auto source = templates.parent_path() / "scripts" / program;
  const auto cubin = dir / "program.cubin";
  const auto built = test::run_command(fmt::format("'{}' -std=c++17 -O3 -arch=sm_90 -cubin {} -I'{}' -I'{}' -o '{}' '{}' 2>&1",
                                                   test::nvcc_path(), defines, dir.path().string(),
                                                   templates.string(), cubin.string(), source.string()));
  EXPECT_EQ(built.exit_code, 0) << built.output;
  return built.exit_code == 0 ? test::read_file(cubin) : std::string();
}

TEST(BlockTimes, DiagnosticBuildOfTheMultistageKernelCompiles) {
  test::TempDir dir;
  // The 1025^3 winner's build: thin workers and an inline thin row, the paths with early returns.
  const std::string cubin = compile_diagnostic(dir, "block_times.cu", "block_times_build.h",
                                               "#define BUILD 64,128,32,32,64,2,4,4,3,1,4,2,1,4,4,1,8\n",
                                               "-DCMT_BLOCK_TIMES=64");
  EXPECT_NE(cubin.find("cmt_block_times"), std::string::npos) << "the timing array is missing from the build";
  EXPECT_NE(cubin.find("cmt_sgemm_multistage"), std::string::npos) << "the kernel is missing from the build";
}

TEST(AlignedCopyProbe, BothBuildsAndThePackKernelCompile) {
  test::TempDir dir;
  const std::string cubin = compile_diagnostic(
      dir, "aligned_copy_probe.cu", "aligned_copy_probe_builds.h",
      "#define RAW_BUILD 64,128,32,32,64,2,4,4,3,1,4,2,1,4,4,0,8\n"
      "#define ALIGNED_BUILD 64,128,32,32,64,2,4,4,3,4,4,2,1,4,4,0,16\n",
      "");
  EXPECT_NE(cubin.find("pack_aligned"), std::string::npos) << "the pack kernel is missing from the build";
  // Both instances: ...ILi3ELi1ELi4E... (VEC = 1) and ...ILi3ELi4ELi4E... (VEC = 4) in the mangled names.
  EXPECT_NE(cubin.find("Li3ELi1ELi4ELi2E"), std::string::npos) << "the VEC = 1 build is missing";
  EXPECT_NE(cubin.find("Li3ELi4ELi4ELi2E"), std::string::npos) << "the VEC = 4 build is missing";
}

}  // namespace
}  // namespace cmt
