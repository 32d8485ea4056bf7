// Re-timing keeps every kernel it times loaded, however many there are, and a kernel launch that
// fails leaves no error behind for the next CUDA check.
#include <gtest/gtest.h>

#include <vector>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "measure/gpu/gpu_measurer.hpp"
#include "space/space.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

TEST(MeasurerRetime, TimesMoreKernelsThanItsLoadedCacheHolds) {
  CMT_REQUIRE_GPU();
  const auto templates = load_templates({default_templates_dir()});
  const Preset preset = load_preset(resolve_preset("quick"));
  const DeviceInfo device = select_device(0);
  const SearchSpace space = enumerate_space(templates, preset, target_of(device));
  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  compiler.submit_all(space.candidates);
  std::vector<BinaryRecord> binaries;
  std::vector<const Candidate*> candidates;
  binaries.reserve(space.candidates.size());
  while (auto c = compiler.next()) {
    ASSERT_TRUE(c->binary.ok) << c->candidate->id() << ":\n" << c->binary.log;
    binaries.push_back(c->binary);
    candidates.push_back(c->candidate);
  }
  std::vector<KernelUnderTest> kernels;
  for (size_t i = 0; i < binaries.size(); ++i)
    kernels.push_back({&binaries[i], candidates[i]->shape, candidates[i]->requirements, candidates[i]->id()});
  ASSERT_GT(kernels.size(), 16u) << "quick.toml must hold more kernels than the measurer's cache of 16";

  TuneSettings settings = preset.tune;
  settings.retime_rounds = 3;
  settings.allow_spills = true;  // quick.toml holds a build that spills; the tuner would skip it
  GpuMeasurer measurer(device, settings, 1);
  const Problem problem{256, 256, 256};  // every quick kernel's requirements hold
  const std::vector<RetimeResult> results = measurer.retime(kernels, problem, 0.0);
  ASSERT_EQ(results.size(), kernels.size() + 1);  // cuBLAS last
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string label = i < kernels.size() ? kernels[i].label : "cuBLAS";
    EXPECT_TRUE(results[i].ok) << label << ": " << results[i].error;
    EXPECT_EQ(results[i].stats.count, settings.retime_rounds) << label;
  }
  // A new problem's workspace checks cudaGetLastError after each fill: nothing stale may be left.
  EXPECT_NO_THROW(measurer.measure_cublas(Problem{128, 96, 64}));
}

}  // namespace
}  // namespace cmt
