// fused_batch (several problems per block) beyond what LayoutBatchTemplates covers: batches whose
// grid would pass 65535 blocks along z, which LoadedKernel::launch splits into launches of a whole
// number of blocks of PPB problems, each passing its own problem count, with A or B broadcast; every
// quick.toml candidate in every layout, against cuBLAS strided-batched FP32.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "cuda/check.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/device.hpp"
#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

DeviceBuffer upload(const std::vector<float>& host) {
  DeviceBuffer d(host.size() * sizeof(float));
  CMT_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

std::vector<float> download(const DeviceBuffer& d, size_t count) {
  std::vector<float> host(count);
  CMT_CUDA_CHECK(cudaMemcpy(host.data(), d.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<float> random_values(size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> out(count);
  for (float& v : out) v = value(rng);
  return out;
}

/// Random operands for every problem of the largest batch of one shape, uploaded once.
struct Operands {
  int m, n, k;
  DeviceBuffer a, b, c0;
};

TEST(FusedBatch, BatchesOfSeveralLaunchesMatchCublasInEveryLayout) {
  CMT_REQUIRE_GPU();
  const auto templates = load_templates({default_templates_dir()});
  const DeviceInfo device = select_device(0);
  Target target = target_of(device);
  target.layouts = {"nn", "nt", "tn", "tt"};
  const SearchSpace space = enumerate_space(templates, load_preset(resolve_preset("quick")), target, "fused_batch");
  ASSERT_FALSE(space.candidates.empty()) << "quick.toml has fused_batch candidates";
  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  compiler.submit_all(space.candidates);

  // 65535 blocks of 8 problems, 2 more and one of a single problem: two launches with PPB = 8,
  // three with 4 (the last of 17 problems), five with 2.
  constexpr int k_batch = 65535 * 8 + 2 * 8 + 1;
  Stream stream;
  CublasHandle cublas(stream.get());
  const uint64_t seed = std::random_device{}();
  std::printf("input seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  // 4 x 8 x 12 keeps every leading dimension and stride a multiple of 4 floats (16-byte aligned) in
  // every layout; 3 x 5 x 7 is ragged (single-float candidates only).
  std::vector<Operands> shapes;
  for (const auto& [m, n, k] : std::vector<std::array<int, 3>>{{4, 8, 12}, {3, 5, 7}}) {
    const size_t problems = static_cast<size_t>(k_batch);
    shapes.push_back({m, n, k, upload(random_values(problems * m * k, rng)), upload(random_values(problems * k * n, rng)),
                      upload(random_values(problems * m * n, rng))});
  }
  const size_t c_max = static_cast<size_t>(k_batch) * 4 * 8;
  DeviceBuffer ours(c_max * sizeof(float)), ref(c_max * sizeof(float));

  int checked = 0;
  while (auto c = compiler.next()) {
    const Candidate& cand = *c->candidate;
    ASSERT_TRUE(c->binary.ok) << cand.id() << ":\n" << c->binary.log;
    LoadedKernel kernel(c->binary.cubin, c->binary.lowered_name);
    if (cand.shape.dynamic_smem > 48 * 1024)
      ASSERT_EQ(kernel.set_dynamic_smem(static_cast<int>(cand.shape.dynamic_smem)), cudaSuccess) << cand.id();
    ASSERT_GE(cand.shape.problems_per_block, 2) << cand.id();
    ASSERT_LE(cand.shape.problems_per_block, 8) << cand.id() << ": the batch must need more than one launch";
    const bool ta = find_param(cand.values, "TRANS_A").value() != 0, tb = find_param(cand.values, "TRANS_B").value() != 0;
    for (const Operands& ops : shapes) {
      const int m = ops.m, n = ops.n, k = ops.k;
      const bool aligned = m % 4 == 0 && n % 4 == 0 && k % 4 == 0;
      if (cand.requirements.ld_multiple > 1 && !aligned) continue;
      for (const int broadcast : {0, 1, 2}) {  // none, A, B
        GemmArgs args{};
        args.m = m, args.n = n, args.k = k;
        args.trans_a = ta, args.trans_b = tb;
        args.lda = ta ? m : k;
        args.ldb = tb ? k : n;
        args.ldc = n;
        args.stride_a = broadcast == 1 ? 0 : static_cast<long long>(m) * k;
        args.stride_b = broadcast == 2 ? 0 : static_cast<long long>(k) * n;
        args.stride_c = static_cast<long long>(m) * n;
        args.batch = k_batch;
        args.a = ops.a.floats();
        args.b = ops.b.floats();
        const size_t c_count = static_cast<size_t>(k_batch) * m * n;
        for (const auto& [alpha, beta] : {std::pair{1.25f, 0.0f}, std::pair{0.75f, -1.25f}}) {
          const std::string what = cand.id() + " on " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                   std::to_string(k) + "*" + std::to_string(k_batch) +
                                   (broadcast == 1 ? " (A broadcast)" : broadcast == 2 ? " (B broadcast)" : "") +
                                   ", beta " + std::to_string(beta);
          // beta == 0 must not read C: ours starts as NaN there.
          if (beta == 0.0f)
            CMT_CUDA_CHECK(cudaMemset(ours.get(), 0xff, c_count * sizeof(float)));
          else
            CMT_CUDA_CHECK(cudaMemcpy(ours.get(), ops.c0.get(), c_count * sizeof(float), cudaMemcpyDeviceToDevice));
          CMT_CUDA_CHECK(cudaMemcpy(ref.get(), ops.c0.get(), c_count * sizeof(float), cudaMemcpyDeviceToDevice));
          args.alpha = alpha, args.beta = beta;
          args.c = ours.floats();
          ASSERT_EQ(kernel.launch(cand.shape, args, stream.get()), cudaSuccess) << what;
          args.c = ref.floats();
          cublas.gemm(args);
          ASSERT_EQ(synchronize_within(stream.get(), 60000), cudaSuccess) << what;
          const std::vector<float> got = download(ours, c_count), want = download(ref, c_count);
          // |A|, |B|, |C0| <= 1, so |alpha| K + |beta| bounds each element's terms; 2 (K + 4) u of
          // that is the tuner's tolerance (two dot products summed in any order).
          const float tol = 2.0f * static_cast<float>(k + 4) * 5.9604645e-08f * (std::fabs(alpha) * k + std::fabs(beta));
          size_t bad = 0, first_bad = 0;
          for (size_t i = 0; i < c_count; ++i)
            if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ == 0) first_bad = i;
          EXPECT_EQ(bad, 0u) << what << ": first at matrix " << first_bad / static_cast<size_t>(m * n) << " element "
                             << first_bad % static_cast<size_t>(m * n) << ": " << got[first_bad] << " vs "
                             << want[first_bad];
          ++checked;
        }
      }
    }
  }
  std::printf("%d checks of fused_batch across launches\n", checked);
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace cmt
