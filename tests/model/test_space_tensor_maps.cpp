// Families that read their operands through TMA ([launch] tensor_maps) and use one architecture's
// own features (arch_specific): the descriptor keys and their checks, the launch shape, the arch a
// family compiles for and its cache key, the built-in family that declares both (tf32x3_wgmma: sm_90
// targets only), and the shape's way through the store and the migration of older databases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compile/compile_service.hpp"
#include "core/error.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"
#include "db_builder.hpp"
#include "export/export_model.hpp"
#include "export/header_writer.hpp"
#include "export_fixtures.hpp"
#include "migration_check.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

TEST(TensorMaps, ADescriptorDeclaresThemAndItsArchitecture) {
  test::TempDir dir;
  const TemplateDesc tma = load_template(test::write_v_template(dir.path(), "tma", "arch_specific = true", "tensor_maps = true"));
  EXPECT_TRUE(tma.tensor_maps);
  EXPECT_TRUE(tma.arch_specific);
  EXPECT_EQ(tma.launch_shape({{"V", 1}}, test::sm90()).tensor_maps, 1);
  EXPECT_EQ(compile_arch(tma, "sm_90"), "sm_90a");
  EXPECT_EQ(compile_arch(tma, "sm_90a"), "sm_90a") << "already the arch-specific variant";
  EXPECT_EQ(compile_arch(tma, "sm_100"), "sm_100a");

  // Neither declared (or declared false): no maps, and the target's arch as it is.
  for (const auto& [top, launch] : {std::pair<std::string, std::string>{"", ""},
                                    {"arch_specific = false", "tensor_maps = false"}}) {
    const TemplateDesc plain = load_template(test::write_v_template(dir.path(), "plain", top, launch));
    EXPECT_FALSE(plain.tensor_maps) << top;
    EXPECT_FALSE(plain.arch_specific) << top;
    EXPECT_EQ(plain.launch_shape({{"V", 2}}, test::sm90()).tensor_maps, 0) << top;
    EXPECT_EQ(compile_arch(plain, "sm_90"), "sm_90") << top;
  }
}

TEST(TensorMaps, BadDeclarationsAreOneLineErrors) {
  test::TempDir dir;
  const auto error_of = [&](const std::string& top, const std::string& launch) {
    try {
      load_template(test::write_v_template(dir.path(), "bad", top, launch));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string maps = error_of("", "tensor_maps = \"yes\"");
  EXPECT_NE(maps.find("launch.tensor_maps: must be true or false"), std::string::npos) << maps;
  EXPECT_EQ(maps.find('\n'), std::string::npos) << maps;
  const std::string arch = error_of("arch_specific = 1", "");
  EXPECT_NE(arch.find("arch_specific: must be true or false"), std::string::npos) << arch;
  EXPECT_EQ(arch.find('\n'), std::string::npos) << arch;
}

TEST(TensorMaps, OnlyTf32x3WgmmaDeclaresThemAndItRunsOnComputeCapability90Alone) {
  const auto templates = load_templates({default_templates_dir()});
  for (const TemplateDesc& t : templates) {
    EXPECT_EQ(t.tensor_maps, t.name == "tf32x3_wgmma") << t.name;
    EXPECT_EQ(t.arch_specific, t.name == "tf32x3_wgmma") << t.name;
  }
  for (const std::string arch : {"sm_90", "sm_80", "sm_89", "sm_100"}) {
    Target target = target_for_arch(arch);
    target.layouts = {"nn", "nt", "tn", "tt"};
    target.dtypes = {DType::tf32x3};
    const SearchSpace space = enumerate_space(templates, load_preset(resolve_preset("default")), target);
    size_t wgmma = 0;
    for (const Candidate& c : space.candidates) {
      if (c.tmpl->name != "tf32x3_wgmma") {
        EXPECT_EQ(c.shape.tensor_maps, 0) << c.id();
        continue;
      }
      ++wgmma;
      EXPECT_EQ(c.shape.tensor_maps, 1) << c.id();
      // TMA's rules: 16-byte aligned operands, leading dimensions and strides of 16 bytes.
      EXPECT_EQ(c.requirements.align_bytes, 16) << c.id();
      EXPECT_EQ(c.requirements.ld_multiple, 4) << c.id();
    }
    // Every layout of the default grid (2 x 2 x 3 x 2 points) on sm_90; nowhere else.
    EXPECT_EQ(wgmma, arch == "sm_90" ? 96u : 0u) << arch;
  }
}

TEST(TensorMaps, TheCacheKeysAnArchSpecificBuildApart) {
  test::TempDir dir;
  const TemplateDesc plain = load_template(test::write_v_template(dir.path(), "plain", "", ""));
  TemplateDesc specific = plain;
  specific.arch_specific = true;
  const Candidate a{&plain, {{"V", 1}}, {}, {}};
  const Candidate b{&specific, {{"V", 1}}, {}, {}};
  // The service keys each build by the arch it compiles for: sm_90 and sm_90a apart.
  EXPECT_NE(compile_cache_key(a, "h", compile_arch(plain, "sm_90"), "13.0", {}),
            compile_cache_key(b, "h", compile_arch(specific, "sm_90"), "13.0", {}));
}

TEST(TensorMapsStore, TrialsAndWinnersKeepItAndTheHashCoversIt) {
  test::TempDir dir;
  const fs::path file = dir / "tma.db";
  test::tuned_database(file, "GPU-tma");
  Store store(file);
  const int64_t device = store.devices().at(0).id;
  auto winners = store.winners(device);
  ASSERT_FALSE(winners.empty());
  for (const WinnerRecord& w : winners) EXPECT_EQ(w.shape.tensor_maps, 0);
  const std::string hash = store.content_hash();
  WinnerRecord w = winners[0];
  w.shape.tensor_maps = 1;
  store.put_winner(w);
  EXPECT_NE(store.content_hash(), hash);
  bool found = false;
  for (const WinnerRecord& x : store.winners(device))
    if (x.trial_id == w.trial_id && x.scope == w.scope) found = x.shape.tensor_maps == 1;
  EXPECT_TRUE(found) << "the winner reads back with its tensor maps";
  store.put_winner(winners[0]);
  EXPECT_EQ(store.content_hash(), hash);

  TrialRecord t = store.trials(device).at(0);
  t.trial_key += "-tma";
  t.shape.tensor_maps = 1;
  store.insert_trial(t);
  ASSERT_TRUE(store.find_trial(t.trial_key));
  EXPECT_EQ(store.find_trial(t.trial_key)->shape.tensor_maps, 1);
}

TEST(TensorMapsStore, ADatabaseFromBeforeItKeepsItsRowsAndItsHash) {
  test::TempDir dir;
  const fs::path file = dir / "v7.db";
  test::tuned_database(file, "GPU-old");
  test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(test::expect_migration_keeps_trials(file, 7, "winners", "tensor_maps", m));
  for (const TrialRecord& t : m.after) EXPECT_EQ(t.shape.tensor_maps, 0);
}

}  // namespace
}  // namespace cmt

namespace cmt {
namespace {

using test::DbBuilder;
using test::KernelSpec;

// A TMA winner goes into the header like any other, its kernel row saying it takes tensor maps (the
// field written only where it is 1, so other rows read as before) and its function named without the
// cast to the 15-argument type; kernels without maps keep their rows and casts.
TEST(TensorMapsExport, TheHeaderMarksTmaKernelsAndNamesThemUncast) {
  test::TempDir dir;
  DbBuilder db(dir / "tma.db");
  export_fixtures::SyntheticFixture f;
  f.build(db);
  KernelSpec tma = f.synthetic(db, "tma", 1, true);
  tma.shape.tensor_maps = 1;
  const Problem p{1000, 1000, 1000};
  db.add_winner("GPU-aaaa", p, "overall", tma, 0.5);
  db.add_winner("GPU-aaaa", p, "portable", f.port1, 2.0);
  const ExportModel m = build_export_model(db.store(), {}, export_fixtures::fixture_blocktile2d());
  int index = -1;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    EXPECT_EQ(m.kernels[i].shape.tensor_maps, m.kernels[i].name_expression == tma.name_expression ? 1 : 0)
        << m.kernels[i].name_expression;
    if (m.kernels[i].name_expression == tma.name_expression) index = static_cast<int>(i);
  }
  ASSERT_GE(index, 0) << "the TMA winner is exported";
  const std::string header = render_header(m, "cmtune");   // of sources: kernel_pointer names each kernel
  const std::string row = fmt::format("0, 1}},  // {}: tma[V=1]", index);
  EXPECT_NE(header.find(row), std::string::npos) << "its row ends in tensor_maps = 1";
  EXPECT_NE(header.find(fmt::format("case {}: return reinterpret_cast<const void*>(&", index)), std::string::npos);
  EXPECT_NE(header.find("::cmt_sgemm_fast<1>));"), std::string::npos) << "the others keep their casts";
}

}  // namespace
}  // namespace cmt
