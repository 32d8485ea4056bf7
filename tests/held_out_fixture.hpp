// The held-out check's fixture (export/model_check.hpp): one H100 table with four kernels whose
// measured times follow known formulas at thirteen shapes, so a test can say, without the code it
// tests, what leaving each shape out must give.
//
//   wide    128x128 tiles          t = 5 + 1.0 w   measured at every shape
//   mid     64x64 tiles            t = 2 + 1.5 w   measured at every shape
//   skinny  16x128 tiles           t = 1 + 0.5 w   measured only at 4x4096x4096 and 8x4096x4096:
//                                                  fast near them, and chosen at 16x4096x4096,
//                                                  where it was not measured
//   splitk  64x64 tiles, K split 8 t = 4 + 1.6 w   measured only at the two deep shapes, 10x
//                                                  slower than its formula at 256x256x65536 (a
//                                                  cliff): each held-out model extrapolates from
//                                                  one point, and badly
//
// w is the model's work feature: the busiest SM's blocks x tile_m x tile_n x K per block / 1e6 on
// 132 SMs. wide and mid follow two of the model's terms exactly, so their held-out fits are exact.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "db_builder.hpp"
#include "export/export_model.hpp"
#include "export_fixtures.hpp"

namespace cmt::test {

struct FormulaKernel {
  std::string name;
  int tile_m = 0, tile_n = 0, grid_z = 1;
  double c0 = 0, c1 = 0;              // t = c0 + c1 * work, microseconds
  std::vector<Problem> measured;      // where it has a trial
};

struct HeldOutFixture {
  static constexpr int k_sms = 132;
  static constexpr double k_cliff_factor = 10;
  const std::string uuid = "GPU-held-out";
  const std::string device_name = "NVIDIA H100 80GB HBM3";
  const Problem cliff{256, 256, 65536};
  std::vector<Problem> shapes;
  std::vector<FormulaKernel> kernels;
  std::vector<KernelSpec> specs;      // parallel to kernels, once built

  HeldOutFixture() {
    for (const int64_t s : {256, 512, 768, 1024, 1536, 2048, 3072, 4096}) shapes.push_back({s, s, s});
    const std::vector<Problem> skinny = {{4, 4096, 4096}, {8, 4096, 4096}, {16, 4096, 4096}};
    const std::vector<Problem> deep = {{256, 256, 16384}, cliff};
    shapes.insert(shapes.end(), skinny.begin(), skinny.end());
    shapes.insert(shapes.end(), deep.begin(), deep.end());
    kernels.push_back({"wide", 128, 128, 1, 5.0, 1.0, shapes});
    kernels.push_back({"mid", 64, 64, 1, 2.0, 1.5, shapes});
    kernels.push_back({"skinny", 16, 128, 1, 1.0, 0.5, {skinny[0], skinny[1]}});
    kernels.push_back({"splitk", 64, 64, 8, 4.0, 1.6, deep});
  }

  /// The work feature, as docs/EXPORT.md defines it.
  static double work(const FormulaKernel& k, const Problem& p) {
    const auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    const int64_t blocks = cdiv(p.m, k.tile_m) * cdiv(p.n, k.tile_n) * k.grid_z;
    return static_cast<double>(cdiv(blocks, k_sms) * k.tile_m * k.tile_n * cdiv(p.k, k.grid_z)) * 1e-6;
  }
  /// The formula's time, without the cliff.
  static double formula_us(const FormulaKernel& k, const Problem& p) { return k.c0 + k.c1 * work(k, p); }
  bool measures(const FormulaKernel& k, const Problem& p) const {
    return std::find(k.measured.begin(), k.measured.end(), p) != k.measured.end();
  }
  /// The measured time: the formula's, times the cliff factor for splitk at the cliff shape.
  double measured_us(const FormulaKernel& k, const Problem& p) const {
    return formula_us(k, p) * (k.name == "splitk" && p == cliff ? k_cliff_factor : 1.0);
  }

  /// The fixture's export model, as `cm-tune export` builds it from the fixture's database (written
  /// to db_file).
  ExportModel export_model(const std::filesystem::path& db_file) {
    DbBuilder db(db_file);
    build(db);
    return build_export_model(db.store(), {}, export_fixtures::fixture_blocktile2d());
  }

  /// Stores the kernels' sources, a trial of every measurement, and each shape's fastest as its winner.
  void build(DbBuilder& db) {
    db.add_device(uuid, device_name, 9, 0, k_sms);
    for (const FormulaKernel& f : kernels) {
      const std::string kernel = "cmt_sgemm_" + f.name;
      SourceBundle b;
      b.main_name = f.name + ".cuh";
      b.main_text = fmt::format(
          "template <int V>\n__global__ void {}(int M, int N, int K, float alpha, const float* A, int lda, "
          "const float* B,\n    int ldb, float beta, float* C, int ldc) {{}}\n",
          kernel);
      KernelSpec k;
      k.template_name = f.name;
      k.params = "V=1";
      k.name_expression = kernel + "<1>";
      k.shape = LaunchShape{256, f.tile_m, f.tile_n, 0, f.grid_z};
      k.requirements = Requirements{4, 1};
      k.source_hash = db.add_source(f.name, b);
      specs.push_back(k);
    }
    for (const Problem& p : shapes) {
      size_t fastest = kernels.size();
      for (size_t i = 0; i < kernels.size(); ++i)
        if (measures(kernels[i], p) &&
            (fastest == kernels.size() || measured_us(kernels[i], p) < measured_us(kernels[fastest], p)))
          fastest = i;
      for (size_t i = 0; i < kernels.size(); ++i) {
        if (!measures(kernels[i], p)) continue;
        const double ms = measured_us(kernels[i], p) * 1e-3;
        if (i == fastest)
          db.add_winner(uuid, p, "overall", specs[i], ms);
        else
          db.add_trial(uuid, p, "trial", specs[i], ms);
      }
    }
  }
};

}  // namespace cmt::test
