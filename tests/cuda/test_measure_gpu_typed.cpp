// The measuring side's element types without a GPU: typed GEMM arguments, the validation cases and
// sentinels of each type, workspace sizes and layouts, the names validation gives to places in C,
// requirements on strides of 8-byte elements, and which cuBLAS routine is each type's baseline.
// (The GPU tests run all of it: tests/gpu/test_measure_gpu_dtype_validation.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/gpu/validator.hpp"
#include "measure/gpu/workspace.hpp"
#include "measure/protocol.hpp"
#include "measure/tolerance.hpp"

namespace cmt {
namespace {

TEST(TypedArgs, ScalarsKeepTheirTypeAndValue) {
  const GemmScalar f = 0.75f, d = -1.25, i = int32_t{-5};
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(i.dtype(), DType::i32);
  EXPECT_EQ(f.f32(), 0.75f);
  EXPECT_EQ(d.f64(), -1.25);
  EXPECT_EQ(i.i32(), -5);
  EXPECT_EQ(GemmScalar().dtype(), DType::f32);
  EXPECT_TRUE(GemmScalar().is_zero());
  for (const DType t : {DType::f32, DType::f64, DType::i32}) {
    const GemmScalar s = GemmScalar::of(t, 3.0);
    EXPECT_EQ(s.dtype(), t);
    EXPECT_EQ(s.value(), 3.0);
    EXPECT_FALSE(s.is_zero());
    EXPECT_TRUE(GemmScalar::of(t, 0.0).is_zero());
  }
  // The kernel parameter holds the value in the type's own bytes.
  GemmScalar dd = 2.5;
  double read_d = 0;
  std::memcpy(&read_d, dd.arg(), sizeof read_d);
  EXPECT_EQ(read_d, 2.5);
  GemmScalar ii = int32_t{-7};
  int32_t read_i = 0;
  std::memcpy(&read_i, ii.arg(), sizeof read_i);
  EXPECT_EQ(read_i, -7);
  GemmScalar ff = 0.5f;
  float read_f = 0;
  std::memcpy(&read_f, ff.arg(), sizeof read_f);
  EXPECT_EQ(read_f, 0.5f);
}

TEST(TypedArgs, BatchSlicesMovePointersByElementsOfTheirType) {
  for (const DType t : {DType::f32, DType::f64, DType::i32}) {
    alignas(16) static char buffer[1 << 16];
    GemmArgs g{4, 5, 6, GemmScalar::of(t, 1), buffer, 6, buffer + 1000, 5, GemmScalar::of(t, 0), buffer + 2000, 5};
    g.dtype = t;
    g.batch = 10;
    g.stride_a = 24;
    g.stride_b = 0;  // broadcast
    g.stride_c = 40;
    EXPECT_TRUE(g.typed_consistently());
    const GemmArgs s = g.batch_slice(3, 7);
    const int bytes = dtype_bytes(t);
    EXPECT_EQ(s.batch, 7);
    EXPECT_EQ(static_cast<const char*>(s.a) - buffer, 3 * 24 * bytes) << dtype_name(t);
    EXPECT_EQ(static_cast<const char*>(s.b) - buffer, 1000) << dtype_name(t);
    EXPECT_EQ(static_cast<char*>(s.c) - buffer, 2000 + 3 * 40 * bytes) << dtype_name(t);
    EXPECT_EQ(s.alpha.dtype(), t);
    g.alpha = 1.0f;  // an f32 alpha in an f64 or i32 call: the kernel would read the wrong bytes
    EXPECT_EQ(g.typed_consistently(), t == DType::f32);
  }
}

TEST(TypedArgs, CublasIsTheBaselineOfTheFloatsOnly) {
  EXPECT_TRUE(type_info(DType::f32).cublas_baseline);
  EXPECT_TRUE(type_info(DType::f64).cublas_baseline);
  EXPECT_FALSE(type_info(DType::i32).cublas_baseline);
  EXPECT_STREQ(cublas_routine(DType::f32, false), "cublasSgemm");
  EXPECT_STREQ(cublas_routine(DType::f32, true), "cublasSgemmStridedBatched");
  EXPECT_STREQ(cublas_routine(DType::f64, false), "cublasDgemm");
  EXPECT_STREQ(cublas_routine(DType::f64, true), "cublasDgemmStridedBatched");
  EXPECT_STREQ(cublas_routine(DType::i32, true), "none");
  // The type table and the cuBLAS layer agree: a type has a baseline exactly where cuBLAS has a routine.
  for (const TypeInfo& t : k_types)
    EXPECT_EQ(t.cublas_baseline, std::string(cublas_routine(t.dtype, false)) != "none") << t.name;
}

// The FP32 protocol is the one trial keys name; the other types add theirs without changing it.
TEST(ValidationCases, PerTypeAndExactInTheirType) {
  EXPECT_STREQ(k_trial_protocol, "cm-tune-trial-v1;tight-ld;alpha=1,beta=0;validate=0.75/-1.25,1.25/0");
  for (const DType t : {DType::f32, DType::f64}) {
    const ValidationCases cases = validation_cases(t);
    ASSERT_EQ(cases.size(), 2u);
    EXPECT_EQ(cases[0].alpha, 0.75);
    EXPECT_EQ(cases[0].beta, -1.25);
    EXPECT_EQ(cases[1].alpha, 1.25);
    EXPECT_EQ(cases[1].beta, 0.0);
    for (const ValidationCase& c : cases) EXPECT_FALSE(c.large_inputs);
  }
  const ValidationCases i32 = validation_cases(DType::i32);
  ASSERT_EQ(i32.size(), 3u);
  ASSERT_LE(i32.size(), static_cast<size_t>(k_max_validation_cases));
  bool beta0 = false, wrap = false;
  for (const ValidationCase& c : i32) {
    EXPECT_EQ(c.alpha, std::trunc(c.alpha));  // whole numbers
    EXPECT_EQ(c.beta, std::trunc(c.beta));
    EXPECT_NE(c.alpha, 1.0) << "alpha != 1 catches a kernel that ignores it";
    beta0 = beta0 || (c.beta == 0.0 && !c.large_inputs);
    wrap = wrap || (c.large_inputs && c.beta != 0.0);  // C starts from C0, never from the poison
  }
  EXPECT_TRUE(beta0) << "a beta == 0 case over the poison";
  EXPECT_TRUE(wrap) << "a case whose sums overflow";
}

// No correct INT32 result on the small inputs reaches the padding, poison or guard values, for any
// K the tool accepts (1 << 20): an element left unwritten always differs from its expected value.
TEST(ValidationCases, Int32SentinelsAreOutOfReachOfCorrectResults) {
  const int64_t k_max = int64_t{1} << 20;
  int64_t bound = 0;
  for (const ValidationCase& c : validation_cases(DType::i32)) {
    if (c.large_inputs) continue;
    const int64_t small = k_i32_small_input;
    bound = std::max<int64_t>(bound, static_cast<int64_t>(std::fabs(c.alpha)) * small * small * k_max +
                                         static_cast<int64_t>(std::fabs(c.beta)) * small);
  }
  EXPECT_LT(bound, int64_t{1} << 30);
  for (const uint64_t bits : {pad_bits(DType::i32), guard_bits(DType::i32)}) {
    const int32_t sentinel = static_cast<int32_t>(static_cast<uint32_t>(bits));
    EXPECT_GT(std::abs(static_cast<int64_t>(sentinel)), bound) << sentinel;
  }
  // Large inputs overflow already in one product.
  EXPECT_GT(static_cast<int64_t>(k_i32_large_input) * k_i32_large_input, int64_t{1} << 31);
  // f32 and i32 share the 32-bit patterns; f64's are NaNs of 64 bits, quiet and signalling.
  EXPECT_EQ(pad_bits(DType::f32), k_pad_bits);
  EXPECT_EQ(guard_bits(DType::f32), k_guard_bits);
  double pad, guard;
  const uint64_t pb = pad_bits(DType::f64), gb = guard_bits(DType::f64);
  std::memcpy(&pad, &pb, sizeof pad);
  std::memcpy(&guard, &gb, sizeof guard);
  EXPECT_TRUE(std::isnan(pad));
  EXPECT_TRUE(std::isnan(guard));
  EXPECT_NE(pb, gb);
}

// Workspaces hold the same elements in every floating type (f64: twice the bytes); INT32 has no
// |A||B| but a third reference and the large inputs of the wrap check.
TEST(TypedWorkspace, BytesFollowTheElementTypeAndTheCases) {
  for (Problem p : {Problem::make(257, 129, 300), Problem::make(1, 77, 33, true, false),
                    Problem::make(64, 96, 80, false, true, 5), Problem::make(100, 100, 100, true, true, 7)}) {
    const size_t f32 = ProblemWorkspace::bytes_needed(p);
    p.dtype = DType::f64;
    EXPECT_EQ(ProblemWorkspace::bytes_needed(p), 2 * f32) << p.to_string();
    p.dtype = DType::i32;
    const Layout v = validation_layout(p);
    const auto up = [](int64_t x) { return (x + 63) / 64 * 64; };
    const int64_t a = up(batch_span(p.batch, v.stride_a, stored_a(p).rows, v.lda));
    const int64_t b = up(batch_span(p.batch, v.stride_b, stored_b(p).rows, v.ldb));
    // |A||B| (one C side) out, a third reference (one C side) and large A and B in.
    EXPECT_EQ(ProblemWorkspace::bytes_needed(p), f32 + static_cast<size_t>(a + b) * 4) << p.to_string();
  }
  // Broadcasting an operand shrinks every type's workspace.
  for (const DType t : {DType::f32, DType::f64, DType::i32}) {
    Problem packed = Problem::make(64, 64, 64, false, false, 4096, t), broadcast = packed;
    broadcast.stride_a = 0;
    EXPECT_LT(ProblemWorkspace::bytes_needed(broadcast), ProblemWorkspace::bytes_needed(packed)) << dtype_name(t);
  }
  EXPECT_EQ(workspace_bytes({Problem::make(64, 64, 64, false, false, 1, DType::f64), Problem::make(64, 64, 64)}),
            3 * ProblemWorkspace::bytes_needed(Problem::make(64, 64, 64)));
}

TEST(TypedWorkspace, ValidationNamesPlacesInElementsOfTheType) {
  CWorkLayout l;
  l.lead = 1024;
  l.m = 3;
  l.n = 5;
  l.ldc = 13;
  l.tail = 1024 + 13;
  EXPECT_EQ(describe_c_offset(l, 1023), "1 floats before C");
  l.dtype = DType::f64;
  EXPECT_EQ(describe_c_offset(l, 1023), "1 doubles before C");
  EXPECT_EQ(describe_c_offset(l, 1024 + 39), "1 doubles after C");
  l.dtype = DType::i32;
  EXPECT_EQ(describe_c_offset(l, 0), "1024 ints before C");
  EXPECT_EQ(describe_c_offset(l, 1024 + 13 + 4), "C[1][4]");
  l.batch = 2;
  l.stride = 3 * 13 + 1037;
  EXPECT_EQ(describe_c_offset(l, 1024 + 39), "1 ints after C[b=0] (the gap before C[b=1])");
}

// align_bytes counts bytes: 16-byte alignment is every 4 floats or ints but every 2 doubles, and an
// element is always aligned to its own size.
TEST(TypedWorkspace, RequirementsOnStridesCountBytes) {
  Layout l{104, 104, 104, 4 * 1000 + 2, 0, 104 * 100};
  const Requirements vec16{16, 4};
  EXPECT_TRUE(unmet_requirements(vec16, l, DType::f32).has_value());
  EXPECT_EQ(*unmet_requirements(vec16, l, DType::f32), "needs 16-byte aligned matrices (the stride of A is 4002 floats)");
  EXPECT_FALSE(unmet_requirements(vec16, l, DType::f64).has_value()) << "4002 doubles are 16-byte multiples";
  EXPECT_EQ(*unmet_requirements(vec16, l, DType::i32), "needs 16-byte aligned matrices (the stride of A is 4002 ints)");
  l.stride_a = 4001;
  EXPECT_EQ(*unmet_requirements(vec16, l, DType::f64), "needs 16-byte aligned matrices (the stride of A is 4001 doubles)");
  const Requirements natural{8, 1};  // a double's own alignment: nothing to ask of f64 strides
  EXPECT_FALSE(unmet_requirements(natural, l, DType::f64).has_value());
  EXPECT_TRUE(unmet_requirements(natural, l, DType::f32).has_value());
  EXPECT_FALSE(unmet_requirements(Requirements{}, l, DType::f64).has_value());
}

}  // namespace
}  // namespace cmt
