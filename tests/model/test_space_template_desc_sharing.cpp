// What descriptors share and what they read from the device: [derived] values, constraint
// fragments pulled in with `include`, and the target's DEVICE_* names.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <string>

#include "core/error.hpp"
#include "space/space.hpp"
#include "space/target.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using test::usage_error;

/// A descriptor with two parameters, a derived value and an included fragment.
constexpr const char* k_descriptor = R"(name = "x"
kernel = "cmt_x"
summary = "s"
include = ["common/shared.toml"]

[[param]]
name = "P"
values = [1, 2, 4, 8]

[[param]]
name = "Q"
values = [16, 32]

[derived]
THREADS = "P*Q"
SMEM = "THREADS*1024"

[launch]
threads = "THREADS"
tile_m = "P"
tile_n = "Q"
dynamic_smem = "SMEM"

[[constraint]]
check = "P <= 4"
reason = "own: P at most 4"
)";

constexpr const char* k_fragment = R"(# shared by several descriptors
[[constraint]]
check = "THREADS >= 32"
reason = "shared: at least one warp"

[[constraint]]
check = "SMEM <= DEVICE_SMEM_PER_BLOCK"
reason = "shared: fits the device"
)";

class DescriptorSharing : public ::testing::Test {
 protected:
  void SetUp() override { write(k_descriptor, k_fragment); }
  void write(const std::string& descriptor, const std::string& fragment) {
    test::write_file(m_dir / "x.toml", descriptor);
    test::write_file(m_dir / "x.cuh", "// x\n");
    test::write_file(m_dir / "common" / "shared.toml", fragment);
  }
  std::string error() { return usage_error([&] { (void)load_template(m_dir / "x.toml"); }); }
  std::vector<std::string> valid_ids(const Target& target) {
    const std::vector<TemplateDesc> templates = load_templates({m_dir.path()});
    Preset preset;
    preset.name = "all";
    preset.templates.push_back({"x", {}});
    std::vector<std::string> ids;
    for (const auto& c : enumerate_space(templates, preset, target).candidates) ids.push_back(c.id());
    return ids;
  }
  test::TempDir m_dir;
};

TEST_F(DescriptorSharing, FragmentConstraintsComeFirstAndUseTheDescriptorsNames) {
  const TemplateDesc t = load_template(m_dir / "x.toml");
  ASSERT_EQ(t.derived.size(), 2u);
  EXPECT_EQ(t.derived[0].name, "THREADS");
  EXPECT_EQ(t.derived[1].name, "SMEM");
  ASSERT_EQ(t.includes.size(), 1u);
  EXPECT_EQ(t.includes[0], m_dir / "common" / "shared.toml");
  ASSERT_EQ(t.constraints.size(), 3u);
  EXPECT_EQ(t.constraints[0].reason, "shared: at least one warp");
  EXPECT_EQ(t.constraints[0].file, m_dir / "common" / "shared.toml");
  EXPECT_EQ(t.constraints[2].reason, "own: P at most 4");
  EXPECT_EQ(t.constraints[2].file, m_dir / "x.toml");

  const ParamValues v = params_from_string("P=2,Q=32");
  const LaunchShape shape = t.launch_shape(v, test::sm90());
  EXPECT_EQ(shape.threads, 64);
  EXPECT_EQ(shape.dynamic_smem, 64 * 1024);
  EXPECT_EQ(t.failed_constraint(params_from_string("P=1,Q=16"), test::sm90()), std::optional<size_t>(0u))
      << "16 threads: the fragment's first check fails, so it counts under that reason";
}

TEST_F(DescriptorSharing, TheTargetDecidesWhatFits) {
  // SMEM = P*Q KiB. sm_90 allows 227 KiB per block, sm_86 99 KiB, the portable target 48 KiB.
  EXPECT_EQ(valid_ids(test::sm90()), (std::vector<std::string>{"x[P=1,Q=32]", "x[P=2,Q=16]", "x[P=2,Q=32]",
                                                               "x[P=4,Q=16]", "x[P=4,Q=32]"}));
  EXPECT_EQ(valid_ids(target_for_arch("sm_86")), (std::vector<std::string>{"x[P=1,Q=32]", "x[P=2,Q=16]",
                                                                           "x[P=2,Q=32]", "x[P=4,Q=16]"}));
  EXPECT_EQ(valid_ids(portable_target()), (std::vector<std::string>{"x[P=1,Q=32]", "x[P=2,Q=16]"}));
}

TEST_F(DescriptorSharing, AnEditedFragmentChangesEveryDescriptorThatIncludesIt) {
  write(k_descriptor, std::string(k_fragment) + "\n[[constraint]]\ncheck = \"Q == 32\"\nreason = \"shared: Q 32\"\n");
  EXPECT_EQ(valid_ids(test::sm90()), (std::vector<std::string>{"x[P=1,Q=32]", "x[P=2,Q=32]", "x[P=4,Q=32]"}));
}

TEST_F(DescriptorSharing, ErrorsInAFragmentNameTheFragment) {
  write(k_descriptor, "[[constraint]]\ncheck = \"THREADS >= R\"\nreason = \"r\"\n");
  const std::string msg = error();
  const std::string prefix = (m_dir / "common" / "shared.toml").string() + ":2: constraint[0].check: ";
  EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
  EXPECT_NE(msg.find("'THREADS >= R' names unknown parameter 'R' (parameters: P, Q; derived: THREADS, SMEM; device: "
                     "DEVICE_SMEM_PER_BLOCK, DEVICE_CC)"),
            std::string::npos)
      << msg;

  write(k_descriptor, "[launch]\nthreads = \"1\"\n");
  EXPECT_NE(error().find("shared.toml:1: launch: unknown key (known: constraint)"), std::string::npos) << error();
}

TEST_F(DescriptorSharing, BadIncludesAreRefused) {
  const auto with_include = [&](const std::string& include) {
    const std::string original = "include = [\"common/shared.toml\"]";
    std::string text = k_descriptor;
    text.replace(text.find(original), original.size(), include);
    write(text, k_fragment);
    return error();
  };
  EXPECT_NE(with_include("include = [\"common/none.toml\"]").find(":4: include[0]: no such file"), std::string::npos);
  EXPECT_NE(with_include("include = [\"../shared.toml\"]").find(":4: include[0]: '../shared.toml' must be a path inside"),
            std::string::npos);
  EXPECT_NE(with_include("include = [\"/etc/hosts\"]").find("must be a path inside the templates folder"),
            std::string::npos);
  EXPECT_NE(with_include("include = [\"common/shared.toml\", \"common/shared.toml\"]").find("included twice"),
            std::string::npos);
  EXPECT_NE(with_include("include = \"common/shared.toml\"").find(":4: include: must be an array of file names"),
            std::string::npos);
}

TEST_F(DescriptorSharing, DerivedValuesAreCheckedInOrder) {
  const auto with_derived = [&](const std::string& derived) {
    std::string text = k_descriptor;
    const size_t at = text.find("[derived]");
    text.replace(at, text.find("[launch]") - at, derived);
    write(text, k_fragment);
    return error();
  };
  // SMEM before THREADS: a derived value may only use the ones above it.
  EXPECT_NE(with_derived("[derived]\nSMEM = \"THREADS*1024\"\nTHREADS = \"P*Q\"\n\n")
                .find("derived.SMEM: 'THREADS*1024' names unknown parameter 'THREADS'"),
            std::string::npos);
  EXPECT_NE(with_derived("[derived]\nP = \"2\"\nTHREADS = \"P*Q\"\nSMEM = \"1\"\n\n").find("derived.P: 'P' is already a parameter"),
            std::string::npos);
  EXPECT_NE(with_derived("[derived]\nDEVICE_X = \"2\"\nTHREADS = \"P*Q\"\nSMEM = \"1\"\n\n")
                .find("derived.DEVICE_X: 'DEVICE_X': names starting with DEVICE_ are the target's"),
            std::string::npos);
  EXPECT_NE(with_derived("[derived]\nTHREADS = [1]\nSMEM = \"1\"\n\n").find("derived.THREADS: must be a string holding an expression"),
            std::string::npos);
}

TEST_F(DescriptorSharing, ParametersCannotTakeDeviceNames) {
  std::string text = k_descriptor;
  text.replace(text.find("name = \"Q\""), 10, "name = \"DEVICE_Q\"");
  write(text, k_fragment);
  EXPECT_NE(error().find("param[1].name: 'DEVICE_Q': names starting with DEVICE_ are the target's"), std::string::npos)
      << error();
}

TEST(Target, ArchitecturesAndDevices) {
  EXPECT_EQ(target_for_arch("sm_90").smem_per_block, 227 * 1024);
  EXPECT_EQ(target_for_arch("sm_90a").smem_per_block, 227 * 1024);
  EXPECT_EQ(target_for_arch("sm_80").smem_per_block, 163 * 1024);
  EXPECT_EQ(target_for_arch("sm_89").smem_per_block, 99 * 1024);
  EXPECT_EQ(target_for_arch("sm_120").smem_per_block, 99 * 1024);
  const std::string msg = usage_error([] { (void)target_for_arch("sm_42"); });
  EXPECT_NE(msg.find("unknown architecture 'sm_42': cm-tune knows the limits of sm_75, sm_80"), std::string::npos) << msg;
  EXPECT_THROW((void)target_for_arch("compute_90"), UsageError);

  DeviceInfo d;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.smem_per_block_optin = 232448;
  const Target t = target_of(d);
  EXPECT_EQ(t.arch, "sm_90");
  EXPECT_EQ(t.lookup("DEVICE_SMEM_PER_BLOCK"), std::optional<int64_t>(232448));
  EXPECT_EQ(t.lookup("SMEM"), std::nullopt);
  EXPECT_EQ(t.lookup("DEVICE_CC"), std::optional<int64_t>(90));
  EXPECT_EQ(target_for_arch("sm_80").lookup("DEVICE_CC"), std::optional<int64_t>(80));
  EXPECT_EQ(target_for_arch("sm_120").lookup("DEVICE_CC"), std::optional<int64_t>(120));
  EXPECT_EQ(portable_target().lookup("DEVICE_CC"), std::optional<int64_t>(0)) << "no particular architecture";
  for (const auto& [name, meaning] : target_names()) {
    EXPECT_TRUE(is_target_name(name)) << name;
    EXPECT_TRUE(t.lookup(name).has_value()) << name << " (" << meaning << ") has no value";
  }
}

// The built-in warp-tiled families share their constraints through common/*.toml and size their
// shared memory against the device, not a number written into each descriptor.
TEST(DescriptorSharingBuiltin, WarpTiledFamiliesShareTheirConstraintsAndAskTheDevice) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  const fs::path common = default_templates_dir() / "common" / "warp_tile.toml";
  for (const char* name : {"warptile", "multistage", "clusterk"}) {
    const TemplateDesc* t = find_template(templates, name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_FALSE(t->includes.empty()) << name;
    EXPECT_EQ(t->includes.front(), common) << name;
    bool asks_device = false;
    for (const auto& c : t->constraints) {
      EXPECT_EQ(c.check.text().find("232448"), std::string::npos) << name << ": " << c.check.text();
      for (const auto& ident : c.check.identifiers()) asks_device = asks_device || ident == "DEVICE_SMEM_PER_BLOCK";
    }
    EXPECT_TRUE(asks_device) << name;
  }
  // A 128x128x32, 4-stage multistage ring is 132 KiB: it fits an H100's block, not an RTX 4090's.
  const TemplateDesc* multistage = find_template(templates, "multistage");
  const ParamValues big = params_from_string(
      "BM=128,BN=128,BK=32,WM=64,WN=32,WNITER=2,TM=4,TN=4,STAGES=4,VEC=4,PAD=4,SPLITK=1,SWIZZLE=8,THIN_EDGE=0,"
      "THIN_WORKERS=0,INLINE_THIN_ROWS=0,A_CHUNK=8,TRANS_A=0,TRANS_B=0");
  EXPECT_FALSE(multistage->failed_constraint(big, test::sm90()).has_value());
  const auto failed = multistage->failed_constraint(big, target_for_arch("sm_89"));
  ASSERT_TRUE(failed.has_value());
  EXPECT_NE(multistage->constraints[*failed].reason.find("shared memory"), std::string::npos);
}

}  // namespace
}  // namespace cmt
