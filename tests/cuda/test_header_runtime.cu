// The exported header's run-time code (tuner/export/runtime/), compiled here as code by nvcc with a
// hand-written table, the way `cm-tune export` pastes it into every header: device matching, kernel
// selection and argument checks, none of which needs a GPU.
#include <gtest/gtest.h>

#include "export/runtime/header_includes.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "core/types.hpp"
#include "test_support.hpp"

namespace rt {

#include "export/runtime/header_types.cuh"

namespace detail {

#include "export/runtime/dispatch_rules.h"

template <int Id>
__global__ void kernel(int, int, int, float, const float*, int, const float*, int, float, float*, int) {}
template <int Id>
__global__ void batched_kernel(int, int, int, float, const float*, int, const float*, int, float, float*, int, long long,
                               long long, long long) {}
template <int Id>
__global__ void counted_kernel(int, int, int, float, const float*, int, const float*, int, float, float*, int, long long,
                               long long, long long, int) {}
template <int Id, class T>
__global__ void typed_kernel(int, int, int, T, const T*, int, const T*, int, T, T*, int) {}
template <int Id, class T>
__global__ void typed_batched_kernel(int, int, int, T, const T*, int, const T*, int, T, T*, int, long long, long long,
                                     long long) {}

// A table like the ones export writes: 0 the NN generic default, 1 a kernel needing 16-byte aligned
// inputs and leading dimensions % 4, 2 one needing nothing; 3 the TN generic default (batched), 4 a
// batched TN kernel, 5 an unbatched TN kernel; 6 a TT kernel computing 4 problems per block (it takes
// the problem count), 7 a batched NT kernel launching 3 blocks per tile along z. No NT or TT generic:
// calls that no kernel of their layout serves are refused. Those are float kernels; then 8 the f64
// NN generic default (batched), 9 an unbatched f64 NN kernel needing 16-byte alignment and even
// leading dimensions, 10 a batched i32 NN kernel. No other f64 generic and no i32 generic at all.
// Then the opt-in tf32x3 class (dtype 3, float data), which has no generic default: 11 a batched NN
// kernel needing 16-byte alignment and leading dimensions % 4 (vec4's tiles), 12 an unbatched TN
// kernel needing nothing.
constexpr int k_generic_kernels[k_dtype_count][4] = {{0, -1, 3, -1}, {8, -1, -1, -1}, {-1, -1, -1, -1}};
constexpr int k_kernel_count = 13;
constexpr KernelInfo k_kernels[k_kernel_count] = {
    {"generic", "src_a", 128, 64, 64, 0, 1, 4, 1, 0, 0, 0, 0},
    {"vec4", "src_a", 256, 128, 128, 100000, 1, 16, 4, 0, 0, 0, 0},
    {"portable", "src_a", 128, 64, 128, 0, 1, 4, 1, 0, 0, 0, 0},
    {"generic_tn", "src_a", 128, 64, 64, 0, 1, 4, 1, 2, 1, 0, 0},
    {"tn_batched", "src_a", 128, 32, 32, 0, 1, 4, 1, 2, 1, 0, 0},
    {"tn_single", "src_a", 256, 128, 128, 0, 1, 4, 1, 2, 0, 0, 0},
    {"tt_fused", "src_a", 128, 64, 64, 0, 1, 4, 1, 3, 1, 4, 0},
    {"nt_cluster", "src_a", 128, 64, 64, 0, 3, 4, 1, 1, 1, 0, 0},
    {"generic_f64", "src_a", 128, 64, 64, 0, 1, 8, 1, 0, 1, 0, 1},
    {"f64_vec2", "src_a", 256, 64, 64, 0, 1, 16, 2, 0, 0, 0, 1},
    {"i32_nn", "src_a", 256, 128, 128, 0, 1, 4, 1, 0, 1, 0, 2},
    {"x3_vec4", "src_a", 256, 128, 128, 0, 1, 16, 4, 0, 1, 0, 3},
    {"x3_tn", "src_a", 128, 64, 128, 0, 1, 4, 1, 2, 0, 0, 3},
};
// {M, N, K, layout, batch, broadcast, dtype}, primary, portable. The f64 and i32 entries of the shapes
// of f32 ones come first: an exact match that ignored the type would find them.
constexpr Entry k_entries_0[] = {{{256, 256, 256, 0, 1, 0, 1}, 9, 8},
                                 {{64, 64, 64, 2, 4096, 0, 2}, 10, -1},
                                 {{256, 256, 256, 0, 1, 0, 0}, 1, 2},
                                 {{1024, 1024, 1024, 0, 1, 0, 0}, 1, -1},
                                 {{4096, 4096, 4096, 0, 1, 0, 0}, 2, 2},
                                 {{64, 64, 64, 2, 4096, 0, 0}, 4, 4},
                                 {{64, 64, 64, 2, 4096, 2, 0}, 3, 3},
                                 {{64, 64, 64, 0, 1, 0, 2}, 10, -1},
                                 {{1024, 1024, 1024, 0, 1, 0, 3}, 11, -1}};
// Written as before TunedProblem had a dtype: it is 0, float.
constexpr Entry k_entries_1[] = {{{512, 512, 512, 0, 1, 0}, 2, 2}};
// vec4 costs 20 us + 0.05 us per million multiply-adds of its busiest SM; portable 3 us + 0.4 us.
// vec4 was measured on 256..8192 in each dimension, portable on 16..8192. tn_batched costs 2 us +
// 0.4 us, tn_single 1 us + 0.01 us, both measured on 16..8192. The f64 and i32 kernels are predicted
// cheaper than every float kernel, so a float call that ran one would show. x3_vec4 costs 1 us + 0.01 us
// (less than vec4 and portable everywhere), x3_tn 5 us + 0.02 us (more than tn_single everywhere).
constexpr KernelModel k_models_0[] = {{1, 1, {20, 0.05, 0, 0}, 256, 8192, 256, 8192, 256, 8192},
                                      {2, 1, {3, 0.4, 0, 0}, 16, 8192, 16, 8192, 16, 8192},
                                      {4, 1, {2, 0.4, 0, 0}, 16, 8192, 16, 8192, 16, 8192},
                                      {5, 1, {1, 0.01, 0, 0}, 16, 8192, 16, 8192, 16, 8192},
                                      {6, 1, {2, 0.4, 0, 0}, 16, 256, 16, 256, 16, 256},
                                      {9, 1, {0.5, 0.001, 0, 0}, 1, 8192, 1, 8192, 1, 8192},
                                      {10, 1, {0.5, 0.001, 0, 0}, 1, 8192, 1, 8192, 1, 8192},
                                      {11, 1, {1, 0.01, 0, 0}, 256, 8192, 256, 8192, 256, 8192},
                                      {12, 1, {5, 0.02, 0, 0}, 16, 8192, 16, 8192, 16, 8192}};
constexpr KernelModel k_models_1[] = {{2, 1, {3, 0.4, 0, 0}, 16, 8192, 16, 8192, 16, 8192}};
constexpr int k_device_table_count = 2;
constexpr DeviceTable k_device_tables[k_device_table_count] = {
    {"NVIDIA H100 80GB HBM3", 9, 0, 132, k_entries_0, 9, k_models_0, 9},
    {"NVIDIA A100-SXM4-80GB", 8, 0, 108, k_entries_1, 1, k_models_1, 1},
};
inline const void* kernel_pointer(int index) {
  switch (index) {
    case 0: return reinterpret_cast<const void*>(static_cast<KernelFn>(&kernel<0>));
    case 1: return reinterpret_cast<const void*>(static_cast<KernelFn>(&kernel<1>));
    case 2: return reinterpret_cast<const void*>(static_cast<KernelFn>(&kernel<2>));
    case 3: return reinterpret_cast<const void*>(static_cast<BatchedKernelFn>(&batched_kernel<3>));
    case 4: return reinterpret_cast<const void*>(static_cast<BatchedKernelFn>(&batched_kernel<4>));
    case 5: return reinterpret_cast<const void*>(static_cast<KernelFn>(&kernel<5>));
    case 6: return reinterpret_cast<const void*>(static_cast<BatchCountKernelFn>(&counted_kernel<6>));
    case 7: return reinterpret_cast<const void*>(static_cast<BatchedKernelFn>(&batched_kernel<7>));
    case 8: return reinterpret_cast<const void*>(static_cast<TypedBatchedKernelFn<double>>(&typed_batched_kernel<8, double>));
    case 9: return reinterpret_cast<const void*>(static_cast<TypedKernelFn<double>>(&typed_kernel<9, double>));
    case 10: return reinterpret_cast<const void*>(static_cast<TypedBatchedKernelFn<int>>(&typed_batched_kernel<10, int>));
    case 11: return reinterpret_cast<const void*>(static_cast<BatchedKernelFn>(&batched_kernel<11>));
    case 12: return reinterpret_cast<const void*>(static_cast<KernelFn>(&kernel<12>));
    default: return nullptr;
  }
}
inline cudaError_t kernel_function(int /*device*/, int index, const void** fn) {
  *fn = kernel_pointer(index);
  return *fn != nullptr ? cudaSuccess : cudaErrorInvalidValue;
}

#include "export/runtime/header_kernels.cuh"
#include "export/runtime/source_code.cuh"

}  // namespace detail

#include "export/runtime/call_recorder.cuh"
#include "export/runtime/header_api.cuh"

}  // namespace rt

namespace {

TEST(HeaderRuntime, DeviceTablesMatchExactlyThenByComputeCapability) {
  EXPECT_EQ(rt::detail::match_device_table("NVIDIA H100 80GB HBM3", 9, 0, 132), 0);
  EXPECT_EQ(rt::detail::match_device_table("NVIDIA H100 PCIe", 9, 0, 114), 0) << "same compute capability";
  EXPECT_EQ(rt::detail::match_device_table("NVIDIA A100-SXM4-80GB", 8, 0, 108), 1);
  EXPECT_EQ(rt::detail::match_device_table("NVIDIA GeForce RTX 4090", 8, 9, 128), -1) << "no table: generic default";
}

TEST(HeaderRuntime, SelectionFollowsTheDispatchRules) {
  using rt::detail::select;
  // A tuned problem runs its winner when aligned with ld % 4 == 0, else its portable kernel.
  EXPECT_EQ(select(0, 256, 256, 256, 256, 256, 256, 256), 1);
  EXPECT_EQ(select(0, 256, 256, 256, 256, 256, 256, 8), 2);
  EXPECT_EQ(select(0, 256, 256, 256, 257, 256, 256, 256), 2);
  // Tuned 1024^3 has no portable kernel: the generic default.
  EXPECT_EQ(select(0, 1024, 1024, 1024, 1025, 1024, 1024, 256), 0);
  // Untuned shapes: the least predicted time. 2000^3 on 132 SMs: vec4 has 256 tiles (2 per SM),
  // 20 + 0.05 * 2*128*128*2000/1e6 = 23.3 us; portable 32*16 = 512 tiles (4 per SM),
  // 3 + 0.4 * 4*64*128*2000/1e6 = 29.2 us.
  EXPECT_EQ(select(0, 2000, 2000, 2000, 2000, 2000, 2000, 256), 1);
  // 300^3: vec4 20 + 0.05*(128*128*300/1e6) = 20.2 us; portable 3 + 0.4*(64*128*300/1e6) = 4.0 us.
  EXPECT_EQ(select(0, 300, 300, 300, 300, 300, 300, 256), 2);
  // Unaligned: only the portable kernel may run.
  EXPECT_EQ(select(0, 2000, 2000, 2000, 2000, 2000, 2000, 4), 2);
  // 50^3: only portable's domain (16..8192, within 2x) covers it.
  EXPECT_EQ(select(0, 50, 50, 50, 50, 50, 50, 256), 2);
  // The A100 table has one model.
  EXPECT_EQ(select(1, 3000, 3000, 3000, 3001, 3000, 3000, 4), 2);
  EXPECT_EQ(select(-1, 64, 64, 64, 64, 64, 64, 256), 0);
  EXPECT_EQ(select(5, 64, 64, 64, 64, 64, 64, 256), 0);
}

TEST(HeaderRuntime, SelectionServesEachLayoutAndBatchWithItsOwnKernels) {
  using rt::detail::Call;
  using rt::detail::select;
  // {layout, batch, broadcast, M, N, K, lda, ldb, ldc, alignment}
  // Tuned TN batch: the entry's kernel; the same shape with B broadcast has its own entry.
  EXPECT_EQ(select(0, Call{2, 4096, 0, 64, 64, 64, 64, 64, 64, 256}), 4);
  EXPECT_EQ(select(0, Call{2, 4096, 2, 64, 64, 64, 64, 64, 64, 256}), 3);
  // An untuned TN batch: only batched TN kernels may run (tn_single is faster but not batched).
  EXPECT_EQ(select(0, Call{2, 100, 0, 300, 300, 300, 300, 300, 300, 256}), 4);
  // An untuned TN single call: the cheapest TN model, never an NN kernel.
  EXPECT_EQ(select(0, Call{2, 1, 0, 300, 300, 300, 300, 300, 300, 256}), 5);
  // NN calls never run a TN kernel; here no NN kernel takes a batch, not even the generic default, so
  // a batched NN call is refused (-1) rather than run by a kernel that would ignore the batch.
  EXPECT_EQ(select(0, Call{0, 1, 0, 300, 300, 300, 300, 300, 300, 256}), 2);
  EXPECT_EQ(select(0, Call{0, 4, 0, 300, 300, 300, 300, 300, 300, 256}), -1);
  // No NT kernel with a model and no NT or TT generic: -1, the call is refused.
  EXPECT_EQ(select(0, Call{1, 1, 0, 300, 300, 300, 300, 300, 300, 256}), -1);
  EXPECT_EQ(select(-1, Call{3, 1, 0, 300, 300, 300, 300, 300, 300, 256}), -1);
  // Without a table: the layout's generic default.
  EXPECT_EQ(select(-1, Call{2, 8, 0, 64, 64, 64, 64, 64, 64, 256}), 3);
}

TEST(HeaderRuntime, AKernelWithSeveralProblemsPerBlockServesItsLayoutAndCountsItsBlocks) {
  using rt::detail::Call;
  using rt::detail::select;
  // The TT kernel computes TT batches and single TT products (a batched kernel serves a batch of 1);
  // it runs no other layout.
  EXPECT_EQ(select(0, Call{3, 4096, 0, 64, 64, 64, 64, 64, 64, 256}), 6);
  EXPECT_EQ(select(0, Call{3, 7, 1, 64, 64, 64, 64, 64, 64, 256}), 6);
  EXPECT_EQ(select(0, Call{3, 1, 0, 100, 100, 100, 100, 100, 100, 4}), 6);
  EXPECT_EQ(select(0, Call{0, 4096, 0, 64, 64, 64, 64, 64, 64, 256}), -1) << "no NN kernel takes a batch";
  // Its model counts ceil(batch / 4) blocks of 4 problems: 2 + 0.4 * (the busiest SM's multiply-adds,
  // in millions). 7 problems of 64^3 on 132 SMs: 2 blocks of up to 4 problems, 64*64*(4*64) = 1.05 M
  // multiply-adds on the busiest SM.
  double predicted = 0;
  const Call tt7{3, 7, 0, 64, 64, 64, 64, 64, 64, 256};
  const rt::detail::CallRequirements any{tt7};
  ASSERT_EQ(rt::detail::best_predicted(rt::detail::k_models_0, 5, rt::detail::k_kernels, 132, 64, 64, 64, 7, any,
                                       &predicted),
            4);
  EXPECT_NEAR(predicted, 2 + 0.4 * 64 * 64 * 4 * 64 * 1e-6, 1e-12);
}

TEST(HeaderRuntime, ModelFeaturesCountTheProblemsEachBlockComputes) {
  using rt::detail::model_features;
  double f[4] = {0, 0, 0, 0};
  const auto expect = [&](double f0, double f1, double f2, double f3, const char* what) {
    EXPECT_DOUBLE_EQ(f[0], f0) << what;
    EXPECT_NEAR(f[1], f1, 1e-12) << what;
    EXPECT_NEAR(f[2], f2, 1e-12) << what;
    EXPECT_NEAR(f[3], f3, 1e-12) << what;
  };
  // One problem per block (0 or 1): 7 blocks of 64x64 tiles, 64 k each, one per SM.
  model_features(64, 64, 64, 7, 64, 64, 1, 0, 1, 132, f);
  expect(1, 64 * 64 * 64e-6, 64e-3, 64 * 64e-3, "problems_per_block 0");
  model_features(64, 64, 64, 7, 64, 64, 1, 1, 1, 132, f);
  expect(1, 64 * 64 * 64e-6, 64e-3, 64 * 64e-3, "problems_per_block 1");
  // 4 per block: 2 blocks, each 4 problems' k (256) and 4 tiles of outputs.
  model_features(64, 64, 64, 7, 64, 64, 1, 4, 1, 132, f);
  expect(1, 64 * 64 * 256e-6, 256e-3, 4 * 64 * 64e-3, "problems_per_block 4");
  // A batch of 3 below 4 per block: one block of 3 problems.
  model_features(64, 64, 64, 3, 64, 64, 1, 4, 1, 132, f);
  expect(1, 64 * 64 * 192e-6, 192e-3, 3 * 64 * 64e-3, "a batch smaller than problems_per_block");
  // 4096 problems, 4 per block: 1024 blocks, 8 on the busiest SM, in 8 waves of one block per SM.
  model_features(64, 64, 64, 4096, 64, 64, 1, 4, 1, 132, f);
  expect(1, 8 * 64 * 64 * 256e-6, 8 * 256e-3, 8 * 4 * 64 * 64e-3, "4096 problems");
}

TEST(HeaderRuntime, LaunchesSplitBatchesSoGridZFitsAndPassTheirCount) {
  using rt::detail::k_kernels;
  using rt::detail::launch_grid_z;
  using rt::detail::problems_per_launch;
  // One problem per block: at most 65535 per launch, grid z = the count.
  EXPECT_EQ(problems_per_launch(k_kernels[4]), 65535);
  EXPECT_EQ(launch_grid_z(k_kernels[4], 7), 7u);
  // 4 per block: 65535 blocks of 4 problems per launch, grid z = ceil(count / 4).
  EXPECT_EQ(problems_per_launch(k_kernels[6]), 4 * 65535);
  EXPECT_EQ(launch_grid_z(k_kernels[6], 7), 2u);
  EXPECT_EQ(launch_grid_z(k_kernels[6], 3), 1u);
  EXPECT_EQ(launch_grid_z(k_kernels[6], 4 * 65535), 65535u);
  // 3 blocks per tile along z: 21845 problems per launch, 3 blocks each.
  EXPECT_EQ(problems_per_launch(k_kernels[7]), 21845);
  EXPECT_EQ(launch_grid_z(k_kernels[7], 21845), 65535u);
  EXPECT_EQ(launch_grid_z(k_kernels[7], 2), 6u);
}

TEST(HeaderRuntime, CachedSelectionAgreesWithSelectionOverManyCalls) {
  using rt::detail::cached_select;
  using rt::detail::select;
  // More distinct calls than the cache holds, revisited: every answer equals select's.
  for (int round = 0; round < 3; ++round)
    for (int m = 100; m <= 3000; m += 97)
      for (const int align : {4, 256})
        for (const int layout : {0, 2}) {
          const rt::detail::Call call{layout, 1, 0, m, 2000, 2000, 2000, 2000, 2000, align};
          EXPECT_EQ(cached_select(0, call), select(0, call)) << m << " " << align << " " << layout;
        }
}

TEST(HeaderRuntime, AlignmentIsTheLargestCommonPowerOfTwoUpTo256) {
  alignas(256) static char buffer[1024];
  EXPECT_EQ(rt::detail::alignment_of(buffer, buffer + 512, buffer + 256), 256);
  EXPECT_EQ(rt::detail::alignment_of(buffer, buffer + 16, buffer + 48), 16);
  EXPECT_EQ(rt::detail::alignment_of(buffer + 4, buffer, buffer), 4);
  EXPECT_EQ(rt::detail::alignment_of(nullptr, nullptr, nullptr), 256);
}

TEST(HeaderRuntime, BadArgumentsAreRefusedBeforeAnyDeviceCall) {
  float a[4] = {}, b[4] = {}, c[4] = {};
  EXPECT_EQ(rt::sgemm(-1, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::sgemm(2, 2, 2, 1.0f, a, 1, b, 2, 0.0f, c, 2), cudaErrorInvalidValue) << "lda < K";
  EXPECT_EQ(rt::sgemm(2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 1), cudaErrorInvalidValue) << "ldc < N";
  EXPECT_EQ(rt::sgemm(2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, nullptr, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::sgemm(0, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2), cudaSuccess) << "M = 0: nothing to do";
  EXPECT_EQ(rt::sgemm(2, 0, 2, 1.0f, a, 2, b, 1, 0.0f, c, 1), cudaSuccess) << "N = 0: nothing to do";
  EXPECT_EQ(rt::sgemm(2, 2, 2, 0.0f, nullptr, 2, nullptr, 2, 1.0f, c, 2), cudaSuccess) << "C = 1 * C";
  using rt::Op;
  // Transposed A is stored K x M: lda >= M; transposed B is N x K: ldb >= K.
  EXPECT_EQ(rt::sgemm(Op::T, Op::N, 3, 2, 1, 1.0f, a, 2, b, 2, 0.0f, c, 2), cudaErrorInvalidValue) << "lda < M";
  EXPECT_EQ(rt::sgemm(Op::N, Op::T, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2), cudaErrorInvalidValue) << "ldb < K";
  EXPECT_EQ(rt::sgemm(static_cast<Op>(7), Op::N, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2), cudaErrorInvalidValue);
  // Batches: overlapping matrices of C, negative strides and counts are refused; batch 0 does nothing.
  EXPECT_EQ(rt::sgemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0f, a, 2, 4, b, 2, 4, 0.0f, c, 2, 3, 2),
            cudaErrorInvalidValue)
      << "stride_c < (M-1)*ldc + N";
  EXPECT_EQ(rt::sgemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0f, a, 2, -4, b, 2, 4, 0.0f, c, 2, 4, 2),
            cudaErrorInvalidValue);
  EXPECT_EQ(rt::sgemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0f, a, 2, 4, b, 2, 4, 0.0f, c, 2, 4, -1),
            cudaErrorInvalidValue);
  EXPECT_EQ(rt::sgemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0f, a, 2, 4, b, 2, 4, 0.0f, c, 2, 4, 0), cudaSuccess);
  // Column-major: M x N C with ldc >= M (the row-major N x M transpose).
  EXPECT_EQ(rt::sgemm_colmajor(Op::N, Op::N, 3, 2, 2, 1.0f, a, 3, b, 2, 0.0f, c, 2), cudaErrorInvalidValue) << "ldc < M";
}

TEST(HeaderRuntime, EachElementTypeDispatchesAmongItsOwnKernels) {
  using rt::detail::Call;
  using rt::detail::select;
  // {layout, batch, broadcast, M, N, K, lda, ldb, ldc, alignment, dtype}
  // f64: the tuned 256^3 runs its f64 winner when aligned (16 bytes, even leading dimensions), else its
  // portable f64 kernel; the f32 entry of the same shape keeps its own winner.
  EXPECT_EQ(select(0, Call{0, 1, 0, 256, 256, 256, 256, 256, 256, 256, 1}), 9);
  EXPECT_EQ(select(0, Call{0, 1, 0, 256, 256, 256, 256, 256, 256, 8, 1}), 8);
  EXPECT_EQ(select(0, Call{0, 1, 0, 256, 256, 256, 257, 256, 256, 256, 1}), 8);
  EXPECT_EQ(select(0, Call{0, 1, 0, 256, 256, 256, 256, 256, 256, 256, 0}), 1);
  EXPECT_EQ(select(0, 256, 256, 256, 256, 256, 256, 256), 1) << "the NN select of earlier headers is float's";
  // Untuned f64: its own model (predicted cheaper than any float kernel, but only f64 calls see it),
  // else the f64 generic default; a batch only batched f64 kernels.
  EXPECT_EQ(select(0, Call{0, 1, 0, 2000, 2000, 2000, 2000, 2000, 2000, 256, 1}), 9);
  EXPECT_EQ(select(0, Call{0, 1, 0, 2000, 2000, 2000, 2000, 2000, 2000, 8, 1}), 8);
  EXPECT_EQ(select(0, Call{0, 4, 0, 2000, 2000, 2000, 2000, 2000, 2000, 256, 1}), 8);
  EXPECT_EQ(select(-1, Call{0, 1, 0, 2000, 2000, 2000, 2000, 2000, 2000, 256, 1}), 8) << "no table: the generic";
  EXPECT_EQ(select(0, Call{1, 1, 0, 300, 300, 300, 300, 300, 300, 256, 1}), -1) << "no f64 NT kernel";
  // The same float calls never run the cheaper f64 or i32 kernels.
  EXPECT_EQ(select(0, Call{0, 1, 0, 2000, 2000, 2000, 2000, 2000, 2000, 256, 0}), 1);
  EXPECT_EQ(select(0, Call{0, 4, 0, 300, 300, 300, 300, 300, 300, 256, 0}), -1) << "no batched float NN kernel";
  // i32: its tuned entries and its model; without a kernel of the layout, or without a table (no i32
  // generic default), the call is refused.
  EXPECT_EQ(select(0, Call{0, 1, 0, 64, 64, 64, 64, 64, 64, 256, 2}), 10);
  EXPECT_EQ(select(0, Call{0, 7, 0, 300, 300, 300, 300, 300, 300, 4, 2}), 10);
  EXPECT_EQ(select(0, Call{2, 4096, 0, 64, 64, 64, 64, 64, 64, 256, 2}), -1) << "the i32 TN entry's kernel is NN";
  EXPECT_EQ(select(0, Call{2, 4096, 0, 64, 64, 64, 64, 64, 64, 256, 0}), 4) << "the float TN entry";
  EXPECT_EQ(select(-1, Call{0, 1, 0, 64, 64, 64, 64, 64, 64, 256, 2}), -1);
  EXPECT_EQ(select(1, Call{0, 1, 0, 512, 512, 512, 512, 512, 512, 256, 2}), -1) << "the A100 entry is float's";
  EXPECT_EQ(select(1, Call{0, 1, 0, 512, 512, 512, 512, 512, 512, 256, 0}), 2);
  // An element type the header does not have (3 is the opt-in tf32x3 class: below).
  EXPECT_EQ(select(0, Call{0, 1, 0, 64, 64, 64, 64, 64, 64, 256, 4}), -1);
  EXPECT_EQ(select(-1, Call{0, 1, 0, 64, 64, 64, 64, 64, 64, 256, -1}), -1);
}

// An opted-in call (sgemm_tf32x3, Call::dtype 3) runs a tf32x3 kernel where one serves it and is
// predicted faster than the f32 dispatch's choice; else exactly what sgemm runs: where the table has no
// tf32x3 kernel of the layout or batch, the call misses their requirements (alignment, leading
// dimensions), the device has another table (A100: none of the class) or none at all.
TEST(HeaderRuntime, AnOptedInCallRunsTheFasterClassAndFallsBackToFp32) {
  using rt::detail::Call;
  using rt::detail::select;
  const auto opted = [](int table, Call call, rt::DispatchReason* reason = nullptr) {
    call.dtype = rt::detail::k_dtype_tf32x3;
    int splits = 1;
    return select(table, call, &splits, reason);
  };
  const auto fp32 = [](int table, Call call) {
    int splits = 1;
    return select(table, call, &splits);   // Call's dtype 0: what sgemm runs
  };
  rt::DispatchReason reason = rt::DispatchReason::no_table;
  // {layout, batch, broadcast, M, N, K, lda, ldb, ldc, alignment}
  // The tuned tf32x3 1024^3: its winner, by its model 1 + 0.01 * 128*128*1024*... us, against the tuned
  // f32 winner vec4's 20 + 0.05 * the same work.
  const Call tuned{0, 1, 0, 1024, 1024, 1024, 1024, 1024, 1024, 256};
  EXPECT_EQ(opted(0, tuned, &reason), 11);
  EXPECT_EQ(reason, rt::DispatchReason::tuned);
  EXPECT_EQ(fp32(0, tuned), 1) << "sgemm itself never runs a tf32x3 kernel";
  // An odd lda misses the tf32x3 winner's requirements and the class has no portable or generic
  // kernel: the f32 path, which runs the f32 generic (its winner needs ld % 4 too), as sgemm does.
  const Call odd_lda{0, 1, 0, 1024, 1024, 1024, 1025, 1024, 1024, 256};
  EXPECT_EQ(opted(0, odd_lda, &reason), fp32(0, odd_lda));
  EXPECT_EQ(opted(0, odd_lda), 0);
  EXPECT_EQ(reason, rt::DispatchReason::requirements_missed);
  // Untuned 2000^3: x3_vec4 is predicted faster than vec4; 8-byte aligned (or lda 2001), only the
  // portable f32 kernel may run.
  EXPECT_EQ(opted(0, Call{0, 1, 0, 2000, 2000, 2000, 2000, 2000, 2000, 256}, &reason), 11);
  EXPECT_EQ(reason, rt::DispatchReason::predicted);
  EXPECT_EQ(opted(0, Call{0, 1, 0, 2000, 2000, 2000, 2000, 2000, 2000, 8}), 2);
  EXPECT_EQ(opted(0, Call{0, 1, 0, 2000, 2000, 2000, 2001, 2000, 2000, 256}), 2);
  // A batch: x3_vec4 takes batches, and no float NN kernel does (sgemm refuses it): the class runs.
  EXPECT_EQ(opted(0, Call{0, 4, 0, 300, 300, 300, 300, 300, 300, 256}), 11);
  EXPECT_EQ(fp32(0, Call{0, 4, 0, 300, 300, 300, 300, 300, 300, 256}), -1);
  // TN: x3_tn is predicted slower than tn_single (5 + 0.02 w against 1 + 0.01 w), so the f32 kernel
  // runs; a TN batch has no batched tf32x3 kernel, so the f32 batched one runs.
  EXPECT_EQ(opted(0, Call{2, 1, 0, 300, 300, 300, 300, 300, 300, 256}), 5);
  EXPECT_EQ(opted(0, Call{2, 100, 0, 300, 300, 300, 300, 300, 300, 256}), 4);
  // No tf32x3 kernel of the layout (NT, TT): sgemm's choice, refusal included.
  EXPECT_EQ(opted(0, Call{3, 4096, 0, 64, 64, 64, 64, 64, 64, 256}), 6);
  EXPECT_EQ(opted(0, Call{1, 1, 0, 300, 300, 300, 300, 300, 300, 256}), -1);
  // The A100 table has no tf32x3 kernel, and a device without a table runs the f32 generic default.
  EXPECT_EQ(opted(1, Call{0, 1, 0, 512, 512, 512, 512, 512, 512, 256}, &reason), 2);
  EXPECT_EQ(reason, rt::DispatchReason::tuned);
  EXPECT_EQ(opted(-1, Call{0, 1, 0, 1024, 1024, 1024, 1024, 1024, 1024, 256}, &reason), 0);
  EXPECT_EQ(reason, rt::DispatchReason::no_table);
  // The class's own dispatch (select_in_class) has no generic default to fall back on.
  int splits = 1;
  double us = 0;
  EXPECT_EQ(rt::detail::select_in_class(0, Call{0, 1, 0, 1024, 1024, 1024, 1025, 1024, 1024, 256, 3}, &splits, nullptr,
                                        &us),
            -1);
  EXPECT_EQ(us, -1);
  // The cache keeps an opted-in call apart from the same sgemm call.
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(rt::detail::cached_select(0, Call{0, 1, 0, 1024, 1024, 1024, 1024, 1024, 1024, 256, 3}), 11);
    EXPECT_EQ(rt::detail::cached_select(0, Call{0, 1, 0, 1024, 1024, 1024, 1024, 1024, 1024, 256, 0}), 1);
  }
}

TEST(HeaderRuntime, TheOptInRuleKeepsTheStorageTypeUnlessTheClassIsPredictedFaster) {
  using rt::detail::opt_in_runs_class;
  EXPECT_TRUE(opt_in_runs_class(11, 10.0, 1, 20.0));
  EXPECT_FALSE(opt_in_runs_class(11, 20.0, 1, 10.0));
  EXPECT_FALSE(opt_in_runs_class(11, 10.0, 1, 10.0)) << "a tie keeps FP32";
  EXPECT_FALSE(opt_in_runs_class(-1, -1.0, 0, -1.0)) << "no class kernel";
  EXPECT_FALSE(opt_in_runs_class(11, -1.0, 0, -1.0)) << "a class kernel without a prediction";
  EXPECT_TRUE(opt_in_runs_class(11, 10.0, 0, -1.0)) << "against an unmodelled generic default";
  EXPECT_TRUE(opt_in_runs_class(11, 10.0, -1, -1.0)) << "where FP32 has no kernel at all";
  EXPECT_EQ(rt::detail::opt_in_storage(3), 0);
  for (const int dtype : {0, 1, 2}) EXPECT_EQ(rt::detail::opt_in_storage(dtype), -1);
}

TEST(HeaderRuntime, SgemmIsIeeeFp32UnlessTheMacroOptsIn) {
#if defined(CMTUNE_SGEMM_TF32X3)
  FAIL() << "this test is compiled without CMTUNE_SGEMM_TF32X3";
#endif
  EXPECT_EQ(rt::k_sgemm_dtype, 0);
  float a[4] = {}, b[4] = {}, c[4] = {};
  using rt::Op;
  // sgemm_tf32x3 checks its arguments as sgemm does, before any device call.
  EXPECT_EQ(rt::sgemm_tf32x3(-1, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::sgemm_tf32x3(2, 2, 2, 1.0f, a, 1, b, 2, 0.0f, c, 2), cudaErrorInvalidValue) << "lda < K";
  EXPECT_EQ(rt::sgemm_tf32x3(Op::N, Op::T, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2), cudaErrorInvalidValue) << "ldb < K";
  EXPECT_EQ(rt::sgemm_tf32x3(0, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2), cudaSuccess) << "M = 0";
  EXPECT_EQ(rt::sgemm_tf32x3(2, 2, 2, 0.0f, nullptr, 2, nullptr, 2, 1.0f, c, 2), cudaSuccess) << "C = 1 * C";
  EXPECT_EQ(rt::sgemm_tf32x3_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0f, a, 2, 4, b, 2, 4, 0.0f, c, 2, 3, 2),
            cudaErrorInvalidValue)
      << "stride_c < (M-1)*ldc + N";
  EXPECT_EQ(rt::sgemm_tf32x3_colmajor(Op::N, Op::N, 3, 2, 2, 1.0f, a, 3, b, 2, 0.0f, c, 2), cudaErrorInvalidValue)
      << "ldc < M";
  EXPECT_EQ(rt::sgemm_tf32x3_colmajor_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0f, a, 2, 4, b, 2, 4, 0.0f, c, 2, 4, 0),
            cudaSuccess);
}

TEST(HeaderRuntime, CachedSelectionKeepsTheTypesApart) {
  using rt::detail::Call;
  using rt::detail::cached_select;
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(cached_select(0, Call{0, 1, 0, 256, 256, 256, 256, 256, 256, 256, 0}), 1);
    EXPECT_EQ(cached_select(0, Call{0, 1, 0, 256, 256, 256, 256, 256, 256, 256, 1}), 9);
    EXPECT_EQ(cached_select(0, Call{0, 1, 0, 256, 256, 256, 256, 256, 256, 256, 2}), 10);   // its model
  }
}

TEST(HeaderRuntime, CallsOfEachTypeCountTheirElementsInBytes) {
  alignas(256) static double d[64];
  alignas(256) static int n[64];
  alignas(256) static float f[64];
  using rt::Op;
  using rt::detail::make_call;
  // A stride of 10 elements: 40 bytes of floats or ints (8-byte aligned), 80 of doubles (16).
  EXPECT_EQ(make_call(Op::N, Op::N, 4, 4, 4, f, 4, 10, f, 4, 0, f, 4, 64, 3).alignment, 8);
  EXPECT_EQ(make_call(Op::N, Op::N, 4, 4, 4, n, 4, 10, n, 4, 0, n, 4, 64, 3).alignment, 8);
  EXPECT_EQ(make_call(Op::N, Op::N, 4, 4, 4, d, 4, 10, d, 4, 0, d, 4, 64, 3).alignment, 16);
  EXPECT_EQ(make_call(Op::N, Op::N, 4, 4, 4, d + 1, 4, 0, d, 4, 0, d, 4, 0, 1).alignment, 8);
  EXPECT_EQ(make_call(Op::N, Op::N, 4, 4, 4, f, 4, 0, f, 4, 0, f, 4, 0, 1).dtype, 0);
  EXPECT_EQ(make_call(Op::N, Op::N, 4, 4, 4, d, 4, 0, d, 4, 0, d, 4, 0, 1).dtype, 1);
  EXPECT_EQ(make_call(Op::T, Op::N, 4, 4, 4, n, 4, 0, n, 4, 0, n, 4, 0, 1).dtype, 2);
  EXPECT_EQ(make_call(Op::T, Op::N, 4, 4, 4, n, 4, 0, n, 4, 0, n, 4, 0, 1).layout, 2);
  EXPECT_EQ(rt::detail::alignment_of(d, d, d, 10, 0, 64, 8), 16);
  EXPECT_EQ(rt::detail::alignment_of(d, d, d, 10, 0, 64), 8) << "4-byte elements by default, as before";
}

TEST(HeaderRuntime, DgemmAndIgemmRefuseBadArgumentsLikeSgemm) {
  double a[4] = {}, b[4] = {}, c[4] = {};
  int ia[4] = {}, ib[4] = {}, ic[4] = {};
  using rt::Op;
  EXPECT_EQ(rt::dgemm(-1, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::dgemm(2, 2, 2, 1.0, a, 1, b, 2, 0.0, c, 2), cudaErrorInvalidValue) << "lda < K";
  EXPECT_EQ(rt::dgemm(2, 2, 2, 1.0, a, 2, b, 2, 0.0, nullptr, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::dgemm(0, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2), cudaSuccess) << "M = 0";
  EXPECT_EQ(rt::dgemm(2, 2, 2, 0.0, nullptr, 2, nullptr, 2, 1.0, c, 2), cudaSuccess) << "C = 1 * C";
  EXPECT_EQ(rt::dgemm(Op::T, Op::N, 3, 2, 1, 1.0, a, 2, b, 2, 0.0, c, 2), cudaErrorInvalidValue) << "lda < M";
  EXPECT_EQ(rt::dgemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 3, 2),
            cudaErrorInvalidValue)
      << "stride_c < (M-1)*ldc + N";
  EXPECT_EQ(rt::dgemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 4, 0), cudaSuccess);
  EXPECT_EQ(rt::dgemm_colmajor(Op::N, Op::N, 3, 2, 2, 1.0, a, 3, b, 2, 0.0, c, 2), cudaErrorInvalidValue) << "ldc < M";
  EXPECT_EQ(rt::dgemm_colmajor_strided_batched(Op::N, Op::N, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 4, -1),
            cudaErrorInvalidValue);
  EXPECT_EQ(rt::igemm(2, 2, 2, 1, ia, 2, ib, 2, 0, ic, 1), cudaErrorInvalidValue) << "ldc < N";
  EXPECT_EQ(rt::igemm(2, 2, 2, 1, nullptr, 2, ib, 2, 0, nullptr, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::igemm(2, 0, 2, 1, ia, 2, ib, 1, 0, ic, 1), cudaSuccess) << "N = 0";
  EXPECT_EQ(rt::igemm(2, 2, 0, 5, nullptr, 1, nullptr, 2, 1, ic, 2), cudaSuccess) << "K = 0, beta = 1: C = C";
  EXPECT_EQ(rt::igemm(static_cast<Op>(7), Op::N, 2, 2, 2, 1, ia, 2, ib, 2, 0, ic, 2), cudaErrorInvalidValue);
  EXPECT_EQ(rt::igemm(Op::N, Op::T, 2, 2, 3, 1, ia, 3, ib, 2, 0, ic, 2), cudaErrorInvalidValue) << "ldb < K";
  EXPECT_EQ(rt::igemm_strided_batched(Op::N, Op::N, 2, 2, 2, 1, ia, 2, -4, ib, 2, 4, 0, ic, 2, 4, 2),
            cudaErrorInvalidValue);
  EXPECT_EQ(rt::igemm_colmajor(Op::N, Op::N, 3, 2, 2, 1, ia, 3, ib, 2, 0, ic, 2), cudaErrorInvalidValue) << "ldc < M";
  EXPECT_EQ(rt::igemm_colmajor_strided_batched(Op::N, Op::N, 2, 2, 2, 1, ia, 2, 4, ib, 2, 4, 0, ic, 2, 4, 0),
            cudaSuccess);
}

TEST(HeaderRuntime, BroadcastAndAlignmentOfABatchCountTheirStrides) {
  EXPECT_EQ(rt::detail::broadcast_bits(1, 0, 0), 0) << "unbatched";
  EXPECT_EQ(rt::detail::broadcast_bits(8, 0, 64), 1);
  EXPECT_EQ(rt::detail::broadcast_bits(8, 64, 0), 2);
  alignas(256) static char buffer[1024];
  // A stride of 10 floats (40 bytes) leaves every other matrix 8-byte aligned only.
  EXPECT_EQ(rt::detail::alignment_of(buffer, buffer, buffer, 10, 0, 64), 8);
  EXPECT_EQ(rt::detail::alignment_of(buffer, buffer, buffer, 64, 0, 64), 256);
}

// ---- recording calls (call_recorder.cuh) ----

using rt::Op;

/// The recorded line of a row-major call of T elements, through make_call as detail::gemm makes it.
template <class T>
std::string recorded_line(Op op_a, Op op_b, int M, int N, int K, const T* A, int lda, long long stride_a, const T* B,
                          int ldb, long long stride_b, const T* C, int ldc, long long stride_c, int batch) {
  const rt::detail::Call call =
      rt::detail::make_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch);
  char text[400];
  const int n = rt::detail::record_line(rt::detail::record_key(call, stride_a, stride_b, stride_c), text, sizeof text);
  EXPECT_GT(n, 0);
  return std::string(text, static_cast<size_t>(n));
}

// The problem part of a line is cm-tune's own spelling of the problem the dispatch keys the call by:
// parse_problem reads it back to the same shape, layout, batch, broadcast and type, and to_string
// spells it the same way (so the exported entry is exactly the call's).
TEST(HeaderRuntime, ARecordedLineSpellsTheProblemTheDispatchKeysTheCallBy) {
  alignas(256) static float f[1 << 14];
  alignas(256) static double d[1 << 14];
  alignas(256) static int n[1 << 14];
  struct Case {
    std::string line;
    int layout, batch, broadcast, dtype;
  };
  const std::vector<Case> cases = {
      {recorded_line<float>(Op::N, Op::N, 1024, 1024, 1024, f, 1024, 0, f, 1024, 0, f, 1024, 0, 1),
       0, 1, 0, 0},
      {recorded_line<float>(Op::N, Op::T, 7, 9, 5, f + 1, 5, 0, f, 5, 0, f, 9, 0, 1), 1, 1, 0, 0},
      // Packed strides and padded ones spell the same problem; only a 0 is spelled.
      {recorded_line<float>(Op::T, Op::N, 64, 32, 16, f, 64, 64 * 16, f, 32, 16 * 32, f, 32, 64 * 32, 16), 2, 16, 0, 0},
      {recorded_line<float>(Op::T, Op::N, 64, 32, 16, f, 64, 64 * 16 + 4, f, 32, 16 * 32 + 4, f, 32, 64 * 32 + 4, 16),
       2, 16, 0, 0},
      {recorded_line<double>(Op::T, Op::T, 30, 20, 10, d, 30, 0, d, 10, 200, d, 20, 600, 5), 3, 5, 1, 1},
      {recorded_line<int>(Op::N, Op::N, 12, 8, 4, n, 4, 48, n, 8, 0, n, 8, 96, 1000), 0, 1000, 2, 2},
      {recorded_line<int>(Op::N, Op::N, 12, 8, 4, n, 4, 0, n, 8, 0, n, 8, 96, 3), 0, 3, 3, 2},
  };
  EXPECT_EQ(cases[0].line, "1024x1024x1024  # lda=1024 ldb=1024 ldc=1024 align=256\n");
  EXPECT_EQ(cases[1].line, "7x9x5:nt  # lda=5 ldb=5 ldc=9 align=4\n");
  EXPECT_EQ(cases[2].line, "64x32x16:tn*16  # lda=64 ldb=32 ldc=32 sa=1024 sb=512 sc=2048 align=256\n");
  EXPECT_EQ(cases[3].line, "64x32x16:tn*16  # lda=64 ldb=32 ldc=32 sa=1028 sb=516 sc=2052 align=16\n");
  EXPECT_EQ(cases[4].line, "30x20x10:tt:f64*5:sa=0  # lda=30 ldb=10 ldc=20 sa=0 sb=200 sc=600 align=64\n");
  EXPECT_EQ(cases[5].line, "12x8x4:i32*1000:sb=0  # lda=4 ldb=8 ldc=8 sa=48 sb=0 sc=96 align=64\n");
  EXPECT_EQ(cases[6].line, "12x8x4:i32*3:sa=0:sb=0  # lda=4 ldb=8 ldc=8 sa=0 sb=0 sc=96 align=128\n");
  for (const Case& c : cases) {
    const std::string spec = c.line.substr(0, c.line.find("  #"));
    const cmt::Problem p = cmt::parse_problem(spec, 1 << 20, 1 << 20);
    EXPECT_EQ(p.to_string(), spec);
    EXPECT_EQ((p.trans_a ? 2 : 0) + (p.trans_b ? 1 : 0), c.layout) << spec;
    EXPECT_EQ(p.batch, c.batch) << spec;
    EXPECT_EQ(rt::detail::broadcast_bits(p.batch, p.stride_a, p.stride_b), c.broadcast) << spec;
    EXPECT_EQ(static_cast<int>(p.dtype), c.dtype) << spec;
  }
}

// An opted-in call (sgemm_tf32x3, or sgemm under CMTUNE_SGEMM_TF32X3) is recorded as the class's
// problem, which tune reads back as a tf32x3 problem.
TEST(HeaderRuntime, AnOptedInCallIsRecordedAsTheClasssProblem) {
  alignas(256) static float f[1 << 12];
  rt::detail::Call call = rt::detail::make_call(Op::T, Op::N, 64, 32, 16, f, 64, 0, f, 32, 0, f, 32, 0, 1);
  call.dtype = rt::detail::k_dtype_tf32x3;
  char text[400];
  const int n = rt::detail::record_line(rt::detail::record_key(call, 0, 0, 0), text, sizeof text);
  ASSERT_GT(n, 0);
  const std::string line(text, static_cast<size_t>(n));
  EXPECT_EQ(line, "64x32x16:tn:tf32x3  # lda=64 ldb=32 ldc=32 align=256\n");
  const cmt::Problem p = cmt::parse_problem(line.substr(0, line.find("  #")), 1 << 20, 1 << 20);
  EXPECT_EQ(p.dtype, cmt::DType::tf32x3);
  EXPECT_EQ(p.to_string(), "64x32x16:tn:tf32x3");
}

std::vector<std::string> file_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Threads recording the same calls write each once; a second recorder on the file (a rerun of the
// program) appends only calls the file does not hold yet.
TEST(HeaderRuntime, TheRecorderWritesEachDistinctCallOnceAcrossThreadsAndRuns) {
  cmt::test::TempDir dir;
  const std::string path = (dir / "calls.txt").string();
  const auto key = [](int i) {
    const rt::detail::RecordKey k = {{100 + i, 64, 32, i % 4, 1, i % 3, 32, 64, 64, 0, 0, 0, 256}};
    return k;
  };
  rt::detail::CallRecorder* first = rt::detail::CallRecorder::open(path.c_str());
  ASSERT_NE(first, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([first, &key, t] {
      for (int round = 0; round < 200; ++round)
        for (int i = 0; i < 30; ++i) first->record(key((i * 7 + t + round) % 30));
    });
  for (auto& t : threads) t.join();
  first->flush(10000);
  std::vector<std::string> lines = file_lines(path);
  EXPECT_EQ(lines.size(), 30u);
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()).size(), 30u);

  rt::detail::CallRecorder* rerun = rt::detail::CallRecorder::open(path.c_str());
  ASSERT_NE(rerun, nullptr);
  for (int i = 0; i <= 30; ++i) rerun->record(key(i));
  rerun->flush(10000);
  lines = file_lines(path);
  ASSERT_EQ(lines.size(), 31u);
  EXPECT_EQ(lines.back(), "130x64x32:tn  # lda=32 ldb=64 ldc=64 align=256");
}

TEST(HeaderRuntime, ARecordFileThatCannotBeOpenedWarnsOnceAndRecordsNothing) {
  cmt::test::TempDir dir;
  const std::string path = (dir / "no such folder" / "calls.txt").string();
  testing::internal::CaptureStderr();
  EXPECT_EQ(rt::detail::CallRecorder::open(path.c_str()), nullptr);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "cmtune: cannot record GEMM calls to '" + path +
                "' ($CMTUNE_RECORD): No such file or directory; recording is off\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "no such folder"));
}

}  // namespace
