#include "measure/workspace.hpp"

#include <algorithm>

#include "cuda/check.hpp"

namespace cmt {

namespace {

constexpr int64_t k_align_floats = 64;  // 256 bytes: every part of the arena starts aligned like cudaMalloc's

int64_t round_up(int64_t x, int64_t align) { return (x + align - 1) / align * align; }

/// Where everything of a workspace lies, in floats; shared by the constructor and bytes_needed.
struct Plan {
  Layout v, t;
  Extent sa, sb;
  int64_t span_a = 0, span_b = 0;      // validation A and B
  int64_t ref_stride = 0;
  int64_t off_a = 0, off_b = 0, off_c0 = 0, off_abs_ab = 0, off_ref[2] = {0, 0};
  int64_t arena = 0;
  CWorkLayout c;
  int64_t time_a = 0, time_b = 0, time_c = 0;

  size_t bytes() const {
    return static_cast<size_t>(arena + c.total() + time_a + time_b + time_c) * sizeof(float);
  }
};

Plan plan_for(const Problem& p, int64_t ld_align) {
  Plan plan;
  plan.v = validation_layout(p, ld_align);
  plan.t = timing_layout(p, ld_align);
  plan.sa = stored_a(p);
  plan.sb = stored_b(p);
  const Layout& v = plan.v;
  const Layout& t = plan.t;

  plan.span_a = batch_span(p.batch, v.stride_a, plan.sa.rows, v.lda);
  plan.span_b = batch_span(p.batch, v.stride_b, plan.sb.rows, v.ldb);
  plan.ref_stride = round_up(p.m * v.ldc, k_align_floats);
  const int64_t c_side = p.batch * plan.ref_stride;
  plan.off_a = 0;
  plan.off_b = plan.off_a + round_up(plan.span_a, k_align_floats);
  plan.off_c0 = plan.off_b + round_up(plan.span_b, k_align_floats);
  plan.off_abs_ab = plan.off_c0 + c_side;
  plan.off_ref[0] = plan.off_abs_ab + c_side;
  plan.off_ref[1] = plan.off_ref[0] + c_side;
  plan.arena = plan.off_ref[1] + c_side;
  // A kernel that ignores a stride of 0 and steps through packed matrices reads batch - 1 matrices
  // past the operand's one: those reads must stay inside the arena, which then holds other inputs
  // and NaN, so the kernel is `wrong`, not a fault. Only shapes whose broadcast operand is larger
  // than everything after it need the NaN tail this adds.
  if (p.batched()) {
    const auto reach = [&](int64_t offset, int64_t rows, int64_t ld) {
      return offset + (p.batch - 1) * round_up(rows * ld, k_align_floats) + rows * ld;
    };
    if (v.stride_a == 0) plan.arena = std::max(plan.arena, reach(plan.off_a, plan.sa.rows, v.lda));
    if (v.stride_b == 0) plan.arena = std::max(plan.arena, reach(plan.off_b, plan.sb.rows, v.ldb));
  }

  plan.c.lead = k_guard_floats;
  plan.c.m = p.m;
  plan.c.n = p.n;
  plan.c.ldc = v.ldc;
  plan.c.batch = p.batch;
  plan.c.stride = p.batched() ? v.stride_c : 0;
  plan.c.tail = c_guard_after(v.ldc);

  plan.time_a = batch_span(p.batch, t.stride_a, plan.sa.rows, t.lda);
  plan.time_b = batch_span(p.batch, t.stride_b, plan.sb.rows, t.ldb);
  plan.time_c = batch_span(p.batch, t.stride_c, p.m, t.ldc);
  return plan;
}

DeviceBuffer floats(int64_t count) { return DeviceBuffer(static_cast<size_t>(count) * sizeof(float)); }

}  // namespace

size_t ProblemWorkspace::bytes_needed(const Problem& p, int64_t ld_align) { return plan_for(p, ld_align).bytes(); }

size_t workspace_bytes(const std::vector<Problem>& problems) {
  size_t total = 0;
  for (const auto& p : problems) total += ProblemWorkspace::bytes_needed(p);
  return total;
}

namespace {
/// The arguments of one run over buffers in layout l.
GemmArgs args_in(const Problem& p, const Layout& l, float alpha, float beta, const float* a, const float* b, float* c) {
  GemmArgs g{int(p.m), int(p.n), int(p.k), alpha, a, int(l.lda), b, int(l.ldb), beta, c, int(l.ldc)};
  g.stride_a = l.stride_a;
  g.stride_b = l.stride_b;
  g.stride_c = l.stride_c;
  g.batch = int(p.batch);
  g.trans_a = p.trans_a;
  g.trans_b = p.trans_b;
  return g;
}
}  // namespace

GemmArgs ProblemWorkspace::validation_args(const ValidationCase& vc) const {
  return args_in(m_problem, m_validation, vc.alpha, vc.beta, a_val(), b_val(), c_work());
}

GemmArgs ProblemWorkspace::timing_args() const {
  return args_in(m_problem, m_timing, k_timing_alpha, k_timing_beta, a_time(), b_time(), c_time());
}

ProblemWorkspace::ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream,
                                   const CublasHandle& cublas, int64_t ld_align)
    : m_problem(problem) {
  const Plan plan = plan_for(problem, ld_align);
  m_validation = plan.v;
  m_timing = plan.t;
  m_off_a = plan.off_a;
  m_off_b = plan.off_b;
  m_off_c0 = plan.off_c0;
  m_off_abs_ab = plan.off_abs_ab;
  m_off_ref[0] = plan.off_ref[0];
  m_off_ref[1] = plan.off_ref[1];
  m_ref_stride = plan.ref_stride;
  m_c_layout = plan.c;

  const Layout& v = m_validation;
  const Layout& t = m_timing;
  const int64_t m = problem.m, n = problem.n, batch = problem.batch;

  // The fills and cuBLAS must run in order (A and B are made absolute in place and drawn again
  // around a cuBLAS call): a handle on another stream is ordered by waiting for the device.
  cudaStream_t cublas_stream = nullptr;
  CMT_CUBLAS_CHECK(cublasGetStream(cublas.get(), &cublas_stream));
  const auto around_cublas = [&] {
    if (cublas_stream != stream) CMT_CUDA_CHECK(cudaDeviceSynchronize());
  };

  m_arena = floats(plan.arena);
  // NaN everywhere first: the gaps between the parts, the rounding, the tail, and the references of
  // beta == 0 (cuBLAS does not read C then).
  fill_bits(m_arena.floats(), plan.arena, k_pad_bits, stream);
  const auto fill_a = [&] {
    fill_random_batch(arena(m_off_a), plan.span_a, plan.sa.rows, plan.sa.cols, v.lda, v.stride_a, seed * 3 + 1, stream);
  };
  const auto fill_b = [&] {
    fill_random_batch(arena(m_off_b), plan.span_b, plan.sb.rows, plan.sb.cols, v.ldb, v.stride_b, seed * 3 + 2, stream);
  };
  fill_a();
  fill_b();
  fill_random_batch(arena(m_off_c0), batch * m_ref_stride, m, n, v.ldc, m_ref_stride, seed * 3 + 3, stream);

  // The references: the validation layout's A and B, C0's packed batch (stride_c = ref_stride).
  Layout ref_layout = v;
  ref_layout.stride_c = batch > 1 ? m_ref_stride : 0;
  const GemmArgs ref = args_in(problem, ref_layout, 1.0f, 0.0f, a_val(), b_val(), nullptr);

  // |A||B| scales the tolerance. It is computed from A and B made absolute in place, which are then
  // drawn again from the same seeds: no temporaries.
  abs_copy(arena(m_off_a), arena(m_off_a), plan.span_a, stream);
  abs_copy(arena(m_off_b), arena(m_off_b), plan.span_b, stream);
  {
    GemmArgs g = ref;
    g.c = arena(m_off_abs_ab);
    around_cublas();
    cublas.gemm(g);
    around_cublas();
  }
  fill_a();
  fill_b();

  for (int i = 0; i < 2; ++i) {
    const ValidationCase vc = k_validation_cases[i];
    GemmArgs g = ref;
    g.alpha = vc.alpha;
    g.beta = vc.beta;
    g.c = arena(m_off_ref[i]);
    if (vc.beta != 0.0f)
      CMT_CUDA_CHECK(cudaMemcpyAsync(g.c, c0_val(), static_cast<size_t>(batch * m_ref_stride) * sizeof(float),
                                     cudaMemcpyDeviceToDevice, stream));
    around_cublas();
    cublas.gemm(g);
  }

  around_cublas();

  m_c_work = floats(m_c_layout.total());
  prepare_c(m_c_work.floats(), m_c_layout, k_guard_bits, nullptr, 0, k_pad_bits, stream);

  m_a_time = floats(plan.time_a);
  m_b_time = floats(plan.time_b);
  m_c_time = floats(plan.time_c);
  fill_random_batch(m_a_time.floats(), plan.time_a, plan.sa.rows, plan.sa.cols, t.lda, t.stride_a, seed * 3 + 4, stream);
  fill_random_batch(m_b_time.floats(), plan.time_b, plan.sb.rows, plan.sb.cols, t.ldb, t.stride_b, seed * 3 + 5, stream);
  fill_random_batch(m_c_time.floats(), plan.time_c, m, n, t.ldc, t.stride_c, seed * 3 + 6, stream);
  CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace cmt
