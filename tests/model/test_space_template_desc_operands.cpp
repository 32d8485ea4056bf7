// What a template declares about operands: its layouts (the implicit TRANS_A and TRANS_B
// parameters) and batching; which candidates the space enumerates for the problems' layouts, and
// which problems each candidate serves.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

Preset operand_preset_for(const std::string& name) {
  Preset p;
  p.file = "inline.toml";
  p.name = "inline";
  p.templates.push_back(PresetTemplate{name, {}});
  return p;
}

TEST(OperandSupport, DefaultIsNnUnbatchedWithoutImplicitParameters) {
  test::TempDir dir;
  const TemplateDesc t = load_template(test::write_v_template(dir.path(), "plain", ""));
  EXPECT_EQ(t.layouts, std::vector<std::string>{"nn"});
  EXPECT_FALSE(t.batched);
  ASSERT_EQ(t.params.size(), 1u);
  EXPECT_EQ(t.name_expression({{"V", 1}}), "cmt_sgemm_plain<1>");
  EXPECT_TRUE(t.serves({{"V", 1}}, Problem::make(8, 8, 8)));
  EXPECT_FALSE(t.serves({{"V", 1}}, Problem::make(8, 8, 8, true, false))) << "another layout";
  EXPECT_FALSE(t.serves({{"V", 1}}, Problem::make(8, 8, 8, false, false, 4))) << "a batch";
}

TEST(OperandSupport, LayoutsAddTransAAndTransBAsTheLastTemplateArguments) {
  test::TempDir dir;
  const TemplateDesc t = load_template(
      test::write_v_template(dir.path(), "lay", "layouts = [\"nn\", \"tn\", \"tt\"]\nbatched = true\n",
                     "[[constraint]]\ncheck = \"V == 1 || TRANS_B == 0\"\nreason = \"V=2 has no transposed B\"\n"));
  EXPECT_EQ(t.layouts, (std::vector<std::string>{"nn", "tn", "tt"}));
  EXPECT_TRUE(t.batched);
  ASSERT_EQ(t.params.size(), 3u);
  EXPECT_EQ(t.params[1].name, "TRANS_A");
  EXPECT_EQ(t.params[1].values, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(t.params[1].implicit);
  EXPECT_EQ(t.params[2].name, "TRANS_B");
  const ParamValues tn = {{"V", 1}, {"TRANS_A", 1}, {"TRANS_B", 0}};
  EXPECT_EQ(t.name_expression(tn), "cmt_sgemm_lay<1, 1, 0>");
  EXPECT_EQ(t.layout_of(tn), "tn");
  EXPECT_TRUE(t.serves(tn, Problem::make(8, 8, 8, true, false, 16)));
  EXPECT_FALSE(t.serves(tn, Problem::make(8, 8, 8)));

  // Enumerated for the problems' layouts only; nt is not the family's, and V=2 with TRANS_B is pruned.
  Target target = test::sm90();
  const auto ids = [&](std::vector<std::string> layouts) {
    target.layouts = std::move(layouts);
    const std::vector<TemplateDesc> templates{t};
    std::vector<std::string> out;
    for (const auto& c : enumerate_space(templates, operand_preset_for("lay"), target).candidates) out.push_back(c.id());
    return out;
  };
  EXPECT_EQ(ids({"nn"}), (std::vector<std::string>{"lay[V=1,TRANS_A=0,TRANS_B=0]", "lay[V=2,TRANS_A=0,TRANS_B=0]"}));
  EXPECT_EQ(ids({"tn", "nt"}), (std::vector<std::string>{"lay[V=1,TRANS_A=1,TRANS_B=0]", "lay[V=2,TRANS_A=1,TRANS_B=0]"}));
  EXPECT_EQ(ids({"tt"}), (std::vector<std::string>{"lay[V=1,TRANS_A=1,TRANS_B=1]"}));
  EXPECT_TRUE(ids({"nt"}).empty());
  // nn and tt asked for: the grid of TRANS_A x TRANS_B holds tn and nt too, pruned as not asked for.
  target.layouts = {"nn", "tt"};
  const std::vector<TemplateDesc> templates{t};
  const SearchSpace space = enumerate_space(templates, operand_preset_for("lay"), target);
  EXPECT_EQ(space.candidates.size(), 3u);
  EXPECT_EQ(space.stats.at(0).pruned.back().reason, "a layout that was not asked for");
  EXPECT_EQ(space.stats.at(0).pruned.back().count, 4);
}

TEST(OperandSupport, TypesAddDtypeAfterTheLayoutParameters) {
  test::TempDir dir;
  const TemplateDesc t =
      load_template(test::write_v_template(dir.path(), "typ", "layouts = [\"nn\", \"nt\"]\ndtypes = [\"f32\", \"i32\", \"f64\"]\n"));
  EXPECT_EQ(t.dtypes, (std::vector<DType>{DType::f32, DType::i32, DType::f64}));
  ASSERT_EQ(t.params.size(), 4u);
  EXPECT_EQ(t.params[3].name, "DTYPE");
  EXPECT_EQ(t.params[3].values, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(t.params[3].implicit);
  const ParamValues f64_nt = {{"V", 1}, {"TRANS_A", 0}, {"TRANS_B", 1}, {"DTYPE", 1}};
  EXPECT_EQ(t.name_expression(f64_nt), "cmt_sgemm_typ<1, 0, 1, 1>");
  EXPECT_EQ(t.dtype_of(f64_nt), DType::f64);
  EXPECT_TRUE(t.serves(f64_nt, Problem::make(8, 8, 8, false, true, 1, DType::f64)));
  EXPECT_FALSE(t.serves(f64_nt, Problem::make(8, 8, 8, false, true))) << "f32 is another type";
  EXPECT_TRUE(t.supports_dtype(DType::i32));

  Target target = test::sm90();
  target.layouts = {"nn"};
  const std::vector<TemplateDesc> templates{t};
  const auto ids = [&](std::vector<DType> types) {
    target.dtypes = std::move(types);
    std::vector<std::string> out;
    for (const auto& c : enumerate_space(templates, operand_preset_for("typ"), target).candidates) out.push_back(c.id());
    return out;
  };
  EXPECT_EQ(ids({DType::f64}),
            (std::vector<std::string>{"typ[V=1,TRANS_A=0,TRANS_B=0,DTYPE=1]", "typ[V=2,TRANS_A=0,TRANS_B=0,DTYPE=1]"}));
  EXPECT_EQ(ids({DType::f32, DType::i32}).size(), 4u);
  target.dtypes = {DType::f64};
  const SearchSpace space = enumerate_space(templates, operand_preset_for("typ"), target);
  // 2 V x 2 TRANS_B x 3 DTYPE = 12 points: 8 of other types, 2 of the layout nt, 2 candidates.
  const auto& stats = space.stats.at(0);
  const auto pruned = [&](const std::string& reason) {
    for (const auto& p : stats.pruned)
      if (p.reason == reason) return p.count;
    return int64_t{-1};
  };
  EXPECT_EQ(stats.raw, 12);
  EXPECT_EQ(pruned("an element type that was not asked for"), 8);
  EXPECT_EQ(pruned("a layout that was not asked for"), 2);
  EXPECT_EQ(stats.valid, 2);

  // A family of f32 alone keeps its template arguments, and enumerates nothing for other types.
  const TemplateDesc plain = load_template(test::write_v_template(dir.path(), "plain32", ""));
  EXPECT_EQ(plain.name_expression({{"V", 1}}), "cmt_sgemm_plain32<1>");
  EXPECT_FALSE(plain.serves({{"V", 1}}, Problem::make(8, 8, 8, false, false, 1, DType::i32)));
  const std::vector<TemplateDesc> plains{plain};
  target.dtypes = {DType::i32};
  const SearchSpace none = enumerate_space(plains, operand_preset_for("plain32"), target);
  EXPECT_TRUE(none.candidates.empty());
  EXPECT_EQ(none.stats.at(0).pruned.back().reason, "an element type that was not asked for");
  EXPECT_EQ(none.stats.at(0).pruned.back().count, 2);
}

TEST(OperandSupport, BadDeclarationsAreOneLineErrors) {
  test::TempDir dir;
  const auto error = [&](const std::string& extra, const std::string& name = "bad") {
    return test::usage_error([&] { load_template(test::write_v_template(dir.path(), name, extra)); });
  };
  EXPECT_NE(error("layouts = [\"nn\", \"xx\"]\n").find("layouts[1]: must be \"nn\", \"nt\", \"tn\" or \"tt\""),
            std::string::npos);
  EXPECT_NE(error("layouts = []\n").find("layouts: must be a non-empty array"), std::string::npos);
  EXPECT_NE(error("layouts = [\"tn\", \"TN\"]\n").find("'tn' is listed twice"), std::string::npos);
  EXPECT_NE(error("batched = 1\n").find("batched: must be true or false"), std::string::npos);
  EXPECT_NE(error("dtypes = [\"f16\"]\n").find("dtypes[0]: must be one of f32, f64, i32 or tf32x3"), std::string::npos);
  EXPECT_NE(error("dtypes = []\n").find("dtypes: must be a non-empty array"), std::string::npos);
  EXPECT_NE(error("dtypes = [\"f64\", \"F64\"]\n").find("'f64' is listed twice"), std::string::npos);
  test::write_file(dir / "clash.cuh", "");
  test::write_file(dir / "clash.toml", R"(name = "clash"
kernel = "k"
summary = "s"
layouts = ["nn", "tn"]
[[param]]
name = "TRANS_A"
values = [0]
[launch]
threads = "1"
tile_m = "1"
tile_n = "1"
)");
  EXPECT_NE(test::usage_error([&] { load_template(dir / "clash.toml"); }).find("'TRANS_A' is implied by `layouts`"),
            std::string::npos);
}

TEST(OperandSupport, BuiltInFamiliesDeclareWhatTheyServe) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  // The header's generic default must compute every layout and batch, or some calls would be refused.
  const TemplateDesc& generic = *find_template(templates, "blocktile2d");
  EXPECT_EQ(generic.layouts, (std::vector<std::string>{"nn", "nt", "tn", "tt"}));
  EXPECT_TRUE(generic.batched);
  // ... and every element type.
  EXPECT_EQ(generic.dtypes, (std::vector<DType>{DType::f32, DType::f64, DType::i32}));
  for (const auto& t : templates) {
    EXPECT_EQ(t.layouts.front(), "nn") << t.name << ": every family computes nn";
    const bool has_trans = std::any_of(t.params.begin(), t.params.end(), [](const ParamDesc& p) {
      return p.name == "TRANS_A" || p.name == "TRANS_B";
    });
    EXPECT_EQ(has_trans, t.layouts.size() > 1) << t.name;
    // Every family computes f32 but dmma, the FP64 tensor-core family, and tf32x3_mma and
    // tf32x3_wgmma, the tf32x3 class's.
    if (t.name == "dmma")
      EXPECT_EQ(t.dtypes, std::vector<DType>{DType::f64});
    else if (t.name == "tf32x3_mma" || t.name == "tf32x3_wgmma")
      EXPECT_EQ(t.dtypes, std::vector<DType>{DType::tf32x3}) << t.name;
    else
      EXPECT_EQ(t.dtypes.front(), DType::f32) << t.name << ": every family but dmma and the tf32x3 ones computes f32";
    const bool has_dtype = std::any_of(t.params.begin(), t.params.end(), [](const ParamDesc& p) { return p.name == "DTYPE"; });
    EXPECT_EQ(has_dtype, t.dtypes != std::vector<DType>{DType::f32}) << t.name;
    for (const auto& p : t.params) EXPECT_EQ(p.implicit, p.name == "TRANS_A" || p.name == "TRANS_B" || p.name == "DTYPE") << t.name;
  }
}

// The generic default enumerates the same tiles in every type and layout: DTYPE, its last parameter,
// picks the type; every point is without requirements and launches alike.
TEST(OperandSupport, Blocktile2dEnumeratesEveryTypeAlike) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  const TemplateDesc& t = *find_template(templates, "blocktile2d");
  ASSERT_EQ(t.params.back().name, "DTYPE");
  EXPECT_EQ(t.params[t.params.size() - 2].name, "TRANS_B");
  Preset preset;
  preset.name = "blocktile2d";
  preset.templates.push_back({"blocktile2d", {}});  // the descriptor's own grid
  Target target = test::sm90();
  target.layouts = {"nn", "nt", "tn", "tt"};
  std::map<DType, std::vector<std::string>> tiles;  // per type: the points without DTYPE, in order
  for (const DType d : {DType::f32, DType::f64, DType::i32}) {
    target.dtypes = {d};
    const SearchSpace space = enumerate_space(templates, preset, target, "blocktile2d");
    ASSERT_FALSE(space.candidates.empty()) << dtype_name(d);
    for (const Candidate& c : space.candidates) {
      ASSERT_EQ(c.values.back().first, "DTYPE");
      EXPECT_EQ(c.values.back().second, static_cast<int64_t>(d));
      EXPECT_EQ(c.tmpl->dtype_of(c.values), d);
      EXPECT_TRUE(c.requirements.none()) << c.id();
      EXPECT_EQ(c.shape.dynamic_smem, 0) << c.id();
      const std::string expression = t.name_expression(c.values);
      EXPECT_EQ(expression.substr(expression.size() - 3), fmt::format(" {}>", static_cast<int>(d))) << expression;
      ParamValues tile = c.values;
      tile.pop_back();
      tiles[d].push_back(params_to_string(tile));
      // It serves its own type only.
      for (const DType other : {DType::f32, DType::f64, DType::i32}) {
        const Problem p = Problem::make(64, 64, 64, c.values[5].second != 0, c.values[6].second != 0, 3, other);
        EXPECT_EQ(t.serves(c.values, p), other == d) << c.id() << " on " << p.to_string();
      }
    }
  }
  // INT32 takes what FP32 takes. Doubles take twice the registers and shared memory: of the
  // descriptor's grid, they drop the tiles of 8 x 8 accumulators per thread (128 registers of them,
  // which spill on sm_80), and those of 1024 threads with 4 x 4 each, past the register estimate per
  // block ((16 + 8) * 2 + 24 = 72 registers x 1024 > 65536).
  EXPECT_EQ(tiles[DType::i32], tiles[DType::f32]);
  std::vector<std::string> dropped;
  for (const std::string& tile : tiles[DType::f32])
    if (std::find(tiles[DType::f64].begin(), tiles[DType::f64].end(), tile) == tiles[DType::f64].end())
      dropped.push_back(tile);
  EXPECT_EQ(tiles[DType::f64].size() + dropped.size(), tiles[DType::f32].size()) << "f64's tiles are f32's";
  int eight_by_eight = 0, four_by_four = 0;
  for (const std::string& tile : dropped) {
    const auto c = t.failed_constraint(params_from_string(tile + ",DTYPE=1"), test::sm90());
    ASSERT_TRUE(c.has_value()) << tile;
    const std::string& reason = t.constraints[*c].reason;
    if (tile.find("TM=8,TN=8") != std::string::npos) {
      ++eight_by_eight;
      EXPECT_NE(reason.find("at most 32 accumulators"), std::string::npos) << tile << ": " << reason;
    } else {
      ++four_by_four;
      EXPECT_EQ(tile.rfind("BM=128,BN=128,BK=", 0), 0u) << tile;
      EXPECT_NE(tile.find("TM=4,TN=4"), std::string::npos) << tile;
      EXPECT_NE(reason.find("estimated registers"), std::string::npos) << tile << ": " << reason;
    }
  }
  // Six 8 x 8 tiles with 64 threads or more, BK 8 and 16, four layouts; one 4 x 4 tile likewise.
  EXPECT_EQ(eight_by_eight, 6 * 2 * 4);
  EXPECT_EQ(four_by_four, 2 * 4);
  for (const std::string& tile : tiles[DType::f64]) EXPECT_EQ(tile.find("TM=8,TN=8"), std::string::npos) << tile;

  // Where a double does not fit: 128 x 128 tiles 32 deep are 33 KiB of floats, 66 KiB of doubles.
  const auto failed = [&](int64_t dtype) -> std::string {
    const auto c = t.failed_constraint(
        params_from_string(fmt::format("BM=128,BN=128,BK=32,TM=8,TN=4,TRANS_A=0,TRANS_B=1,DTYPE={}", dtype)), test::sm90());
    return c ? t.constraints[*c].reason : "";
  };
  EXPECT_EQ(failed(0), "");
  EXPECT_EQ(failed(2), "");
  EXPECT_NE(failed(1).find("static shared memory"), std::string::npos) << failed(1);
}

}  // namespace
}  // namespace cmt
