#include "measure/workspace.hpp"

#include "cuda/check.hpp"
#include "measure/validation_kernels.hpp"

namespace cmt {

size_t ProblemWorkspace::bytes_needed(const Problem& p, int64_t ld_align) {
  const Layout v = validation_layout(p, ld_align);
  const Layout t = timing_layout(p, ld_align);
  const size_t a = static_cast<size_t>(p.m * v.lda), b = static_cast<size_t>(p.k * v.ldb),
               c = static_cast<size_t>(p.m * v.ldc);
  // validation: A, B, |A|, |B| (temporary), C0, |C0|, |A||B|, 2 references, C with guards;
  // timing: A, B, C.
  const size_t val = 2 * a + 2 * b + 6 * c + static_cast<size_t>(k_guard_floats + cmt::c_guard_after(v.ldc));
  const size_t time = static_cast<size_t>(p.m * t.lda + p.k * t.ldb + p.m * t.ldc);
  return (val + time) * sizeof(float);
}

size_t workspace_bytes(const std::vector<Problem>& problems) {
  size_t total = 0;
  for (const auto& p : problems) total += ProblemWorkspace::bytes_needed(p);
  return total;
}

GemmArgs ProblemWorkspace::validation_args(const ValidationCase& vc) const {
  const Problem& p = m_problem;
  const Layout& v = m_validation;
  return {int(p.m), int(p.n), int(p.k), vc.alpha, a_val(), int(v.lda), b_val(), int(v.ldb), vc.beta, c_work(), int(v.ldc)};
}

GemmArgs ProblemWorkspace::timing_args() const {
  const Problem& p = m_problem;
  const Layout& t = m_timing;
  return {int(p.m),      int(p.n), int(p.k),     k_timing_alpha, a_time(), int(t.lda), b_time(), int(t.ldb),
          k_timing_beta, c_time(), int(t.ldc)};
}

ProblemWorkspace::ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream,
                                   const CublasHandle& cublas, int64_t ld_align)
    : m_problem(problem),
      m_timing(timing_layout(problem, ld_align)),
      m_validation(validation_layout(problem, ld_align)) {
  const Layout& v = m_validation;
  const Layout& t = m_timing;
  const int64_t m = problem.m, n = problem.n, k = problem.k;
  const size_t fa = sizeof(float);
  m_a_val = DeviceBuffer(m * v.lda * fa);
  m_b_val = DeviceBuffer(k * v.ldb * fa);
  m_c0_val = DeviceBuffer(m * v.ldc * fa);
  m_abs_c0_val = DeviceBuffer(m * v.ldc * fa);
  m_abs_ab_val = DeviceBuffer(m * v.ldc * fa);
  for (auto& r : m_ref) r = DeviceBuffer(m * v.ldc * fa);
  m_c_work = DeviceBuffer((k_guard_floats + m * v.ldc + c_guard_after()) * fa);

  fill_random_matrix(m_a_val.floats(), m, k, v.lda, seed * 3 + 1, stream);
  fill_random_matrix(m_b_val.floats(), k, n, v.ldb, seed * 3 + 2, stream);
  fill_random_matrix(m_c0_val.floats(), m, n, v.ldc, seed * 3 + 3, stream);
  abs_copy(m_abs_c0_val.floats(), m_c0_val.floats(), m * v.ldc, stream);

  {  // |A||B| scales the tolerance; its temporaries are freed right after.
    DeviceBuffer abs_a(m * v.lda * fa), abs_b(k * v.ldb * fa);
    abs_copy(abs_a.floats(), m_a_val.floats(), m * v.lda, stream);
    abs_copy(abs_b.floats(), m_b_val.floats(), k * v.ldb, stream);
    fill_bits(m_abs_ab_val.floats(), m * v.ldc, k_pad_bits, stream);
    cublas.sgemm(int(m), int(n), int(k), 1.0f, abs_a.floats(), int(v.lda), abs_b.floats(), int(v.ldb), 0.0f,
                 m_abs_ab_val.floats(), int(v.ldc));
    CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  for (int i = 0; i < 2; ++i) {
    const ValidationCase vc = k_validation_cases[i];
    CMT_CUDA_CHECK(cudaMemcpyAsync(m_ref[i].get(), m_c0_val.get(), m * v.ldc * fa, cudaMemcpyDeviceToDevice, stream));
    if (vc.beta == 0.0f) fill_bits(m_ref[i].floats(), m * v.ldc, k_pad_bits, stream);
    cublas.sgemm(int(m), int(n), int(k), vc.alpha, m_a_val.floats(), int(v.lda), m_b_val.floats(), int(v.ldb), vc.beta,
                 m_ref[i].floats(), int(v.ldc));
  }

  m_a_time = DeviceBuffer(m * t.lda * fa);
  m_b_time = DeviceBuffer(k * t.ldb * fa);
  m_c_time = DeviceBuffer(m * t.ldc * fa);
  fill_random_matrix(m_a_time.floats(), m, k, t.lda, seed * 3 + 4, stream);
  fill_random_matrix(m_b_time.floats(), k, n, t.ldb, seed * 3 + 5, stream);
  fill_random_matrix(m_c_time.floats(), m, n, t.ldc, seed * 3 + 6, stream);
  CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace cmt
