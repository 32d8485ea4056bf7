// Descriptors, source bundles and the enumeration of the search space.
#include <gtest/gtest.h>

#include <set>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using test::k_space_fixtures;
const fs::path k_fixture_templates = k_space_fixtures / "templates";

using test::usage_error;

/// A preset over the fixture templates with explicit value lists, as if read from a file.
Preset preset_with(std::vector<PresetTemplate> templates) {
  Preset p;
  p.file = "inline.toml";
  p.name = "inline";
  p.templates = std::move(templates);
  return p;
}

std::vector<std::string> candidate_ids(const SearchSpace& space) {
  std::vector<std::string> ids;
  for (const auto& c : space.candidates) ids.push_back(c.id());
  return ids;
}

const TemplateSpaceStats& stats_for(const SearchSpace& space, const std::string& name) {
  for (const auto& s : space.stats)
    if (s.template_name == name) return s;
  throw std::runtime_error("no stats for " + name);
}

std::vector<int64_t> pruned_counts(const TemplateSpaceStats& stats) {
  std::vector<int64_t> out;
  for (const auto& p : stats.pruned) out.push_back(p.count);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Descriptors

TEST(DescriptorLoad, ReadsTheFixture) {
  const TemplateDesc t = load_template(k_fixture_templates / "toy.toml");
  EXPECT_EQ(t.name, "toy");
  EXPECT_EQ(t.kernel, "cmt_toy");
  EXPECT_EQ(t.summary, "Fixture: three parameters, three constraints");
  EXPECT_EQ(t.descriptor_path, k_fixture_templates / "toy.toml");
  EXPECT_EQ(t.source_path, k_fixture_templates / "toy.cuh");
  ASSERT_EQ(t.params.size(), 3u);
  EXPECT_EQ(t.params[0].name, "A");
  EXPECT_EQ(t.params[0].values, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(t.params[0].help, "rows per thread");
  EXPECT_EQ(t.params[1].name, "B");
  EXPECT_EQ(t.params[2].name, "C");
  ASSERT_EQ(t.constraints.size(), 3u);
  EXPECT_EQ(t.constraints[1].check.text(), "B % A == 0");
  EXPECT_EQ(t.constraints[1].reason, "B must be a multiple of A");
  EXPECT_EQ(t.threads.text(), "A*B*C");
  EXPECT_EQ(t.align_bytes.text(), "min(16, A*4)");

  const ParamValues v{{"A", 2}, {"B", 4}, {"C", 8}};
  const LaunchShape shape = t.launch_shape(v, test::sm90());
  EXPECT_EQ(shape.threads, 64);
  EXPECT_EQ(shape.tile_m, 16);
  EXPECT_EQ(shape.tile_n, 32);
  EXPECT_EQ(shape.dynamic_smem, 32);
  const Requirements req = t.requirements(v, test::sm90());
  EXPECT_EQ(req.align_bytes, 8);
  EXPECT_EQ(req.ld_multiple, 2);
  EXPECT_EQ(t.name_expression(v), "cmt_toy<2, 4, 8>");
}

TEST(DescriptorLoad, OptionalKeysTakeDefaults) {
  const TemplateDesc t = load_template(k_fixture_templates / "other.toml");
  EXPECT_EQ(t.dynamic_smem.text(), "0");
  EXPECT_EQ(t.grid_z.text(), "1");
  EXPECT_EQ(t.align_bytes.text(), "4");
  EXPECT_EQ(t.ld_multiple.text(), "1");
  EXPECT_TRUE(t.constraints.empty());
  EXPECT_EQ(t.params[1].help, "");
  const ParamValues v{{"X", 3}, {"Y", 64}};
  EXPECT_TRUE(t.requirements(v, test::sm90()).none());
  EXPECT_EQ(t.launch_shape(v, test::sm90()).dynamic_smem, 0);
  EXPECT_EQ(t.launch_shape(v, test::sm90()).grid_z, 1);
  EXPECT_EQ(t.name_expression(v), "cmt_other<3, 64>");
}

TEST(DescriptorLoad, LoadTemplatesSortsAndRejectsDuplicates) {
  const std::vector<TemplateDesc> all = load_templates({k_fixture_templates});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "other");
  EXPECT_EQ(all[1].name, "toy");

  // A second folder holding another "toy" is an error naming both files.
  test::TempDir dir;
  fs::copy_file(k_fixture_templates / "toy.toml", dir / "toy.toml");
  fs::copy_file(k_fixture_templates / "toy.cuh", dir / "toy.cuh");
  const std::string msg = usage_error([&] { (void)load_templates({k_fixture_templates, dir.path()}); });
  EXPECT_NE(msg.find("template 'toy' is defined twice"), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir / "toy.toml").string()), std::string::npos) << msg;

  // A second folder with new templates adds them, still sorted by name.
  test::TempDir extra;
  test::write_file(extra / "aaa.toml",
                   "name = \"aaa\"\nkernel = \"k\"\nsummary = \"s\"\n[[param]]\nname = \"P\"\nvalues = [1]\n"
                   "[launch]\nthreads = \"32\"\ntile_m = \"1\"\ntile_n = \"32\"\n");
  test::write_file(extra / "aaa.cuh", "// nothing\n");
  const std::vector<TemplateDesc> more = load_templates({k_fixture_templates, extra.path()});
  ASSERT_EQ(more.size(), 3u);
  EXPECT_EQ(more[0].name, "aaa");

  EXPECT_THROW((void)load_templates({dir / "nosuch"}), UsageError);
}

TEST(DescriptorLoad, DefaultTemplatesDirHonoursTheEnvironment) {
  const char* saved = std::getenv("CMTUNE_TEMPLATES");
  const std::optional<std::string> old = saved ? std::optional<std::string>(saved) : std::nullopt;
  setenv("CMTUNE_TEMPLATES", k_fixture_templates.c_str(), 1);
  EXPECT_EQ(default_templates_dir(), k_fixture_templates);
  unsetenv("CMTUNE_TEMPLATES");
  EXPECT_EQ(default_templates_dir(), fs::path(CMTUNE_SOURCE_DIR) / "templates");
  if (old) setenv("CMTUNE_TEMPLATES", old->c_str(), 1);
}

// A descriptor that loads; each error case below breaks one line of it.
constexpr const char* k_good_descriptor =
    "name = \"x\"\n"            // 1
    "kernel = \"cmt_x\"\n"      // 2
    "summary = \"s\"\n"         // 3
    "[[param]]\n"               // 4
    "name = \"P\"\n"            // 5
    "values = [1, 2]\n"         // 6
    "[launch]\n"                // 7
    "threads = \"P*32\"\n"      // 8
    "tile_m = \"P\"\n"          // 9
    "tile_n = \"32\"\n"         // 10
    "[[constraint]]\n"          // 11
    "check = \"P <= 2\"\n"      // 12
    "reason = \"small P\"\n";   // 13

class DescriptorErrors : public ::testing::Test {
 protected:
  /// Writes text as x.toml (beside an x.cuh) and returns the load error.
  std::string error_for(const std::string& text, bool with_source = true) {
    test::write_file(m_dir / "x.toml", text);
    if (with_source) test::write_file(m_dir / "x.cuh", "// x\n");
    return usage_error([&] { (void)load_template(m_dir / "x.toml"); });
  }

  /// The good descriptor with line `line` (1-based) replaced by `replacement` (empty: removed).
  static std::string with_line(int line, const std::string& replacement) {
    std::string out;
    std::string text = k_good_descriptor;
    size_t start = 0;
    for (int n = 1; start < text.size(); ++n) {
      const size_t end = text.find('\n', start);
      const std::string current = text.substr(start, end - start);
      if (n != line) {
        out += current + "\n";
      } else if (!replacement.empty()) {
        out += replacement + "\n";
      }
      start = end + 1;
    }
    return out;
  }

  void expect_error(const std::string& text, int line, const std::string& key, const std::string& message) {
    const std::string msg = error_for(text);
    const std::string prefix = fmt::format("{}:{}: {}: ", (m_dir / "x.toml").string(), line, key);
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "expected prefix: " << prefix << "\n got: " << msg;
    EXPECT_NE(msg.find(message), std::string::npos) << "expected: " << message << "\n got: " << msg;
  }

  test::TempDir m_dir;
};

TEST_F(DescriptorErrors, TheBaseDescriptorLoads) {
  EXPECT_EQ(error_for(k_good_descriptor), "<no UsageError thrown>");
}

TEST_F(DescriptorErrors, TomlSyntaxError) {
  const std::string msg = error_for(with_line(3, "summary = \"unterminated"));
  EXPECT_EQ(msg.rfind((m_dir / "x.toml").string() + ":3: TOML syntax error at column ", 0), 0u) << msg;
}

TEST_F(DescriptorErrors, MissingRequiredKeys) {
  expect_error(with_line(1, ""), 1, "name", "required key is missing");
  expect_error(with_line(2, ""), 1, "kernel", "required key is missing");
  expect_error(with_line(3, ""), 1, "summary", "required key is missing");
  expect_error(with_line(6, ""), 4, "param[0].values", "required key is missing");
  expect_error(with_line(5, ""), 4, "param[0].name", "required key is missing");
  expect_error(with_line(8, ""), 7, "launch.threads", "required key is missing");
  expect_error(with_line(10, ""), 7, "launch.tile_n", "required key is missing");
  expect_error(with_line(13, ""), 11, "constraint[0].reason", "required key is missing");
  expect_error(with_line(12, ""), 11, "constraint[0].check", "required key is missing");
  // Without [launch] its keys land in [[param]], which rejects them; drop them too.
  std::string no_launch = with_line(7, "");
  no_launch = no_launch.substr(0, no_launch.find("threads")) + no_launch.substr(no_launch.find("[[constraint]]"));
  expect_error(no_launch, 1, "launch", "required table [launch] is missing");
  const std::string no_param = "name = \"x\"\nkernel = \"k\"\nsummary = \"s\"\n[launch]\nthreads = \"32\"\ntile_m = \"1\"\ntile_n = \"1\"\n";
  expect_error(no_param, 1, "param", "a template needs at least one [[param]]");
}

TEST_F(DescriptorErrors, NameMustMatchTheFile) {
  expect_error(with_line(1, "name = \"y\""), 1, "name", "'y' must equal the file's stem 'x'");
}

TEST_F(DescriptorErrors, WrongTypesAndBadValues) {
  expect_error(with_line(3, "summary = 3"), 3, "summary", "must be a string");
  expect_error(with_line(2, "kernel = \"not an identifier\""), 2, "kernel", "is not a C++ identifier");
  expect_error(with_line(6, "values = [1, -2]"), 6, "param[0].values", "values must be non-negative integers");
  expect_error(with_line(6, "values = [\"1\"]"), 6, "param[0].values", "values must be non-negative integers");
  EXPECT_EQ(error_for(with_line(6, "values = [0, 2]")), "<no UsageError thrown>");   // zero is allowed
  expect_error(with_line(6, "values = []"), 6, "param[0].values", "values must not be empty");
  expect_error(with_line(6, "values = 4"), 6, "param[0].values", "must be an array");
  expect_error(with_line(6, "values = [2, 2]"), 6, "param[0].values", "value 2 appears twice");
  expect_error(with_line(8, "threads = 1.5"), 8, "launch.threads", "must be a string holding an expression");
  expect_error(with_line(5, "name = \"2P\""), 5, "param[0].name", "is not a C++ identifier");
  expect_error(std::string(k_good_descriptor) + "[[param]]\nname = \"P\"\nvalues = [1]\n", 15, "param[1].name",
               "parameter 'P' is declared twice");
}

TEST_F(DescriptorErrors, UnknownKeys) {
  expect_error(with_line(10, "tile_n = \"32\"\ntile_k = \"8\""), 11, "launch.tile_k", "unknown key (known: threads, tile_m, tile_n, dynamic_smem, grid_z, problems_per_block, tensor_maps)");
  expect_error("author = \"me\"\n" + std::string(k_good_descriptor), 1, "author", "unknown key");
  expect_error(with_line(6, "values = [1, 2]\nvalue = 3"), 7, "param[0].value", "unknown key");
}

TEST_F(DescriptorErrors, BadExpressionSyntaxNamesTheColumn) {
  expect_error(with_line(8, "threads = \"(P*32\""), 8, "launch.threads",
               "bad expression '(P*32' at column 6: expected ')'");
  expect_error(with_line(12, "check = \"P <== 2\""), 12, "constraint[0].check", "at column 5:");
}

TEST_F(DescriptorErrors, ExpressionNamingAnUnknownParameter) {
  expect_error(with_line(12, "check = \"P <= Q\""), 12, "constraint[0].check",
               "'P <= Q' names unknown parameter 'Q' (parameters: P; device: DEVICE_SMEM_PER_BLOCK, DEVICE_CC)");
  expect_error(with_line(9, "tile_m = \"BM\""), 9, "launch.tile_m", "names unknown parameter 'BM'");
  expect_error(std::string(k_good_descriptor) + "[requires]\nalign_bytes = \"4*VEC\"\n", 15, "requires.align_bytes",
               "names unknown parameter 'VEC'");
}

// [generic_default] gives every declared parameter a value; the implicit ones follow from each
// build's layout and type.
TEST_F(DescriptorErrors, GenericDefaultGivesEveryParameterAValue) {
  const std::string good = std::string(k_good_descriptor) + "[generic_default]\nP = 2\n";  // lines 14, 15
  EXPECT_EQ(error_for(good), "<no UsageError thrown>");
  EXPECT_EQ(load_template(m_dir / "x.toml").generic_default, (std::optional<ParamValues>{ParamValues{{"P", 2}}}));
  EXPECT_FALSE(load_template(k_fixture_templates / "toy.toml").generic_default) << "optional: none by default";

  const std::string with = std::string(k_good_descriptor) + "[generic_default]\n";
  expect_error(with + "P = 2\nQ = 1\n", 16, "generic_default.Q",
               "'Q' is not a parameter of the template (parameters: P)");
  expect_error(with, 14, "generic_default", "parameter 'P' is missing: the generic default gives every parameter a value");
  expect_error(with + "P = -1\n", 15, "generic_default.P", "must be a non-negative integer (a template argument)");
  expect_error(with + "P = \"2\"\n", 15, "generic_default.P", "must be a non-negative integer");
  expect_error(with + "P = 1.5\n", 15, "generic_default.P", "must be a non-negative integer");
  expect_error("generic_default = 3\n" + std::string(k_good_descriptor), 1, "generic_default",
               "must be a table of PARAM = value, one for each parameter");
  // A layout's TRANS_A and TRANS_B (and DTYPE) are the export's to choose, build by build.
  const std::string laid_out = "layouts = [\"nn\", \"tn\"]\n" + with;  // [generic_default] on line 15
  expect_error(laid_out + "P = 1\nTRANS_A = 0\n", 17, "generic_default.TRANS_A",
               "'TRANS_A' follows from the layout and element type of each build; it may not be given");
  EXPECT_EQ(error_for(laid_out + "P = 1\n"), "<no UsageError thrown>");
}

// The exported header's generic default kernel is the one template that declares [generic_default]:
// the built-in blocktile2d, at 64x64 tiles of 128 threads.
TEST(DescriptorLoad, OneTemplateDeclaresTheGenericDefault) {
  const std::vector<TemplateDesc> builtin = load_templates({default_templates_dir()});
  const TemplateDesc* generic = find_generic_default(builtin);
  ASSERT_NE(generic, nullptr);
  EXPECT_EQ(generic->name, "blocktile2d");
  EXPECT_EQ(params_to_string(*generic->generic_default), "BM=64,BN=64,BK=8,TM=8,TN=4");
  EXPECT_EQ(std::count_if(builtin.begin(), builtin.end(), [](const TemplateDesc& t) { return t.generic_default; }), 1);

  EXPECT_EQ(find_generic_default(load_templates({k_fixture_templates})), nullptr) << "none declares it";
  const std::vector<TemplateDesc> none;
  EXPECT_EQ(find_generic_default(none), nullptr);

  // Two that declare it are an error naming both.
  test::TempDir dir;
  for (const char* name : {"aaa", "bbb"}) {
    test::write_file(dir / (std::string(name) + ".toml"),
                     fmt::format("name = \"{}\"\nkernel = \"k\"\nsummary = \"s\"\n[[param]]\nname = \"P\"\nvalues = [1]\n"
                                 "[generic_default]\nP = 1\n[launch]\nthreads = \"32\"\ntile_m = \"1\"\ntile_n = \"32\"\n",
                                 name));
    test::write_file(dir / (std::string(name) + ".cuh"), "// nothing\n");
  }
  const std::vector<TemplateDesc> two = load_templates({dir.path()});
  const std::string msg = usage_error([&] { (void)find_generic_default(two); });
  EXPECT_NE(msg.find("templates 'aaa' (" + (dir / "aaa.toml").string() + ") and 'bbb' (" + (dir / "bbb.toml").string() +
                     ") both declare [generic_default]; the exported header has one generic default kernel"),
            std::string::npos)
      << msg;
}

TEST_F(DescriptorErrors, MissingSource) {
  fs::remove(m_dir / "x.cuh");
  const std::string msg = error_for(k_good_descriptor, /*with_source=*/false);
  EXPECT_EQ(msg.rfind((m_dir / "x.toml").string() + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("x.cuh' is missing"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------
// Source bundles

TEST(SpaceSource, CollectsIncludesRecursively) {
  const TemplateDesc t = load_template(k_fixture_templates / "toy.toml");
  const SourceBundle b = t.load_source();
  EXPECT_EQ(b.main_name, "toy.cuh");
  EXPECT_EQ(b.main_text, test::read_file(k_fixture_templates / "toy.cuh"));
  // toy.cuh -> toy_common.cuh -> toy_inner.cuh (-> toy_common.cuh again: each once).
  // <not_followed.h> and the commented-out include are not collected.
  ASSERT_EQ(b.headers.size(), 2u);
  EXPECT_EQ(b.headers[0].first, "toy_common.cuh");
  EXPECT_EQ(b.headers[0].second, test::read_file(k_fixture_templates / "toy_common.cuh"));
  EXPECT_EQ(b.headers[1].first, "toy_inner.cuh");
  EXPECT_EQ(b.headers[1].second, test::read_file(k_fixture_templates / "toy_inner.cuh"));

  const SourceBundle other = load_template(k_fixture_templates / "other.toml").load_source();
  ASSERT_EQ(other.headers.size(), 2u);   // other.cuh -> toy_inner.cuh -> toy_common.cuh
  EXPECT_EQ(other.headers[0].first, "toy_common.cuh");
  EXPECT_EQ(other.headers[1].first, "toy_inner.cuh");
}

TEST(SpaceSource, MissingIncludeNamesFileAndLine) {
  test::TempDir dir;
  fs::copy_file(k_fixture_templates / "toy.toml", dir / "toy.toml");
  test::write_file(dir / "toy.cuh", "// toy\n#include \"helper.cuh\"\n");
  test::write_file(dir / "helper.cuh", "// helper\n\n#include \"gone.cuh\"\n");
  const TemplateDesc t = load_template(dir / "toy.toml");
  const std::string msg = usage_error([&] { (void)t.load_source(); });
  EXPECT_EQ(msg.rfind((dir / "helper.cuh").string() + ":3: #include \"gone.cuh\": no such file", 0), 0u) << msg;

  test::write_file(dir / "toy.cuh", "#include \"../elsewhere.cuh\"\n");
  const std::string outside = usage_error([&] { (void)t.load_source(); });
  EXPECT_NE(outside.find(":1: #include \"../elsewhere.cuh\": only files in the template folder"), std::string::npos)
      << outside;
}

// ---------------------------------------------------------------------------------------------
// Enumeration

class SpaceEnumerate : public ::testing::Test {
 protected:
  std::vector<TemplateDesc> m_templates = load_templates({k_fixture_templates});
  Preset m_full = load_preset(k_space_fixtures / "presets" / "full.toml");
};

TEST_F(SpaceEnumerate, FullPresetCountsAndOrder) {
  const SearchSpace space = enumerate_space(m_templates, m_full, test::sm90());
  ASSERT_EQ(space.stats.size(), 2u);
  EXPECT_EQ(space.stats[0].template_name, "other");
  EXPECT_EQ(space.stats[1].template_name, "toy");

  // other: X overridden to [3, 1], Y from the descriptor; no constraints.
  EXPECT_EQ(space.stats[0].raw, 4);
  EXPECT_EQ(space.stats[0].valid, 4);
  EXPECT_TRUE(space.stats[0].pruned.empty());

  // toy: 3*4*2 = 24 points. A <= B fails for (2,1),(4,1),(4,2),(4,3) x 2 values of C = 8;
  // B % A fails for (2,3) x 2 = 2; A*B*C <= 64 fails for (2,4,16),(4,4,8),(4,4,16) = 3.
  const TemplateSpaceStats& toy = space.stats[1];
  EXPECT_EQ(toy.raw, 24);
  EXPECT_EQ(toy.valid, 11);
  ASSERT_EQ(toy.pruned.size(), 3u);
  EXPECT_EQ(toy.pruned[0].reason, "A must not exceed B");
  EXPECT_EQ(toy.pruned[1].reason, "B must be a multiple of A");
  EXPECT_EQ(toy.pruned[2].reason, "at most 64 threads");
  EXPECT_EQ(pruned_counts(toy), (std::vector<int64_t>{8, 2, 3}));

  // Templates by name, then the grid with the last parameter varying fastest.
  const std::vector<std::string> expected = {
      "other[X=3,Y=32]",  "other[X=3,Y=64]",  "other[X=1,Y=32]",  "other[X=1,Y=64]",
      "toy[A=1,B=1,C=8]", "toy[A=1,B=1,C=16]", "toy[A=1,B=2,C=8]", "toy[A=1,B=2,C=16]",
      "toy[A=1,B=3,C=8]", "toy[A=1,B=3,C=16]", "toy[A=1,B=4,C=8]", "toy[A=1,B=4,C=16]",
      "toy[A=2,B=2,C=8]", "toy[A=2,B=2,C=16]", "toy[A=2,B=4,C=8]",
  };
  EXPECT_EQ(candidate_ids(space), expected);
}

TEST_F(SpaceEnumerate, CountsAddUp) {
  for (const Preset& preset : {m_full, load_preset(k_space_fixtures / "presets" / "toy_only.toml")}) {
    const SearchSpace space = enumerate_space(m_templates, preset, test::sm90());
    int64_t valid = 0;
    for (const auto& s : space.stats) {
      int64_t pruned = 0;
      for (const auto& p : s.pruned) pruned += p.count;
      EXPECT_EQ(s.raw, s.valid + pruned) << s.template_name;
      const auto n = std::count_if(space.candidates.begin(), space.candidates.end(),
                                   [&](const Candidate& c) { return c.tmpl->name == s.template_name; });
      EXPECT_EQ(n, s.valid) << s.template_name;
      valid += s.valid;
    }
    EXPECT_EQ(static_cast<int64_t>(space.candidates.size()), valid);
  }
  const SearchSpace narrow = enumerate_space(m_templates, load_preset(k_space_fixtures / "presets" / "toy_only.toml"), test::sm90());
  ASSERT_EQ(narrow.stats.size(), 1u);
  EXPECT_EQ(narrow.stats[0].raw, 4);   // A=[2], B=[1,2,3,4], C=[8]
  EXPECT_EQ(narrow.stats[0].valid, 2);
  EXPECT_EQ(pruned_counts(narrow.stats[0]), (std::vector<int64_t>{1, 1, 0}));   // zero counts kept
}

TEST_F(SpaceEnumerate, EachConstraintPrunesWithItsReason) {
  struct Case {
    int64_t a, b, c;
    std::vector<int64_t> pruned;   // expected counts per constraint
  };
  const Case cases[] = {
      {2, 1, 8, {1, 0, 0}},    // violates only A <= B
      {4, 3, 8, {1, 0, 0}},    // violates A <= B and B % A: counted under the first only
      {2, 3, 8, {0, 1, 0}},    // violates only B % A == 0
      {4, 4, 8, {0, 0, 1}},    // violates only A*B*C <= 64
      {2, 4, 8, {0, 0, 0}},    // valid
  };
  for (const Case& c : cases) {
    const Preset preset = preset_with({{"toy", {{"A", {c.a}}, {"B", {c.b}}, {"C", {c.c}}}}});
    const SearchSpace space = enumerate_space(m_templates, preset, test::sm90());
    const TemplateSpaceStats& s = stats_for(space, "toy");
    EXPECT_EQ(s.raw, 1);
    EXPECT_EQ(pruned_counts(s), c.pruned) << "A=" << c.a << " B=" << c.b << " C=" << c.c;
    const bool valid = c.pruned == std::vector<int64_t>{0, 0, 0};
    EXPECT_EQ(s.valid, valid ? 1 : 0);
    EXPECT_EQ(space.candidates.size(), valid ? 1u : 0u);
  }
}

TEST_F(SpaceEnumerate, IsDeterministicAndEvaluatesShapes) {
  const SearchSpace first = enumerate_space(m_templates, m_full, test::sm90());
  const std::vector<TemplateDesc> reloaded = load_templates({k_fixture_templates});
  const SearchSpace second = enumerate_space(reloaded, load_preset(k_space_fixtures / "presets" / "full.toml"), test::sm90());
  EXPECT_EQ(candidate_ids(first), candidate_ids(second));
  ASSERT_EQ(first.stats.size(), second.stats.size());
  for (size_t i = 0; i < first.stats.size(); ++i) {
    EXPECT_EQ(first.stats[i].raw, second.stats[i].raw);
    EXPECT_EQ(first.stats[i].valid, second.stats[i].valid);
    EXPECT_EQ(pruned_counts(first.stats[i]), pruned_counts(second.stats[i]));
  }

  // A hand-built preset listing templates out of order enumerates in name order all the same.
  const Preset shuffled = preset_with({{"toy", {}}, {"other", {{"X", {3, 1}}}}});
  EXPECT_EQ(candidate_ids(enumerate_space(m_templates, shuffled, test::sm90())), candidate_ids(first));

  for (const Candidate& c : first.candidates) {
    ASSERT_NE(c.tmpl, nullptr);
    EXPECT_EQ(c.shape.threads, c.tmpl->launch_shape(c.values, test::sm90()).threads);
    if (c.tmpl->name == "toy") {
      const int64_t a = *find_param(c.values, "A");
      const int64_t b = *find_param(c.values, "B");
      const int64_t cc = *find_param(c.values, "C");
      EXPECT_EQ(c.shape.threads, a * b * cc);
      EXPECT_EQ(c.shape.tile_m, a * cc);
      EXPECT_EQ(c.shape.tile_n, b * 8);
      EXPECT_EQ(c.shape.dynamic_smem, a * b * 4);
      EXPECT_EQ(c.requirements.align_bytes, std::min<int64_t>(16, a * 4));
      EXPECT_EQ(c.requirements.ld_multiple, a);
    } else {
      EXPECT_TRUE(c.requirements.none());
      EXPECT_EQ(c.shape.threads, *find_param(c.values, "Y"));
    }
  }
}

TEST_F(SpaceEnumerate, OnlyTemplate) {
  const SearchSpace space = enumerate_space(m_templates, m_full, test::sm90(), std::string("toy"));
  ASSERT_EQ(space.stats.size(), 1u);
  EXPECT_EQ(space.stats[0].template_name, "toy");
  EXPECT_EQ(space.candidates.size(), 11u);

  const std::string unknown = usage_error([&] { (void)enumerate_space(m_templates, m_full, test::sm90(), std::string("nosuch")); });
  EXPECT_NE(unknown.find("unknown template 'nosuch' (known: other, toy)"), std::string::npos) << unknown;

  const Preset narrow = load_preset(k_space_fixtures / "presets" / "toy_only.toml");
  const std::string absent = usage_error([&] { (void)enumerate_space(m_templates, narrow, test::sm90(), std::string("other")); });
  EXPECT_NE(absent.find("template 'other' is not in preset 'toy_only'"), std::string::npos) << absent;

  // A template with several grids is named once among the preset's templates.
  Preset twice = narrow;
  twice.templates.push_back(twice.templates.front());
  const std::string listed = usage_error([&] { (void)enumerate_space(m_templates, twice, test::sm90(), std::string("other")); });
  EXPECT_NE(listed.find("its templates: toy)"), std::string::npos) << listed;
}

TEST_F(SpaceEnumerate, FindTemplate) {
  ASSERT_NE(find_template(m_templates, "toy"), nullptr);
  EXPECT_EQ(find_template(m_templates, "toy")->kernel, "cmt_toy");
  EXPECT_EQ(find_template(m_templates, "nosuch"), nullptr);
}

/// A one-parameter descriptor in a temporary folder, with the given [launch] and constraint lines.
std::vector<TemplateDesc> scratch_template(const test::TempDir& dir, const std::string& launch, const std::string& extra = "") {
  test::write_file(dir / "bad.toml", "name = \"bad\"\nkernel = \"cmt_bad\"\nsummary = \"s\"\n[[param]]\nname = \"P\"\n"
                                     "values = [1, 2]\n[launch]\n" + launch + "\n" + extra);
  test::write_file(dir / "bad.cuh", "// bad\n");
  return load_templates({dir.path()});
}

TEST_F(SpaceEnumerate, LaunchExpressionErrorNamesTheTemplate) {
  test::TempDir dir;
  const auto templates = scratch_template(dir, "threads = \"64 / (P - 1)\"\ntile_m = \"P\"\ntile_n = \"32\"");
  const std::string msg = usage_error([&] { (void)enumerate_space(templates, preset_with({{"bad", {}}}), test::sm90()); });
  EXPECT_NE(msg.find("template 'bad'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("launch.threads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("P=1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;

  // A constraint that guards the division keeps the bad point out of the launch evaluation.
  test::TempDir guarded;
  const auto ok = scratch_template(guarded, "threads = \"64 / (P - 1)\"\ntile_m = \"P\"\ntile_n = \"32\"",
                                   "[[constraint]]\ncheck = \"P > 1\"\nreason = \"P must exceed 1\"\n");
  const SearchSpace space = enumerate_space(ok, preset_with({{"bad", {}}}), test::sm90());
  ASSERT_EQ(space.candidates.size(), 1u);
  EXPECT_EQ(space.candidates[0].shape.threads, 64);
}

TEST_F(SpaceEnumerate, ConstraintErrorNamesTheTemplate) {
  test::TempDir dir;
  const auto templates = scratch_template(dir, "threads = \"32\"\ntile_m = \"P\"\ntile_n = \"32\"",
                                          "[[constraint]]\ncheck = \"32 % (P - 2) == 0\"\nreason = \"r\"\n");
  const std::string msg = usage_error([&] { (void)enumerate_space(templates, preset_with({{"bad", {}}}), test::sm90()); });
  EXPECT_NE(msg.find("template 'bad'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("P=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("modulo by zero"), std::string::npos) << msg;
}

TEST_F(SpaceEnumerate, NonsensicalShapeIsAnError) {
  test::TempDir dir;
  const auto templates = scratch_template(dir, "threads = \"P - 1\"\ntile_m = \"P\"\ntile_n = \"32\"");
  const std::string msg = usage_error([&] { (void)enumerate_space(templates, preset_with({{"bad", {}}}), test::sm90()); });
  EXPECT_NE(msg.find("template 'bad'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("launch.threads is 0 at P=1"), std::string::npos) << msg;

  test::TempDir align;
  const auto misaligned = scratch_template(align, "threads = \"32\"\ntile_m = \"P\"\ntile_n = \"32\"",
                                           "[requires]\nalign_bytes = \"P * 6\"\n");
  const std::string amsg = usage_error([&] { (void)enumerate_space(misaligned, preset_with({{"bad", {}}}), test::sm90()); });
  EXPECT_NE(amsg.find("requires.align_bytes is 6 at P=1"), std::string::npos) << amsg;
}

TEST_F(SpaceEnumerate, HugeGridIsRefused) {
  std::vector<int64_t> many;
  for (int64_t v = 1; v <= 300; ++v) many.push_back(v);
  Preset preset = preset_with({{"toy", {{"A", many}, {"B", many}, {"C", many}}}});
  preset.templates[0].line = 7;
  const std::string msg = usage_error([&] { (void)enumerate_space(m_templates, preset, test::sm90()); });
  EXPECT_EQ(msg.rfind("inline.toml:7: templates.toy: the grid has more than", 0), 0u) << msg;
}

// ---------------------------------------------------------------------------------------------
// The built-in templates and presets of the source tree

TEST(SpaceBuiltin, EveryDescriptorLoads) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  std::vector<std::string> names;
  for (const auto& t : templates) {
    names.push_back(t.name);
    const SourceBundle source = t.load_source();   // every include resolves
    EXPECT_NE(source.main_text.find(t.kernel), std::string::npos) << t.name << ": kernel name not in its source";
  }
  for (const char* expected : {"naive", "coalesced", "smem_tiled", "blocktile1d", "blocktile2d", "blocktile2d_vec",
                               "warptile", "multistage", "clusterk"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << "missing template " << expected;
}

TEST(SpaceBuiltin, ClusterkLaunchesOneClusterPerTileAlongZ) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  const auto it = std::find_if(templates.begin(), templates.end(), [](const TemplateDesc& t) { return t.name == "clusterk"; });
  ASSERT_NE(it, templates.end());
  ParamValues values = params_from_string(
      "BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,STAGES=3,VEC=1,PAD=4,SPLITK=1,CLUSTER_K=3,SWIZZLE=1,THIN_EDGE=0,"
      "TRANS_A=0,TRANS_B=0");
  const LaunchShape shape = it->launch_shape(values, test::sm90());
  EXPECT_EQ(shape.grid_z, 3);
  EXPECT_EQ(shape.threads, 128);
  // The partial tile parked for the cluster reduction (128*128 floats) outgrows the 3-stage ring.
  EXPECT_EQ(shape.dynamic_smem, std::max(3 * (16 * 132 + 16 * 128), 128 * 128) * 4);
  for (auto& [name, value] : values)
    if (name == "CLUSTER_K") value = 1;
  const auto failed = it->failed_constraint(values, test::sm90());
  ASSERT_TRUE(failed.has_value()) << "CLUSTER_K = 1 is the multistage family and must be pruned";
  EXPECT_NE(it->constraints[*failed].reason.find("CLUSTER_K"), std::string::npos) << it->constraints[*failed].reason;
}

// THIN_EDGE is a parameter of the warp-tiled families: 0 and 4 are searched, and values above 8
// (beyond a thin strip) are pruned with a reason.
TEST(SpaceBuiltin, ThinEdgeIsSearchedAndBounded) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  const Preset quick = load_preset(resolve_preset("quick"));
  for (const char* name : {"warptile", "multistage", "clusterk"}) {
    const SearchSpace space = enumerate_space(templates, quick, test::sm90(), name);
    std::set<int64_t> thin_values;
    for (const Candidate& c : space.candidates) thin_values.insert(find_param(c.values, "THIN_EDGE").value_or(-1));
    EXPECT_EQ(thin_values, (std::set<int64_t>{0, 4})) << name << ": quick.toml should cover both paths";

    ParamValues values = space.candidates.at(0).values;
    for (auto& [param, value] : values)
      if (param == "THIN_EDGE") value = 9;
    const TemplateDesc& t = *space.candidates.at(0).tmpl;
    bool rejected = false;
    for (const auto& c : t.constraints)
      if (t.eval(c.check, values, test::sm90(), "constraint") == 0)
        rejected = rejected || c.reason.find("THIN_EDGE") != std::string::npos;
    EXPECT_TRUE(rejected) << name << ": THIN_EDGE = 9 must be pruned by the THIN_EDGE constraint";
  }
}

// multistage's A_CHUNK: 8 always fits; 16 needs k tiles of whole runs and whole passes of A rows.
TEST(SpaceBuiltin, MultistageCopiesAInRunsOf8Or16) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  const auto it = std::find_if(templates.begin(), templates.end(), [](const TemplateDesc& t) { return t.name == "multistage"; });
  ASSERT_NE(it, templates.end());
  const auto valid = [&](const std::string& params) {
    return !it->failed_constraint(params_from_string(params + ",TRANS_A=0,TRANS_B=0"), test::sm90());
  };
  const std::string base = "BM=64,BN=128,WM=32,WN=64,WNITER=2,TM=4,TN=4,STAGES=3,VEC=4,PAD=4,SPLITK=2,SWIZZLE=1,"
                           "THIN_EDGE=0,THIN_WORKERS=0,INLINE_THIN_ROWS=0";
  EXPECT_TRUE(valid(base + ",BK=32,A_CHUNK=8"));
  EXPECT_TRUE(valid(base + ",BK=32,A_CHUNK=16"));
  EXPECT_TRUE(valid(base + ",BK=16,A_CHUNK=16"));
  EXPECT_TRUE(valid(base + ",BK=8,A_CHUNK=8"));
  EXPECT_FALSE(valid(base + ",BK=8,A_CHUNK=16"));   // a run longer than the k tile
  EXPECT_FALSE(valid(base + ",BK=24,A_CHUNK=16"));  // k tiles that are no whole number of runs
  EXPECT_FALSE(valid(base + ",BK=32,A_CHUNK=32"));  // not a searched run length
}

TEST(SpaceBuiltin, EveryPresetEnumerates) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  std::vector<fs::path> presets;
  for (const auto& entry : fs::directory_iterator(default_configs_dir()))
    if (entry.path().extension() == ".toml") presets.push_back(entry.path());
  std::sort(presets.begin(), presets.end());
  ASSERT_FALSE(presets.empty()) << "no presets in " << default_configs_dir();
  for (const fs::path& file : presets) {
    const Preset preset = load_preset(file);
    Target target = test::sm90();
    target.dtypes = {DType::f32, DType::f64, DType::i32, DType::tf32x3};  // dmma f64 only, tf32x3_mma tf32x3
    const SearchSpace space = enumerate_space(templates, preset, target);
    std::set<std::string> names;  // a template may have several grids
    for (const auto& t : preset.templates) names.insert(t.name);
    EXPECT_EQ(space.stats.size(), names.size()) << file;
    for (const auto& s : space.stats) EXPECT_GT(s.valid, 0) << file << ": template " << s.template_name << " has no valid point";
  }
}

}  // namespace
}  // namespace cmt
