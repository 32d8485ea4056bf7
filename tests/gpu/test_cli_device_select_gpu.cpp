// `--device` as cm-tune's commands take it, on a GPU that is present: its CUDA index, its UUID and
// its name select it (the name only where no other GPU of the host has it: on a host of two GPUs of one
// model, the name is refused as ambiguous); a name that matches none, or an index past the last, is one
// line naming the GPUs present. (Without a GPU, tests/cli/test_cli_device_select.cpp checks the refusals.)
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;

constexpr int k_usage = 2;      // UsageError
constexpr int k_no_device = 3;  // NoDeviceError

const fs::path k_fixture_templates = fs::path(CMTUNE_TEST_FIXTURES) / "templates";

using Split = test::SplitResult;
using test::run_split;

TEST(DeviceOption, ResolvesIndexUuidAndNameOfAPresentGpu) {
  CMT_REQUIRE_GPU();
  test::TempDir dir;
  const Split devices = run_split(dir, "devices --json");
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  const nlohmann::json all = nlohmann::json::parse(devices.out).at("devices");
  const nlohmann::json gpu = all.at(0);
  const std::string name = gpu.at("name"), uuid = gpu.at("uuid");
  const auto same_name = std::count_if(all.begin(), all.end(), [&](const nlohmann::json& d) { return d.at("name") == name; });
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  const auto compile_on = [&](const std::string& spec) {
    return run_split(dir, fmt::format("--quiet --templates '{}' compile --config preset.toml --db c.db --json --device '{}'",
                                      k_fixture_templates.string(), spec));
  };
  std::vector<std::string> specs = {"0", uuid};
  if (same_name == 1) specs.push_back(name);
  for (const std::string& spec : specs) {
    const Split r = compile_on(spec);
    ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).at("arch"), gpu.at("arch")) << spec;
  }
  if (same_name > 1) {
    const Split ambiguous = compile_on(name);
    EXPECT_EQ(ambiguous.exit_code, k_usage) << ambiguous.err;
    EXPECT_NE(ambiguous.err.find(fmt::format("--device '{}' matches more than one GPU: give its index or UUID", name)),
              std::string::npos)
        << ambiguous.err;
  }
  const Split none = run_split(dir, "compile --config quick --db c.db --device 'no such GPU'");
  EXPECT_EQ(none.exit_code, k_usage) << none.err;
  EXPECT_EQ(none.err.rfind("cm-tune: error: --device 'no such GPU' matches no GPU's UUID or name; present: [0] " + name, 0),
            0u)
      << none.err;
  const Split past = run_split(dir, "compile --config quick --db c.db --device 99");
  EXPECT_EQ(past.exit_code, k_no_device) << past.err;
  EXPECT_NE(past.err.find("--device 99: no such GPU; present: [0] " + name), std::string::npos) << past.err;
}

}  // namespace
}  // namespace cmt
