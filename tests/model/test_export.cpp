// cm-tune export and the dispatch logic it shares with `cm-tune query`: fixture databases built
// through the Store API (real SQLite, real template sources), the header compiled with nvcc (no
// GPU needed), golden dispatch tables, and the header's own kernel choice against choose_kernel().
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

namespace fs = std::filesystem;

namespace {

using namespace cmt;

const fs::path k_fixtures = fs::path(CMTUNE_TEST_FIXTURES) / "export";

// ---------------------------------------------------------------------------------------------
// Fixture databases
// ---------------------------------------------------------------------------------------------

using test::DbBuilder;
using test::KernelSpec;

const TemplateDesc& find_desc(const std::vector<TemplateDesc>& templates, const std::string& name) {
  for (const auto& t : templates)
    if (t.name == name) return t;
  throw std::runtime_error("no template " + name);
}

bool config_valid(const TemplateDesc& t, const ParamValues& values) {
  try {
    return !t.failed_constraint(values, test::sm90());
  } catch (const UsageError&) {   // e.g. a constraint naming a parameter the preferred values lack
    return false;
  }
}

/// What the fixture needs of a kernel (e.g. input requirements, or > 48 KiB of shared memory).
using KernelWant = std::function<bool(const LaunchShape&, const Requirements&)>;

/// A real kernel: descriptor-evaluated name, shape and requirements. The preferred values are used
/// when the descriptor accepts them and the result is what the fixture wants; otherwise the first
/// such point of the descriptor's grid, so the fixture survives edits to the templates.
KernelSpec real_kernel(DbBuilder& db, const std::vector<TemplateDesc>& templates, const std::string& name,
                       const std::string& preferred, const KernelWant& want) {
  const TemplateDesc& t = find_desc(templates, name);
  const ParamValues wanted = params_from_string(preferred);
  const std::string layout = t.layout_of(wanted);
  const DType dtype = t.dtype_of(wanted);
  const auto acceptable = [&](const ParamValues& v) {
    return config_valid(t, v) && t.layout_of(v) == layout && t.dtype_of(v) == dtype &&
           want(t.launch_shape(v, test::sm90()), t.requirements(v, test::sm90()));
  };
  ParamValues values;
  for (const auto& p : t.params) values.emplace_back(p.name, find_param(wanted, p.name).value_or(p.values.at(0)));
  if (!acceptable(values)) {
    std::vector<std::vector<int64_t>> lists;
    for (const auto& p : t.params) lists.push_back(p.values);
    bool found = false;
    walk_grid(t, lists, [&](const ParamValues& point) {
      found = acceptable(point);
      if (found) values = point;
      return !found;
    });
    if (!found) throw std::runtime_error("no configuration of " + name + " suits the fixture");
  }
  KernelSpec k;
  k.template_name = name;
  k.params = params_to_string(values);
  k.name_expression = t.name_expression(values);
  k.shape = t.launch_shape(values, test::sm90());
  k.requirements = t.requirements(values, test::sm90());
  k.source_hash = db.add_source(name, t.load_source());
  k.batched = t.batched;
  k.takes_batch_count = t.takes_batch_count();
  return k;
}

constexpr const char* k_h100 = "NVIDIA H100 80GB HBM3";
constexpr const char* k_a100 = "NVIDIA A100-SXM4-40GB";
constexpr const char* k_h100_uuid = "GPU-11111111-0000-0000-0000-000000000001";
constexpr const char* k_a100_uuid = "GPU-22222222-0000-0000-0000-000000000002";

/// The real-source fixture: two devices, six kernels of five templates, with and without
/// requirements, one needing more than 48 KiB of dynamic shared memory, one launching a cluster
/// along z with thin edges (clusterk, which the sm_80 build compiles without clusters), and one
/// computing several problems of a batch per block (fused_batch, which takes the problem count).
struct RealFixture {
  std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  KernelSpec ms4, ms1, wt, bv, b2, ck;
  KernelSpec ms_tn, b2_nt;   // a TN multistage with requirements, a batched NT blocktile2d without
  KernelSpec fb;             // fused_batch, nn, 8 problems per block
  /// With `typed`, FP64 and INT32 winners too (add_typed): dmma (f64 tensor cores, 16-byte
  /// requirements) in NN and TN, blocktile2d builds of f64 and i32, on shapes that f32 winners share.
  bool typed = false;
  KernelSpec dm, dm_tn, b2_f64, b2_i32, b2_i32_nt;
  int64_t h100 = 0, a100 = 0;

  void build(DbBuilder& db) {
    const auto big_smem_with_requirements = [](const LaunchShape& s, const Requirements& r) {
      return s.dynamic_smem > 48 * 1024 && !r.none();
    };
    const auto with_requirements = [](const LaunchShape&, const Requirements& r) { return !r.none(); };
    const auto without_requirements = [](const LaunchShape&, const Requirements& r) { return r.none(); };
    ms4 = real_kernel(db, templates, "multistage",
                      "BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,STAGES=3,VEC=4,PAD=4,SPLITK=1",
                      big_smem_with_requirements);
    ms1 = real_kernel(db, templates, "multistage",
                      "BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=1,TM=4,TN=4,STAGES=2,VEC=1,PAD=0,SPLITK=1",
                      without_requirements);
    wt = real_kernel(db, templates, "warptile", "BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=8,TN=4,PAD=4,VEC=4",
                     with_requirements);
    bv = real_kernel(db, templates, "blocktile2d_vec", "BM=128,BN=128,BK=8,TM=8,TN=8", with_requirements);
    b2 = real_kernel(db, templates, "blocktile2d", "BM=128,BN=64,BK=16,TM=8,TN=4", without_requirements);
    ck = real_kernel(db, templates, "clusterk",
                     "BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,STAGES=3,VEC=1,PAD=4,SPLITK=1,CLUSTER_K=3,THIN_EDGE=4",
                     without_requirements);
    ms_tn = real_kernel(db, templates, "multistage",
                        "BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,STAGES=3,VEC=4,PAD=4,SPLITK=1,TRANS_A=1,TRANS_B=0",
                        with_requirements);
    b2_nt = real_kernel(db, templates, "blocktile2d", "BM=64,BN=64,BK=8,TM=8,TN=4,TRANS_A=0,TRANS_B=1",
                        without_requirements);
    fb = real_kernel(db, templates, "fused_batch", "BM=64,BN=64,BK=32,TM=8,TN=4,STAGES=3,PPB=8,VEC=4,TRANS_A=0,TRANS_B=0",
                     [](const LaunchShape& s, const Requirements& r) { return s.problems_per_block > 1 && !r.none(); });
    h100 = db.add_device(k_h100_uuid, k_h100, 9, 0, 132);
    a100 = db.add_device(k_a100_uuid, k_a100, 8, 0, 108);
    db.add_winner(k_h100_uuid, {1024, 1024, 1024}, "overall", ms4, 0.10);
    db.add_winner(k_h100_uuid, {1024, 1024, 1024}, "portable", ms1, 0.15);
    db.add_winner(k_h100_uuid, {4096, 4096, 4096}, "overall", wt, 5.0);
    db.add_winner(k_h100_uuid, {4096, 4096, 4096}, "portable", b2, 9.0);
    db.add_winner(k_h100_uuid, {512, 2048, 256}, "overall", bv, 0.02);   // no portable winner
    db.add_winner(k_h100_uuid, {1023, 1023, 1023}, "overall", ck, 0.06);
    db.add_winner(k_h100_uuid, {1023, 1023, 1023}, "portable", ck, 0.06);
    db.add_winner(k_a100_uuid, {2048, 2048, 2048}, "overall", wt, 1.5);
    db.add_winner(k_a100_uuid, {2048, 2048, 2048}, "portable", ms1, 2.0);
    db.add_winner(k_a100_uuid, {128, 128, 128}, "overall", b2, 0.01);
    db.add_winner(k_a100_uuid, {128, 128, 128}, "portable", b2, 0.01);
    db.add_winner(k_h100_uuid, Problem::make(1024, 1024, 1024, true, false), "overall", ms_tn, 0.11);
    db.add_winner(k_h100_uuid, Problem::make(64, 64, 64, false, true, 4096), "overall", b2_nt, 0.2);
    db.add_winner(k_h100_uuid, Problem::make(64, 64, 64, false, true, 4096), "portable", b2_nt, 0.2);
    db.add_winner(k_h100_uuid, Problem::make(64, 64, 64, false, false, 4096), "overall", fb, 0.05);
    db.add_winner(k_h100_uuid, Problem::make(64, 64, 64, false, false, 4096), "portable", b2, 0.12);
    add_calibration(db);
    if (typed) add_typed(db);
  }

  static Problem f64(Problem p) {
    p.dtype = DType::f64;
    return p;
  }
  static Problem i32(Problem p) {
    p.dtype = DType::i32;
    return p;
  }

  /// FP64 and INT32 winners on both devices (some on the shapes of f32 winners: only the type tells
  /// the entries apart), and calibration trials of each typed kernel on problems of its type.
  void add_typed(DbBuilder& db) {
    const auto with_requirements = [](const LaunchShape&, const Requirements& r) { return !r.none(); };
    const auto without_requirements = [](const LaunchShape&, const Requirements& r) { return r.none(); };
    dm = real_kernel(db, templates, "dmma",
                     "BM=64,BN=64,BK=16,WM=32,WN=32,MMA=0,STAGES=3,VEC=2,PAD=4,SWIZZLE=1,TRANS_A=0,TRANS_B=0,DTYPE=1",
                     with_requirements);
    dm_tn = real_kernel(db, templates, "dmma",
                        "BM=64,BN=64,BK=16,WM=32,WN=32,MMA=0,STAGES=3,VEC=2,PAD=4,SWIZZLE=1,TRANS_A=1,TRANS_B=0,DTYPE=1",
                        with_requirements);
    b2_f64 = real_kernel(db, templates, "blocktile2d", "BM=64,BN=64,BK=8,TM=4,TN=4,TRANS_A=0,TRANS_B=0,DTYPE=1",
                         without_requirements);
    b2_i32 = real_kernel(db, templates, "blocktile2d", "BM=128,BN=64,BK=16,TM=8,TN=4,TRANS_A=0,TRANS_B=0,DTYPE=2",
                         without_requirements);
    b2_i32_nt = real_kernel(db, templates, "blocktile2d", "BM=64,BN=128,BK=8,TM=8,TN=4,TRANS_A=0,TRANS_B=1,DTYPE=2",
                            without_requirements);
    db.add_winner(k_h100_uuid, f64({1024, 1024, 1024}), "overall", dm, 0.2);
    db.add_winner(k_h100_uuid, f64({1024, 1024, 1024}), "portable", b2_f64, 0.9);
    db.add_winner(k_h100_uuid, f64(Problem::make(1024, 1024, 1024, true, false)), "overall", dm_tn, 0.21);
    db.add_winner(k_h100_uuid, i32({1024, 1024, 1024}), "overall", b2_i32, 0.3);
    db.add_winner(k_h100_uuid, i32({1024, 1024, 1024}), "portable", b2_i32, 0.3);
    db.add_winner(k_h100_uuid, i32(Problem::make(64, 64, 64, false, true, 4096)), "overall", b2_i32_nt, 0.4);
    db.add_winner(k_h100_uuid, i32(Problem::make(64, 64, 64, false, true, 4096)), "portable", b2_i32_nt, 0.4);
    db.add_winner(k_a100_uuid, f64({2048, 2048, 2048}), "overall", dm, 2.5);
    db.add_winner(k_a100_uuid, f64({2048, 2048, 2048}), "portable", b2_f64, 9.0);
    const std::vector<Problem> shapes = {{363, 363, 363}, {725, 725, 725},   {1449, 1449, 1449}, {4096, 1024, 4096},
                                         {1, 4096, 4096}, {4096, 4096, 16}, {256, 256, 49152},  {64, 64, 64}};
    for (const Problem& shape : shapes) {
      const Problem d = f64(shape), d_tn = f64(Problem::make(shape.m, shape.n, shape.k, true, false));
      db.add_trial(k_h100_uuid, d, "calibration", dm, synthetic_ms(dm, 50, 132, d));
      db.add_trial(k_h100_uuid, d, "calibration", b2_f64, synthetic_ms(b2_f64, 20, 132, d));
      db.add_trial(k_h100_uuid, d_tn, "calibration", dm_tn, synthetic_ms(dm_tn, 48, 132, d_tn));
      db.add_trial(k_a100_uuid, d, "calibration", dm, synthetic_ms(dm, 18, 108, d));
      db.add_trial(k_a100_uuid, d, "calibration", b2_f64, synthetic_ms(b2_f64, 8, 108, d));
      const Problem n = i32(shape);
      db.add_trial(k_h100_uuid, n, "calibration", b2_i32, synthetic_ms(b2_i32, 25, 132, n));
      for (const int64_t batch : {1, 8}) {
        const Problem nt = i32(Problem::make(shape.m, shape.n, shape.k, false, true, batch));
        db.add_trial(k_h100_uuid, nt, "calibration", b2_i32_nt, synthetic_ms(b2_i32_nt, 22, 132, nt));
      }
    }
  }

  /// Calibration trials: every exported kernel on shapes of several classes, with times from a
  /// synthetic roofline (a per-kernel rate, wave quantisation, a memory term and a fixed cost), so
  /// that different kernels are predicted fastest in different places.
  void add_calibration(DbBuilder& db) const {
    const std::vector<Problem> shapes = {{363, 363, 363},   {725, 725, 725},   {1449, 1449, 1449}, {2897, 2897, 2897},
                                         {4097, 4097, 4097}, {1024, 4096, 4096}, {4096, 1024, 4096}, {1, 4096, 4096},
                                         {4096, 8, 2048},   {4096, 4096, 16},  {256, 256, 49152}, {64, 64, 64}};
    struct Rate {
      const KernelSpec* k;
      double tflops;
    };
    const auto add_all = [&](const std::string& uuid, int sms, const std::vector<Rate>& rates) {
      for (const Problem& p : shapes)
        for (const Rate& r : rates) db.add_trial(uuid, p, "calibration", *r.k, synthetic_ms(*r.k, r.tflops, sms, p));
    };
    add_all(k_h100_uuid, 132, {{&ms4, 40}, {&ms1, 22}, {&wt, 36}, {&bv, 25}, {&b2, 14}, {&ck, 30}});
    add_all(k_a100_uuid, 108, {{&wt, 15}, {&ms1, 10}, {&b2, 8}});
    // The transposed kernels on their own layouts; the batched one on batches too.
    for (const Problem& p : shapes) {
      const Problem tn = Problem::make(p.m, p.n, p.k, true, false);
      db.add_trial(k_h100_uuid, tn, "calibration", ms_tn, synthetic_ms(ms_tn, 38, 132, tn));
      for (const int64_t batch : {1, 8}) {
        const Problem nt = Problem::make(p.m, p.n, p.k, false, true, batch);
        db.add_trial(k_h100_uuid, nt, "calibration", b2_nt, synthetic_ms(b2_nt, 12, 132, nt));
      }
    }
    // The fused kernel on batches of small products, beside the batched blocktile2d it competes with.
    for (const Problem& p : std::vector<Problem>{{32, 32, 64}, {64, 64, 64}, {100, 100, 100}, {128, 128, 128}})
      for (const int64_t batch : {16, 1000, 4096}) {
        const Problem nn = Problem::make(p.m, p.n, p.k, false, false, batch);
        db.add_trial(k_h100_uuid, nn, "calibration", fb, synthetic_ms(fb, 30, 132, nn));
        db.add_trial(k_h100_uuid, nn, "calibration", b2, synthetic_ms(b2, 14, 132, nn));
      }
  }

  static double synthetic_ms(const KernelSpec& k, double tflops, int sms, const Problem& p) {
    const double tiles = std::ceil(double(p.m) / double(k.shape.tile_m)) * std::ceil(double(p.n) / double(k.shape.tile_n)) *
                         double(k.shape.grid_z) * std::ceil(double(p.batch) / double(k.shape.problems_per_block));
    const double quantised = std::ceil(tiles / sms) * sms / tiles;
    const double compute_us = p.flops() / (tflops * 1e6) * quantised;
    const double memory_us = 4.0 * double(p.m * p.k + p.k * p.n + p.m * p.n) * double(p.batch) / 3e6;
    return (4.0 + compute_us + memory_us) / 1e3;
  }
};

const TemplateDesc& builtin_blocktile2d() {
  static const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  return find_desc(templates, "blocktile2d");
}

/// The f32-only stand-in for blocktile2d (tests/fixtures/export/templates).
const TemplateDesc& fixture_blocktile2d();

// ---------------------------------------------------------------------------------------------
// nvcc
// ---------------------------------------------------------------------------------------------

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

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

/// Synthetic sources with fixed text, so the golden tables never depend on the real templates.
struct SyntheticFixture {
  KernelSpec fast1, fast2, port1, port2;
  KernelSpec typed_f64, typed_i32;   // one template computing f64 and i32 (DTYPE), as blocktile2d does

  KernelSpec synthetic(DbBuilder& db, const std::string& tmpl, int variant, bool requirements) {
    const std::string kernel = "cmt_sgemm_" + tmpl;
    SourceBundle b;
    b.main_name = tmpl + ".cuh";
    b.main_text = fmt::format(
        "template <int V>\n__global__ void {}(int M, int N, int K, float alpha, const float* A, int lda, const float* B,\n"
        "    int ldb, float beta, float* C, int ldc) {{}}\n",
        kernel);
    KernelSpec k;
    k.template_name = tmpl;
    k.params = fmt::format("V={}", variant);
    k.name_expression = fmt::format("{}<{}>", kernel, variant);
    k.shape = {128 * variant, 64 * variant, 128, variant == 2 ? 65536 : 0};
    k.requirements = requirements ? Requirements{16, 4} : Requirements{4, 1};
    k.source_hash = db.add_source(tmpl, b);
    return k;
  }

  /// A kernel of the typed synthetic template: DTYPE 1 (f64) or 2 (i32), with 16-byte requirements.
  KernelSpec typed(DbBuilder& db, int dtype) {
    SourceBundle b;
    b.main_name = "typed.cuh";
    b.main_text =
        "template <int V, int DTYPE> struct Elem;\n"
        "template <int V> struct Elem<V, 1> { typedef double T; };\n"
        "template <int V> struct Elem<V, 2> { typedef int T; };\n"
        "template <int V, int DTYPE, class T = typename Elem<V, DTYPE>::T>\n"
        "__global__ void cmt_sgemm_typed(int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta,\n"
        "    T* C, int ldc) {}\n";
    KernelSpec k;
    k.template_name = "typed";
    k.params = fmt::format("V=1,DTYPE={}", dtype);
    k.name_expression = fmt::format("cmt_sgemm_typed<1, {}>", dtype);
    k.shape = {256, 64, 64, 0};
    k.requirements = Requirements{16, 2};
    k.source_hash = db.add_source("typed", b);
    return k;
  }

  void build(DbBuilder& db) {
    fast1 = synthetic(db, "fast", 1, true);
    fast2 = synthetic(db, "fast", 2, true);
    port1 = synthetic(db, "port", 1, false);
    port2 = synthetic(db, "port", 2, false);
    // Two H100s merge into one table (same name, cc, SMs); the A100 has its own.
    db.add_device("GPU-aaaa", k_h100, 9, 0, 132);
    db.add_device("GPU-aaab", k_h100, 9, 0, 132);
    db.add_device("GPU-bbbb", k_a100, 8, 0, 108);
    db.add_device("GPU-cccc", "Never Tuned GPU", 7, 5, 40);
    db.add_winner("GPU-aaaa", {1024, 1024, 1024}, "overall", fast1, 1.0);
    db.add_winner("GPU-aaaa", {1024, 1024, 1024}, "portable", port1, 1.5);
    db.add_winner("GPU-aaaa", {4096, 4096, 4096}, "overall", fast2, 10.0);
    db.add_winner("GPU-aaab", {1024, 1024, 1024}, "overall", fast2, 0.9);     // faster: wins the merge
    db.add_winner("GPU-aaab", {1024, 1024, 1024}, "portable", port2, 1.6);    // slower: port1 stays
    db.add_winner("GPU-aaab", {256, 8192, 512}, "overall", port2, 0.5);
    db.add_winner("GPU-aaab", {256, 8192, 512}, "portable", port2, 0.5);
    db.add_winner("GPU-bbbb", {2048, 2048, 2048}, "overall", fast1, 3.0);
    db.add_winner("GPU-bbbb", {2048, 2048, 2048}, "portable", port1, 4.0);
    db.add_winner("GPU-bbbb", {64, 64, 64}, "template:fast", fast1, 0.001);  // per-template scopes are not exported
    // FP64 and INT32 winners of the shape of an f32 one: their own entries, told apart by the type.
    typed_f64 = typed(db, 1);
    typed_i32 = typed(db, 2);
    Problem f64{1024, 1024, 1024}, i32{1024, 1024, 1024};
    f64.dtype = DType::f64;
    i32.dtype = DType::i32;
    db.add_winner("GPU-aaaa", f64, "overall", typed_f64, 2.0);
    db.add_winner("GPU-aaab", i32, "overall", typed_i32, 1.2);
  }
};

const TemplateDesc& fixture_blocktile2d() {
  static const std::vector<TemplateDesc> templates = load_templates({k_fixtures / "templates"});
  return find_desc(templates, "blocktile2d");
}

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
  const std::set<std::string> allowed = {"<cuda_runtime.h>", "<cerrno>", "<chrono>", "<condition_variable>", "<cstdio>",
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
    const std::string row_end = fmt::format(", {}, {}, {}, {}}},  // {}: ", layout_number(k.layout), k.batched ? 1 : 0,
                                            k.template_name == "fused_batch" ? 8 : 0, static_cast<int>(k.dtype), i);
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

// ---------------------------------------------------------------------------------------------
// The command: determinism and --check, through the real binary
// ---------------------------------------------------------------------------------------------

TEST(ExportCli, SameDatabaseSameBytesAndCheckDetectsChanges) {
  test::TempDir dir;
  const fs::path db_file = dir / "t.db";
  RealFixture f;
  {
    DbBuilder db(db_file);
    f.build(db);
  }
  const std::string exe = test::cmtune_binary();
  const auto cmtune = [&](const std::string& args) {
    return test::run_command(fmt::format("{} --db {} {}", exe, quoted(db_file), args));
  };

  const auto first = cmtune("export --out " + quoted(dir / "a.cuh"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("2 device tables"), std::string::npos) << first.output;
  const auto second = cmtune("export --out " + quoted(dir / "b.cuh"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(test::read_file(dir / "a.cuh"), test::read_file(dir / "b.cuh"));

  const auto check = cmtune("export --check --out " + quoted(dir / "a.cuh"));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const auto missing = cmtune("export --check --out " + quoted(dir / "missing.cuh"));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_FALSE(fs::exists(dir / "missing.cuh"));

  // A different namespace is a different file.
  const auto other_ns = cmtune("export --check --namespace app::gemm --out " + quoted(dir / "a.cuh"));
  EXPECT_EQ(other_ns.exit_code, 1) << other_ns.output;

  // Change one winner: the export differs and --check says so in one line.
  {
    DbBuilder db(db_file);
    db.add_winner(k_h100_uuid, {1024, 1024, 1024}, "overall", f.bv, 0.09);
  }
  const auto stale = cmtune("export --check --out " + quoted(dir / "a.cuh"));
  EXPECT_EQ(stale.exit_code, 1) << stale.output;
  EXPECT_NE(stale.output.find("differs"), std::string::npos) << stale.output;
  EXPECT_EQ(std::count(stale.output.begin(), stale.output.end(), '\n'), 1) << stale.output;
  ASSERT_EQ(cmtune("export --out " + quoted(dir / "c.cuh")).exit_code, 0);
  EXPECT_NE(test::read_file(dir / "a.cuh"), test::read_file(dir / "c.cuh"));
  EXPECT_EQ(cmtune("export --check --out " + quoted(dir / "c.cuh")).exit_code, 0);

  // --device: one table only; a bad spec is resolve_db_device's usage error.
  const auto one = cmtune("export --device A100 --out " + quoted(dir / "d.cuh"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string d = test::read_file(dir / "d.cuh");
  EXPECT_EQ(d.find(k_h100_uuid), std::string::npos);
  EXPECT_NE(d.find(k_a100_uuid), std::string::npos);
  const auto bad = cmtune("export --device 'No Such GPU' --out " + quoted(dir / "e.cuh"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("has not been tuned"), std::string::npos) << bad.output;
  EXPECT_EQ(cmtune("export --namespace 9x --out " + quoted(dir / "e.cuh")).exit_code, 2);
}

TEST(ExportCli, DtypeChoosesWhichTypesWinnersGoIntoTheTables) {
  test::TempDir dir;
  const fs::path db_file = dir / "t.db";
  RealFixture f;
  {
    DbBuilder db(db_file);
    f.build(db);   // f32 winners only
  }
  const auto cmtune = [&](const std::string& args) {
    return test::run_split(dir, fmt::format("--db {} {}", quoted(db_file), args));
  };
  // Nothing of the requested types: one line naming them, nothing written.
  const auto none = cmtune("export --dtype f64,i32 --out h.cuh");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_EQ(none.err, fmt::format("cm-tune: error: database {} has no tuned problems of type f64, i32 (--dtype) to "
                                  "export; its tuned problems are of type f32\n",
                                  db_file.string()));
  EXPECT_FALSE(fs::exists(dir / "h.cuh"));
  const auto bad = cmtune("export --dtype f16 --out h.cuh");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "cm-tune: error: --dtype: unknown type 'f16' (f32, f64, i32 or all)\n");

  {
    DbBuilder db(db_file);
    f.add_typed(db);
  }
  const auto all = cmtune("export --out all.cuh");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.err, "") << "no warning: every type is exported";
  EXPECT_NE(all.out.find("12 generic defaults, one per type and layout"), std::string::npos) << all.out;
  // Per table, the types and layouts no tuned kernel serves (every fixture kernel is batched).
  EXPECT_NE(all.out.find("\nNVIDIA A100-SXM4-40GB: no tuned kernel serves f32 nt, tn, tt; f64 nt, tn, tt; i32 (any "
                         "layout); those calls run the generic default kernels\nNVIDIA H100 80GB HBM3: no tuned kernel "
                         "serves f32 tt; f64 nt, tt; i32 tn, tt; those calls run the generic default kernels\n"),
            std::string::npos)
      << all.out;
  const std::string every = test::read_file(dir / "all.cuh");
  EXPECT_NE(every.find(f.dm.name_expression), std::string::npos) << "the f64 winner";
  EXPECT_NE(every.find(f.b2_i32.name_expression), std::string::npos) << "the i32 winner";
  EXPECT_EQ(cmtune("export --dtype all --check --out all.cuh").exit_code, 0) << "all is the default";
  EXPECT_EQ(cmtune("export --dtype i32,f64,f32 --check --out all.cuh").exit_code, 0);

  // f32 alone: no tuned f64 or i32 kernel, but dgemm and igemm are there, on the generic defaults.
  const auto f32 = cmtune("export --dtype f32 --out f32.cuh");
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.out.find("\nNVIDIA H100 80GB HBM3: no tuned kernel serves f32 tt; f64, i32 (any layout); those calls "
                         "run the generic default kernels\n"),
            std::string::npos)
      << f32.out;
  const std::string only = test::read_file(dir / "f32.cuh");
  EXPECT_EQ(only.find(f.dm.name_expression), std::string::npos);
  EXPECT_EQ(only.find(f.b2_i32.name_expression), std::string::npos);
  const std::regex typed_entry(R"(\{\{\d+, \d+, \d+, \d, \d+, \d, [12]\}, -?\d+, -?\d+\},)");
  EXPECT_FALSE(std::regex_search(only, typed_entry)) << "no f64 or i32 entry";
  EXPECT_TRUE(std::regex_search(every, typed_entry));
  EXPECT_NE(only.find("inline cudaError_t dgemm("), std::string::npos);
  EXPECT_NE(only.find("inline cudaError_t igemm_colmajor_strided_batched("), std::string::npos);
  EXPECT_NE(only.find("cmt_sgemm_blocktile2d<64, 64, 8, 8, 4, 1, 1, 2>"), std::string::npos) << "the i32 TT generic";
  // --check names the option in the command it suggests.
  const auto stale = cmtune("export --dtype f32 --check --out all.cuh");
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.err.find("--dtype f32`"), std::string::npos) << stale.err;
  EXPECT_EQ(cmtune("export --dtype f32 --check --out f32.cuh").exit_code, 0);
}

// export names, per table, the types and layouts no tuned kernel serves (nothing when all are), and
// query says of a call that runs the generic default whether no tuned kernel computes it or it misses
// their requirements, in text and JSON.
TEST(ExportCli, SaysWhichCallsNoTunedKernelServes) {
  test::TempDir dir;
  RealFixture f;
  {
    DbBuilder db(dir / "t.db");
    f.build(db);   // f32 only; H100: nn, nt and tn (with requirements), all batched; A100: nn
  }
  const auto cmtune = [&](const std::string& db, const std::string& args) {
    return test::run_split(dir, fmt::format("--db {} {}", quoted(dir / db), args));
  };
  // The lines of export's output that name unserved calls (the held-out check's lines come before).
  const auto unserved_lines = [](const std::string& out) {
    std::istringstream in(out);
    std::string text;
    for (std::string line; std::getline(in, line);)
      if (line.find(": no tuned kernel serves ") != std::string::npos) text += line + "\n";
    return text;
  };
  const auto exported = cmtune("t.db", "export --out t.cuh");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(unserved_lines(exported.out),
            "NVIDIA A100-SXM4-40GB: no tuned kernel serves f32 nt, tn, tt; f64, i32 (any layout); those calls run the "
            "generic default kernels\n"
            "NVIDIA H100 80GB HBM3: no tuned kernel serves f32 tt; f64, i32 (any layout); those calls run the generic "
            "default kernels\n");
  const auto one = cmtune("t.db", "export --device A100 --out a.cuh");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 3) << "one table: wrote, held-out check, unserved: "
                                                                   << one.out;
  EXPECT_EQ(unserved_lines(one.out),
            "NVIDIA A100-SXM4-40GB: no tuned kernel serves f32 nt, tn, tt; f64, i32 (any layout); those calls run the "
            "generic default kernels\n");

  const auto query = [&](const std::string& args) {
    const auto r = cmtune("t.db", fmt::format("query --device {} {}", k_h100_uuid, args));
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    return r.out;
  };
  const auto query_json = [&](const std::string& args) {
    const std::string out = query(args + " --json");
    const auto at = [&](const std::string& key) {
      const std::regex field("\"" + key + "\": (\"[^\"]*\"|true|false)");
      std::smatch m;
      return std::regex_search(out, m, field) ? m[1].str() : "(missing in " + out + ")";
    };
    return std::vector<std::string>{at("served"), at("dispatch_kind"), at("dispatch_reason"), at("template")};
  };
  // Served: the tuned problem's winner.
  EXPECT_EQ(query_json("--size 1024"),
            (std::vector<std::string>{"true", "\"tuned\"", "\"tuned for this problem: its measured winner runs\"",
                                      "\"multistage\""}));
  // Not served: no tuned kernel computes f32 tt, or f64.
  const std::string tt = "generic default: no tuned kernel of this table computes f32 tt (tune --layout tt, or the "
                         "calls you record, to serve it)";
  EXPECT_EQ(query_json("--size 1024 --layout tt"),
            (std::vector<std::string>{"false", "\"not_served\"", "\"" + tt + "\"", "\"blocktile2d\""}));
  EXPECT_NE(query("--size 1024 --layout tt").find("\ndispatch: " + tt + "\n  blocktile2d["), std::string::npos)
      << query("--size 1024 --layout tt");
  EXPECT_NE(query("--size 512 --dtype f64 --batch 4")
                .find("dispatch: generic default: no tuned kernel of this table computes f64 nn (tune --dtype f64 "
                      "--batch 4, or the calls you record, to serve it)\n"),
            std::string::npos);
  // Served, but the tight call's lda and ldb (1023) miss the requirements of the only TN kernel.
  const std::string missed = "generic default: the call misses the requirements of every modelled kernel that "
                             "computes f32 tn";
  EXPECT_EQ(query_json("--size 1023 --layout tn"),
            (std::vector<std::string>{"true", "\"requirements_missed\"", "\"" + missed + "\"", "\"blocktile2d\""}));
  EXPECT_NE(query("--size 1023 --layout tn").find("\ndispatch: " + missed + "\n"), std::string::npos);

  // A table with a winner of every type and layout: export says nothing more.
  {
    DbBuilder db(dir / "all.db");
    db.add_device(k_h100_uuid, k_h100, 9, 0, 132);
    const auto without_requirements = [](const LaunchShape&, const Requirements& r) { return r.none(); };
    for (int d = 0; d < k_header_dtypes; ++d)
      for (int l = 0; l < 4; ++l) {
        const std::string params =
            fmt::format("BM=128,BN=64,BK=16,TM=8,TN=4,TRANS_A={},TRANS_B={},DTYPE={}", l / 2, l % 2, d);
        const KernelSpec k = real_kernel(db, f.templates, "blocktile2d", params, without_requirements);
        db.add_winner(k_h100_uuid, Problem::make(256, 256, 256, l >= 2, l % 2 == 1, 1, static_cast<DType>(d)),
                      "overall", k, 0.01);
      }
  }
  const auto served = cmtune("all.db", "export --out all.cuh");
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(served.out.find("no tuned kernel serves"), std::string::npos) << served.out;
  EXPECT_EQ(served.out.rfind("wrote all.cuh: ", 0), 0u) << served.out;
}

TEST(ExportCli, DatabaseWithoutWinnersIsAUsageError) {
  test::TempDir dir;
  {
    DbBuilder db(dir / "t.db");
    db.add_device("GPU-x", "Some GPU", 9, 0, 132);
  }
  const auto r = test::run_command(
      fmt::format("{} --db {} export --out {}", test::cmtune_binary(), quoted(dir / "t.db"), quoted(dir / "x.cuh")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no tuned problems"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.cuh"));
}

// ---------------------------------------------------------------------------------------------
// Dispatch: choose_kernel on a hand-made export model
// ---------------------------------------------------------------------------------------------

ExportKernel kernel_named(const std::string& name, int tile_m, int tile_n, Requirements r) {
  ExportKernel k;
  k.name_expression = name;
  k.template_name = name;
  k.shape.threads = 256;
  k.shape.tile_m = tile_m;
  k.shape.tile_n = tile_n;
  k.shape.grid_z = 1;
  k.requirements = r;
  return k;
}

const Requirements k_vec4{16, 4};

/// A model with coefficients c over the domain [lo, hi]^3.
ExportKernelModel model_of(int kernel, std::array<double, 4> c, int64_t lo, int64_t hi) {
  ExportKernelModel m;
  m.kernel = kernel;
  m.blocks_per_sm = 1;
  for (int i = 0; i < 4; ++i) m.coef[i] = c[static_cast<size_t>(i)];
  m.min_m = m.min_n = m.min_k = lo;
  m.max_m = m.max_n = m.max_k = hi;
  return m;
}

/// Kernels: 0 generic, 1 "big" (128x128, vec4), 2 "small" (64x64, none), 3 "tall" (16x128, none).
ExportModel sample_model() {
  ExportModel model;
  model.kernels = {kernel_named("generic", 64, 64, {4, 1}), kernel_named("big", 128, 128, k_vec4),
                   kernel_named("small", 64, 64, {4, 1}), kernel_named("tall", 16, 128, {4, 1})};
  ExportDevice dev;
  dev.name = "GPU";
  dev.sm_count = 100;
  dev.entries = {{{1000, 1000, 1000}, 1, 2}, {{4000, 4000, 4000}, 1, -1}};
  // big: fast per multiply-add but a large fixed cost; small: cheap to start, slower per work;
  // tall: measured only on a few rows of C.
  dev.models = {model_of(1, {20, 0.05, 0, 0}, 256, 8192), model_of(2, {3, 0.4, 0, 0}, 256, 8192),
                model_of(3, {2, 0.01, 0, 0}, 1, 16)};
  dev.models[2].max_n = dev.models[2].max_k = 8192;
  dev.models[2].min_n = dev.models[2].min_k = 1024;
  model.devices.push_back(dev);
  return model;
}

std::string chosen(const ExportModel& model, const CallShape& call) {
  return model.kernels.at(static_cast<size_t>(choose_kernel(model, 0, call).kernel)).name_expression;
}

TEST(DispatchChoice, TunedProblemsRunTheirMeasuredWinner) {
  const ExportModel model = sample_model();
  const DispatchChoice c = choose_kernel(model, 0, tight_call({1000, 1000, 1000}));
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(model.kernels[static_cast<size_t>(c.kernel)].name_expression, "big");
  EXPECT_FALSE(c.predicted_us.has_value());
  CallShape call = tight_call({1000, 1000, 1000});
  call.lda = 1001;   // unmet ld_multiple: the entry's portable kernel
  EXPECT_EQ(chosen(model, call), "small");
  EXPECT_TRUE(choose_kernel(model, 0, call).portable_fallback);
  call = tight_call({4000, 4000, 4000});
  call.alignment = 4;   // no portable kernel tuned there: the generic default
  EXPECT_EQ(chosen(model, call), "generic");
}

// Split K: a long K over few tiles runs as a strided batch of K slices and their sum when that is
// predicted faster than the best unsplit kernel, which leaves SMs idle.
TEST(DispatchChoice, LongKOverFewTilesSplitsKIntoABatchOfSlices) {
  ExportModel model = sample_model();
  for (auto& k : model.kernels) k.batched = true;
  model.devices[0].bytes_per_us = 2.5e6;
  // 256x256x8192: unsplit, small runs 16 blocks on 100 SMs: 3 + 0.4 * 4096 * 8192 / 1e6 = 16.4 us.
  // In 4 slices of 2048: 64 blocks, 3 + 0.4 * 4096 * 2048 / 1e6 = 6.36 us, and the sum reads 4
  // slices and C and writes C: 3 + 256 * 256 * 4 * 6 / 2.5e6 = 3.63 us; 9.99 us in all, the least of
  // 2..32 slices (2: 13.1 us, 8: 10.4, 16: 10.4, 32: 12.1).
  DispatchChoice c = choose_kernel(model, 0, tight_call({256, 256, 8192}));
  EXPECT_EQ(c.splits, 4);
  EXPECT_EQ(model.kernels[static_cast<size_t>(c.kernel)].name_expression, "small");
  ASSERT_TRUE(c.predicted_us);
  EXPECT_NEAR(*c.predicted_us, 3 + 0.4 * 4096 * 2048 / 1e6 + 3 + 256.0 * 256 * 4 * 6 / 2.5e6, 1e-9);
  EXPECT_NE(c.why.find("K split into 4 slices of 2048"), std::string::npos) << c.why;
  // Not split: K not a multiple of a slice count, a batch, many tiles, no bandwidth, or unbatched kernels.
  EXPECT_EQ(choose_kernel(model, 0, tight_call({256, 256, 8191})).splits, 1);
  EXPECT_EQ(choose_kernel(model, 0, tight_call(Problem::make(256, 256, 8192, false, false, 2))).splits, 1);
  EXPECT_EQ(choose_kernel(model, 0, tight_call({4096, 4096, 8192})).splits, 1);
  ExportModel no_bandwidth = model;
  no_bandwidth.devices[0].bytes_per_us = 0;
  EXPECT_EQ(choose_kernel(no_bandwidth, 0, tight_call({256, 256, 8192})).splits, 1);
  ExportModel unbatched = sample_model();
  unbatched.devices[0].bytes_per_us = 2.5e6;
  EXPECT_EQ(choose_kernel(unbatched, 0, tight_call({256, 256, 8192})).splits, 1);
  // Slices of 255 are too short: 8160 = 32 * 255 splits at most in 16 (510 each).
  const DispatchChoice odd = choose_kernel(model, 0, tight_call({256, 256, 8160}));
  EXPECT_LE(odd.splits, 16);
}

TEST(DispatchChoice, OtherShapesRunTheLeastPredictedTime) {
  const ExportModel model = sample_model();
  // 2000^3: big 20 + 0.05*(ceil(256/100)=3 blocks * 128*128 * 2000 / 1e6) = 24.9 us; small
  // 3 + 0.4*(ceil(1024/100)=11 * 64*64 * 2000 / 1e6) = 39.0 us.
  DispatchChoice c = choose_kernel(model, 0, tight_call({2000, 2000, 2000}));
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(model.kernels[static_cast<size_t>(c.kernel)].name_expression, "big");
  ASSERT_TRUE(c.predicted_us);
  EXPECT_NEAR(*c.predicted_us, 20 + 0.05 * 3 * 128 * 128 * 2000 / 1e6, 1e-9);
  ASSERT_EQ(c.predictions.size(), 3u);
  EXPECT_EQ(c.predictions[0].kernel, 1);   // fastest usable, in-domain first
  // 300^3: big 20 + 0.05*(1*16384*300/1e6) = 20.25; small 3 + 0.4*(1*4096*300/1e6) = 3.49.
  EXPECT_EQ(chosen(model, tight_call({300, 300, 300})), "small");
  // Unaligned: big is not usable, whatever its prediction.
  CallShape call = tight_call({2000, 2000, 2000});
  call.alignment = 4;
  EXPECT_EQ(chosen(model, call), "small");
  // Four rows of C: only tall's domain (M 1..16, within 2x) covers it, and it is predicted fastest.
  EXPECT_EQ(chosen(model, tight_call({4, 4096, 4096})), "tall");
  // 200 rows: outside tall's domain (M <= 32), inside big's and small's: they compete, tall does not.
  EXPECT_NE(chosen(model, tight_call({200, 4096, 4096})), "tall");
  // Outside every domain, every usable model competes, and the reason says so.
  c = choose_kernel(model, 0, tight_call({2000000, 2000000, 2000000}));
  EXPECT_NE(c.why.find("extrapolates"), std::string::npos) << c.why;
}

TEST(DispatchChoice, NothingUsableOrNoDeviceRunsTheGenericDefault) {
  ExportModel model = sample_model();
  model.devices[0].models.resize(1);   // only big, which needs 16-byte alignment
  CallShape call = tight_call({2000, 2000, 2000});
  call.alignment = 4;
  EXPECT_EQ(chosen(model, call), "generic");
  EXPECT_EQ(choose_kernel(model, 5, tight_call({64, 64, 64})).kernel, k_generic_kernel_index);
}

TEST(DispatchChoice, SaysWhenNoTunedKernelComputesTheTypeLayoutOrBatch) {
  ExportModel model = sample_model();
  // sample_model's kernels are all f32 nn and unbatched; a generic default for f32 tt, batched.
  ExportKernel generic_tt = kernel_named("generic_tt", 64, 64, {4, 1});
  generic_tt.layout = "tt";
  generic_tt.batched = true;
  model.kernels.push_back(generic_tt);
  model.generic_kernels[0][3] = 4;
  EXPECT_EQ(unserved_calls(model, 0), "f32 nn batched, nt, tn, tt; f64, i32 (any layout)");
  EXPECT_TRUE(table_serves(model, 0, DType::f32, "nn", false));
  EXPECT_FALSE(table_serves(model, 0, DType::f32, "nn", true));
  EXPECT_FALSE(table_serves(model, 0, DType::f32, "tt", false));

  DispatchChoice c = choose_kernel(model, 0, tight_call({1000, 1000, 1000}));
  EXPECT_TRUE(c.served);
  EXPECT_EQ(c.reason, "tuned");
  c = choose_kernel(model, 0, tight_call({2000, 2000, 2000}));
  EXPECT_TRUE(c.served);
  EXPECT_EQ(c.reason, "predicted");
  CallShape call = tight_call({1000, 1000, 1000});
  call.lda = 1001;
  EXPECT_EQ(choose_kernel(model, 0, call).reason, "tuned_portable");
  call = tight_call({4000, 4000, 4000});
  call.alignment = 4;   // no portable kernel tuned there
  EXPECT_EQ(choose_kernel(model, 0, call).reason, "requirements_missed");

  // A layout no tuned kernel computes: its generic default, and the reason says how to serve it.
  c = choose_kernel(model, 0, tight_call(Problem::make(2000, 2000, 2000, true, true)));
  EXPECT_EQ(c.kernel, 4);
  EXPECT_FALSE(c.served);
  EXPECT_EQ(c.reason, "not_served");
  EXPECT_EQ(c.why, "generic default: no tuned kernel of this table computes f32 tt (tune --layout tt, or the calls you "
                   "record, to serve it)");
  c = choose_kernel(model, 0, tight_call(Problem::make(64, 64, 64, true, true, 8)));
  EXPECT_EQ(c.why, "generic default: no tuned kernel of this table computes f32 tt (tune --layout tt --batch 8, or the "
                   "calls you record, to serve it)");
  // A batch of a layout served only unbatched; no generic kernel takes it either: refused.
  c = choose_kernel(model, 0, tight_call(Problem::make(64, 64, 64, false, false, 8)));
  EXPECT_EQ(c.kernel, -1);
  EXPECT_EQ(c.reason, "not_served");
  EXPECT_EQ(c.why, "refused: no tuned kernel of this table computes batched f32 nn (tune --batch 8, or the calls you "
                   "record, to serve it); no generic kernel computes it either");
  c = choose_kernel(model, 0, tight_call(Problem::make(64, 64, 64, false, false, 1, DType::f64)));
  EXPECT_EQ(c.reason, "not_served");
  EXPECT_NE(c.why.find("computes f64 nn (tune --dtype f64, or"), std::string::npos) << c.why;

  // Served, but the call misses every modelled kernel's requirements; or served by entries only.
  ExportModel only_big = model;
  only_big.devices[0].models.resize(1);   // big needs 16-byte alignment
  call = tight_call({2000, 2000, 2000});
  call.alignment = 4;
  c = choose_kernel(only_big, 0, call);
  EXPECT_EQ(c.kernel, k_generic_kernel_index);
  EXPECT_TRUE(c.served);
  EXPECT_EQ(c.reason, "requirements_missed");
  EXPECT_EQ(c.why, "generic default: the call misses the requirements of every modelled kernel that computes f32 nn");
  ExportModel unmodelled = model;
  unmodelled.devices[0].models.clear();
  c = choose_kernel(unmodelled, 0, tight_call({2000, 2000, 2000}));
  EXPECT_EQ(c.kernel, k_generic_kernel_index);
  EXPECT_TRUE(c.served);
  EXPECT_EQ(c.reason, "not_modelled");
  EXPECT_EQ(c.why, "generic default: tuned kernels compute f32 nn, but none has a cost model on this device");
  // No table for the device.
  c = choose_kernel(model, 5, tight_call({64, 64, 64}));
  EXPECT_FALSE(c.served);
  EXPECT_EQ(c.reason, "no_table");

  // A table with a batched kernel of every type and layout serves everything: nothing to say.
  ExportModel all;
  all.kernels.push_back(kernel_named("generic", 64, 64, {4, 1}));
  ExportDevice dev;
  dev.name = "GPU";
  dev.sm_count = 100;
  for (int d = 0; d < k_header_dtypes; ++d)
    for (const std::string_view layout : k_layout_names) {
      ExportKernel k = kernel_named(fmt::format("k{}{}", d, layout), 64, 64, {4, 1});
      k.dtype = static_cast<DType>(d);
      k.layout = std::string(layout);
      k.batched = true;
      dev.models.push_back(model_of(static_cast<int>(all.kernels.size()), {1, 1, 0, 0}, 1, 4096));
      all.kernels.push_back(k);
    }
  all.devices.push_back(dev);
  EXPECT_EQ(unserved_calls(all, 0), "");
  // Only entries name the f64 kernels (no models): they serve all the same.
  all.devices[0].models.erase(all.devices[0].models.begin() + 4, all.devices[0].models.begin() + 8);
  EXPECT_EQ(unserved_calls(all, 0), "f64 (any layout)");
  for (int i = 5; i < 9; ++i) all.devices[0].entries.push_back({{64, 64, 64}, i, -1});
  EXPECT_EQ(unserved_calls(all, 0), "");
}

// ---------------------------------------------------------------------------------------------
// The cost model: fitting
// ---------------------------------------------------------------------------------------------

/// The launch shape of a kernel with square tiles, one block per tile (no K split).
LaunchShape square_tile_shape(int64_t threads, int64_t tile) { return LaunchShape{threads, tile, tile, 0, 1}; }

TEST(CostModel, RecoversTheCoefficientsThatGeneratedItsPoints) {
  const LaunchShape shape = square_tile_shape(256, 128);
  ExportKernelModel truth;
  truth.blocks_per_sm = 2;
  truth.coef[0] = 5;
  truth.coef[1] = 0.03;
  truth.coef[2] = 0.5;
  truth.coef[3] = 0;
  std::vector<ModelPoint> points;
  for (const Problem& p : std::vector<Problem>{{256, 256, 256}, {1024, 1024, 1024}, {4096, 4096, 4096}, {300, 5000, 700},
                                               {2000, 100, 9000}, {64, 64, 20000}, {8192, 8192, 16}})
    points.push_back({p, predict_us(truth, shape, 132, p)});
  const ExportKernelModel fit = fit_kernel_model(points, shape, 7, 2, 132);
  EXPECT_EQ(fit.kernel, 7);
  EXPECT_EQ(fit.points, 7);
  EXPECT_LT(fit.rms_relative_error, 1e-9);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(fit.coef[i], truth.coef[i], 1e-6 * (1 + truth.coef[i])) << "term " << i;
  EXPECT_EQ(fit.min_m, 64);
  EXPECT_EQ(fit.max_k, 20000);
  // The same points in another order fit the same numbers.
  std::reverse(points.begin(), points.end());
  const ExportKernelModel again = fit_kernel_model(points, shape, 7, 2, 132);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(again.coef[i], fit.coef[i]);
}

TEST(CostModel, FewPointsKeepTheSimplestNonNegativeFit) {
  const LaunchShape shape = square_tile_shape(128, 64);
  // One point: the work term alone reproduces it.
  const ExportKernelModel one = fit_kernel_model({{{1024, 1024, 1024}, 100.0}}, shape, 1, 1, 132);
  EXPECT_EQ(one.coef[0], 0.0);
  EXPECT_GT(one.coef[1], 0.0);
  EXPECT_NEAR(predict_us(one, shape, 132, {1024, 1024, 1024}), 100.0, 1e-9);
  // A point measured twice keeps its fastest time.
  const ExportKernelModel twice = fit_kernel_model({{{1024, 1024, 1024}, 100.0}, {{1024, 1024, 1024}, 80.0}}, shape, 1, 1, 132);
  EXPECT_EQ(twice.points, 1);
  EXPECT_NEAR(predict_us(twice, shape, 132, {1024, 1024, 1024}), 80.0, 1e-9);
  // Times that fall with size cannot give negative coefficients.
  const ExportKernelModel odd =
      fit_kernel_model({{{256, 256, 256}, 50.0}, {{512, 512, 512}, 40.0}, {{1024, 1024, 1024}, 30.0}}, shape, 1, 1, 132);
  for (double c : odd.coef) EXPECT_GE(c, 0.0);
}

TEST(CostModel, WeightsKeepTheFitRightWhereItsKernelCompetes) {
  const LaunchShape shape = square_tile_shape(256, 128);
  ExportKernelModel truth;
  truth.blocks_per_sm = 1;
  truth.coef[0] = 4;
  truth.coef[1] = 0.02;
  std::vector<ModelPoint> points;
  for (const Problem& p : std::vector<Problem>{{512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}})
    points.push_back({p, predict_us(truth, shape, 132, p)});
  // A shape where the kernel runs 3x slower than the work term says, and others win by far.
  const Problem odd{8192, 8192, 16};
  points.push_back({odd, 3 * predict_us(truth, shape, 132, odd)});
  const auto worst_error = [&](const ExportKernelModel& fit) {
    double worst = 0;
    for (size_t i = 0; i + 1 < points.size(); ++i)
      worst = std::max(worst, std::fabs(predict_us(fit, shape, 132, points[i].problem) / points[i].us - 1));
    return worst;
  };
  const ExportKernelModel even = fit_kernel_model(points, shape, 0, 1, 132);
  points.back().weight = 1.0 / 9.0;  // (fastest / this)^2 where another kernel is 3x faster
  const ExportKernelModel weighted = fit_kernel_model(points, shape, 0, 1, 132);
  EXPECT_LT(worst_error(weighted), worst_error(even));
  points.back().weight = 0;  // no weight is read as 1, not as "drop the point"
  const ExportKernelModel zero = fit_kernel_model(points, shape, 0, 1, 132);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(zero.coef[i], even.coef[i]);
}

TEST(CostModel, APointTheFeaturesCannotExplainDoesNotDragTheOthers) {
  // The work term counts whole tiles, so a GEMV-like shape that a kernel computes cheaply on its thin
  // edge looks like far more work than it is. Measured on an H100: one such point, at full weight,
  // made a least-squares fit predict 48 TF/s for a kernel that runs 36 TF/s at every large shape.
  const LaunchShape shape = square_tile_shape(256, 128);
  ExportKernelModel truth;
  truth.blocks_per_sm = 1;
  truth.coef[0] = 6;
  truth.coef[1] = 6.8;
  std::vector<ModelPoint> points;
  for (const Problem& p : std::vector<Problem>{{512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {1024, 1024, 16384},
                                               {2243, 2243, 2243}, {4096, 4096, 4096}, {1024, 4096, 4096}})
    points.push_back({p, predict_us(truth, shape, 132, p)});
  const Problem gemv{4096, 1, 4096};
  points.push_back({gemv, predict_us(truth, shape, 132, gemv) / 2.5});  // a fast thin edge, weight 1
  // Least squares predicts every other point 28-34% fast here; the robust fit 7-16%.
  const ExportKernelModel fit = fit_kernel_model(points, shape, 0, 1, 132);
  for (size_t i = 0; i + 1 < points.size(); ++i)
    EXPECT_NEAR(predict_us(fit, shape, 132, points[i].problem) / points[i].us, 1.0, 0.17) << points[i].problem.to_string();
  // Left out of the fit, a large shape is still predicted within 10% (least squares: 30%).
  std::vector<ModelPoint> without;
  for (const ModelPoint& p : points)
    if (!(p.problem == Problem{2048, 2048, 2048})) without.push_back(p);
  const ExportKernelModel held = fit_kernel_model(without, shape, 0, 1, 132);
  EXPECT_NEAR(predict_us(held, shape, 132, {2048, 2048, 2048}) / predict_us(truth, shape, 132, {2048, 2048, 2048}), 1.0, 0.10);
  // Its reported rms error is the plain one over every point, the odd one included.
  EXPECT_GT(fit.rms_relative_error, 0.2);
}

TEST(CostModel, ExportFitsEveryExportedKernelOnItsTrialsDeterministically) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.build(db);
  const ExportModel a = build_export_model(db.store(), {}, builtin_blocktile2d());
  const ExportModel b = build_export_model(db.store(), {}, builtin_blocktile2d());
  ASSERT_EQ(a.devices.size(), 2u);
  for (size_t d = 0; d < a.devices.size(); ++d) {
    ASSERT_EQ(a.devices[d].models.size(), b.devices[d].models.size());
    EXPECT_FALSE(a.devices[d].models.empty());
    for (size_t i = 0; i < a.devices[d].models.size(); ++i) {
      const auto& m = a.devices[d].models[i];
      EXPECT_EQ(m.kernel, b.devices[d].models[i].kernel);
      for (int t = 0; t < 4; ++t) EXPECT_EQ(m.coef[t], b.devices[d].models[i].coef[t]);
      EXPECT_GT(m.points, 1) << "calibration trials were used";
      EXPECT_GE(m.blocks_per_sm, 1);
      EXPECT_TRUE(std::isfinite(m.rms_relative_error) && m.rms_relative_error >= 0);
    }
  }
  // On the H100 table the choice varies with the shape (the point of a model), and every choice
  // is a kernel exported for that device.
  const size_t h100 = a.devices[0].name == k_h100 ? 0 : 1;
  std::set<int> chosen_kernels;
  for (const Problem& p : std::vector<Problem>{{300, 300, 300}, {2000, 2000, 2000}, {4097, 4097, 4097}, {2, 4096, 4096},
                                               {4096, 4096, 8}, {256, 256, 40000}, {60, 60, 60}})
    chosen_kernels.insert(choose_kernel(a, h100, tight_call(p)).kernel);
  EXPECT_GE(chosen_kernels.size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// The header under nvcc: compiles for sm_80 and sm_90, and its selection equals choose_kernel on
// 315 shapes of every class (tuned or not) x 7 call layouts x 3 tables
// ---------------------------------------------------------------------------------------------

TEST(ExportNvcc, TwoHeadersCompileTogetherForSm90) {
  test::TempDir dir;
  RealFixture f;
  std::string a, b;
  {
    DbBuilder db(dir / "t.db");
    f.build(db);
    a = export_header(db.store(), {}, builtin_blocktile2d());
    db.add_winner(k_h100_uuid, {1024, 1024, 1024}, "overall", f.bv, 0.09);
    ExportOptions other;
    other.name_space = "app::gemm";
    b = export_header(db.store(), other, builtin_blocktile2d());
  }
  test::write_file(dir / "a.cuh", a);
  test::write_file(dir / "b.cuh", b);
  test::write_file(dir / "use.cu", R"(#include "a.cuh"
#include "b.cuh"
#ifdef CMT_DEVICE
#error "a bundle's macro leaked"
#endif
cudaError_t use(float* C, const float* A, const float* B, cudaStream_t s) {
  cudaError_t e = cmtune::sgemm(100, 200, 300, 1.0f, A, 300, B, 200, 0.0f, C, 200, s);
  if (e != cudaSuccess) return e;
  return app::gemm::sgemm(100, 200, 300, 1.0f, A, 300, B, 200, 0.5f, C, 200);
}
)");
  const auto r = test::nvcc_cached("-arch=sm_90 -c", dir / "use.cu", dir / "use.o", {dir / "a.cuh", dir / "b.cuh"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The example a user copies (examples/consumer) and the correctness harness the GPU tests run
// (tests/consumer) compile against a real exported header, so neither rots while no GPU runs them.
TEST(ExportNvcc, ExampleAndHarnessCompileAgainstAnExportedHeader) {
  test::TempDir dir;
  RealFixture f;
  f.typed = true;   // the harness calls dgemm and igemm too
  {
    DbBuilder db(dir / "t.db");
    f.build(db);
    test::write_file(dir / "tuned_sgemm.cuh", export_header(db.store(), {}, builtin_blocktile2d()));
  }
  const fs::path root = default_templates_dir().parent_path();
  for (const fs::path source : {root / "examples" / "consumer" / "main.cu", root / "tests" / "consumer" / "harness.cu"}) {
    const auto r = test::nvcc_cached(fmt::format("-arch=sm_90 -c '-DCMTUNE_HEADER_PATH=\"{}\"' -DCMTUNE_NS=cmtune",
                                                 (dir / "tuned_sgemm.cuh").string()),
                                     source, dir / "out.o", {dir / "tuned_sgemm.cuh"});
    EXPECT_EQ(r.exit_code, 0) << source << ":\n" << r.output;
  }
}

/// One call for the header's host-side selection test.
struct SelectCase {
  int table;   // index into the header's device tables; -1: no table
  Problem p;   // its dtype says the entry point: sgemm, dgemm or igemm
  int64_t lda, ldb, ldc, alignment;
};

/// Builds a host program from the header `dir`/tuned.cuh (exported from `model`) with nvcc for
/// `arch`, which prints detail::select without and with a reason (its kernel and reason) for every
/// case and then runs `tail` (more output lines); runs it, and checks every choice against
/// choose_kernel(): the same kernel, computing the call's layout and element type, batched for a
/// batch, and the same reason (DispatchReason), counted by name into `reasons`. Returns the lines after
/// the cases.
std::vector<std::string> check_header_selection(const test::TempDir& dir, const ExportModel& model,
                                                const std::vector<SelectCase>& cases, const std::string& arch,
                                                const std::string& tail,
                                                std::map<std::string, int>* reasons = nullptr,
                                                int* splits_seen = nullptr) {
  std::string program = "#include \"tuned.cuh\"\n#include <cstdio>\n\n";
  program += "struct Case { int table, layout, batch, broadcast, m, n, k, lda, ldb, ldc, alignment, dtype; };\n";
  program += "static const Case k_cases[] = {\n";
  for (const auto& c : cases)
    program += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},\n", c.table,
                           (c.p.trans_a ? 2 : 0) + (c.p.trans_b ? 1 : 0), c.p.batch,
                           c.p.batch > 1 ? (c.p.stride_a == 0 ? 1 : 0) + (c.p.stride_b == 0 ? 2 : 0) : 0, c.p.m, c.p.n,
                           c.p.k, c.lda, c.ldb, c.ldc, c.alignment, static_cast<int>(c.p.dtype));
  program += R"(};

// Host only: nothing here touches a GPU. The calls of the entry points keep every kernel instantiated.
int main(int argc, char**) {
  if (argc > 5)
    return cmtune::sgemm(1, 1, 1, 1.0f, nullptr, 1, nullptr, 1, 0.0f, nullptr, 1) == cudaSuccess &&
           cmtune::dgemm(1, 1, 1, 1.0, nullptr, 1, nullptr, 1, 0.0, nullptr, 1) == cudaSuccess &&
           cmtune::igemm(1, 1, 1, 1, nullptr, 1, nullptr, 1, 0, nullptr, 1) == cudaSuccess;
  for (const Case& c : k_cases) {
    const cmtune::detail::Call call{c.layout, c.batch, c.broadcast, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, c.alignment,
                                    c.dtype};
    cmtune::DispatchReason reason = cmtune::DispatchReason::tuned;
    int explained_splits = 0, splits = 0;
    const int explained = cmtune::detail::select(c.table, call, &explained_splits, &reason);
    const int selected = cmtune::detail::select(c.table, call, &splits);
    std::printf("%d %d %s %d %d\n", selected, explained, cmtune::dispatch_reason_name(reason), splits, explained_splits);
  }
)";
  program += tail;
  program += "  return 0;\n}\n";
  test::write_file(dir / "select.cu", program);
  const auto build = test::nvcc_cached(fmt::format("-arch={} -Xcompiler -Wall,-Wextra -I {}", arch, quoted(dir.path())),
                                       dir / "select.cu", dir / "select", {dir / "tuned.cuh"});
  EXPECT_EQ(build.exit_code, 0) << build.output;
  if (build.exit_code != 0) return {};
  const auto run = test::run_command(quoted(dir / "select"));
  EXPECT_EQ(run.exit_code, 0) << run.output;

  std::istringstream lines(run.output);
  int mismatches = 0;
  for (const auto& c : cases) {
    std::string line;
    if (!std::getline(lines, line)) {
      ADD_FAILURE() << "output ended early:\n" << run.output;
      return {};
    }
    std::istringstream fields(line);
    int index = -2, explained = -2, splits = 0, explained_splits = 0;
    std::string reason;
    fields >> index >> explained >> reason >> splits >> explained_splits;
    if (reasons != nullptr) ++(*reasons)[reason];
    EXPECT_EQ(explained, index) << line << ": select asked for the reason chooses as it does without";
    EXPECT_EQ(explained_splits, splits) << line << ": and splits K alike";
    EXPECT_GE(index, -1);
    EXPECT_LT(index, static_cast<int>(model.kernels.size()));
    if (index < -1 || index >= static_cast<int>(model.kernels.size())) return {};
    const auto name = [&](int i) { return i < 0 ? std::string("(refused)") : model.kernels[static_cast<size_t>(i)].name_expression; };
    const CallShape call{c.p, c.lda, c.ldb, c.ldc, c.alignment};
    const size_t table = c.table < 0 ? model.devices.size() : static_cast<size_t>(c.table);
    const DispatchChoice choice = choose_kernel(model, table, call);
    const std::string expected = name(choice.kernel);
    if (splits_seen != nullptr && choice.splits > 1) ++*splits_seen;
    if ((name(index) != expected || reason != choice.reason || splits != choice.splits) && ++mismatches <= 10)
      ADD_FAILURE() << fmt::format("table {} {} lda={} ldb={} ldc={} alignment={}: header picks {} ({}, {} slices), "
                                   "choose_kernel {} ({}, {} slices)",
                                   c.table, c.p.to_string(), c.lda, c.ldb, c.ldc, c.alignment, name(index), reason,
                                   splits, expected, choice.reason, choice.splits);
    if (choice.splits > 1) {
      EXPECT_EQ(c.p.batch, 1) << c.p.to_string();
      EXPECT_EQ(c.p.k % choice.splits, 0) << c.p.to_string();
      EXPECT_TRUE(model.kernels[static_cast<size_t>(choice.kernel)].batched) << c.p.to_string();
    }
    // Whatever runs computes the call's layout and type, and takes its batch.
    EXPECT_GE(index, 0) << c.p.to_string() << ": blocktile2d serves every layout, type and batch, so nothing is refused";
    if (index < 0) continue;
    const ExportKernel& k = model.kernels[static_cast<size_t>(index)];
    EXPECT_EQ(k.layout, c.p.layout()) << c.p.to_string() << " ran " << k.name_expression;
    EXPECT_EQ(k.dtype, c.p.dtype) << c.p.to_string() << " ran " << k.name_expression;
    if (c.p.batch > 1) EXPECT_TRUE(k.batched) << c.p.to_string() << " ran " << k.name_expression;
  }
  EXPECT_EQ(mismatches, 0);
  std::vector<std::string> rest;
  for (std::string line; std::getline(lines, line);) rest.push_back(line);
  return rest;
}

/// `count` shapes of every class, log-uniform over 1..65536 per dimension (a fixed seed), after the
/// given ones.
std::vector<Problem> random_shapes(std::vector<Problem> problems, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_dim(0.0, std::log(65536.0));
  while (problems.size() < count) {
    const auto dim = [&] { return static_cast<int64_t>(std::exp(log_dim(rng))); };
    const Problem p{dim(), dim(), dim()};
    if (static_cast<double>(p.m) * static_cast<double>(p.n) < 2e9) problems.push_back(p);   // C fits an int's offsets
  }
  return problems;
}

/// Every layout, unbatched and batched (packed, and with A or B broadcast), of each shape in `dtype`,
/// with tight leading dimensions, on tables -1 (none) to table_count - 1.
void add_operand_cases(std::vector<SelectCase>& cases, const std::vector<Problem>& shapes, DType dtype,
                       int table_count) {
  for (int table = -1; table < table_count; ++table)
    for (const Problem& shape : shapes)
      for (int layout = 0; layout < 4; ++layout)
        for (const int64_t batch : {1, 4096, 7})
          for (int broadcast = 0; broadcast < (batch > 1 ? 3 : 1); ++broadcast) {
            Problem p = Problem::make(shape.m, shape.n, shape.k, layout >= 2, layout % 2 == 1, batch, dtype);
            if (broadcast == 1) p.stride_a = 0;
            if (broadcast == 2) p.stride_b = 0;
            const CallShape call = tight_call(p);
            cases.push_back({table, call.problem, call.lda, call.ldb, call.ldc, call.alignment});
          }
}

TEST(ExportNvcc, HeaderSelectionMatchesChooseKernelAndCompilesForSm80) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.build(db);
  const ExportModel model = build_export_model(db.store(), {}, builtin_blocktile2d());
  ASSERT_EQ(model.devices.size(), 2u);
  ASSERT_EQ(model.devices[0].name, k_a100);
  ASSERT_EQ(model.devices[1].name, k_h100);
  test::write_file(dir / "tuned.cuh", render_header(model, "cmtune"));
  // The NT winner is the f32 NT generic default's very kernel: its build is known, so bench can time
  // it; the TT generic was never measured.
  ASSERT_GE(model.generic_kernels[0][1], 0);
  EXPECT_EQ(model.kernels[static_cast<size_t>(model.generic_kernels[0][1])].name_expression, f.b2_nt.name_expression);
  EXPECT_EQ(model.kernels[static_cast<size_t>(model.generic_kernels[0][1])].binary_key, DbBuilder::binary_key_of(f.b2_nt));
  EXPECT_TRUE(model.kernels[static_cast<size_t>(model.generic_kernels[0][3])].binary_key.empty());

  std::vector<SelectCase> cases;
  const std::vector<Problem> problems = random_shapes(
      {{1024, 1024, 1024}, {4096, 4096, 4096}, {512, 2048, 256}, {2048, 2048, 2048}, {128, 128, 128},
       {17, 33, 65},       {1000, 1000, 1000}, {1023, 1023, 1023}, {1025, 1025, 1025}, {2049, 100, 3000},
       {1, 1, 1},          {100000, 16, 16},   {256, 4096, 128},   {3000, 3000, 64},   {724, 724, 724},
       {256, 256, 65536},  {512, 256, 16384},  {128, 128, 32768},  {256, 256, 8192}},
      315, 17);
  for (int table = -1; table < 2; ++table)
    for (const Problem& p : problems)
      for (const auto& [dl, dc, align] : std::vector<std::tuple<int, int, int>>{{0, 0, 256}, {1, 0, 256}, {0, 3, 256},
                                                                               {0, 0, 4}, {0, 0, 8}, {0, 0, 16}, {4, 4, 16}})
        cases.push_back({table, p, p.k + dl, p.n + dl, p.n + dc, align});
  // Every layout, unbatched and batched (packed, and with A or B broadcast), on a fifth of the shapes
  // and the tuned ones: only kernels of the call's layout (and batched ones for a batch) may run.
  std::vector<Problem> operand_shapes = {{1024, 1024, 1024}, {64, 64, 64}, {100, 100, 100}, {1023, 1023, 1023}};
  for (size_t i = 0; i < problems.size(); i += 5)
    if (problems[i].m * problems[i].n < (int64_t{1} << 24)) operand_shapes.push_back(problems[i]);
  add_operand_cases(cases, operand_shapes, DType::f32, 2);

  std::map<std::string, int> reasons;
  int splits_seen = 0;
  const std::vector<std::string> rest = check_header_selection(dir, model, cases, "sm_80", R"(
  // Why, for calls of the H100 table (1) that no tuned kernel computes, and one that misses the
  // requirements of the only TN kernel (lda, ldb 1023).
  const auto why = [](int table, int layout, int batch, int m, int n, int k, int lda, int ldb, int ldc, int dtype) {
    cmtune::DispatchReason reason = cmtune::DispatchReason::tuned;
    int splits = 1;
    const int kernel = cmtune::detail::select(
        table, cmtune::detail::Call{layout, batch, 0, m, n, k, lda, ldb, ldc, 256, dtype}, &splits, &reason);
    const bool generic = kernel == cmtune::detail::k_generic_kernels[dtype][layout];
    std::printf("why %s%s\n", cmtune::dispatch_reason_name(reason), generic ? " generic" : "");
  };
  why(1, 3, 1, 1024, 1024, 1024, 1024, 1024, 1024, 0);   // f32 tt
  why(1, 0, 1, 1024, 1024, 1024, 1024, 1024, 1024, 1);   // f64 nn
  why(1, 2, 1, 1023, 1023, 1023, 1023, 1023, 1023, 0);   // f32 tn, lda % 4 != 0
  why(1, 0, 1, 1024, 1024, 1024, 1024, 1024, 1024, 0);   // the tuned f32 nn problem
  why(-1, 0, 1, 1024, 1024, 1024, 1024, 1024, 1024, 0);  // no table
  if (argc > 6) {   // the public API with the reason compiles for each type (it needs a GPU to answer)
    const char* name = nullptr;
    cmtune::DispatchReason reason;
    static const double d[1] = {};
    static const int i[1] = {};
    return cmtune::kernel_name(cmtune::Op::T, cmtune::Op::T, 8, 8, 8, d, 8, 0, d, 8, 0, d, 8, 0, 1, &name, &reason) +
           cmtune::kernel_name(8, 8, 8, i, 8, i, 8, i, 8, &name, &reason);
  }
  using cmtune::detail::match_device_table;
  std::printf("match %d %d %d %d %d\n", match_device_table("NVIDIA H100 80GB HBM3", 9, 0, 132),
              match_device_table("NVIDIA A100-SXM4-40GB", 8, 0, 108), match_device_table("NVIDIA H100 PCIe", 9, 0, 114),
              match_device_table("NVIDIA H100 80GB HBM3", 9, 0, 114), match_device_table("Tesla V100", 7, 0, 80));
  static const float buffer[64] = {};
  std::printf("align %d %d %d %d\n", cmtune::detail::alignment_of(buffer, buffer, buffer) >= 16 ? 16 : 0,
              cmtune::detail::alignment_of(buffer + 1, buffer, buffer), cmtune::detail::alignment_of(buffer + 2, buffer, buffer + 4),
              cmtune::detail::alignment_of(nullptr, nullptr, nullptr));
)",
                                                               &reasons, &splits_seen);
  EXPECT_GT(splits_seen, 0) << "the long-K shapes split K, in the header as in choose_kernel";
  EXPECT_EQ(rest, (std::vector<std::string>{"why not_served generic", "why not_served generic",
                                            "why requirements_missed generic", "why tuned", "why no_table generic",
                                            // Exact H100 -> 1, exact A100 -> 0, another cc 9.0 device -> first cc
                                            // 9.0 table, V100 -> none.
                                            "match 1 0 1 1 -1", "align 16 4 8 256"}));
  // The cases meet every reason but not_modelled (every kernel of a real table has a model).
  for (const char* reason : {"tuned", "tuned_portable", "predicted", "no_table", "not_served", "requirements_missed"})
    EXPECT_GT(reasons[reason], 0) << reason;
  EXPECT_EQ(reasons.count("not_modelled"), 0u);
}

// The same with FP64 and INT32 winners beside the FP32 ones: dgemm and igemm calls (the f64 dmma
// winner needs 16-byte alignment and even leading dimensions) choose among their own type's kernels
// as choose_kernel does, and f32 calls never run them; the header builds for sm_80 and sm_90.
TEST(ExportNvcc, TypedHeaderSelectionMatchesChooseKernelForEachType) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.typed = true;
  f.build(db);
  const ExportModel model = build_export_model(db.store(), {}, builtin_blocktile2d());
  ASSERT_EQ(model.devices.size(), 2u);
  ASSERT_EQ(model.devices[1].name, k_h100);
  const std::string header = render_header(model, "cmtune");
  test::write_file(dir / "tuned.cuh", header);
  // A generic default per type and layout (the built-in blocktile2d computes them all), and the tuned
  // kernels of every type.
  for (int d = 0; d < k_header_dtypes; ++d)
    for (int l = 0; l < 4; ++l) {
      const int g = model.generic_kernels[d][l];
      ASSERT_GE(g, 0) << d << " " << l;
      EXPECT_EQ(static_cast<int>(model.kernels[static_cast<size_t>(g)].dtype), d);
      EXPECT_EQ(layout_number(model.kernels[static_cast<size_t>(g)].layout), l);
    }
  std::set<DType> tuned_types;
  for (const auto& e : model.devices[1].entries) tuned_types.insert(e.problem.dtype);
  EXPECT_EQ(tuned_types, (std::set<DType>{DType::f32, DType::f64, DType::i32}));
  EXPECT_NE(header.find("static_cast<TypedBatchedKernelFn<double>>(&"), std::string::npos);
  EXPECT_NE(header.find("static_cast<TypedBatchedKernelFn<int>>(&"), std::string::npos);
  EXPECT_NE(header.find("{{1024, 1024, 1024, 0, 1, 0, 1}, "), std::string::npos) << "the f64 entry";
  EXPECT_NE(header.find("{{1024, 1024, 1024, 0, 1, 0, 2}, "), std::string::npos) << "the i32 entry";
  EXPECT_NE(header.find("{{64, 64, 64, 1, 4096, 0, 2}, "), std::string::npos) << "the i32 NT batch";

  std::vector<SelectCase> cases;
  const std::vector<Problem> problems =
      random_shapes({{1024, 1024, 1024}, {2048, 2048, 2048}, {64, 64, 64}, {1023, 1023, 1023}, {17, 33, 65},
                     {1, 4096, 4096}, {4096, 4096, 16}, {100000, 16, 16}},
                    80, 29);
  for (const DType dtype : {DType::f32, DType::f64, DType::i32}) {
    for (int table = -1; table < 2; ++table)
      for (Problem p : problems) {
        p.dtype = dtype;
        // Tight and odd leading dimensions, aligned, 8-byte (a double's own) and 4-byte aligned.
        for (const auto& [dl, align] : std::vector<std::pair<int, int>>{{0, 256}, {1, 256}, {0, 8}, {0, 16}, {2, 16}})
          if (align >= dtype_bytes(dtype)) cases.push_back({table, p, p.k + dl, p.n + dl, p.n + dl, align});
      }
    std::vector<Problem> operand_shapes = {{1024, 1024, 1024}, {64, 64, 64}, {100, 100, 100}};
    for (size_t i = 8; i < problems.size(); i += 6)
      if (problems[i].m * problems[i].n < (int64_t{1} << 24)) operand_shapes.push_back(problems[i]);
    add_operand_cases(cases, operand_shapes, dtype, 2);
  }
  const std::vector<std::string> rest = check_header_selection(dir, model, cases, "sm_80", R"(
  static const double d[64] = {};
  std::printf("align %d %d\n", cmtune::detail::alignment_of(d, d, d, 10, 0, 64, 8) >= 16 ? 16 : 0,
              cmtune::detail::alignment_of(d, d, d, 10, 0, 64));
)");
  EXPECT_EQ(rest, (std::vector<std::string>{"align 16 8"}));
  // The tuned shapes run their own type's winners, aligned, and the portable kernels of their type
  // when the call misses the winner's requirements.
  const auto chosen = [&](Problem p, int64_t alignment) {
    CallShape call = tight_call(p);
    call.alignment = alignment;
    const int k = choose_kernel(model, 1, call).kernel;
    return k < 0 ? std::string("(refused)") : model.kernels[static_cast<size_t>(k)].name_expression;
  };
  EXPECT_EQ(chosen(RealFixture::f64({1024, 1024, 1024}), 256), f.dm.name_expression);
  EXPECT_EQ(chosen(RealFixture::f64({1024, 1024, 1024}), 8), f.b2_f64.name_expression);
  EXPECT_EQ(chosen(RealFixture::i32({1024, 1024, 1024}), 256), f.b2_i32.name_expression);
  EXPECT_EQ(chosen({1024, 1024, 1024}, 256), f.ms4.name_expression);

  // And for Hopper, with the calls of every entry point of each type.
  test::write_file(dir / "use.cu", R"(#include "tuned.cuh"
cudaError_t use(double* dc, const double* da, const double* db, int* ic, const int* ia, const int* ib, cudaStream_t s) {
  using cmtune::Op;
  cudaError_t e = cmtune::dgemm(100, 200, 300, 1.0, da, 300, db, 200, 0.0, dc, 200, s);
  if (e == cudaSuccess) e = cmtune::dgemm(Op::T, Op::N, 100, 200, 300, 1.0, da, 100, db, 200, 0.5, dc, 200, s);
  if (e == cudaSuccess)
    e = cmtune::dgemm_strided_batched(Op::N, Op::T, 64, 64, 64, 2.0, da, 64, 4096, db, 64, 0, 0.0, dc, 64, 4096, 8, s);
  if (e == cudaSuccess) e = cmtune::dgemm_colmajor(Op::N, Op::N, 100, 200, 300, 1.0, da, 100, db, 300, 0.0, dc, 100, s);
  if (e == cudaSuccess)
    e = cmtune::dgemm_colmajor_strided_batched(Op::T, Op::T, 64, 64, 64, 1.0, da, 64, 4096, db, 64, 4096, 1.0, dc, 64,
                                               4096, 3, s);
  if (e == cudaSuccess) e = cmtune::igemm(100, 200, 300, 3, ia, 300, ib, 200, -2, ic, 200, s);
  if (e == cudaSuccess) e = cmtune::igemm(Op::N, Op::T, 100, 200, 300, 1, ia, 300, ib, 300, 0, ic, 200, s);
  if (e == cudaSuccess)
    e = cmtune::igemm_strided_batched(Op::T, Op::N, 64, 64, 64, 7, ia, 64, 0, ib, 64, 4096, 3, ic, 64, 4096, 8, s);
  if (e == cudaSuccess) e = cmtune::igemm_colmajor(Op::T, Op::N, 100, 200, 300, 1, ia, 300, ib, 300, 0, ic, 100, s);
  if (e == cudaSuccess)
    e = cmtune::igemm_colmajor_strided_batched(Op::N, Op::N, 64, 64, 64, 1, ia, 64, 4096, ib, 64, 4096, 1, ic, 64, 4096,
                                               3, s);
  const char* name = nullptr;
  if (e == cudaSuccess) e = cmtune::kernel_name(100, 200, 300, da, 300, db, 200, dc, 200, &name);
  if (e == cudaSuccess) e = cmtune::kernel_name(Op::N, Op::N, 100, 200, 300, ia, 300, 0, ib, 200, 0, ic, 200, 0, 1, &name);
  return e;
}
)");
  const auto sm90 = test::nvcc_cached(fmt::format("-arch=sm_90 -c -I {}", quoted(dir.path())), dir / "use.cu",
                                      dir / "use.o", {dir / "tuned.cuh"});
  EXPECT_EQ(sm90.exit_code, 0) << sm90.output;
}

}  // namespace
