#include "measure/gpu/workspace.hpp"

#include <algorithm>
#include <cstring>

#include "cuda/check.hpp"

namespace cmt {

namespace {

// Every part of the arena starts at a multiple of 64 elements: 256 or 512 bytes, aligned at least
// like cudaMalloc's.
constexpr int64_t k_align_elements = 64;

int64_t round_up(int64_t x, int64_t align) { return (x + align - 1) / align * align; }

/// Where everything of a workspace lies, in elements; shared by the constructor and bytes_needed.
struct Plan {
  Layout v, t;
  Extent sa, sb;
  int64_t span_a = 0, span_b = 0;      // validation A and B
  int64_t ref_stride = 0;
  int64_t off_a = 0, off_b = 0, off_c0 = 0, off_abs_ab = 0, off_ref[k_max_validation_cases] = {};
  int64_t off_a_large = 0, off_b_large = 0;
  int64_t arena = 0;
  WideOffsets wide;
  CWorkLayout c;
  int64_t time_a = 0, time_b = 0, time_c = 0;
  int element_bytes = 4;

  size_t bytes() const {
    return static_cast<size_t>(arena + c.total() + time_a + time_b + time_c) * static_cast<size_t>(element_bytes) +
           static_cast<size_t>(wide.total) * sizeof(double);
  }
};

Plan plan_for(const Problem& p, int64_t ld_align) {
  Plan plan;
  plan.element_bytes = dtype_bytes(storage_of(p.dtype));
  plan.v = validation_layout(p, ld_align);
  plan.t = timing_layout(p, ld_align);
  plan.sa = stored_a(p);
  plan.sb = stored_b(p);
  const Layout& v = plan.v;
  const Layout& t = plan.t;
  const bool exact = type_info(p.dtype).exact;  // no |A||B|; a third case with its own inputs
  const bool wide = type_info(p.dtype).reference == Reference::fp64;  // |A||B| and references in FP64
  const size_t cases = validation_cases(p.dtype).size();

  plan.span_a = batch_span(p.batch, v.stride_a, plan.sa.rows, v.lda);
  plan.span_b = batch_span(p.batch, v.stride_b, plan.sb.rows, v.ldb);
  plan.ref_stride = round_up(p.m * v.ldc, k_align_elements);
  const int64_t c_side = p.batch * plan.ref_stride;
  plan.off_a = 0;
  plan.off_b = plan.off_a + round_up(plan.span_a, k_align_elements);
  plan.off_c0 = plan.off_b + round_up(plan.span_b, k_align_elements);
  plan.off_abs_ab = plan.off_c0 + c_side;
  int64_t next = plan.off_abs_ab + (exact || wide ? 0 : c_side);
  for (size_t i = 0; i < cases; ++i) {
    plan.off_ref[i] = next;
    next += c_side;  // wide: the FP32 SIMT reference's result of the case, whose error is the bar
  }
  if (wide) {  // in doubles: A, B, C0, |A||B| and the references
    plan.wide.a = 0;
    plan.wide.b = round_up(plan.span_a, k_align_elements);
    plan.wide.c0 = plan.wide.b + round_up(plan.span_b, k_align_elements);
    plan.wide.abs_ab = plan.wide.c0 + c_side;
    int64_t w = plan.wide.abs_ab + c_side;
    for (size_t i = 0; i < cases; ++i) {
      plan.wide.ref[i] = w;
      w += c_side;
    }
    plan.wide.total = w;
  }
  if (exact) {
    plan.off_a_large = next;
    plan.off_b_large = plan.off_a_large + round_up(plan.span_a, k_align_elements);
    next = plan.off_b_large + round_up(plan.span_b, k_align_elements);
  }
  plan.arena = next;
  // A kernel that ignores a stride of 0 and steps through packed matrices reads batch - 1 matrices
  // past the operand's one: those reads must stay inside the arena, which then holds other inputs
  // and padding, so the kernel is `wrong`, not a fault. Only shapes whose broadcast operand is
  // larger than everything after it need the padding tail this adds.
  if (p.batched()) {
    const auto reach = [&](int64_t offset, int64_t rows, int64_t ld) {
      return offset + (p.batch - 1) * round_up(rows * ld, k_align_elements) + rows * ld;
    };
    if (v.stride_a == 0) plan.arena = std::max(plan.arena, reach(plan.off_a, plan.sa.rows, v.lda));
    if (v.stride_b == 0) plan.arena = std::max(plan.arena, reach(plan.off_b, plan.sb.rows, v.ldb));
    if (exact && v.stride_a == 0) plan.arena = std::max(plan.arena, reach(plan.off_a_large, plan.sa.rows, v.lda));
    if (exact && v.stride_b == 0) plan.arena = std::max(plan.arena, reach(plan.off_b_large, plan.sb.rows, v.ldb));
  }

  plan.c.lead = k_guard_floats;
  plan.c.m = p.m;
  plan.c.n = p.n;
  plan.c.ldc = v.ldc;
  plan.c.batch = p.batch;
  plan.c.stride = p.batched() ? v.stride_c : 0;
  plan.c.tail = c_guard_after(v.ldc);
  plan.c.dtype = storage_of(p.dtype);

  plan.time_a = batch_span(p.batch, t.stride_a, plan.sa.rows, t.lda);
  plan.time_b = batch_span(p.batch, t.stride_b, plan.sb.rows, t.ldb);
  plan.time_c = batch_span(p.batch, t.stride_c, p.m, t.ldc);
  return plan;
}

DeviceBuffer elements(DType dtype, int64_t count) {
  return DeviceBuffer(static_cast<size_t>(count) * static_cast<size_t>(dtype_bytes(dtype)));
}

}  // namespace

size_t ProblemWorkspace::bytes_needed(const Problem& p, int64_t ld_align) { return plan_for(p, ld_align).bytes(); }

size_t workspace_bytes(const std::vector<Problem>& problems) {
  size_t total = 0;
  for (const auto& p : problems) total += ProblemWorkspace::bytes_needed(p);
  return total;
}

namespace {
/// The arguments of one run over buffers in layout l.
GemmArgs args_in(const Problem& p, const Layout& l, double alpha, double beta, const void* a, const void* b, void* c) {
  const DType storage = storage_of(p.dtype);
  GemmArgs g{int(p.m),
             int(p.n),
             int(p.k),
             GemmScalar::of(storage, alpha),
             a,
             int(l.lda),
             b,
             int(l.ldb),
             GemmScalar::of(storage, beta),
             c,
             int(l.ldc)};
  g.stride_a = l.stride_a;
  g.stride_b = l.stride_b;
  g.stride_c = l.stride_c;
  g.batch = int(p.batch);
  g.trans_a = p.trans_a;
  g.trans_b = p.trans_b;
  g.dtype = storage;
  return g;
}

/// An FP64 view of FP32 GEMM arguments: the same shape, strides and ops over FP64 buffers.
GemmArgs widened(GemmArgs g, const void* a, const void* b, void* c, double alpha, double beta) {
  g.dtype = DType::f64;
  g.alpha = GemmScalar(alpha);
  g.beta = GemmScalar(beta);
  g.a = a;
  g.b = b;
  g.c = c;
  return g;
}
}  // namespace

GemmArgs ProblemWorkspace::validation_args(const ValidationCase& vc) const {
  return args_in(m_problem, m_validation, vc.alpha, vc.beta, a_of(vc), b_of(vc), c_work());
}

GemmArgs ProblemWorkspace::timing_args() const {
  return args_in(m_problem, m_timing, k_timing_alpha, k_timing_beta, a_time(), b_time(), c_time());
}

ProblemWorkspace::ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream,
                                   const CublasHandle& cublas, int64_t ld_align, InputDistribution distribution)
    : m_problem(problem) {
  const Plan plan = plan_for(problem, ld_align);
  m_validation = plan.v;
  m_timing = plan.t;
  m_off_a = plan.off_a;
  m_off_b = plan.off_b;
  m_off_c0 = plan.off_c0;
  m_off_abs_ab = plan.off_abs_ab;
  std::copy(std::begin(plan.off_ref), std::end(plan.off_ref), std::begin(m_off_ref));
  m_off_a_large = plan.off_a_large;
  m_off_b_large = plan.off_b_large;
  m_wide_off = plan.wide;
  m_ref_stride = plan.ref_stride;
  m_c_layout = plan.c;

  const Layout& v = m_validation;
  const Layout& t = m_timing;
  const DType dtype = storage_of(problem.dtype);
  const int64_t m = problem.m, n = problem.n, batch = problem.batch;
  const bool exact = type_info(dtype).exact;
  const bool fp64 = fp64_reference();

  // The fills and cuBLAS must run in order (A and B are made absolute in place and drawn again
  // around a cuBLAS call): a handle on another stream is ordered by waiting for the device.
  cudaStream_t cublas_stream = nullptr;
  CMT_CUBLAS_CHECK(cublasGetStream(cublas.get(), &cublas_stream));
  const auto around_cublas = [&] {
    if (!exact && cublas_stream != stream) CMT_CUDA_CHECK(cudaDeviceSynchronize());
  };
  // The reference: cuBLAS for the floats, the exact wrapping kernel (on `stream`) for INT32.
  const auto reference_gemm = [&](const GemmArgs& g) {
    if (exact)
      CMT_CUDA_CHECK(reference_gemm_i32(g, stream));
    else
      cublas.gemm(g);
  };

  m_arena = elements(dtype, plan.arena);
  // The padding pattern everywhere first: the gaps between the parts, the rounding, the tail, and
  // the references of beta == 0 (cuBLAS does not read C then).
  fill_bits(m_arena.get(), dtype, plan.arena, pad_bits(dtype), stream);
  const auto fill_a = [&] {
    fill_random_batch(arena(m_off_a), dtype, plan.span_a, plan.sa.rows, plan.sa.cols, v.lda, v.stride_a, seed * 3 + 1,
                      stream, k_i32_small_input, distribution);
  };
  const auto fill_b = [&] {
    fill_random_batch(arena(m_off_b), dtype, plan.span_b, plan.sb.rows, plan.sb.cols, v.ldb, v.stride_b, seed * 3 + 2,
                      stream, k_i32_small_input, distribution);
  };
  fill_a();
  fill_b();
  fill_random_batch(arena(m_off_c0), dtype, batch * m_ref_stride, m, n, v.ldc, m_ref_stride, seed * 3 + 3, stream,
                    k_i32_small_input, distribution);
  if (exact) {  // the wrap check's inputs: products and sums overflow
    fill_random_batch(arena(m_off_a_large), dtype, plan.span_a, plan.sa.rows, plan.sa.cols, v.lda, v.stride_a,
                      seed * 3 + 7, stream, k_i32_large_input);
    fill_random_batch(arena(m_off_b_large), dtype, plan.span_b, plan.sb.rows, plan.sb.cols, v.ldb, v.stride_b,
                      seed * 3 + 8, stream, k_i32_large_input);
  }

  // The references: the validation layout's A and B, C0's packed batch (stride_c = ref_stride).
  Layout ref_layout = v;
  ref_layout.stride_c = batch > 1 ? m_ref_stride : 0;
  const GemmArgs ref = args_in(problem, ref_layout, 1.0, 0.0, a_val(), b_val(), nullptr);

  // |A||B| scales the floating-point tolerance. It is computed from A and B made absolute in place,
  // which are then drawn again from the same seeds: no temporaries.
  if (fp64) {
    make_fp64_abs_ab(ref, plan.span_a, plan.span_b, stream, cublas, around_cublas);
  } else if (!exact) {
    abs_copy(arena(m_off_a), arena(m_off_a), dtype, plan.span_a, stream);
    abs_copy(arena(m_off_b), arena(m_off_b), dtype, plan.span_b, stream);
    GemmArgs g = ref;
    g.c = arena(m_off_abs_ab);
    around_cublas();
    reference_gemm(g);
    around_cublas();
    fill_a();
    fill_b();
  }

  const ValidationCases cases = validation_cases(dtype);
  for (size_t i = 0; i < cases.size(); ++i) {
    const ValidationCase& vc = cases[i];
    GemmArgs g = ref;
    g.alpha = GemmScalar::of(dtype, vc.alpha);
    g.beta = GemmScalar::of(dtype, vc.beta);
    g.a = a_of(vc);
    g.b = b_of(vc);
    g.c = arena(m_off_ref[i]);
    if (vc.beta != 0.0)
      CMT_CUDA_CHECK(cudaMemcpyAsync(g.c, c0_val(),
                                     static_cast<size_t>(batch * m_ref_stride) * static_cast<size_t>(dtype_bytes(dtype)),
                                     cudaMemcpyDeviceToDevice, stream));
    around_cublas();
    reference_gemm(g);  // fp64: the FP32 SIMT reference's result, whose error is the bar
    if (fp64) {
      void* out = wide(m_wide_off.ref[i]);
      if (vc.beta != 0.0)
        CMT_CUDA_CHECK(cudaMemcpyAsync(out, wide(m_wide_off.c0),
                                       static_cast<size_t>(batch * m_ref_stride) * sizeof(double),
                                       cudaMemcpyDeviceToDevice, stream));
      around_cublas();
      cublas.gemm(widened(g, wide(m_wide_off.a), wide(m_wide_off.b), out, vc.alpha, vc.beta));
    }
  }

  around_cublas();
  if (fp64) measure_simt_errors(stream);

  m_c_work = elements(dtype, m_c_layout.total());
  prepare_c(m_c_work.get(), m_c_layout, guard_bits(dtype), nullptr, 0, pad_bits(dtype), stream);

  m_a_time = elements(dtype, plan.time_a);
  m_b_time = elements(dtype, plan.time_b);
  m_c_time = elements(dtype, plan.time_c);
  fill_random_batch(m_a_time.get(), dtype, plan.time_a, plan.sa.rows, plan.sa.cols, t.lda, t.stride_a, seed * 3 + 4,
                    stream, k_i32_small_input, distribution);
  fill_random_batch(m_b_time.get(), dtype, plan.time_b, plan.sb.rows, plan.sb.cols, t.ldb, t.stride_b, seed * 3 + 5,
                    stream, k_i32_small_input, distribution);
  fill_random_batch(m_c_time.get(), dtype, plan.time_c, m, n, t.ldc, t.stride_c, seed * 3 + 6, stream,
                    k_i32_small_input, distribution);
  CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void ProblemWorkspace::make_fp64_abs_ab(const GemmArgs& ref, int64_t span_a, int64_t span_b, cudaStream_t stream,
                                        const CublasHandle& cublas, const std::function<void()>& around_cublas) {
  const int64_t c_side = m_problem.batch * m_ref_stride;
  m_wide = DeviceBuffer(static_cast<size_t>(m_wide_off.total) * sizeof(double));
  fill_bits(m_wide.get(), DType::f64, m_wide_off.total, pad_bits(DType::f64), stream);
  // A, B and C0 in FP64 (exact), |A||B| from their absolute values, then A and B again.
  widen(wide(m_wide_off.a), arena(m_off_a), span_a, stream);
  widen(wide(m_wide_off.b), arena(m_off_b), span_b, stream);
  widen(wide(m_wide_off.c0), arena(m_off_c0), c_side, stream);
  abs_copy(wide(m_wide_off.a), wide(m_wide_off.a), DType::f64, span_a, stream);
  abs_copy(wide(m_wide_off.b), wide(m_wide_off.b), DType::f64, span_b, stream);
  around_cublas();
  cublas.gemm(widened(ref, wide(m_wide_off.a), wide(m_wide_off.b), wide(m_wide_off.abs_ab), 1.0, 0.0));
  around_cublas();
  widen(wide(m_wide_off.a), arena(m_off_a), span_a, stream);
  widen(wide(m_wide_off.b), arena(m_off_b), span_b, stream);
}

void ProblemWorkspace::measure_simt_errors(cudaStream_t stream) {
  // The FP32 SIMT reference (cuBLAS SGEMM, in the arena's reference slots) against FP64, as a
  // candidate is compared: its largest error ratio is the bar a candidate must not exceed.
  DeviceBuffer stats(sizeof(CompareStats));
  auto* dev = static_cast<CompareStats*>(stats.get());
  CWorkLayout l = m_c_layout;
  l.lead = 0;
  l.tail = 0;
  l.stride = m_problem.batch > 1 ? m_ref_stride : 0;
  const ValidationCases cases = validation_cases(m_problem.dtype);
  for (size_t i = 0; i < cases.size(); ++i) {
    const ValidationCase& vc = cases[i];
    reset_stats(dev, stream);
    compare_gemm(arena(m_off_ref[i]), l, wide(m_wide_off.ref[i]), wide(m_wide_off.abs_ab),
                 vc.beta != 0.0 ? wide(m_wide_off.c0) : nullptr, m_ref_stride, int(m_problem.k), vc.alpha, vc.beta,
                 pad_bits(DType::f32), guard_bits(DType::f32), dev, stream, true);
    CompareStats st{};
    CMT_CUDA_CHECK(cudaMemcpyAsync(&st, dev, sizeof st, cudaMemcpyDeviceToHost, stream));
    CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
    float ratio;
    std::memcpy(&ratio, &st.max_ratio_bits, sizeof ratio);
    m_simt_ratio[i] = ratio;
  }
}

}  // namespace cmt
