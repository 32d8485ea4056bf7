// cm-tune export: fixture databases built through the Store API (real SQLite, real template
// sources), flattening, the export model, golden dispatch tables and the header's provenance.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "export/cost_model.hpp"
#include "export/dispatch.hpp"
#include "export/header_writer.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"
#include "db_builder.hpp"
#include "test_support.hpp"
#include "core/source_bundle.hpp"

#include "export_fixtures.hpp"

namespace fs = std::filesystem;

namespace {

using namespace cmt;
using namespace cmt::export_fixtures;

// ---------------------------------------------------------------------------------------------
// Flattening and the generic default
// ---------------------------------------------------------------------------------------------

TEST(ExportFlatten, InlinesEachIncludeOnceInOrderAndDropsPragmaOnce) {
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"a.cuh", "#pragma once\n#include \"c.cuh\"\nint a;\n"},
      {"b.cuh", "#pragma once\n#include \"c.cuh\"\n#include \"a.cuh\"\nint b;\n"},
      {"c.cuh", "  #  pragma   once\nint c;\n"},
  };
  const std::string flat = flatten_source({"main.cuh", "#pragma once\n#include \"b.cuh\"\n#include \"a.cuh\"\nint main_;\n", headers});
  EXPECT_EQ(flat,
            "// ---- begin b.cuh (included by main.cuh) ----\n"
            "// ---- begin c.cuh (included by b.cuh) ----\n"
            "int c;\n"
            "// ---- end c.cuh ----\n"
            "// ---- begin a.cuh (included by b.cuh) ----\n"
            "int a;\n"
            "// ---- end a.cuh ----\n"
            "int b;\n"
            "// ---- end b.cuh ----\n"
            "int main_;\n");
}

TEST(ExportFlatten, RejectsAngleIncludesAndUnknownHeaders) {
  EXPECT_THROW(flatten_source({"m.cuh", "#include <cstdio>\n", {}}), UsageError);
  EXPECT_THROW(flatten_source({"m.cuh", "#include \"missing.cuh\"\n", {}}), UsageError);
}

TEST(ExportFlatten, RealTemplatesFlattenWithoutIncludes) {
  for (const auto& t : load_templates({default_templates_dir()})) {
    const SourceBundle b = t.load_source();
    const std::string flat = flatten_source(b);
    EXPECT_EQ(flat.find("#include"), std::string::npos) << t.name;
    EXPECT_EQ(flat.find("#pragma once"), std::string::npos) << t.name;
    EXPECT_NE(flat.find(t.kernel), std::string::npos) << t.name;
  }
}

TEST(ExportModel, GenericDefaultIsAValidBlocktile2dWithoutRequirements) {
  const TemplateDesc& t = builtin_blocktile2d();
  const bool layouts = t.layouts != std::vector<std::string>{"nn"};
  int builds = 0;
  for (const DType dtype : {DType::f32, DType::f64, DType::i32})
    for (const std::string_view layout : k_layout_names) {
      const auto values = generic_default_params(t, layout, dtype);
      if (!t.supports_layout(layout) || !t.supports_dtype(dtype)) {
        EXPECT_FALSE(values) << layout << " " << dtype_name(dtype);
        continue;
      }
      ASSERT_TRUE(values) << layout << " " << dtype_name(dtype);
      ++builds;
      const std::string trans =
          layouts ? fmt::format(",TRANS_A={},TRANS_B={}", layout[0] == 't' ? 1 : 0, layout[1] == 't' ? 1 : 0) : "";
      // One build per type the typed generic default computes, DTYPE last.
      const std::string dtype_param = t.dtypes.size() > 1 ? fmt::format(",DTYPE={}", static_cast<int>(dtype)) : "";
      EXPECT_EQ(params_to_string(*values), "BM=64,BN=64,BK=8,TM=8,TN=4" + trans + dtype_param);
      EXPECT_EQ(t.layout_of(*values), layout);
      EXPECT_EQ(t.dtype_of(*values), dtype);
      for (const auto& c : t.constraints) EXPECT_NE(t.eval(c.check, *values, test::sm90(), "constraint"), 0) << c.reason;
      EXPECT_TRUE(t.requirements(*values, test::sm90()).none());
      EXPECT_EQ(t.launch_shape(*values, test::sm90()).dynamic_smem, 0);
    }
  EXPECT_EQ(builds, 12) << "the built-in blocktile2d computes every layout of f32, f64 and i32";
  // The f32-only stand-in has no build of the other types.
  EXPECT_FALSE(generic_default_params(fixture_blocktile2d(), "nn", DType::f64));
  EXPECT_TRUE(generic_default_params(fixture_blocktile2d(), "nn", DType::f32));
}

// The point is the descriptor's [generic_default]; a constraint that rejects it gives way to the
// first valid point of the grid, and a template without one is no generic default.
TEST(ExportModel, GenericDefaultIsTheDescriptorsPoint) {
  TemplateDesc t = fixture_blocktile2d();
  t.generic_default = ParamValues{{"BM", 128}, {"BN", 64}, {"BK", 8}, {"TM", 8}, {"TN", 4}};
  EXPECT_EQ(params_to_string(*generic_default_params(t)), "BM=128,BN=64,BK=8,TM=8,TN=4");
  t.generic_default = ParamValues{{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 3}, {"TN", 4}};  // BM % TM != 0
  EXPECT_EQ(params_to_string(*generic_default_params(t)), "BM=64,BN=64,BK=8,TM=8,TN=4");
  t.generic_default.reset();
  const std::string msg = test::usage_error([&] { (void)generic_default_params(t); });
  EXPECT_NE(msg.find("template blocktile2d (" + t.descriptor_path.string() + ") declares no [generic_default]"),
            std::string::npos)
      << msg;
}

TEST(ExportModel, NamespaceNames) {
  EXPECT_TRUE(valid_namespace_name("cmtune"));
  EXPECT_TRUE(valid_namespace_name("app::gemm_v2"));
  EXPECT_FALSE(valid_namespace_name(""));
  EXPECT_FALSE(valid_namespace_name("1abc"));
  EXPECT_FALSE(valid_namespace_name("a::"));
  EXPECT_FALSE(valid_namespace_name("a b"));
}

// ---------------------------------------------------------------------------------------------
// The model: merging, sorting, errors; golden dispatch tables
// ---------------------------------------------------------------------------------------------

TEST(ExportModel, MergesDevicesSharingNameCcAndSmsAndSortsEverything) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.build(db);
  const ExportModel m = build_export_model(db.store(), {}, fixture_blocktile2d());

  ASSERT_EQ(m.kernels.size(), 7u);
  EXPECT_EQ(m.kernels[0].name_expression, "cmt_sgemm_blocktile2d<64, 64, 8, 8, 4>");
  EXPECT_EQ(m.kernels[1].name_expression, "cmt_sgemm_fast<1>");
  EXPECT_EQ(m.kernels[2].name_expression, "cmt_sgemm_fast<2>");
  EXPECT_EQ(m.kernels[3].name_expression, "cmt_sgemm_port<1>");
  EXPECT_EQ(m.kernels[4].name_expression, "cmt_sgemm_port<2>");
  EXPECT_EQ(m.kernels[5].name_expression, "cmt_sgemm_typed<1, 1>");
  EXPECT_EQ(m.kernels[6].name_expression, "cmt_sgemm_typed<1, 2>");
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(m.kernels[i].dtype, DType::f32) << i;
  EXPECT_EQ(m.kernels[5].dtype, DType::f64);
  EXPECT_EQ(m.kernels[6].dtype, DType::i32);
  // The stand-in generic computes f32 NN only: no generic default of the other types and layouts.
  EXPECT_EQ(m.generic_kernels[0][0], 0);
  for (int d = 0; d < k_header_dtypes; ++d)
    for (int l = 0; l < 4; ++l)
      if (d != 0 || l != 0) EXPECT_EQ(m.generic_kernels[d][l], -1) << d << " " << l;

  ASSERT_EQ(m.devices.size(), 2u);   // the never-tuned device is not exported
  EXPECT_EQ(m.devices[0].name, k_a100);
  EXPECT_EQ(m.devices[1].name, k_h100);
  ASSERT_EQ(m.devices[1].records.size(), 2u);
  EXPECT_EQ(m.devices[1].records[0].uuid, "GPU-aaaa");
  EXPECT_EQ(m.devices[1].records[1].uuid, "GPU-aaab");
  const auto& h = m.devices[1].entries;
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[0].problem, (Problem{256, 8192, 512}));
  EXPECT_EQ(h[1].problem, (Problem{1024, 1024, 1024}));
  EXPECT_EQ(h[1].primary, 2);    // fast<2> from GPU-aaab, 0.9 ms < 1.0 ms
  EXPECT_EQ(h[1].portable, 3);   // port<1> from GPU-aaaa, 1.5 ms < 1.6 ms
  // The same shape in f64 and i32: entries of their own, with kernels of their type (merged across
  // the two H100s: f64 was tuned on one, i32 on the other).
  EXPECT_EQ(h[2].problem, Problem::make(1024, 1024, 1024, false, false, 1, DType::f64));
  EXPECT_EQ(h[2].primary, 5);
  EXPECT_EQ(h[2].portable, -1);
  EXPECT_EQ(h[3].problem, Problem::make(1024, 1024, 1024, false, false, 1, DType::i32));
  EXPECT_EQ(h[3].primary, 6);
  EXPECT_EQ(h[4].problem, (Problem{4096, 4096, 4096}));
  EXPECT_EQ(h[4].portable, -1);
  ASSERT_EQ(m.devices[0].entries.size(), 1u);   // the template:fast scope is not a dispatch entry
  // Each typed kernel has a model, fitted on its own type's trials.
  int typed_models = 0;
  for (const auto& model : m.devices[1].models) typed_models += model.kernel >= 5;
  EXPECT_EQ(typed_models, 2);

  // Sources: the three synthetic bundles (each shared by both variants) and the generic default's.
  ASSERT_EQ(m.sources.size(), 4u);
  for (size_t i = 1; i < m.sources.size(); ++i) EXPECT_LT(m.sources[i - 1].hash, m.sources[i].hash);
}

TEST(ExportModel, DeviceSelectionExportsOnlyThatDevice) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.build(db);
  ExportOptions options;
  for (const auto& d : db.store().devices())
    if (d.uuid == "GPU-bbbb") options.device_ids.push_back(d.id);
  const ExportModel m = build_export_model(db.store(), options, fixture_blocktile2d());
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].name, k_a100);
  EXPECT_EQ(m.kernels.size(), 3u);   // generic, fast<1>, port<1>: nothing the A100 does not use
  EXPECT_EQ(m.sources.size(), 3u);
}

TEST(ExportModel, ErrorsAreUsageErrors) {
  test::TempDir dir;
  {
    DbBuilder db(dir / "empty.db");
    db.add_device("GPU-x", "Some GPU", 9, 0, 132);
    try {
      build_export_model(db.store(), {}, fixture_blocktile2d());
      FAIL() << "expected a UsageError";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("no tuned problems"), std::string::npos) << e.what();
    }
    ExportOptions one;
    one.device_ids.push_back(db.store().devices().at(0).id);
    EXPECT_THROW(build_export_model(db.store(), one, fixture_blocktile2d()), UsageError);
  }
  {
    // A winner whose binary was pruned from the compile cache cannot be exported.
    DbBuilder db(dir / "pruned.db");
    SyntheticFixture f;
    f.build(db);
    db.store().db().exec("DELETE FROM binaries");
    EXPECT_THROW(build_export_model(db.store(), {}, fixture_blocktile2d()), UsageError);
  }
  EXPECT_THROW(render_header(ExportModel{}, "not a namespace"), UsageError);
}

TEST(ExportModel, DtypeOptionKeepsOnlyThoseTypesWinners) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.build(db);
  ExportOptions only_f64;
  only_f64.dtypes = {DType::f64};
  const ExportModel m = build_export_model(db.store(), only_f64, fixture_blocktile2d());
  ASSERT_EQ(m.devices.size(), 1u) << "the A100 has no f64 winner";
  EXPECT_EQ(m.devices[0].name, k_h100);
  ASSERT_EQ(m.devices[0].entries.size(), 1u);
  EXPECT_EQ(m.devices[0].entries[0].problem.dtype, DType::f64);
  ASSERT_EQ(m.kernels.size(), 2u);   // the generic default, and the f64 winner
  EXPECT_EQ(m.kernels[1].name_expression, "cmt_sgemm_typed<1, 1>");
  ASSERT_EQ(m.devices[0].models.size(), 1u) << "no f32 trial fits a model when f32 is left out";
  EXPECT_EQ(m.devices[0].models[0].kernel, 1);

  ExportOptions f32_i32;
  f32_i32.dtypes = {DType::i32, DType::f32};
  const ExportModel n = build_export_model(db.store(), f32_i32, fixture_blocktile2d());
  ASSERT_EQ(n.devices.size(), 2u);
  EXPECT_EQ(n.devices[1].entries.size(), 4u);   // H100: three f32 problems and the i32 one
  for (const auto& k : n.kernels) EXPECT_NE(k.dtype, DType::f64) << k.name_expression;
  // Without the option every type is exported: the same as naming all three.
  ExportOptions all;
  all.dtypes = {DType::f32, DType::f64, DType::i32};
  EXPECT_EQ(render_dispatch_tables(build_export_model(db.store(), all, fixture_blocktile2d())),
            render_dispatch_tables(build_export_model(db.store(), {}, fixture_blocktile2d())));
}

TEST(ExportModel, NoWinnersOfTheRequestedTypesIsAOneLineUsageErrorNamingThem) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.port1 = f.synthetic(db, "port", 1, false);
  db.add_device("GPU-aaaa", k_h100, 9, 0, 132);
  db.add_winner("GPU-aaaa", {1024, 1024, 1024}, "overall", f.port1, 1.0);
  ExportOptions options;
  options.dtypes = {DType::f64, DType::i32};
  EXPECT_EQ(test::usage_error([&] { build_export_model(db.store(), options, fixture_blocktile2d()); }),
            fmt::format("database {} has no tuned problems of type f64, i32 (--dtype) to export; its tuned problems are "
                        "of type f32",
                        (dir / "t.db").string()));
  options.dtypes = {DType::f32};
  EXPECT_EQ(build_export_model(db.store(), options, fixture_blocktile2d()).devices.size(), 1u);
}

TEST(ExportModel, AWinnerWhoseKernelComputesAnotherTypeIsRefused) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.port1 = f.synthetic(db, "port", 1, false);
  db.add_device("GPU-aaaa", k_h100, 9, 0, 132);
  // An f32 kernel stored as an f64 problem's winner: the header would pass it doubles.
  db.add_winner("GPU-aaaa", Problem::make(64, 64, 64, false, false, 1, DType::f64), "overall", f.port1, 1.0);
  const std::string error = test::usage_error([&] { build_export_model(db.store(), {}, fixture_blocktile2d()); });
  EXPECT_NE(error.find("winner port[V=1] for 64x64x64:f64 on NVIDIA H100 80GB HBM3 computes f32, not f64"),
            std::string::npos)
      << error;
}

TEST(ExportGolden, DispatchTables) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.build(db);
  const std::string tables = render_dispatch_tables(build_export_model(db.store(), {}, fixture_blocktile2d()));
  const fs::path golden = k_fixtures / "dispatch_tables.golden";
  if (const char* update = std::getenv("CMTUNE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    test::write_file(golden, tables);
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with CMTUNE_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(tables, test::read_file(golden))
      << "the dispatch tables changed; if intended, re-run with CMTUNE_UPDATE_GOLDEN=1 and review the diff of " << golden;
}

// The opt-in class's winners in the tables: their kernel (dtype 3) and entries (dtype 3) beside the
// f32 ones of the same shapes, the class named in the kernel table's comment, and no generic default
// of it (the f32 ones serve its calls' fallback). Everything else is the f32-only golden's.
TEST(ExportModel, DispatchTablesWithTheTf32x3ClassMatchTheirGolden) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  SyntheticFixture f;
  f.tf32x3 = true;
  f.build(db);
  const std::string tables = render_dispatch_tables(build_export_model(db.store(), {}, fixture_blocktile2d()));
  const fs::path golden = k_fixtures / "dispatch_tables_tf32x3.golden";
  if (const char* update = std::getenv("CMTUNE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    test::write_file(golden, tables);
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with CMTUNE_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(tables, test::read_file(golden))
      << "the dispatch tables changed; if intended, re-run with CMTUNE_UPDATE_GOLDEN=1 and review the diff of " << golden;
  EXPECT_NE(tables.find("{{1024, 1024, 1024, 0, 1, 0, 3}, "), std::string::npos);
  EXPECT_NE(tables.find("{{4096, 4096, 4096, 0, 1, 0, 3}, "), std::string::npos);
}

// A database with tf32x3 winners exported without the class (--dtype f32,f64,i32) gives the tables
// of the same database without them, byte for byte: the class's trials fit no model of another type.
TEST(ExportModel, LeavingTheClassOutGivesTheTablesOfADatabaseWithoutIt) {
  test::TempDir dir;
  std::string without, left_out;
  {
    DbBuilder db(dir / "a.db");
    SyntheticFixture f;
    f.build(db);
    without = render_dispatch_tables(build_export_model(db.store(), {}, fixture_blocktile2d()));
  }
  {
    DbBuilder db(dir / "b.db");
    SyntheticFixture f;
    f.tf32x3 = true;
    f.build(db);
    ExportOptions options;
    options.dtypes = {DType::f32, DType::f64, DType::i32};
    left_out = render_dispatch_tables(build_export_model(db.store(), options, fixture_blocktile2d()));
  }
  EXPECT_EQ(left_out, without);
  EXPECT_EQ(without.find("tf32x3"), std::string::npos);
}

TEST(ExportHeader, HoldsUsedSourcesOnlyAndProvenanceWithoutTimes) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.build(db);
  const ExportModel model = build_export_model(db.store(), {}, builtin_blocktile2d());
  const std::string header = render_header(model, "cmtune");

  // Bundles: multistage, clusterk, warptile, blocktile2d_vec, fused_batch and blocktile2d (winner and
  // generic share it).
  EXPECT_EQ(model.sources.size(), 6u);
  for (const auto& s : model.sources)
    EXPECT_NE(header.find("namespace src_" + s.hash.substr(0, 12) + " {"), std::string::npos) << s.main_name;
  for (const char* unused : {"cmt_sgemm_naive", "cmt_sgemm_coalesced", "cmt_sgemm_smem_tiled", "cmt_sgemm_blocktile1d"})
    EXPECT_EQ(header.find(unused), std::string::npos) << unused;
  EXPECT_NE(header.find(db.store().content_hash()), std::string::npos);
  EXPECT_NE(header.find(CMTUNE_VERSION), std::string::npos);
  EXPECT_NE(header.find(k_h100_uuid), std::string::npos);
  EXPECT_NE(header.find("NVRTC 13.0"), std::string::npos);
  EXPECT_EQ(header.find("#include \""), std::string::npos);
  EXPECT_EQ(header.find("#pragma once"), header.rfind("#pragma once"));   // the header's own only
  // No timestamps: nothing that looks like a date or a time of day.
  EXPECT_FALSE(std::regex_search(header, std::regex(R"(\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2})")));
  // The includes are the CUDA runtime, and the standard library and POSIX for recording calls
  // (export/runtime/header_includes.h): nothing of cm-tune's.
  std::smatch m;
  std::string rest = header;
  std::vector<std::string> includes;
  while (std::regex_search(rest, m, std::regex(R"(#\s*include\s*[<"][^>"]*[>"])"))) {
    includes.push_back(m.str());
    rest = m.suffix();
  }
  ASSERT_FALSE(includes.empty());
  EXPECT_EQ(includes.front(), "#include <cuda_runtime.h>");
  const std::set<std::string> allowed = {"<cuda_runtime.h>", "<cuda.h>", "<atomic>", "<cerrno>", "<chrono>", "<condition_variable>", "<cstdio>",
                                         "<cstdlib>", "<cstring>", "<deque>", "<mutex>", "<new>", "<string>", "<thread>",
                                         "<unordered_set>", "<fcntl.h>", "<pthread.h>", "<unistd.h>"};
  for (const auto& include : includes)
    EXPECT_TRUE(allowed.count(include.substr(include.find('<')))) << include;
  // The multistage kernel needs > 48 KiB and cp.async: the header raises the limit and guards the arch.
  EXPECT_NE(header.find(fmt::format(", {}, 1, {}, {}, 0, ", f.ms4.shape.dynamic_smem, f.ms4.requirements.align_bytes,
                                    f.ms4.requirements.ld_multiple)),
            std::string::npos);
  // The clusterk kernel launches 3 blocks per tile along z, and its cluster is compiled for sm_90 only.
  EXPECT_EQ(f.ck.shape.grid_z, 3);
  EXPECT_NE(header.find(fmt::format(", {}, 3, 4, 1, 0, ", f.ck.shape.dynamic_smem)), std::string::npos);
  EXPECT_NE(header.find("__cluster_dims__(1, 1, n)"), std::string::npos);
  EXPECT_NE(header.find("__CUDA_ARCH__ < 800"), std::string::npos);
  // Identical macro definitions of several bundles are undefined after each.
  EXPECT_NE(header.find("#undef CMT_DEVICE"), std::string::npos);
  // Only the fused kernel computes several problems per block and takes the problem count: its row
  // ends in its problems per block, the others' in 0, and its function is a BatchCountKernelFn.
  EXPECT_EQ(f.fb.shape.problems_per_block, 8);
  int counted = 0;
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const ExportKernel& k = model.kernels[i];
    const std::string row_end = fmt::format(", {}, {}, {}, {}, {}}},  // {}: ", layout_number(k.layout), k.batched ? 1 : 0,
                                            k.template_name == "fused_batch" ? 8 : 0, static_cast<int>(k.dtype),
                                            k.shape.tensor_maps != 0 ? 1 : 0, i);
    EXPECT_NE(header.find(row_end), std::string::npos) << k.name_expression << ": " << row_end;
    EXPECT_EQ(k.takes_batch_count, k.template_name == "fused_batch") << k.name_expression;
    EXPECT_EQ(k.shape.problems_per_block, k.template_name == "fused_batch" ? 8 : 1) << k.name_expression;
    const bool cast = header.find(fmt::format("case {}: return reinterpret_cast<const void*>(static_cast<BatchCountKernelFn>(", i)) !=
                      std::string::npos;
    EXPECT_EQ(cast, k.takes_batch_count) << k.name_expression;
    counted += k.takes_batch_count;
  }
  EXPECT_EQ(counted, 1);
  // It has a cost model of its own on the H100, fitted on the batches it was measured on.
  const size_t h100 = model.devices[0].name == k_h100 ? 0 : 1;
  const auto fused = std::find_if(model.devices[h100].models.begin(), model.devices[h100].models.end(), [&](const auto& m) {
    return model.kernels[static_cast<size_t>(m.kernel)].template_name == "fused_batch";
  });
  ASSERT_NE(fused, model.devices[h100].models.end());
  EXPECT_GT(fused->points, 1);
}


}  // namespace
