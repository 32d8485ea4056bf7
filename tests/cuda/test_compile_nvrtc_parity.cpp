// The tuner times NVRTC's build of a kernel; an exported header runs nvcc's build of the same source.
// For the multistage, clusterk and dmma templates, and warptile's INT32 builds, the two must be the
// same machine code, or the header runs something other than what was measured (they once differed
// by 14 registers and 1.5-2% in speed).
// Real NVRTC and nvcc; no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "compiler_parity.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;



// quick.toml's multistage and clusterk kernels, the 64x128 multistage tiles that win the
// 1000^3-1025^3 problems on H100 and H200 (the ones that had differed; with and without thin
// workers), the 1025^3 winner with its thin row inline (also copying A in 16-k runs), and the 64x64
// clusterk tiles over 4 blocks that win 256^3.
constexpr const char* k_preset = R"(name = "parity"
description = "kernels whose NVRTC and nvcc builds must match"
[[templates.multistage]]
BM = [64]
BN = [128]
BK = [16, 32]
WM = [32]
WN = [64]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [1, 4]
PAD = [4]
SPLITK = [2]
SWIZZLE = [1]
THIN_EDGE = [0, 4]
INLINE_THIN_ROWS = [0]
A_CHUNK = [8]

[[templates.multistage]]
BM = [64]
BN = [128]
BK = [32]
WM = [64]
WN = [32]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [1]
PAD = [4]
SPLITK = [2]
SWIZZLE = [1]
THIN_EDGE = [4]
THIN_WORKERS = [4]
INLINE_THIN_ROWS = [1]
A_CHUNK = [8, 16]

[[templates.clusterk]]
BM = [64]
BN = [64]
BK = [32]
WM = [32]
WN = [32]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [1, 4]
PAD = [4]
SPLITK = [1, 2]
CLUSTER_K = [4]
SWIZZLE = [1]
THIN_EDGE = [0]
)";

TEST(CompilerParity, MultistageAndClusterkCompileToTheSameCodeWithNvrtcAndNvcc) {
  test::TempDir dir;
  test::write_file(dir / "parity.toml", k_preset);
  const auto templates = load_templates({default_templates_dir()});
  std::vector<Candidate> candidates;
  for (const fs::path& preset : {fs::path(resolve_preset("quick")), dir / "parity.toml"})
    for (Candidate& c : enumerate_space(templates, load_preset(preset), test::sm90()).candidates)
      if (c.tmpl->name == "multistage" || c.tmpl->name == "clusterk") candidates.push_back(std::move(c));
  ASSERT_GE(candidates.size(), 12u);

  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path());
}

// warptile computes FP32 and INT32. Its INT32 builds address the shared tiles at 32-bit addresses
// and must be the same machine code with NVRTC and nvcc: the 128x256 tile of the 4096^3 winner (its
// most registers, 16-byte loads, thin edges) and 96x96 tiles of 288 threads with 4-byte loads, in
// every layout. Its FP32 builds keep the generic shared-memory pointers they were tuned with; NVRTC
// and nvcc form a few of those addresses differently (they did before the types: e.g. 87680 against
// 87552 bytes of sm_90 code for the 128x64 VEC = 1 nn tile), so for them nvcc must only build every
// kernel under the name NVRTC gives it, with the FP32 signature.
constexpr const char* k_warptile_preset = R"(name = "parity-warptile"
description = "warptile kernels in both types"
[[templates.warptile]]
BM = [128]
BN = [256]
BK = [16]
WM = [64]
WN = [64]
WNITER = [2]
TM = [4]
PAD = [4]
VEC = [4]
SWIZZLE = [8]
THIN_EDGE = [4]

[[templates.warptile]]
BM = [96]
BN = [96]
BK = [32]
WM = [32]
WN = [32]
WNITER = [2]
TM = [4]
PAD = [0]
VEC = [1]
SWIZZLE = [1]
THIN_EDGE = [4]
)";

std::vector<Candidate> warptile_candidates(const std::vector<TemplateDesc>& templates, const fs::path& preset, DType dtype) {
  Target target = test::sm90();
  target.layouts = {"nn", "nt", "tn", "tt"};
  target.dtypes = {dtype};
  std::vector<Candidate> out = enumerate_space(templates, load_preset(preset), target, "warptile").candidates;
  for (const Candidate& c : out) EXPECT_EQ(c.tmpl->dtype_of(c.values), dtype) << c.id();
  return out;
}

TEST(CompilerParity, WarptileInt32CompilesToTheSameCodeWithNvrtcAndNvcc) {
  test::TempDir dir;
  test::write_file(dir / "warptile.toml", k_warptile_preset);
  const auto templates = load_templates({default_templates_dir()});
  const std::vector<Candidate> candidates = warptile_candidates(templates, dir / "warptile.toml", DType::i32);
  ASSERT_EQ(candidates.size(), 8u);
  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path());
}

TEST(CompilerParity, WarptileFloatBuildsWithNvrtcAndNvccUnderTheSameNames) {
  test::TempDir dir;
  test::write_file(dir / "warptile.toml", k_warptile_preset);
  const auto templates = load_templates({default_templates_dir()});
  const std::vector<Candidate> candidates = warptile_candidates(templates, dir / "warptile.toml", DType::f32);
  ASSERT_EQ(candidates.size(), 8u);
  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path(), test::Parity::names);
}

// The FP64 tensor-core family in every layout: quick.toml's dmma kernels (m8n8k4, m16n8k4, m16n8k8 and
// m16n8k16; fragments read 8 and 16 bytes at a time; K split across a cluster). Its shared-memory
// accesses all go through 32-bit addresses, so the two compilers make the same code of it.
TEST(CompilerParity, DmmaCompilesToTheSameCodeWithNvrtcAndNvccInEveryLayout) {
  test::TempDir dir;
  const auto templates = load_templates({default_templates_dir()});
  Target target = test::sm90();
  target.layouts = {"nn", "nt", "tn", "tt"};
  target.dtypes = {DType::f64};
  std::vector<Candidate> candidates;
  for (Candidate& c : enumerate_space(templates, load_preset(resolve_preset("quick")), target).candidates)
    if (c.tmpl->name == "dmma") candidates.push_back(std::move(c));
  ASSERT_EQ(candidates.size(), 20u);

  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path());
}

}  // namespace
}  // namespace cmt
