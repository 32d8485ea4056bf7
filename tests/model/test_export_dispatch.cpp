// The dispatch (export/dispatch.hpp): choose_kernel on hand-made export models.
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

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "export/cost_model.hpp"
#include "export/dispatch.hpp"
#include "export/header_writer.hpp"
#include "export/rules.hpp"
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

/// sample_model with the opt-in tf32x3 class: 4 "x3" (128x128, vec4), tuned at 1000^3 and 3000^3 (no
/// portable kernel) and cheaper than every f32 kernel; 5 "x3_slow" (64x64, no requirements), dearer.
ExportModel sample_model_with_tf32x3() {
  ExportModel model = sample_model();
  ExportKernel x3 = kernel_named("x3", 128, 128, k_vec4), slow = kernel_named("x3_slow", 64, 64, {4, 1});
  x3.dtype = slow.dtype = DType::tf32x3;
  model.kernels.push_back(x3);
  model.kernels.push_back(slow);
  Problem tuned{1000, 1000, 1000}, large{3000, 3000, 3000};
  tuned.dtype = large.dtype = DType::tf32x3;
  model.devices[0].entries.push_back({tuned, 4, -1});
  model.devices[0].entries.push_back({large, 4, -1});
  model.devices[0].models.push_back(model_of(4, {1, 0.01, 0, 0}, 256, 8192));
  model.devices[0].models.push_back(model_of(5, {50, 0.4, 0, 0}, 256, 8192));
  return model;
}

CallShape x3_call(Problem p) {
  p.dtype = DType::tf32x3;
  return tight_call(p);
}

// An opted-in call (the header's sgemm_tf32x3) runs the class's kernel where it is predicted faster
// than what sgemm runs, and otherwise exactly what sgemm runs, saying why.
TEST(DispatchChoice, AnOptedInCallRunsTheFasterClassOrTheFp32Path) {
  const ExportModel model = sample_model_with_tf32x3();
  const auto name = [&](const DispatchChoice& c) {
    return c.kernel < 0 ? std::string("(refused)") : model.kernels.at(static_cast<size_t>(c.kernel)).name_expression;
  };
  // Tuned in both classes: x3's model (1 + 0.01 w) against big's (20 + 0.05 w) at the same work.
  DispatchChoice c = choose_kernel(model, 0, x3_call({1000, 1000, 1000}));
  EXPECT_EQ(name(c), "x3");
  EXPECT_EQ(c.dtype, DType::tf32x3);
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.reason, "tuned");
  EXPECT_GT(c.modelled_us, 0);
  EXPECT_NE(c.why.find("tf32x3 (opted in): tuned for this problem"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("for the f32 path's big"), std::string::npos) << c.why;
  EXPECT_EQ(name(choose_kernel(model, 0, tight_call({1000, 1000, 1000}))), "big") << "sgemm never runs x3";
  // Both classes' models are listed.
  std::set<DType> listed;
  for (const auto& pr : c.predictions) listed.insert(model.kernels.at(static_cast<size_t>(pr.kernel)).dtype);
  EXPECT_EQ(listed, (std::set<DType>{DType::f32, DType::tf32x3}));

  // An odd lda misses x3's requirements and the class has no portable or generic kernel: the f32
  // path, as sgemm takes it (here its portable winner).
  CallShape odd = x3_call({1000, 1000, 1000});
  odd.lda = 1001;
  c = choose_kernel(model, 0, odd);
  EXPECT_EQ(name(c), "small");
  EXPECT_EQ(c.dtype, DType::f32);
  EXPECT_EQ(c.reason, "tuned_portable");
  EXPECT_NE(c.why.find("the f32 path (opted in to tf32x3, but the call misses the requirements of every tf32x3 "
                       "kernel that computes it): tuned for this problem"),
            std::string::npos)
      << c.why;
  EXPECT_EQ(choose_class_kernel(model, 0, odd).kernel, -1) << "the class alone has nothing to run";
  // The tuned 3000^3 at 4-byte alignment: x3 cannot run and the entry has no portable kernel, so the f32
  // path runs (3000^3 is untuned in f32: small, predicted).
  CallShape tuned_unaligned = x3_call({3000, 3000, 3000});
  tuned_unaligned.alignment = 4;
  EXPECT_EQ(name(choose_kernel(model, 0, tuned_unaligned)), "small");
  // Untuned 2500^3 at 4-byte alignment: x3_slow can run but is predicted slower than small.
  CallShape unaligned = x3_call({2500, 2500, 2500});
  unaligned.alignment = 4;
  c = choose_kernel(model, 0, unaligned);
  EXPECT_EQ(name(c), "small") << c.why;
  EXPECT_NE(c.why.find("its tf32x3 kernel x3_slow[] is predicted slower"), std::string::npos) << c.why;
  // Untuned and aligned: x3 is predicted fastest.
  c = choose_kernel(model, 0, x3_call({2000, 2000, 2000}));
  EXPECT_EQ(name(c), "x3");
  EXPECT_EQ(c.reason, "predicted");
  // A layout no tf32x3 kernel computes, and a device without a table: what sgemm does.
  c = choose_kernel(model, 0, x3_call(Problem::make(2000, 2000, 2000, false, true)));
  EXPECT_EQ(c.kernel, -1) << "no f32 nt kernel either";
  EXPECT_NE(c.why.find("no tuned tf32x3 kernel of this table computes nt"), std::string::npos) << c.why;
  c = choose_kernel(model, 5, x3_call({64, 64, 64}));
  EXPECT_EQ(name(c), "generic");
  EXPECT_EQ(c.reason, "no_table");
  EXPECT_NE(c.why.find("nothing is tuned for this device"), std::string::npos) << c.why;
}

// The header computes every row of the type table: the opt-in class through sgemm_tf32x3, whose
// dispatch falls back to f32's (the rules' opt_in_storage agrees with the table's storage types).
TEST(DispatchChoice, TheHeaderComputesEveryTypeAndNamesItsRoutine) {
  for (const TypeInfo& t : k_types) {
    EXPECT_TRUE(header_computes(t.dtype)) << t.name;
    EXPECT_EQ(rules::opt_in_storage(static_cast<int>(t.dtype)), t.opt_in ? static_cast<int>(t.storage) : -1) << t.name;
  }
  EXPECT_EQ(header_routine(DType::f32), "sgemm");
  EXPECT_EQ(header_routine(DType::f64), "dgemm");
  EXPECT_EQ(header_routine(DType::i32), "igemm");
  EXPECT_EQ(header_routine(DType::tf32x3), "sgemm_tf32x3");
  EXPECT_EQ(header_kernel_name_function(DType::f64), "kernel_name");
  EXPECT_EQ(header_kernel_name_function(DType::tf32x3), "kernel_name_tf32x3");
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


}  // namespace
