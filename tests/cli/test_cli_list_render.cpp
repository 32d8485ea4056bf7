// `cm-tune list`: the space of a preset as text and JSON, and every candidate with its launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/list_render.hpp"
#include "output/printers.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using test::k_space_fixtures;
const fs::path k_fixture_templates = k_space_fixtures / "templates";

TEST(SpaceList, TextShowsTemplatesConstraintsAndCounts) {
  const std::vector<TemplateDesc> templates = load_templates({k_fixture_templates});
  const Preset preset = load_preset(k_space_fixtures / "presets" / "full.toml");
  const SearchSpace space = enumerate_space(templates, preset, test::sm90());
  const std::string text = render_space_text(templates, preset, test::sm90(), "", space);

  for (const std::string& needle : {
           std::string("preset full ("),
           std::string("Every fixture template"),
           std::string("template toy: Fixture: three parameters, three constraints"),
           std::string("template other: Fixture: two parameters and nothing else"),
           (k_fixture_templates / "toy.cuh").string(),
           std::string("cmt_toy"),
           std::string("    X  3, 1"),
           std::string("(descriptor: 1, 2, 3)  rows per block"),   // overridden: both shown
           std::string("A*B*C <= 64  at most 64 threads"),
           std::string("threads       A*B*C"),
           std::string("align_bytes   min(16, A*4)"),
           std::string("space: 24 raw, 11 valid, 13 pruned"),
           std::string("8 pruned: A must not exceed B"),
           std::string("space: 4 raw, 4 valid, 0 pruned"),
           std::string("total: 2 templates, 28 raw, 15 valid, 13 pruned"),
       }) {
    EXPECT_NE(text.find(needle), std::string::npos) << "missing: " << needle << "\n" << text;
  }
  // A parameter the preset does not override shows no descriptor column.
  EXPECT_EQ(text.find("(descriptor: 1, 2, 4)"), std::string::npos) << text;
  // toy comes after other.
  EXPECT_LT(text.find("template other:"), text.find("template toy:"));
}

TEST(SpaceList, JsonCarriesTheSameContent) {
  const std::vector<TemplateDesc> templates = load_templates({k_fixture_templates});
  const Preset preset = load_preset(k_space_fixtures / "presets" / "toy_only.toml");
  const SearchSpace space = enumerate_space(templates, preset, test::sm90());
  const nlohmann::json j = output::to_json(space_record(templates, preset, test::sm90(), space));

  EXPECT_EQ(j["preset"]["name"], "toy_only");
  EXPECT_EQ(j["preset"]["content_hash"], preset.content_hash);
  ASSERT_EQ(j["templates"].size(), 1u);
  const nlohmann::json& toy = j["templates"][0];
  EXPECT_EQ(toy["name"], "toy");
  EXPECT_EQ(toy["source"], (k_fixture_templates / "toy.cuh").string());
  ASSERT_EQ(toy["params"].size(), 3u);
  EXPECT_EQ(toy["params"][0]["values"], nlohmann::json::array({2}));
  EXPECT_EQ(toy["params"][0]["default_values"], nlohmann::json::array({1, 2, 4}));
  EXPECT_EQ(toy["params"][0]["overridden"], true);
  EXPECT_EQ(toy["params"][1]["overridden"], false);
  EXPECT_EQ(toy["constraints"][2]["check"], "A*B*C <= 64");
  EXPECT_EQ(toy["constraints"][2]["reason"], "at most 64 threads");
  EXPECT_EQ(toy["launch"]["dynamic_smem"], "A*B*4");
  EXPECT_EQ(toy["requires"]["ld_multiple"], "A");
  EXPECT_EQ(toy["counts"]["raw"], 4);
  EXPECT_EQ(toy["counts"]["valid"], 2);
  EXPECT_EQ(toy["counts"]["pruned"][1]["reason"], "B must be a multiple of A");
  EXPECT_EQ(toy["counts"]["pruned"][1]["count"], 1);
  EXPECT_EQ(toy["counts"]["pruned"][2]["count"], 0);
  EXPECT_EQ(j["totals"]["raw"], 4);
  EXPECT_EQ(j["totals"]["valid"], 2);
  EXPECT_EQ(j["totals"]["pruned"], 2);
  EXPECT_EQ(j["not_in_preset"], nlohmann::json::array({"other"}));
}

TEST(SpaceList, CandidatesShowInstantiationLaunchShapeAndRequirements) {
  const std::vector<TemplateDesc> templates = load_templates({k_fixture_templates});
  const Preset preset = load_preset(k_space_fixtures / "presets" / "toy_only.toml");
  const SearchSpace space = enumerate_space(templates, preset, test::sm90());
  ASSERT_EQ(space.candidates.size(), 2u);
  // A=2, B=2, C=8 (the grid's first valid point): 32 threads, 16 x 16 tiles, 16 bytes of shared memory.
  const std::string text = output::render_text(candidate_table(space), {"", false});
  EXPECT_NE(text.find("toy[A=2,B=2,C=8]  cmt_toy<2, 2, 8>  threads=32 tile=16x16 dynamic_smem=16 grid_z=1  "
                      "requires: 8-byte aligned A/B/C, lda/ldb/ldc % 2 == 0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  const nlohmann::json j = output::to_json(output::table_records(candidate_table(space)));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], "toy[A=2,B=2,C=8]");
  EXPECT_EQ(j[0]["template"], "toy");
  EXPECT_EQ(j[0]["params"], "A=2,B=2,C=8");
  EXPECT_EQ(j[0]["name_expression"], "cmt_toy<2, 2, 8>");
  EXPECT_EQ(j[0]["launch"]["threads"], 32);
  EXPECT_EQ(j[0]["launch"]["tile_m"], 16);
  EXPECT_EQ(j[0]["launch"]["tile_n"], 16);
  EXPECT_EQ(j[0]["launch"]["dynamic_smem"], 16);
  EXPECT_EQ(j[0]["launch"]["grid_z"], 1);
  EXPECT_EQ(j[0]["requires"]["align_bytes"], 8);
  EXPECT_EQ(j[0]["requires"]["ld_multiple"], 2);
}

TEST(SpaceList, LayoutsAndBatchingAreShownAndLayoutChoosesTheCandidates) {
  test::TempDir dir;
  const auto list = [&](const std::string& args) { return test::run_split(dir, "list --config quick --arch sm_90 " + args); };
  const auto text = list("--template blocktile2d");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  operands    layouts nn, nt, tn, tt; strided-batched (batch on grid z); types f32, f64, i32\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(list("--template blocktile2d_vec").out.find("  operands    layouts nn; not batched (batch 1 only); types f32\n"), std::string::npos);
  const auto json = nlohmann::json::parse(list("--template blocktile2d --json").out);
  EXPECT_EQ(json.at("templates").at(0).at("layouts"), nlohmann::json({"nn", "nt", "tn", "tt"}));
  EXPECT_EQ(json.at("templates").at(0).at("batched"), true);

  const auto count = [&](const std::string& layout) {
    const auto r = list("--template blocktile2d --candidates --layout " + layout);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::count(r.out.begin(), r.out.end(), '\n');
  };
  const auto nn = count("nn");
  EXPECT_GT(nn, 0);
  EXPECT_EQ(count("tn"), nn);
  EXPECT_EQ(count("all"), 4 * nn);
  EXPECT_EQ(count("nt,tt"), 2 * nn);
  // blocktile2d computes every type: the same tiles in f64 and i32 (quick's 8 x 4 fit doubles too),
  // each with DTYPE last; a family that computes f32 only (multistage) enumerates nothing for them,
  // saying why.
  const auto f64 = list("--template blocktile2d --candidates --dtype f64");
  EXPECT_EQ(f64.exit_code, 0) << f64.err;
  EXPECT_EQ(std::count(f64.out.begin(), f64.out.end(), '\n'), nn) << f64.out;
  EXPECT_NE(f64.out.find(",DTYPE=1]  cmt_sgemm_blocktile2d<64, 64, 8, 8, 4, 0, 0, 1>"), std::string::npos) << f64.out;
  const auto typed = [&](const std::string& dtype) {
    const auto r = list("--template blocktile2d --candidates --layout all --dtype " + dtype);
    return std::count(r.out.begin(), r.out.end(), '\n');
  };
  EXPECT_EQ(typed("i32"), 4 * nn);
  EXPECT_EQ(typed("all"), 3 * 4 * nn);
  EXPECT_NE(list("--template multistage --dtype i32").out.find("an element type that was not asked for"), std::string::npos);
  // warptile computes f32 and i32, the same tiles in both (4-byte elements), f64 not.
  const auto warptile = [&](const std::string& dtype) {
    const auto r = list("--template warptile --candidates --layout all --dtype " + dtype);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const auto wt_f32 = warptile("f32"), wt_i32 = warptile("i32");
  const auto wt_lines = std::count(wt_f32.begin(), wt_f32.end(), '\n');
  EXPECT_GT(wt_lines, 0);
  EXPECT_EQ(std::count(wt_i32.begin(), wt_i32.end(), '\n'), wt_lines) << wt_i32;
  EXPECT_NE(wt_i32.find(",TRANS_A=1,TRANS_B=1,DTYPE=2]  cmt_sgemm_warptile<"), std::string::npos) << wt_i32;
  EXPECT_NE(wt_f32.find(",TRANS_A=0,TRANS_B=0,DTYPE=0]  cmt_sgemm_warptile<"), std::string::npos) << wt_f32;
  EXPECT_EQ(warptile("all"), warptile("f32,i32"));
  EXPECT_NE(list("--template warptile --dtype f64").out.find("an element type that was not asked for"), std::string::npos);
  EXPECT_NE(list("--template warptile").out.find("types f32, i32\n"), std::string::npos);
  EXPECT_EQ(json.at("templates").at(0).at("dtypes"), nlohmann::json({"f32", "f64", "i32"}));
  const auto bad_type = list("--dtype f16");
  EXPECT_EQ(bad_type.exit_code, 2);
  EXPECT_EQ(bad_type.err, "cm-tune: error: --dtype: unknown type 'f16' (f32, f64, i32, tf32x3 or all)\n");
  const auto bad = list("--layout nx");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "cm-tune: error: --layout: unknown layout 'nx' (nn, nt, tn, tt or all)\n");
}

// A family with several problems per block shows the launch key and, per candidate, its value; the
// others' lines and JSON are as before (no problems_per_block).
TEST(SpaceList, ProblemsPerBlockIsShownWhereABlockComputesSeveralProblems) {
  test::TempDir dir;
  const auto list = [&](const std::string& args) { return test::run_split(dir, "list --config quick --arch sm_90 " + args); };
  const auto text = list("--template fused_batch");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("strided-batched (several problems per block on grid z); types f32\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    problems_per_block  PPB\n"), std::string::npos) << text.out;
  EXPECT_EQ(list("--template multistage").out.find("problems_per_block"), std::string::npos);

  const auto candidates = list("--template fused_batch --candidates --layout all");
  ASSERT_EQ(candidates.exit_code, 0) << candidates.err;
  std::istringstream lines(candidates.out);
  int shown = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t ppb = line.find(",PPB=");
    ASSERT_NE(ppb, std::string::npos) << line;
    const std::string value = line.substr(ppb + 5, line.find(',', ppb + 5) - ppb - 5);
    EXPECT_NE(line.find(" grid_z=1 problems_per_block=" + value + "  requires: "), std::string::npos) << line;
    ++shown;
  }
  EXPECT_EQ(shown, 12) << "quick.toml: 3 fused_batch points in each of 4 layouts";
  EXPECT_EQ(list("--template smallk --candidates").out.find("problems_per_block"), std::string::npos);

  const auto json = nlohmann::json::parse(list("--template fused_batch --candidates --json").out);
  ASSERT_FALSE(json.empty());
  for (const auto& c : json) EXPECT_GE(c.at("launch").at("problems_per_block").get<int>(), 2) << c.dump();
  for (const auto& c : nlohmann::json::parse(list("--template smallk --candidates --json").out))
    EXPECT_FALSE(c.at("launch").contains("problems_per_block")) << c.dump();
  const auto described = nlohmann::json::parse(list("--template fused_batch --json").out);
  EXPECT_EQ(described.at("templates").at(0).at("launch").at("problems_per_block"), "PPB");
}

}  // namespace
}  // namespace cmt
