// multistage THIN_WORKERS: the descriptor's rules, and builds for the GPUs with and without bulk copies.
#include <gtest/gtest.h>

#include <algorithm>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

constexpr const char* k_preset = R"(name = "thin-workers"
description = "the 1025^3 multistage tile with and without thin edges and dedicated thin workers"

[[templates.multistage]]
BM = [64]
BN = [128]
BK = [32]
WM = [32]
WN = [64]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [1]
PAD = [4]
SPLITK = [2]
SWIZZLE = [1]
THIN_EDGE = [0, 4]
THIN_WORKERS = [0, 4]
INLINE_THIN_ROWS = [0]
A_CHUNK = [8]
)";

// A parameter's value in a candidate; -1 when absent.
int value_of(const Candidate& c, const std::string& name) {
  return static_cast<int>(find_param(c.values, name).value_or(-1));
}

const Candidate* find(const SearchSpace& space, int thin_edge, int thin_workers) {
  for (const Candidate& c : space.candidates)
    if (value_of(c, "THIN_EDGE") == thin_edge && value_of(c, "THIN_WORKERS") == thin_workers) return &c;
  return nullptr;
}

// Compiles `candidate` for sm_90 and sm_80 (an exported header may target either) through the
// tests' shared compile cache and expects both builds to succeed without spills.
void expect_builds_without_spills(const Candidate& candidate) {
  const std::vector<Candidate> one = {candidate};  // the service points into it while compiling
  for (const std::string arch : {"sm_90", "sm_80"}) {
    Store store(test::shared_compile_cache());
    const NvrtcCompiler nvrtc;
    CompileService service(store, nvrtc, arch, 1);
    service.submit_all(one);
    auto c = service.next();
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE(c->binary.ok) << arch << ":\n" << c->binary.log;
    EXPECT_EQ(c->binary.spill_stores, 0) << arch;
    EXPECT_EQ(c->binary.spill_loads, 0) << arch;
  }
}

TEST(ThinWorkers, NeedThinEdgesAndAsk160KiBOfSharedMemory) {
  test::TempDir dir;
  test::write_file(dir / "tw.toml", k_preset);
  const auto templates = load_templates({default_templates_dir()});
  const SearchSpace space = enumerate_space(templates, load_preset(dir / "tw.toml"), test::sm90());
  ASSERT_EQ(space.candidates.size(), 3u);  // THIN_WORKERS = 4 without THIN_EDGE is pruned
  ASSERT_EQ(space.stats.size(), 1u);
  const auto& pruned = space.stats[0].pruned;
  const auto rule = std::find_if(pruned.begin(), pruned.end(), [](const PruneCount& p) { return p.count > 0; });
  ASSERT_NE(rule, pruned.end());
  EXPECT_EQ(rule->count, 1);
  EXPECT_NE(rule->reason.find("THIN_WORKERS"), std::string::npos) << rule->reason;

  const Candidate* shared = find(space, 4, 0);
  const Candidate* workers = find(space, 4, 4);
  ASSERT_TRUE(shared && workers);
  EXPECT_EQ(shared->shape.dynamic_smem, 3 * (32 * (64 + 4) + 32 * 128) * 4);  // the cp.async ring
  EXPECT_EQ(workers->shape.dynamic_smem, 160 * 1024);
}

// sm_90 builds stream with bulk copies on mbarriers; sm_80 builds (an exported header may target
// one) compile the fallback to the shared path instead. Both must build, without spills.
TEST(ThinWorkers, BuildForSm90AndSm80WithoutSpills) {
  test::TempDir dir;
  test::write_file(dir / "tw.toml", k_preset);
  const auto templates = load_templates({default_templates_dir()});
  const SearchSpace space = enumerate_space(templates, load_preset(dir / "tw.toml"), test::sm90());
  const Candidate* workers = find(space, 4, 4);
  ASSERT_NE(workers, nullptr);
  expect_builds_without_spills(*workers);
}

// INLINE_THIN_ROWS = r needs THIN_EDGE >= r and PAD >= r (the thin rows ride in the A padding),
// asks shared memory for its partial sums past SPLITK's, and builds for sm_90 and sm_80 unspilled.
constexpr const char* k_inline_preset = R"(name = "inline"
description = "the 1025^3 multistage tile with thin rows inline"

[[templates.multistage]]
BM = [64]
BN = [128]
BK = [32]
WM = [32]
WN = [64]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [1]
PAD = [0, 4]
SPLITK = [2]
SWIZZLE = [1]
THIN_EDGE = [0, 1, 4]
THIN_WORKERS = [0]
INLINE_THIN_ROWS = [0, 1, 4]
A_CHUNK = [8]
)";

TEST(InlineThinRows, NeedThinEdgeAndPaddingAndBuildWithoutSpills) {
  test::TempDir dir;
  test::write_file(dir / "inline.toml", k_inline_preset);
  const auto templates = load_templates({default_templates_dir()});
  const SearchSpace space = enumerate_space(templates, load_preset(dir / "inline.toml"), test::sm90());
  // PAD x THIN_EDGE give 6 builds without inline rows; r = 1 needs PAD 4 and THIN_EDGE 1 or 4, r = 4
  // PAD 4 and THIN_EDGE 4.
  ASSERT_EQ(space.candidates.size(), 6u + 2u + 1u);
  const Candidate* inline_one = nullptr;
  for (const Candidate& c : space.candidates) {
    const int r = value_of(c, "INLINE_THIN_ROWS");
    if (r == 0) continue;
    EXPECT_GE(value_of(c, "THIN_EDGE"), r) << c.id();
    EXPECT_EQ(value_of(c, "PAD"), 4) << c.id();
    // The ring (3 stages of 32 x (64 + 4) and 32 x 128 floats) holds the partial sums past SPLITK's.
    EXPECT_EQ(c.shape.dynamic_smem, 3 * (32 * (64 + 4) + 32 * 128) * 4) << c.id();
    if (r == 1 && value_of(c, "THIN_EDGE") == 4) inline_one = &c;
  }
  ASSERT_NE(inline_one, nullptr);
  expect_builds_without_spills(*inline_one);
}

}  // namespace
}  // namespace cmt
