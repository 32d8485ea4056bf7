// Several problems per block ([launch] problems_per_block): the descriptor key and its checks, the
// launch shape it gives, the planner that splits a batch into launches whose grid z fits, the built-in
// family that declares it, and the shape's way through the store (trials, winners, binaries, the
// content hash) and the migration of databases written before it existed.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/types.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "migration_check.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

Preset preset_for(const std::string& name) {
  Preset p;
  p.file = "inline.toml";
  p.name = "inline";
  p.templates.push_back(PresetTemplate{name, {}});
  return p;
}

TEST(ProblemsPerBlock, ADescriptorDeclaresItAndItsKernelTakesTheCount) {
  test::TempDir dir;
  const TemplateDesc fused =
      load_template(test::write_v_template(dir.path(), "fused", "batched = true", "problems_per_block = \"2*V\""));
  EXPECT_TRUE(fused.takes_batch_count());
  EXPECT_EQ(fused.launch_shape({{"V", 1}}, test::sm90()).problems_per_block, 2);
  EXPECT_EQ(fused.launch_shape({{"V", 2}}, test::sm90()).problems_per_block, 4);
  // The other launch values are as without it.
  EXPECT_EQ(fused.launch_shape({{"V", 2}}, test::sm90()).grid_z, 1);
  EXPECT_EQ(fused.launch_shape({{"V", 2}}, test::sm90()).threads, 128);

  // Not declared: one problem per block, and no problem count, batched or not.
  for (const std::string top : {"batched = true", ""}) {
    const TemplateDesc plain = load_template(test::write_v_template(dir.path(), "plain", top, ""));
    EXPECT_FALSE(plain.takes_batch_count()) << top;
    EXPECT_EQ(plain.launch_shape({{"V", 2}}, test::sm90()).problems_per_block, 1) << top;
  }
  // Declared as 1 at a point: the kernel still takes the count (its signature does not depend on the value).
  const TemplateDesc one = load_template(test::write_v_template(dir.path(), "one", "batched = true", "problems_per_block = 1"));
  EXPECT_TRUE(one.takes_batch_count());
  EXPECT_EQ(one.launch_shape({{"V", 1}}, test::sm90()).problems_per_block, 1);

  // Candidates carry the value in their launch shape.
  const std::vector<TemplateDesc> templates{fused};
  const SearchSpace space = enumerate_space(templates, preset_for("fused"), test::sm90());
  ASSERT_EQ(space.candidates.size(), 2u);
  EXPECT_EQ(space.candidates[0].shape.problems_per_block, 2);
  EXPECT_EQ(space.candidates[1].shape.problems_per_block, 4);
}

TEST(ProblemsPerBlock, BadDeclarationsAreOneLineErrors) {
  test::TempDir dir;
  const auto load_error = [&](const std::string& top, const std::string& launch) {
    return test::usage_error([&] { load_template(test::write_v_template(dir.path(), "bad", top, launch)); });
  };
  const std::string unbatched = load_error("", "problems_per_block = \"4\"");
  EXPECT_NE(unbatched.find("bad.toml:"), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("launch.problems_per_block: only a batched family (batched = true) computes several "
                           "problems per block"),
            std::string::npos)
      << unbatched;
  EXPECT_EQ(unbatched.find('\n'), std::string::npos) << unbatched;
  EXPECT_NE(load_error("batched = false", "problems_per_block = \"4\"").find("only a batched family"), std::string::npos);
  EXPECT_NE(load_error("batched = true", "problems_per_block = \"Q\"").find("names unknown parameter 'Q'"),
            std::string::npos);
  EXPECT_NE(load_error("batched = true", "problems_per_block = true").find("launch.problems_per_block: must be a string"),
            std::string::npos);
  EXPECT_NE(load_error("batched = true", "problems_per_block = \"V +\"").find("launch.problems_per_block"),
            std::string::npos);

  // A value outside 1..4096 at a point stops the enumeration, naming the point.
  const auto enumerate_error = [&](const std::string& expr) {
    const std::vector<TemplateDesc> templates{
        load_template(test::write_v_template(dir.path(), "range", "batched = true", "problems_per_block = \"" + expr + "\""))};
    return test::usage_error([&] { enumerate_space(templates, preset_for("range"), test::sm90()); });
  };
  const std::string zero = enumerate_error("V - 1");
  EXPECT_NE(zero.find("launch.problems_per_block is 0 at V=1; it must be 1 to 4096"), std::string::npos) << zero;
  EXPECT_EQ(zero.find('\n'), std::string::npos) << zero;
  EXPECT_NE(enumerate_error("-3").find("launch.problems_per_block is -3 at V=1"), std::string::npos);
  EXPECT_NE(enumerate_error("4096 * V").find("launch.problems_per_block is 8192 at V=2"), std::string::npos);
  // A constraint keeps such points out, as the message says.
  const std::vector<TemplateDesc> constrained{load_template(test::write_v_template(
      dir.path(), "kept", "batched = true\n[[constraint]]\ncheck = \"V >= 2\"\nreason = \"at least one problem\"",
      "problems_per_block = \"V - 1\""))};
  EXPECT_EQ(enumerate_space(constrained, preset_for("kept"), test::sm90()).candidates.size(), 1u);
}

/// Checks what every plan must hold: consecutive launches covering [0, batch), each grid z within
/// 65535 and equal to grid_z * ceil(count / problems_per_block), all but the last as full as that allows.
void expect_valid_plan(const LaunchShape& shape, int64_t batch, const std::vector<BatchLaunch>& plan) {
  int64_t next = 0;
  const int64_t per_launch = (k_max_grid_z / shape.grid_z) * shape.problems_per_block;
  for (size_t i = 0; i < plan.size(); ++i) {
    const BatchLaunch& l = plan[i];
    EXPECT_EQ(l.first, next) << i;
    EXPECT_GE(l.count, 1) << i;
    EXPECT_LE(l.grid_z, k_max_grid_z) << i;
    EXPECT_EQ(l.grid_z, shape.grid_z * ((l.count + shape.problems_per_block - 1) / shape.problems_per_block)) << i;
    if (i + 1 < plan.size()) EXPECT_EQ(l.count, per_launch) << i;
    next += l.count;
  }
  EXPECT_EQ(next, std::max<int64_t>(batch, 0));
}

TEST(ProblemsPerBlock, LaunchesKeepGridZWithin65535AndEachPassesItsOwnCount) {
  LaunchShape one;  // one problem per block, one block per tile along z
  one.threads = 128;
  one.tile_m = one.tile_n = 64;
  using Plan = std::vector<std::tuple<int64_t, int64_t, int64_t>>;
  const auto plan = [](const LaunchShape& s, int64_t batch) {
    Plan out;
    for (const BatchLaunch& l : batch_launches(s, batch)) out.emplace_back(l.first, l.count, l.grid_z);
    return out;
  };
  // As before problems per block: one launch up to 65535 problems, then another.
  EXPECT_EQ(plan(one, 1), (Plan{{0, 1, 1}}));
  EXPECT_EQ(plan(one, 65535), (Plan{{0, 65535, 65535}}));
  EXPECT_EQ(plan(one, 70000), (Plan{{0, 65535, 65535}, {65535, 4465, 4465}}));
  EXPECT_TRUE(plan(one, 0).empty());

  LaunchShape four = one;
  four.problems_per_block = 4;
  // 7 problems: 2 blocks along z (4 + 3); 5: 4 + 1; 3: one block with fewer problems than it could take.
  EXPECT_EQ(plan(four, 7), (Plan{{0, 7, 2}}));
  EXPECT_EQ(plan(four, 5), (Plan{{0, 5, 2}}));
  EXPECT_EQ(plan(four, 3), (Plan{{0, 3, 1}}));
  // 65535 blocks of 4 problems per launch: 262140 problems, then the rest with its own count.
  EXPECT_EQ(plan(four, 262140), (Plan{{0, 262140, 65535}}));
  EXPECT_EQ(plan(four, 300001), (Plan{{0, 262140, 65535}, {262140, 37861, 9466}}));

  LaunchShape clustered = four;  // blocks per tile along z and problems per block together
  clustered.grid_z = 3;
  clustered.problems_per_block = 2;
  EXPECT_EQ(plan(clustered, 43690), (Plan{{0, 43690, 65535}}));
  EXPECT_EQ(plan(clustered, 43691), (Plan{{0, 43690, 65535}, {43690, 1, 3}}));

  for (const LaunchShape& s : {one, four, clustered})
    for (const int64_t batch : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{16384}, int64_t{65536}, int64_t{262141},
                                int64_t{1000003}})
      expect_valid_plan(s, batch, batch_launches(s, batch));
}

TEST(ProblemsPerBlock, OnlyFusedBatchDeclaresItAndItsCandidatesLaunchWithTheirPpb) {
  const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  const TemplateDesc* fused = find_template(templates, "fused_batch");
  ASSERT_NE(fused, nullptr);
  EXPECT_TRUE(fused->batched);
  EXPECT_TRUE(fused->takes_batch_count());
  EXPECT_EQ(fused->layouts, (std::vector<std::string>{"nn", "nt", "tn", "tt"}));
  for (const TemplateDesc& t : templates)
    if (t.name != "fused_batch") EXPECT_FALSE(t.takes_batch_count()) << t.name << ": its kernel takes no problem count";

  Target target = test::sm90();
  target.layouts = {"nn", "nt", "tn", "tt"};
  const SearchSpace quick = enumerate_space(templates, load_preset(resolve_preset("quick")), target);
  std::set<int64_t> ppbs, vecs;
  std::set<std::string> layouts;
  for (const Candidate& c : quick.candidates) {
    if (c.tmpl->name != "fused_batch") {
      EXPECT_EQ(c.shape.problems_per_block, 1) << c.id();
      continue;
    }
    EXPECT_EQ(c.shape.problems_per_block, find_param(c.values, "PPB").value()) << c.id();
    EXPECT_EQ(c.shape.grid_z, 1) << c.id();
    ppbs.insert(c.shape.problems_per_block);
    vecs.insert(find_param(c.values, "VEC").value());
    layouts.insert(c.tmpl->layout_of(c.values));
    // Served everywhere (correct on every problem); tried on batches of small products.
    const ParamValues& v = c.values;
    const bool ta = find_param(v, "TRANS_A").value() != 0, tb = find_param(v, "TRANS_B").value() != 0;
    EXPECT_TRUE(c.tmpl->serves(v, Problem::make(100, 100, 100, ta, tb, 1))) << c.id();
    EXPECT_TRUE(c.tmpl->serves(v, Problem::make(100, 100, 100, ta, tb, 7))) << c.id();
    EXPECT_TRUE(c.tmpl->applies_to(v, target, Problem::make(64, 64, 64, ta, tb, 4096))) << c.id();
    EXPECT_FALSE(c.tmpl->applies_to(v, target, Problem::make(64, 64, 64, ta, tb, 1))) << c.id() << ": one problem";
    EXPECT_FALSE(c.tmpl->applies_to(v, target, Problem::make(1024, 1024, 64, ta, tb, 4096))) << c.id();
  }
  // quick.toml: single floats and 16-byte copies, and a problems per block that 5 and 7 do not divide.
  EXPECT_EQ(vecs, (std::set<int64_t>{1, 4}));
  EXPECT_EQ(layouts, (std::set<std::string>{"nn", "nt", "tn", "tt"}));
  EXPECT_TRUE(std::any_of(ppbs.begin(), ppbs.end(), [](int64_t p) { return 5 % p != 0 && 7 % p != 0 && p < 5; }));
  EXPECT_TRUE(std::any_of(ppbs.begin(), ppbs.end(), [](int64_t p) { return p > 7; })) << "a block with fewer problems";
}

/// A binary, a trial and its winner for a kernel with `per_block` problems per block.
struct FusedRows {
  BinaryRecord binary;
  TrialRecord trial;
  WinnerRecord winner;
};

FusedRows fused_rows(Store& store, int64_t device, int64_t run, int64_t per_block) {
  FusedRows r;
  r.binary.key = fmt::format("binary-fused-{}", per_block);
  r.binary.template_name = "fused_batch";
  r.binary.params = fmt::format("PPB={}", per_block);
  r.binary.arch = "sm_90";
  r.binary.source_hash = "source";
  r.binary.ok = true;
  r.binary.cubin = {'x'};
  r.binary.batched = true;
  r.binary.takes_batch_count = true;
  store.put_binary(r.binary);
  const Problem p = Problem::make(64, 64, 64, false, false, 4096);
  r.trial.trial_key = fmt::format("trial-fused-{}", per_block);
  r.trial.run_id = run;
  r.trial.device_id = device;
  r.trial.template_name = "fused_batch";
  r.trial.params = r.binary.params;
  r.trial.name_expression = fmt::format("cmt_sgemm_fused_batch<{}>", per_block);
  r.trial.binary_key = r.binary.key;
  r.trial.problem = p;
  r.trial.lda = r.trial.ldb = r.trial.ldc = 64;
  r.trial.median_ms = 0.1;
  r.trial.shape = {128, 64, 64, 32768, 1, per_block};
  r.trial.requirements = {16, 4};
  r.winner.device_id = device;
  r.winner.problem = p;
  r.winner.scope = "overall";
  r.winner.trial_id = store.insert_trial(r.trial).id;
  r.winner.template_name = "fused_batch";
  r.winner.params = r.trial.params;
  r.winner.name_expression = r.trial.name_expression;
  r.winner.median_ms = 0.1;
  r.winner.gflops = 1;
  r.winner.ratio_to_cublas = 1.2;
  r.winner.requirements = r.trial.requirements;
  r.winner.shape = r.trial.shape;
  r.winner.binary_key = r.binary.key;
  store.put_winner(r.winner);
  return r;
}

TEST(ProblemsPerBlockStore, TrialsWinnersAndBinariesKeepIt) {
  test::TempDir dir;
  Store store(dir / "ppb.db");
  DeviceRecord d;
  d.uuid = "GPU-ppb";
  d.name = "H100";
  const int64_t device = store.upsert_device(d);
  const int64_t run = store.begin_run(RunRecord{});
  const FusedRows rows = fused_rows(store, device, run, 8);

  const auto binary = store.find_binary(rows.binary.key);
  ASSERT_TRUE(binary);
  EXPECT_TRUE(binary->batched);
  EXPECT_TRUE(binary->takes_batch_count);
  const auto trial = store.find_trial(rows.trial.trial_key);
  ASSERT_TRUE(trial);
  EXPECT_EQ(trial->shape.problems_per_block, 8);
  EXPECT_EQ(trial->shape.dynamic_smem, 32768);
  EXPECT_EQ(trial->shape.grid_z, 1);
  const auto winners = store.winners(device);
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(winners[0].shape.problems_per_block, 8);
  EXPECT_EQ(winners[0].binary_key, rows.binary.key);

  // The content hash covers it: the same winner with another problems per block hashes apart.
  const std::string hash = store.content_hash();
  WinnerRecord other = rows.winner;
  other.shape.problems_per_block = 4;
  store.put_winner(other);
  EXPECT_NE(store.content_hash(), hash);
  store.put_winner(rows.winner);
  EXPECT_EQ(store.content_hash(), hash);

  // A binary of a kernel without the count reads back without it.
  BinaryRecord plain = rows.binary;
  plain.key = "binary-plain";
  plain.takes_batch_count = false;
  store.put_binary(plain);
  EXPECT_FALSE(store.find_binary("binary-plain")->takes_batch_count);
}

TEST(ProblemsPerBlockStore, ADatabaseFromBeforeItKeepsItsRowsAndItsHash) {
  test::TempDir dir;
  const fs::path file = dir / "v4.db";
  test::tuned_database(file, "GPU-old");
  test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(test::expect_migration_keeps_trials(file, 4, "winners", "problems_per_block", m));
  for (const TrialRecord& t : m.after) EXPECT_EQ(t.shape.problems_per_block, 1);
  Store store(file);
  const int64_t device = store.devices().at(0).id;
  for (const auto& w : store.winners(device)) {
    EXPECT_EQ(w.shape.problems_per_block, 1);
    const auto binary = store.find_binary(w.binary_key);
    ASSERT_TRUE(binary);
    EXPECT_FALSE(binary->takes_batch_count);
  }
}

}  // namespace
}  // namespace cmt
