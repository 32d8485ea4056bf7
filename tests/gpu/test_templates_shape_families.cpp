// The shape-specific families (skinny_m, skinny_n, smallk, clusterk_deep, fused_batch): every
// quick.toml candidate of each against cuBLAS FP32 on the BLAS corner cases (beta = 0 over NaN,
// alpha = 0, K = 0, one row, one column, wide leading dimensions, pointers one float past an
// allocation) and on ragged sizes in each family's regime (fused_batch: one problem, its batch of
// 1). Each family runs every case: a family is tried only where it may win, but must be right
// everywhere.
//
// Every case builds its own inputs on the host (uniform in [-1, 1); the padding columns of A and B
// hold NaN, so a read past K or N poisons the result), the cuBLAS references alpha*A*B + beta*C0 and
// |A||B| (for the tolerance of measure/tolerance.hpp; where alpha = 0 or K = 0 the reference is beta*C0,
// formed on the host), and a C with guard floats before, after and between its rows (the padding
// columns), which must come back bit for bit unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/device.hpp"
#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/protocol.hpp"
#include "measure/tolerance.hpp"
#include "space/space.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

const std::vector<std::string> k_families = {"skinny_m", "skinny_n", "smallk", "clusterk_deep", "fused_batch"};

enum class LdKind { tight, wide };

struct CaseSpec {
  std::string name;
  int m, n, k;
  float alpha, beta;          // beta == 0: C holds NaN before the call
  LdKind ld = LdKind::tight;  // tight: widths rounded up to the candidate's ld_multiple
  bool offset = false;        // A, B and C one float past their allocations (candidates without requirements)
};

// The corner cases, then the ragged sizes of each family's regime, each with beta != 0 and with
// beta == 0 over NaN (the two validation cases of the tuner).
std::vector<CaseSpec> make_cases() {
  std::vector<CaseSpec> cases = {
      {"beta0_nan_c", 130, 259, 20, 1.25f, 0.0f},
      {"alpha0", 130, 259, 20, 0.0f, -1.25f},
      {"k0", 130, 259, 0, 0.75f, -1.25f},
      {"k0_beta0", 130, 259, 0, 0.75f, 0.0f},
      {"m1", 1, 1000, 777, 0.75f, -1.25f},
      {"n1", 999, 1, 513, 0.75f, -1.25f},
      {"wide_ld", 130, 259, 21, 0.75f, -1.25f, LdKind::wide},
      {"offset_ptrs", 130, 259, 21, 0.75f, -1.25f, LdKind::tight, true},
      {"offset_ptrs_beta0", 67, 131, 5, 1.25f, 0.0f, LdKind::tight, true},
  };
  const std::vector<std::tuple<int, int, int>> ragged = {
      {3, 2049, 1031},  {16, 4099, 300},  {17, 513, 129},                        // skinny_m
      {2049, 3, 1031},  {4099, 16, 300},  {513, 17, 129},                        // skinny_n
      {1023, 1025, 1},  {1025, 1023, 17}, {257, 131, 33},   {129, 257, 64},      // smallk
      {33, 257, 4099},  {250, 130, 8191}, {5, 1029, 2053},                       // clusterk_deep
      {100, 100, 100},  {31, 33, 129},    {129, 65, 64}};                        // fused_batch (one problem)
  for (const auto& [m, n, k] : ragged) {
    const std::string size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    cases.push_back({size, m, n, k, 0.75f, -1.25f});
    cases.push_back({size + "_beta0", m, n, k, 1.25f, 0.0f});
  }
  return cases;
}

int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// Leading dimensions of a case for a candidate whose leading dimensions must be multiples of `mult`.
Layout layout_for(const CaseSpec& c, int64_t mult) {
  if (c.ld == LdKind::wide) {
    if (mult <= 1) return {c.k + 5, c.n + 7, c.n + 3};
    return {round_up(c.k, mult) + mult, round_up(c.n, mult) + mult, round_up(c.n, mult) + mult};
  }
  // K = 0 still needs lda >= 1 (cuBLAS checks it; the kernels never read A).
  return {round_up(std::max(c.k, 1), mult), round_up(c.n, mult), round_up(c.n, mult)};
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

template <typename T>
void upload(const DeviceBuffer& dst, const std::vector<T>& src, cudaStream_t stream) {
  CMT_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

// One case in one layout: inputs on the device, references on the host, and C between guards.
class CaseData {
 public:
  CaseData(const CaseSpec& spec, const Layout& layout, uint64_t seed, cudaStream_t stream, const CublasHandle& cublas)
      : m_spec(spec), m_layout(layout), m_offset(spec.offset ? 1 : 0), m_stream(stream) {
    const int64_t m = spec.m, n = spec.n, k = spec.k, off = m_offset;
    const int64_t lda = layout.lda, ldb = layout.ldb, ldc = layout.ldc;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const float pad = from_bits(k_pad_bits);

    // A and B: values inside, NaN in the padding columns and in the float before an offset matrix.
    std::vector<float> a(off + std::max<int64_t>(m * lda, 1), pad), b(off + std::max<int64_t>(k * ldb, 1), pad);
    std::vector<float> abs_a(a.size(), 0.0f), abs_b(b.size(), 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j) {
        a[off + i * lda + j] = dist(rng);
        abs_a[off + i * lda + j] = std::fabs(a[off + i * lda + j]);
      }
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) {
        b[off + i * ldb + j] = dist(rng);
        abs_b[off + i * ldb + j] = std::fabs(b[off + i * ldb + j]);
      }
    // C0: values, or NaN when beta == 0 (it must not leak into the result).
    m_c0.assign(m * ldc, 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) m_c0[i * ldc + j] = spec.beta == 0.0f ? pad : dist(rng);

    // C's image: guards before (k_guard_floats, plus the offset), around every row's padding, and a
    // whole row more after, so that a write to row M is caught too.
    m_c_begin = k_guard_floats + off;
    m_image.assign(m_c_begin + m * ldc + c_guard_after(ldc), k_guard_bits);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) m_image[m_c_begin + i * ldc + j] = to_bits(m_c0[i * ldc + j]);

    m_a = DeviceBuffer(a.size() * sizeof(float));
    m_b = DeviceBuffer(b.size() * sizeof(float));
    m_c = DeviceBuffer(m_image.size() * sizeof(uint32_t));
    m_c_init = DeviceBuffer(m_image.size() * sizeof(uint32_t));
    upload(m_a, a, stream);
    upload(m_b, b, stream);
    upload(m_c_init, m_image, stream);

    m_ref.assign(m * ldc, 0.0f);
    m_abs_ab.assign(m * ldc, 0.0f);
    if (k == 0 || spec.alpha == 0.0f) {
      // C = beta*C0 exactly (0 where beta == 0): BLAS reads neither A nor B then, so the reference
      // is formed here rather than left to how cuBLAS treats the degenerate call.
      for (int64_t e = 0; e < m * ldc; ++e) m_ref[e] = spec.beta == 0.0f ? 0.0f : spec.beta * m_c0[e];
      if (k == 0) {
        CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
        return;
      }
    }
    // cuBLAS on the same (offset) pointers and leading dimensions: alpha*A*B + beta*C0, and |A||B|.
    DeviceBuffer ref(m * ldc * sizeof(float)), abs_ab(m * ldc * sizeof(float));
    DeviceBuffer abs_a_dev(abs_a.size() * sizeof(float)), abs_b_dev(abs_b.size() * sizeof(float));
    upload(ref, m_c0, stream);
    upload(abs_a_dev, abs_a, stream);
    upload(abs_b_dev, abs_b, stream);
    cublas.sgemm(spec.m, spec.n, spec.k, 1.0f, abs_a_dev.floats() + off, int(lda), abs_b_dev.floats() + off, int(ldb),
                 0.0f, abs_ab.floats(), int(ldc));
    CMT_CUDA_CHECK(cudaMemcpyAsync(m_abs_ab.data(), abs_ab.get(), abs_ab.bytes(), cudaMemcpyDeviceToHost, stream));
    if (spec.alpha != 0.0f) {
      cublas.sgemm(spec.m, spec.n, spec.k, spec.alpha, m_a.floats() + off, int(lda), m_b.floats() + off, int(ldb),
                   spec.beta, ref.floats(), int(ldc));
      CMT_CUDA_CHECK(cudaMemcpyAsync(m_ref.data(), ref.get(), ref.bytes(), cudaMemcpyDeviceToHost, stream));
    }
    CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  const Layout& layout() const { return m_layout; }

  // Puts C0 (and the guards) back, ready for the next run.
  void reset_c() const {
    CMT_CUDA_CHECK(cudaMemcpyAsync(m_c.get(), m_c_init.get(), m_c.bytes(), cudaMemcpyDeviceToDevice, m_stream));
  }

  GemmArgs args() const {
    return {m_spec.m,
            m_spec.n,
            m_spec.k,
            m_spec.alpha,
            m_a.floats() + m_offset,
            int(m_layout.lda),
            m_b.floats() + m_offset,
            int(m_layout.ldb),
            m_spec.beta,
            m_c.floats() + m_c_begin,
            int(m_layout.ldc)};
  }

  // Empty when C holds the reference within the tolerance and every guard is intact; else why not.
  std::string check() const {
    std::vector<uint32_t> got(m_image.size());
    CMT_CUDA_CHECK(cudaMemcpyAsync(got.data(), m_c.get(), m_c.bytes(), cudaMemcpyDeviceToHost, m_stream));
    CMT_CUDA_CHECK(cudaStreamSynchronize(m_stream));
    const int64_t ldc = m_layout.ldc;
    int64_t bad = 0, guards = 0, first_row = -1, first_col = -1;
    float worst = 0.0f, first_got = 0.0f, first_want = 0.0f;
    for (int64_t i = 0; i < m_spec.m; ++i)
      for (int64_t j = 0; j < m_spec.n; ++j) {
        const int64_t e = i * ldc + j;
        const float value = from_bits(got[m_c_begin + e]);
        const float c0 = m_spec.beta == 0.0f ? 0.0f : std::fabs(m_c0[e]);
        const float tol = gemm_tolerance(m_spec.k, m_spec.alpha, m_spec.beta, m_abs_ab[e], c0);
        const float ratio = gemm_error_ratio(value, m_ref[e], tol);
        worst = std::max(worst, ratio);
        if (!(ratio < 1.0f) && bad++ == 0) {
          first_row = i;
          first_col = j;
          first_got = value;
          first_want = m_ref[e];
        }
      }
    for (int64_t p = 0; p < static_cast<int64_t>(got.size()); ++p) {
      const int64_t e = p - m_c_begin;
      const bool inside = e >= 0 && e < m_spec.m * ldc && e % ldc < m_spec.n;
      if (!inside && got[p] != k_guard_bits) ++guards;
    }
    if (bad == 0 && guards == 0) return {};
    std::string why;
    if (bad > 0) {
      char line[256];
      std::snprintf(line, sizeof line, "%lld of %lld elements wrong, e.g. C[%lld][%lld] = %g, want %g; max error/tolerance %.3g",
                    static_cast<long long>(bad), static_cast<long long>(m_spec.m) * m_spec.n,
                    static_cast<long long>(first_row), static_cast<long long>(first_col), first_got, first_want, worst);
      why = line;
    }
    if (guards > 0)
      why += (why.empty() ? "" : "; ") + std::to_string(guards) + " writes outside C's M x N block";
    return why;
  }

 private:
  CaseSpec m_spec;
  Layout m_layout;
  int64_t m_offset = 0;
  cudaStream_t m_stream;
  int64_t m_c_begin = 0;
  std::vector<float> m_c0, m_ref, m_abs_ab;
  std::vector<uint32_t> m_image;  // C with its guards, as uploaded
  DeviceBuffer m_a, m_b, m_c, m_c_init;
};

uint64_t input_seed() {
  if (const char* s = std::getenv("CMT_SHAPE_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

class ShapeFamilyCorrectness : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapeFamilyCorrectness, EveryQuickCandidateMatchesCublas) {
  CMT_REQUIRE_GPU();
  const std::string family = GetParam();
  const auto templates = load_templates({default_templates_dir()});
  const Preset preset = load_preset(resolve_preset("quick"));
  const DeviceInfo device = select_device(0);
  SearchSpace space;
  try {
    space = enumerate_space(templates, preset, target_of(device), family);
  } catch (const UsageError& e) {
    FAIL() << "family " << family << " has no candidates in configs/quick.toml: " << e.what();
  }
  ASSERT_FALSE(space.candidates.empty()) << "family " << family
                                         << ": configs/quick.toml lists it, but every point is pruned";

  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  compiler.submit_all(space.candidates);

  Stream stream;
  CublasHandle cublas(stream.get());
  const uint64_t seed = input_seed();
  std::printf("%s: input seed %llu (CMT_SHAPE_SEED=%llu repeats it)\n", family.c_str(),
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  const std::vector<CaseSpec> cases = make_cases();
  // Inputs and references per (case, ld multiple): built once, shared by the candidates that use them.
  std::map<std::pair<size_t, int64_t>, std::unique_ptr<CaseData>> data;

  int runs = 0, skipped = 0;
  while (auto c = compiler.next()) {
    const Candidate& cand = *c->candidate;
    ASSERT_TRUE(c->binary.ok) << cand.id() << " failed to compile:\n" << c->binary.log;
    LoadedKernel kernel(c->binary.cubin, c->binary.lowered_name);
    if (cand.shape.dynamic_smem > 48 * 1024) {
      ASSERT_EQ(kernel.set_dynamic_smem(static_cast<int>(cand.shape.dynamic_smem)), cudaSuccess) << cand.id();
    }
    ASSERT_GE(kernel.max_active_blocks(static_cast<int>(cand.shape.threads), static_cast<int>(cand.shape.dynamic_smem),
                                       static_cast<int>(cand.shape.grid_z)),
              1)
        << cand.id() << " cannot launch on this device";
    const int64_t mult = std::max<int64_t>(1, cand.requirements.ld_multiple);
    for (size_t i = 0; i < cases.size(); ++i) {
      const CaseSpec& spec = cases[i];
      // One float past an allocation breaks every alignment above 4 bytes.
      if (spec.offset && !cand.requirements.none()) {
        ++skipped;
        continue;
      }
      const Layout layout = layout_for(spec, mult);
      if (unmet_requirements(cand.requirements, layout)) {
        ++skipped;
        continue;
      }
      auto& slot = data[{i, mult}];
      if (!slot) slot = std::make_unique<CaseData>(spec, layout, seed + i, stream.get(), cublas);
      const CaseData& d = *slot;
      d.reset_c();
      cudaError_t status = kernel.launch(cand.shape, d.args(), stream.get());
      if (status == cudaSuccess) status = cudaStreamSynchronize(stream.get());
      ASSERT_FALSE(is_sticky_error(status)) << cand.id() << " on " << spec.name << ": CUDA context lost: "
                                            << cudaGetErrorString(status);
      if (status != cudaSuccess) {
        cudaGetLastError();
        ADD_FAILURE() << cand.id() << " on " << spec.name << ": launch failed: " << cudaGetErrorString(status);
        continue;
      }
      const std::string why = d.check();
      EXPECT_TRUE(why.empty()) << cand.id() << " on " << spec.name << " (" << spec.m << "x" << spec.n << "x" << spec.k
                               << ", lda " << layout.lda << ", ldb " << layout.ldb << ", ldc " << layout.ldc
                               << (spec.offset ? ", pointers offset by one float" : "") << ", alpha " << spec.alpha
                               << ", beta " << spec.beta << "): " << why;
      ++runs;
    }
  }
  EXPECT_GT(runs, 0);
  std::printf("%s: %zu candidates, %d runs, %d skipped for their requirements\n", family.c_str(),
              space.candidates.size(), runs, skipped);
}

INSTANTIATE_TEST_SUITE_P(ShapeFamilies, ShapeFamilyCorrectness, ::testing::ValuesIn(k_families),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cmt
