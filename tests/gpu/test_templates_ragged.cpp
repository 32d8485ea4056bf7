// Every template, in every quick.toml configuration, against cuBLAS FP32 on ragged sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/gpu/validator.hpp"
#include "measure/gpu/workspace.hpp"
#include "measure/protocol.hpp"
#include "space/space.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

// The quick preset's families that compute FP32 (this test's type; TypedTemplates in
// test_measure_gpu_dtype_validation.cpp covers the FP64 and INT32 ones, dmma among them).
std::vector<std::string> quick_template_names() {
  try {
    const auto templates = load_templates({default_templates_dir()});
    std::vector<std::string> names;
    for (const auto& t : load_preset(resolve_preset("quick")).templates) {
      const auto desc = std::find_if(templates.begin(), templates.end(), [&](const TemplateDesc& d) { return d.name == t.name; });
      if (desc != templates.end() && !desc->supports_dtype(DType::f32)) continue;
      if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);  // one per template
    }
    return names;
  } catch (const std::exception&) {
    return {"quick_preset_failed_to_load"};
  }
}

// 258 x 131 leaves 2 rows and 3 columns past every tile size in quick.toml (thin edge tiles and their
// corner), with K long enough to take several staged chunks; 127 x 4099 a thin column beside a
// partial tile row. 66 x 130 has thin edges around a single interior 64 x 128 tile, whose block then
// computes every piece of the strips, with a short last k tile (70 = 64 + 6). 129 x 200 leaves one
// thin row under two tile rows of 64 beside a partial tile column (the one-row inline path), and
// 65 x 516 one thin row and a thin column of 4 (its corner then goes with the column) over a long K.
const std::vector<Problem> k_ragged_sizes = {{1, 1, 1},       {17, 33, 65},     {127, 255, 129},  {1023, 1025, 1027},
                                             {258, 131, 300}, {127, 4099, 33}, {66, 130, 70},    {512, 512, 512},
                                             {129, 200, 77},  {65, 516, 1030}};

class RaggedCorrectness : public ::testing::TestWithParam<std::string> {};

TEST_P(RaggedCorrectness, EveryQuickCandidateMatchesCublas) {
  CMT_REQUIRE_GPU();
  const auto templates = load_templates({default_templates_dir()});
  const Preset preset = load_preset(resolve_preset("quick"));
  const DeviceInfo device = select_device(0);
  const SearchSpace space = enumerate_space(templates, preset, target_of(device), GetParam());
  ASSERT_FALSE(space.candidates.empty());
  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  compiler.submit_all(space.candidates);

  Stream stream;
  CublasHandle cublas(stream.get());
  Validator validator(stream.get());
  const uint64_t seed = std::random_device{}();
  std::printf("input seed %llu\n", static_cast<unsigned long long>(seed));
  // Tight leading dimensions, and dimensions padded to 4 so the vectorised paths run too.
  std::vector<std::unique_ptr<ProblemWorkspace>> workspaces;
  for (const Problem& p : k_ragged_sizes)
    for (int64_t align : {1, 4})
      workspaces.push_back(std::make_unique<ProblemWorkspace>(p, seed + workspaces.size(), stream.get(), cublas, align));

  int validated = 0;
  while (auto c = compiler.next()) {
    const Candidate& cand = *c->candidate;
    ASSERT_TRUE(c->binary.ok) << cand.id() << " failed to compile:\n" << c->binary.log;
    LoadedKernel kernel(c->binary.cubin, c->binary.lowered_name);
    if (cand.shape.dynamic_smem > 48 * 1024) {
      ASSERT_EQ(kernel.set_dynamic_smem(static_cast<int>(cand.shape.dynamic_smem)), cudaSuccess) << cand.id();
    }
    ASSERT_GE(kernel.max_active_blocks(static_cast<int>(cand.shape.threads), static_cast<int>(cand.shape.dynamic_smem),
                                        static_cast<int>(cand.shape.grid_z)), 1)
        << cand.id() << " cannot launch on this device";
    for (const auto& ws : workspaces) {
      if (unmet_requirements(cand.requirements, ws->timing())) continue;
      const ValidationResult r = validator.validate(
          [&](const GemmArgs& args) { return kernel.launch(cand.shape, args, stream.get()); }, *ws, 0.0);
      EXPECT_TRUE(r.passed) << cand.id() << " on " << ws->problem().to_string() << " (lda " << ws->validation().lda
                            << "): " << r.reason;
      ASSERT_FALSE(is_sticky_error(r.status)) << "CUDA context lost: " << r.reason;
      ++validated;
    }
  }
  EXPECT_GT(validated, 0);
  std::printf("%s: %zu candidates, %d validations\n", GetParam().c_str(), space.candidates.size(), validated);
}

INSTANTIATE_TEST_SUITE_P(QuickPreset, RaggedCorrectness, ::testing::ValuesIn(quick_template_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cmt
