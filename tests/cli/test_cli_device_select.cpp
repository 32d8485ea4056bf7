// --device in every command (cli/device_select.cpp), without a GPU: a device spec is resolved only
// where a driver is, bad specs are usage errors before the driver is asked, and the help says the
// same everywhere.
#include <gtest/gtest.h>

#include <string>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;
using Split = test::SplitResult;
using test::expect_error;
using test::expect_line;
using test::run_split;

bool no_gpu() { return !test::gpu_unavailable_reason().empty(); }

// --- --device: one meaning in every command ---------------------------------------------------

TEST(DeviceOption, BenchAndCompileTakeADeviceSpecAndSayNoDriverWithout) {
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present; this checks the no-driver path";
  // bench resolves the GPU before it opens the database: nothing is created.
  expect_error("bench --device abc --sizes 256 --db b.db", cli::k_exit_no_device, {"no CUDA driver found"});
  expect_error("bench --device 'NVIDIA H100' --sizes 256 --db b.db", cli::k_exit_no_device, {"no CUDA driver found"});
  expect_error("compile --device GPU-0a1b --config quick --db c.db", cli::k_exit_no_device,
               {"cannot find the target arch: no CUDA driver found", "pass --arch"});
}

TEST(DeviceOption, NegativeOrEmptyDeviceIsAUsageErrorBeforeTheDriverIsAsked) {
  for (const std::string command : {"bench --sizes 256 --db b.db", "compile --config quick --db c.db"}) {
    expect_error(command + " --device -1", cli::k_exit_usage, {"--device '-1' names no GPU", "CUDA index"});
    expect_error(command + " --device ''", cli::k_exit_usage, {"--device '' names no GPU"});
  }
}

TEST(DeviceOption, CompileTakesArchOrDeviceNotBoth) {
  expect_error("compile --config quick --arch sm_90 --device 0 --db c.db", cli::k_exit_usage, {"--device", "--arch"});
}

TEST(DeviceOption, HelpSaysTheSameInEveryCommand) {
  test::TempDir dir;
  for (const char* command : {"bench", "compile", "query", "export", "precision"}) {
    const Split help = run_split(dir, std::string(command) + " --help");
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_NE(help.out.find("CUDA index"), std::string::npos) << command << ":\n" << help.out;
    EXPECT_NE(help.out.find("UUID or unique part of its name"), std::string::npos) << command << ":\n" << help.out;
  }
}

}  // namespace
}  // namespace cmt
