// The fixture databases and templates the export tests share: RealFixture (real template sources,
// two devices) and SyntheticFixture (fixed sources, for the golden tables). Used by
// tests/model/test_export_export_model.cpp, test_export_dispatch.cpp and test_export_cost_model.cpp, tests/cli/test_cli_cmd_export.cpp
// and tests/cuda/test_export_header_nvcc.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <vector>

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

namespace cmt::export_fixtures {

namespace fs = std::filesystem;

inline const fs::path k_fixtures = fs::path(CMTUNE_TEST_FIXTURES) / "export";

// ---------------------------------------------------------------------------------------------
// Fixture databases
// ---------------------------------------------------------------------------------------------

using test::DbBuilder;
using test::KernelSpec;

inline const TemplateDesc& find_desc(const std::vector<TemplateDesc>& templates, const std::string& name) {
  for (const auto& t : templates)
    if (t.name == name) return t;
  throw std::runtime_error("no template " + name);
}

inline bool config_valid(const TemplateDesc& t, const ParamValues& values) {
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
inline KernelSpec real_kernel(DbBuilder& db, const std::vector<TemplateDesc>& templates, const std::string& name,
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

inline constexpr const char* k_h100 = "NVIDIA H100 80GB HBM3";
inline constexpr const char* k_a100 = "NVIDIA A100-SXM4-40GB";
inline constexpr const char* k_h100_uuid = "GPU-11111111-0000-0000-0000-000000000001";
inline constexpr const char* k_a100_uuid = "GPU-22222222-0000-0000-0000-000000000002";

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
  /// With `tf32x3`, winners of the opt-in class too (add_tf32x3), on the H100 only: tf32x3_mma with
  /// 16-byte copies (requirements) in NN, and without (VEC=1) in NN and NT.
  bool tf32x3 = false;
  KernelSpec x3_vec4, x3_nn, x3_nt;
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
    if (tf32x3) add_tf32x3(db);
  }

  static Problem x3(Problem p) {
    p.dtype = DType::tf32x3;
    return p;
  }

  /// tf32x3 winners and calibration trials on the H100: faster than the f32 kernels on large shapes
  /// (the synthetic rates below), slower on small ones (a larger fixed cost), so an opted-in call runs
  /// either class. 1024^3 has a portable winner, 2048^3 none; the A100 has no tf32x3 kernel at all.
  void add_tf32x3(DbBuilder& db) {
    const auto with_requirements = [](const LaunchShape&, const Requirements& r) { return !r.none(); };
    const auto without_requirements = [](const LaunchShape&, const Requirements& r) { return r.none(); };
    const std::string common = "BM=64,BN=64,BK=32,WM=32,WN=32,STAGES=3,PAD=8,STAGED=1,SWIZZLE=1,DTYPE=3";
    x3_vec4 = real_kernel(db, templates, "tf32x3_mma", common + ",VEC=4,TRANS_A=0,TRANS_B=0", with_requirements);
    x3_nn = real_kernel(db, templates, "tf32x3_mma", common + ",VEC=1,TRANS_A=0,TRANS_B=0", without_requirements);
    x3_nt = real_kernel(db, templates, "tf32x3_mma", common + ",VEC=1,TRANS_A=0,TRANS_B=1", without_requirements);
    db.add_winner(k_h100_uuid, x3({1024, 1024, 1024}), "overall", x3_vec4, 0.05);
    db.add_winner(k_h100_uuid, x3({1024, 1024, 1024}), "portable", x3_nn, 0.08);
    db.add_winner(k_h100_uuid, x3({2048, 2048, 2048}), "overall", x3_vec4, 0.3);
    db.add_winner(k_h100_uuid, x3(Problem::make(1024, 1024, 1024, false, true)), "overall", x3_nt, 0.09);
    const std::vector<Problem> shapes = {{64, 64, 64},       {363, 363, 363},   {725, 725, 725}, {1449, 1449, 1449},
                                         {2897, 2897, 2897}, {4096, 1024, 4096}, {1, 4096, 4096}, {4096, 4096, 16}};
    for (const Problem& shape : shapes)
      for (const int64_t batch : {1, 8}) {
        const Problem nn = x3(Problem::make(shape.m, shape.n, shape.k, false, false, batch));
        const Problem nt = x3(Problem::make(shape.m, shape.n, shape.k, false, true, batch));
        db.add_trial(k_h100_uuid, nn, "calibration", x3_vec4, synthetic_ms(x3_vec4, 80, 132, nn) + 0.03);
        db.add_trial(k_h100_uuid, nn, "calibration", x3_nn, synthetic_ms(x3_nn, 55, 132, nn) + 0.03);
        db.add_trial(k_h100_uuid, nt, "calibration", x3_nt, synthetic_ms(x3_nt, 50, 132, nt) + 0.03);
      }
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

inline const TemplateDesc& builtin_blocktile2d() {
  static const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  return find_desc(templates, "blocktile2d");
}

/// The f32-only stand-in for blocktile2d (tests/fixtures/export/templates).
inline const TemplateDesc& fixture_blocktile2d();

// ---------------------------------------------------------------------------------------------
// nvcc
// ---------------------------------------------------------------------------------------------

inline std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }


/// Synthetic sources with fixed text, so the golden tables never depend on the real templates.
struct SyntheticFixture {
  KernelSpec fast1, fast2, port1, port2;
  KernelSpec typed_f64, typed_i32;   // one template computing f64 and i32 (DTYPE), as blocktile2d does
  /// With `tf32x3`, winners of the opt-in class too (x3: DTYPE 3, float data, 16-byte requirements), on
  /// the H100s only.
  bool tf32x3 = false;
  KernelSpec x3;

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
    if (tf32x3) add_tf32x3(db);
  }

  void add_tf32x3(DbBuilder& db) {
    SourceBundle b;
    b.main_name = "x3.cuh";
    b.main_text =
        "template <int V, int DTYPE>\n"
        "__global__ void cmt_sgemm_x3(int M, int N, int K, float alpha, const float* A, int lda, const float* B,\n"
        "    int ldb, float beta, float* C, int ldc) {}\n";
    x3.template_name = "x3";
    x3.params = "V=1,DTYPE=3";
    x3.name_expression = "cmt_sgemm_x3<1, 3>";
    x3.shape = {256, 128, 128, 0};
    x3.requirements = Requirements{16, 4};
    x3.source_hash = db.add_source("x3", b);
    Problem p{1024, 1024, 1024}, q{4096, 4096, 4096};
    p.dtype = q.dtype = DType::tf32x3;
    db.add_winner("GPU-aaaa", p, "overall", x3, 0.6);
    db.add_winner("GPU-aaab", q, "overall", x3, 5.5);
  }
};

inline const TemplateDesc& fixture_blocktile2d() {
  static const std::vector<TemplateDesc> templates = load_templates({k_fixtures / "templates"});
  return find_desc(templates, "blocktile2d");
}


}  // namespace cmt::export_fixtures
