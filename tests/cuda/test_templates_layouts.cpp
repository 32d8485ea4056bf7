// Operand layouts (TRANS_A, TRANS_B) and strided batches in the kernel templates: every family that
// declares them compiles for every layout, without spills, for sm_90 and sm_80 (an exported header
// may target either); NVRTC and nvcc build the same machine code for transposed multistage and
// clusterk kernels; and the shared-memory ring the descriptors launch with is the one the kernels
// use. Real NVRTC and nvcc; no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
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

const std::vector<std::string> k_all_layouts = {"nn", "nt", "tn", "tt"};

/// A target for `arch` whose problems have every layout (and, with all_types, every element type).
Target all_layouts(const std::string& arch, bool all_types = false) {
  Target t = arch == "sm_90" ? test::sm90() : target_for_arch(arch);
  t.layouts = k_all_layouts;
  if (all_types) t.dtypes = {DType::f32, DType::f64, DType::i32};
  return t;
}

const TemplateDesc& find_desc(const std::vector<TemplateDesc>& templates, const std::string& name) {
  const auto it = std::find_if(templates.begin(), templates.end(), [&](const TemplateDesc& t) { return t.name == name; });
  if (it == templates.end()) throw std::runtime_error("no template " + name);
  return *it;
}

/// Compiles every candidate of the space with NVRTC for `arch` (cache in `db`): each must build
/// (fatal) without spills (unless spills_allowed). `compiled` counts the builds; `each` sees every
/// one. Call it inside ASSERT_NO_FATAL_FAILURE.
void expect_all_compile_without_spills(const SearchSpace& space, const std::string& arch, const fs::path& db,
                                       size_t& compiled,
                                       const std::function<void(const CompiledCandidate&)>& each = {},
                                       bool spills_allowed = false) {
  Store store(db);
  const NvrtcCompiler nvrtc;
  CompileService service(store, nvrtc, arch, 0);
  service.submit_all(space.candidates);
  compiled = 0;
  while (auto c = service.next()) {
    ++compiled;
    ASSERT_TRUE(c->binary.ok) << c->candidate->id() << " (" << arch << "):\n" << c->binary.log;
    if (!spills_allowed) {
      EXPECT_EQ(c->binary.spill_stores, 0) << c->candidate->id() << " (" << arch << ")";
      EXPECT_EQ(c->binary.spill_loads, 0) << c->candidate->id() << " (" << arch << ")";
    }
    if (each) each(*c);
  }
}

/// Builds `program` (a host main() using headers of the templates folder) with nvcc in `dir`
/// (the build must succeed: fatal), runs it, and returns its exit code and what it printed. Call
/// it inside ASSERT_NO_FATAL_FAILURE.
void build_and_run_host_program(const fs::path& dir, const std::string& program, test::CommandResult& ran) {
  test::write_file(dir / "host.cu", program);
  const auto built = test::nvcc_cached(fmt::format("-arch=sm_90 -I'{}'", default_templates_dir().string()),
                                       dir / "host.cu", dir / "host");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  ran = test::run_command("'" + (dir / "host").string() + "'");
}

// The families with layouts and batches, a few points each: edge paths (THIN_EDGE, the inline thin
// row, a short last k tile over SPLITK slices), 16- and 4-byte copies, clusters of 2, 3 and 8;
// warptile's nn 4096^3 winner (128x256 tiles, its most registers), 128x64 tiles of 128 threads, and
// 96x96 tiles of 288 threads (passes of loads that do not divide the tiles).
constexpr const char* k_preset = R"(name = "layouts"
description = "the families with layouts and batches, a few points each"

[templates.blocktile2d]
BM = [64, 128]
BN = [64]
BK = [8]
TM = [8]
TN = [4]

[[templates.multistage]]
BM = [128]
BN = [128]
BK = [32]
WM = [64]
WN = [32]
WNITER = [2]
TM = [4]
STAGES = [4]
VEC = [1, 4]
PAD = [4]
SPLITK = [1]
SWIZZLE = [8]
THIN_EDGE = [0]
THIN_WORKERS = [0]
INLINE_THIN_ROWS = [0]
A_CHUNK = [8]

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
THIN_EDGE = [4]
THIN_WORKERS = [0]
INLINE_THIN_ROWS = [0, 1]
A_CHUNK = [8]

[[templates.multistage]]
BM = [32]
BN = [32]
BK = [32]
WM = [16]
WN = [32]
WNITER = [1]
TM = [4]
STAGES = [2]
VEC = [4]
PAD = [4]
SPLITK = [4]
SWIZZLE = [1]
THIN_EDGE = [4]
THIN_WORKERS = [0]
INLINE_THIN_ROWS = [0]
A_CHUNK = [8]

[[templates.clusterk]]
BM = [64]
BN = [64]
BK = [32]
WM = [32]
WN = [32]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [4]
PAD = [4]
SPLITK = [2]
CLUSTER_K = [2]
SWIZZLE = [1]
THIN_EDGE = [0]

[[templates.clusterk]]
BM = [64]
BN = [128]
BK = [16]
WM = [32]
WN = [64]
WNITER = [2]
TM = [4]
STAGES = [3]
VEC = [1]
PAD = [4]
SPLITK = [1]
CLUSTER_K = [3]
SWIZZLE = [8]
THIN_EDGE = [4]

[[templates.clusterk_deep]]
BM = [32]
BN = [128]
BK = [16]
WM = [32]
WN = [64]
TM = [4]
STAGES = [4]
VEC = [4]
SPLITK = [2]
CLUSTER_K = [8]

[[templates.warptile]]
BM = [128]
BN = [256]
BK = [16]
WM = [64]
WN = [64]
WNITER = [2]
TM = [4]
PAD = [4]
VEC = [1, 4]
SWIZZLE = [8]
THIN_EDGE = [4]

[[templates.warptile]]
BM = [128]
BN = [64]
BK = [32]
WM = [32]
WN = [64]
WNITER = [2]
TM = [4]
PAD = [4]
VEC = [1, 4]
SWIZZLE = [8]
THIN_EDGE = [0]

[[templates.warptile]]
BM = [96]
BN = [96]
BK = [8, 32]
WM = [32]
WN = [32]
WNITER = [2]
TM = [4]
PAD = [0]
VEC = [4]
SWIZZLE = [1]
THIN_EDGE = [4]

[templates.smallk]
BM = [64]
BN = [128]
KC = [16]
TM = [4]
TN = [4]
VEC = [1, 4]
STREAM = [0]

[[templates.fused_batch]]
BM = [32, 64]
BN = [32, 64]
BK = [16]
TM = [4]
TN = [4]
STAGES = [3]
PPB = [4]
VEC = [1, 4]

[[templates.fused_batch]]
BM = [64, 128]
BN = [128]
BK = [32]
TM = [8]
TN = [8]
STAGES = [4]
PPB = [16]
VEC = [1, 4]
)";

const std::set<std::string> k_layout_families = {"blocktile2d", "multistage", "clusterk", "clusterk_deep", "smallk",
                                                  "warptile", "dmma", "fused_batch", "tf32x3_mma", "tf32x3_wgmma"};

TEST(TemplateLayouts, FamiliesDeclareTheirLayoutsAndBatchesAndTheOthersKeepTheContract) {
  const auto templates = load_templates({default_templates_dir()});
  for (const TemplateDesc& t : templates) {
    const std::string source = t.load_source().main_text;
    if (k_layout_families.count(t.name)) {
      EXPECT_EQ(t.layouts, k_all_layouts) << t.name;
      EXPECT_TRUE(t.batched) << t.name;
      // A typed family takes DTYPE after TRANS_A and TRANS_B.
      const bool typed = t.dtypes != std::vector<DType>{DType::f32};  // dmma: f64 alone; tf32x3_mma: tf32x3
      const size_t last = t.params.size() - (typed ? 1 : 0);
      ASSERT_GE(last, 2u) << t.name;
      EXPECT_EQ(t.params[last - 2].name, "TRANS_A") << t.name;
      EXPECT_EQ(t.params[last - 1].name, "TRANS_B") << t.name;
      if (typed) EXPECT_EQ(t.params.back().name, "DTYPE") << t.name;
      EXPECT_NE(source.find(typed ? "int TRANS_A, int TRANS_B, int DTYPE>" : "int TRANS_A, int TRANS_B>"), std::string::npos)
          << t.name << ": the last template arguments";
      EXPECT_NE(source.find("long long stride_a, long long stride_b, long long stride_c"), std::string::npos)
          << t.name << ": the batched signature";
    } else {
      EXPECT_EQ(t.layouts, std::vector<std::string>{"nn"}) << t.name;
      EXPECT_FALSE(t.batched) << t.name;
      EXPECT_EQ(source.find("stride_a"), std::string::npos) << t.name << ": an unbatched kernel takes 11 arguments";
    }
  }
}

// Every layout of every family in the preset is enumerated (both the layouts' own constraints and
// the ones all layouts share leave points), in every element type a family declares (blocktile2d:
// f32, f64, i32; warptile: f32, i32), and compiles without spills: every point for sm_90, and for
// sm_80 the first point of each family, layout and type (the code paths an A100 build takes; the
// points between differ in tile sizes only, which sm_90's builds cover).
TEST(TemplateLayouts, EveryLayoutCompilesWithoutSpillsForSm90AndSm80) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "layouts.toml", k_preset);
  const Preset preset = load_preset(dir / "layouts.toml");
  for (const std::string arch : {"sm_90", "sm_80"}) {
    const SearchSpace space = enumerate_space(templates, preset, all_layouts(arch, true));
    std::map<std::string, std::set<std::string>> layouts_of;  // family -> layouts enumerated
    std::map<std::string, std::set<DType>> types_of;          // family -> types enumerated
    for (const Candidate& c : space.candidates) {
      layouts_of[c.tmpl->name].insert(c.tmpl->layout_of(c.values));
      types_of[c.tmpl->name].insert(c.tmpl->dtype_of(c.values));
    }
    for (const std::string& family : k_layout_families) {
      // Not in this preset: TemplateLayouts.DmmaCompilesInEveryLayout and
      // TemplateLayouts.Tf32x3MmaCompilesInEveryLayoutForSm90AndSm80 and
      // TemplateLayouts.Tf32x3WgmmaCompilesForSm90aAloneInEveryLayout.
      if (family == "dmma" || family == "tf32x3_mma" || family == "tf32x3_wgmma") continue;
      EXPECT_EQ(layouts_of[family], std::set<std::string>(k_all_layouts.begin(), k_all_layouts.end()))
          << family << " on " << arch;
      const TemplateDesc& t = find_desc(templates, family);
      EXPECT_EQ(types_of[family], std::set<DType>(t.dtypes.begin(), t.dtypes.end())) << family << " on " << arch;
    }
    EXPECT_EQ(types_of["blocktile2d"], (std::set<DType>{DType::f32, DType::f64, DType::i32})) << arch;
    EXPECT_EQ(types_of["warptile"], (std::set<DType>{DType::f32, DType::i32})) << arch;

    SearchSpace built = space;
    if (arch == "sm_80") {
      std::set<std::tuple<std::string, std::string, DType>> seen;
      built.candidates.clear();
      for (const Candidate& c : space.candidates)
        if (seen.insert({c.tmpl->name, c.tmpl->layout_of(c.values), c.tmpl->dtype_of(c.values)}).second)
          built.candidates.push_back(c);
    }
    size_t compiled = 0;
    ASSERT_NO_FATAL_FAILURE(
        expect_all_compile_without_spills(built, arch, test::shared_compile_cache(), compiled, [&](const CompiledCandidate& c) {
          if (c.candidate->tmpl->dtypes.size() > 1)  // the typed builds' registers, for the record
            std::printf("%s %s: %d registers, %d/%d spill stores/loads\n", arch.c_str(), c.candidate->id().c_str(),
                        c.binary.registers, c.binary.spill_stores, c.binary.spill_loads);
        }));
    EXPECT_EQ(compiled, built.candidates.size()) << arch;
  }
}

// A multistage or clusterk kernel must run in an exported header (nvcc) as the tuner measured it
// (NVRTC): the same machine code, for one instantiation of each layout (nn included: its batched
// signature is new too).
TEST(TemplateLayouts, MultistageAndClusterkCompileToTheSameCodeWithNvrtcAndNvccInEveryLayout) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "layouts.toml", k_preset);
  std::vector<Candidate> candidates;
  std::set<std::string> seen;  // template and layout: one instantiation each
  for (Candidate& c : enumerate_space(templates, load_preset(dir / "layouts.toml"), all_layouts("sm_90")).candidates) {
    const std::string layout = c.tmpl->layout_of(c.values);
    if (c.tmpl->name != "multistage" && c.tmpl->name != "clusterk") continue;
    // multistage: the 64x128 tile with thin edges and the inline thin row; clusterk: the 64x64 tile.
    const bool wanted = c.tmpl->name == "multistage" ? find_param(c.values, "INLINE_THIN_ROWS").value_or(0) == 1
                                                     : find_param(c.values, "BM").value_or(0) == 64;
    if (wanted && seen.insert(c.tmpl->name + ":" + layout).second) candidates.push_back(std::move(c));
  }
  ASSERT_EQ(candidates.size(), 8u);

  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path());
}

// The generic default runs in an exported header (nvcc) in every layout, and will in every type:
// nvcc builds blocktile2d in each type x layout from an explicit instantiation with the typed
// signature, under the name NVRTC gives it. The machine code is not compared: blocktile2d's NVRTC
// and nvcc builds differed before it had types (for f32 too, e.g. 24704 vs 24576 bytes of sm_90
// code for the 64x64x8 nn tile: the two front ends emit different PTX), as multistage's did before
// it addressed shared memory in 32 bits; the typed f32 build is the untyped one's machine code in
// both compilers.
TEST(TemplateLayouts, Blocktile2dBuildsWithNvrtcAndNvccInEveryTypeAndLayout) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "layouts.toml", k_preset);
  std::vector<Candidate> candidates;
  std::set<std::string> seen;  // type and layout: one instantiation each (the 64 x 64 x 8 tile)
  for (Candidate& c : enumerate_space(templates, load_preset(dir / "layouts.toml"), all_layouts("sm_90", true)).candidates) {
    if (c.tmpl->name != "blocktile2d" || find_param(c.values, "BM").value_or(0) != 64 ||
        find_param(c.values, "BK").value_or(0) != 8)
      continue;
    const std::string key = std::string(dtype_name(c.tmpl->dtype_of(c.values))) + ":" + c.tmpl->layout_of(c.values);
    if (seen.insert(key).second) candidates.push_back(std::move(c));
  }
  ASSERT_EQ(candidates.size(), 12u);

  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path(), test::Parity::names);
}

// fused_batch too: one instantiation per layout, 16-byte and single-float copies alternating.
TEST(TemplateLayouts, FusedBatchCompilesToTheSameCodeWithNvrtcAndNvccInEveryLayout) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "layouts.toml", k_preset);
  std::vector<Candidate> candidates;
  std::set<std::string> seen;
  for (Candidate& c : enumerate_space(templates, load_preset(dir / "layouts.toml"), all_layouts("sm_90")).candidates) {
    if (c.tmpl->name != "fused_batch" || find_param(c.values, "BM").value() != 32) continue;
    const std::string layout = c.tmpl->layout_of(c.values);
    const int64_t vec = layout == "nn" || layout == "tt" ? 4 : 1;
    if (find_param(c.values, "VEC").value() == vec && seen.insert(layout).second) candidates.push_back(std::move(c));
  }
  ASSERT_EQ(candidates.size(), 4u);
  test::expect_nvrtc_and_nvcc_agree(candidates, dir.path());
}

// The dynamic shared memory a descriptor launches with must hold the ring the kernel addresses:
// the descriptors' RING_FLOATS against CmtMultistageShape<...>::RING_FLOATS (B's rows padded with
// TRANS_B), for every candidate of the preset, evaluated by a host program nvcc builds (not run on
// a GPU).
TEST(TemplateLayouts, DescriptorRingMatchesTheKernelsShapeInEveryLayout) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "layouts.toml", k_preset);
  const Target target = all_layouts("sm_90");
  std::string program = "#include <cstdio>\n#include \"multistage.cuh\"\nint main() {\n";
  std::string expected;
  for (const Candidate& c : enumerate_space(templates, load_preset(dir / "layouts.toml"), target).candidates) {
    const TemplateDesc& t = *c.tmpl;
    if (t.name != "multistage" && t.name != "clusterk" && t.name != "clusterk_deep") continue;
    const auto derived = std::find_if(t.derived.begin(), t.derived.end(), [](const DerivedValue& d) { return d.name == "RING_FLOATS"; });
    ASSERT_NE(derived, t.derived.end()) << t.name;
    std::string args;
    for (const char* p : {"BM", "BN", "BK", "WM", "WN", "STAGES", "PAD", "SPLITK", "TRANS_B"}) {
      const auto v = find_param(c.values, p);
      ASSERT_TRUE(v.has_value()) << c.id() << ": no " << p;
      args += (args.empty() ? "" : ", ") + std::to_string(*v);
    }
    program += fmt::format("  std::printf(\"%d\\n\", CmtMultistageShape<{}>::RING_FLOATS);\n", args);
    expected += std::to_string(t.eval(derived->expr, c.values, target, "derived.RING_FLOATS")) + "\n";
  }
  ASSERT_FALSE(expected.empty());
  test::CommandResult ran;
  ASSERT_NO_FATAL_FAILURE(build_and_run_host_program(dir.path(), program + "  return 0;\n}\n", ran));
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, expected);
}

// The same for fused_batch: SMEM_BYTES against CmtFusedShape<...>::RING_FLOATS (A's rows padded
// unless A is transposed, B's when B is), and the descriptor's threads against the kernel's.
TEST(TemplateLayouts, FusedBatchRingAndThreadsMatchTheKernelsShapeInEveryLayout) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "layouts.toml", k_preset);
  const Target target = all_layouts("sm_90");
  std::string program = "#include <cstdio>\n#include \"fused_batch.cuh\"\nint main() {\n";
  std::string expected;
  std::set<std::string> layouts;
  for (const Candidate& c : enumerate_space(templates, load_preset(dir / "layouts.toml"), target).candidates) {
    const TemplateDesc& t = *c.tmpl;
    if (t.name != "fused_batch") continue;
    layouts.insert(t.layout_of(c.values));
    const auto derived = std::find_if(t.derived.begin(), t.derived.end(), [](const DerivedValue& d) { return d.name == "SMEM_BYTES"; });
    ASSERT_NE(derived, t.derived.end());
    std::string args;
    for (const char* p : {"BM", "BN", "BK", "TM", "TN", "STAGES", "TRANS_A", "TRANS_B"})
      args += (args.empty() ? "" : ", ") + std::to_string(find_param(c.values, p).value());
    program += fmt::format("  std::printf(\"%d %d\\n\", CmtFusedShape<{0}>::RING_FLOATS * 4, CmtFusedShape<{0}>::THREADS);\n",
                           args);
    expected += fmt::format("{} {}\n", t.eval(derived->expr, c.values, target, "derived.SMEM_BYTES"), c.shape.threads);
    EXPECT_EQ(c.shape.dynamic_smem, t.eval(derived->expr, c.values, target, "derived.SMEM_BYTES")) << c.id();
  }
  EXPECT_EQ(layouts.size(), 4u);
  test::CommandResult ran;
  ASSERT_NO_FATAL_FAILURE(build_and_run_host_program(dir.path(), program + "  return 0;\n}\n", ran));
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, expected);
}

// fused_batch's index arithmetic, run on the host for every point of the default and quick presets in
// every layout (the copies' and the threads' coordinates are host functions too): each stage's copies
// cover every element of the A and B tiles exactly once, the 32 copies a warp issues at once land in
// 32 different banks (k-contiguous operands, copied transposed into padded rows) or on consecutive
// words (the others), and the accumulators cover the C tile once, each thread's reads at the offsets
// the kernel uses.
TEST(TemplateLayouts, FusedBatchCopiesCoverTheirTilesOnceWithoutBankConflicts) {
  const auto templates = load_templates({default_templates_dir()});
  Target target = all_layouts("sm_90");
  std::string program = R"(#include <cstdio>
#include <vector>
#include "fused_batch.cuh"

static int failures = 0;
static void fail(const char* what, const char* id) {
  if (++failures <= 20) std::printf("%s: %s\n", id, what);
}

// Copies of a k-contiguous operand: element (k, r) of the tile once per stage; banks of a warp's copies.
template <class Copy, int R, int BK, int THREADS, int LD>
void chunk(const char* id) {
  std::vector<int> seen(R * BK, 0);
  for (int t = 0; t < THREADS; ++t)
    for (int i = 0; i < Copy::PASSES; ++i) {
      const int r = Copy::first_row(t) + Copy::row_of(i), k = Copy::first_k(t) + Copy::k_of(i);
      if (r < 0 || r >= R || k < 0 || k >= BK) fail("a copy outside the tile", id);
      else ++seen[k * R + r];
    }
  for (int v : seen) if (v != 1) { fail("an element not copied exactly once", id); break; }
  for (int w = 0; w < THREADS / 32; ++w)
    for (int i = 0; i < Copy::PASSES; ++i) {
      unsigned banks = 0;
      for (int l = 0; l < 32; ++l) {
        const int t = w * 32 + l;
        banks |= 1u << (((Copy::first_k(t) + Copy::k_of(i)) * LD + Copy::first_row(t) + Copy::row_of(i)) % 32);
      }
      if (banks != 0xffffffffu) fail("a warp's copies share a bank", id);
    }
}

// Copies of an operand with k as its rows: element (k, c) once per stage; a warp's copies land on
// consecutive words (rows of LD = C floats follow each other).
template <class Copy, int C, int BK, int THREADS, int VEC, int LD>
void vec(const char* id) {
  std::vector<int> seen(C * BK, 0);
  for (int t = 0; t < THREADS; ++t)
    for (int i = 0; i < Copy::PASSES; ++i) {
      const int k = Copy::first_k(t) + Copy::row_of(i), c = Copy::first_col(t) + Copy::col_of(i);
      if (k < 0 || k >= BK || c < 0 || c + VEC > C || c % VEC != 0) fail("a copy outside the tile", id);
      else for (int e = 0; e < VEC; ++e) ++seen[k * C + c + e];
    }
  for (int v : seen) if (v != 1) { fail("an element not copied exactly once", id); break; }
  for (int w = 0; w < THREADS / 32; ++w)
    for (int i = 0; i < Copy::PASSES; ++i)
      for (int l = 1; l < 32; ++l) {
        const int t = w * 32 + l;
        const int a = (Copy::first_k(t - 1) + Copy::row_of(i)) * LD + Copy::first_col(t - 1) + Copy::col_of(i);
        const int b = (Copy::first_k(t) + Copy::row_of(i)) * LD + Copy::first_col(t) + Copy::col_of(i);
        if (b != a + VEC) fail("a warp's vectors are not consecutive", id);
      }
}

// The threads' accumulators: every element of the tile once, each float4 read at row_of(ty, 0) +
// row_of(0, 4i) (and columns alike).
template <class Shape, int BM, int BN, int TM, int TN>
void tiles(const char* id) {
  std::vector<int> seen(BM * BN, 0);
  for (int t = 0; t < Shape::THREADS; ++t) {
    const int ty = t / Shape::LX, tx = t % Shape::LX;
    for (int i = 0; i < TM; ++i)
      for (int j = 0; j < TN; ++j) {
        const int r = Shape::row_of(ty, i), c = Shape::col_of(tx, j);
        if (r != Shape::row_of(ty, 0) + Shape::row_of(0, i / 4 * 4) + i % 4 ||
            c != Shape::col_of(tx, 0) + Shape::col_of(0, j / 4 * 4) + j % 4)
          fail("an accumulator not at the offset its float4 is read from", id);
        if (r < 0 || r >= BM || c < 0 || c >= BN) fail("an accumulator outside the tile", id);
        else ++seen[r * BN + c];
      }
  }
  for (int v : seen) if (v != 1) { fail("an element of C not computed exactly once", id); break; }
}

template <int BM, int BN, int BK, int TM, int TN, int STAGES, int VEC, int TA, int TB>
void check(const char* id) {
  using Shape = CmtFusedShape<BM, BN, BK, TM, TN, STAGES, TA, TB>;
  constexpr int T = Shape::THREADS;
  if constexpr (TA != 0) vec<CmtFusedVecCopy<BM, BK, T, VEC, Shape::AS_LD>, BM, BK, T, VEC, Shape::AS_LD>(id);
  else chunk<CmtFusedChunkCopy<BM, BK, T, Shape::AS_LD>, BM, BK, T, Shape::AS_LD>(id);
  if constexpr (TB != 0) chunk<CmtFusedChunkCopy<BN, BK, T, Shape::BS_LD>, BN, BK, T, Shape::BS_LD>(id);
  else vec<CmtFusedVecCopy<BN, BK, T, VEC, Shape::BS_LD>, BN, BK, T, VEC, Shape::BS_LD>(id);
  tiles<Shape, BM, BN, TM, TN>(id);
}

int main() {
)";
  int points = 0;
  for (const char* preset : {"default", "quick"})
    for (const Candidate& c : enumerate_space(templates, load_preset(resolve_preset(preset)), target, "fused_batch").candidates) {
      std::string args;
      for (const char* p : {"BM", "BN", "BK", "TM", "TN", "STAGES", "VEC", "TRANS_A", "TRANS_B"})
        args += (args.empty() ? "" : ", ") + std::to_string(find_param(c.values, p).value());
      program += fmt::format("  check<{}>(\"{}\");\n", args, c.id());
      ++points;
    }
  ASSERT_GT(points, 100);
  test::TempDir dir;
  test::CommandResult ran;
  ASSERT_NO_FATAL_FAILURE(build_and_run_host_program(
      dir.path(), program + "  std::printf(\"%d failures\\n\", failures);\n  return failures != 0;\n}\n", ran));
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "0 failures\n");
}

// The points the layouts rule out in multistage, with their reasons.
TEST(TemplateLayouts, MultistageKeepsThinWorkersAndLongARunsToTheLayoutsTheyServe) {
  const auto templates = load_templates({default_templates_dir()});
  const TemplateDesc& t = find_desc(templates, "multistage");
  const std::string base = "BM=64,BN=128,BK=32,WM=32,WN=64,WNITER=2,TM=4,TN=4,STAGES=3,VEC=1,PAD=4,SPLITK=2,SWIZZLE=1,"
                           "THIN_EDGE=4,INLINE_THIN_ROWS=0,";
  const auto failed = [&](const std::string& rest) -> std::string {
    const auto c = t.failed_constraint(params_from_string(base + rest), test::sm90());
    return c ? t.constraints[*c].reason : "";
  };
  EXPECT_EQ(failed("THIN_WORKERS=4,A_CHUNK=8,TRANS_A=0,TRANS_B=0"), "");
  for (const char* layout : {"TRANS_A=0,TRANS_B=1", "TRANS_A=1,TRANS_B=0", "TRANS_A=1,TRANS_B=1"}) {
    EXPECT_EQ(failed(std::string("THIN_WORKERS=0,A_CHUNK=8,") + layout), "") << layout;
    EXPECT_NE(failed(std::string("THIN_WORKERS=4,A_CHUNK=8,") + layout).find("THIN_WORKERS"), std::string::npos) << layout;
  }
  EXPECT_EQ(failed("THIN_WORKERS=0,A_CHUNK=16,TRANS_A=0,TRANS_B=1"), "");
  EXPECT_NE(failed("THIN_WORKERS=0,A_CHUNK=16,TRANS_A=1,TRANS_B=0").find("TRANS_A"), std::string::npos);
}

// The FP64 tensor-core family: every layout and instruction it enumerates compiles for sm_90
// (m8n8k4, m16n8k8, m16n8k16) and sm_80 (m8n8k4 only: the others are pruned there), with and without
// K split across a cluster, reading fragments 8 and 16 bytes at a time, without spills.
TEST(TemplateLayouts, DmmaCompilesInEveryLayoutAndInstruction) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "dmma.toml", R"(name = "dmma"
description = "the FP64 tensor-core family"
[[templates.dmma]]
BM = [64]
BN = [64]
BK = [16]
WM = [32]
WN = [32]
MMA = [0, 2, 3]
STAGES = [3]
VEC = [1, 2]
FRAG_VEC = [1]
PAD = [4]
SWIZZLE = [8]
CLUSTER_K = [1, 4]

[[templates.dmma]]
BM = [64]
BN = [64]
BK = [16]
WM = [32]
WN = [32]
MMA = [0, 1, 3]
STAGES = [3]
VEC = [2]
FRAG_VEC = [2]
PAD = [4]
SWIZZLE = [8]
CLUSTER_K = [1, 4]
)");
  const Preset preset = load_preset(dir / "dmma.toml");
  for (const std::string arch : {"sm_90", "sm_80"}) {
    Target target = all_layouts(arch);
    target.dtypes = {DType::f64};
    const SearchSpace space = enumerate_space(templates, preset, target);
    std::set<std::string> layouts;
    std::set<int64_t> instructions;
    for (const Candidate& c : space.candidates) {
      if (c.tmpl->name != "dmma") continue;
      layouts.insert(c.tmpl->layout_of(c.values));
      instructions.insert(*find_param(c.values, "MMA"));
      EXPECT_EQ(c.tmpl->dtype_of(c.values), DType::f64);
    }
    EXPECT_EQ(layouts, std::set<std::string>(k_all_layouts.begin(), k_all_layouts.end())) << arch;
    const std::set<int64_t> expected = arch == "sm_90" ? std::set<int64_t>{0, 1, 2, 3} : std::set<int64_t>{0};
    EXPECT_EQ(instructions, expected) << arch;

    size_t compiled = 0;
    ASSERT_NO_FATAL_FAILURE(expect_all_compile_without_spills(space, arch, test::shared_compile_cache(), compiled));
    EXPECT_EQ(compiled, space.candidates.size()) << arch;
    EXPECT_EQ(compiled, arch == "sm_90" ? 72u : 24u) << arch;
  }
}

// The tf32x3 class's mma.sync family: the quick preset's points and a 128 x 128 tile of 64 x 32 warp
// tiles, staged and not, compile in every layout for sm_90 and sm_80 without spills, and compute
// the tf32x3 class (DTYPE 3) only.
TEST(TemplateLayouts, Tf32x3MmaCompilesInEveryLayoutForSm90AndSm80) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "tf32x3.toml", R"(name = "tf32x3"
description = "the tf32x3 tensor-core family"
[[templates.tf32x3_mma]]
BM = [64]
BN = [64]
BK = [32]
WM = [32]
WN = [32]
STAGES = [3]
VEC = [1, 4]
PAD = [8]
STAGED = [0, 1]
SWIZZLE = [1]

[[templates.tf32x3_mma]]
BM = [128]
BN = [128]
BK = [32]
WM = [64]
WN = [32]
STAGES = [3]
VEC = [4]
PAD = [8]
STAGED = [0, 1]
SWIZZLE = [8]
)");
  const Preset preset = load_preset(dir / "tf32x3.toml");
  for (const std::string arch : {"sm_90", "sm_80"}) {
    Target target = all_layouts(arch);
    target.dtypes = {DType::tf32x3};
    const SearchSpace space = enumerate_space(templates, preset, target);
    std::set<std::string> layouts;
    for (const Candidate& c : space.candidates) {
      EXPECT_EQ(c.tmpl->name, "tf32x3_mma");
      layouts.insert(c.tmpl->layout_of(c.values));
      EXPECT_EQ(c.tmpl->dtype_of(c.values), DType::tf32x3);
    }
    EXPECT_EQ(layouts, std::set<std::string>(k_all_layouts.begin(), k_all_layouts.end())) << arch;
    size_t compiled = 0;
    ASSERT_NO_FATAL_FAILURE(expect_all_compile_without_spills(space, arch, test::shared_compile_cache(), compiled));
    EXPECT_EQ(compiled, 24u) << arch;
  }
  // In f32 the family has no points: the class is opted into, never served to an f32 problem.
  Target f32 = all_layouts("sm_90");
  EXPECT_TRUE(enumerate_space(templates, preset, f32).candidates.empty());
}

// The tf32x3 class's wgmma family: every block shape of the default grid at its deepest ring, in
// every layout, compiles for sm_90a (the service compiles an arch-specific family for the target's
// variant, and records that arch) without spills; on an sm_80 target the family has no points. Plain
// sm_90 code of the same source is a trap (wgmma and setmaxnreg exist on sm_90a alone), so a build
// for it must never be made: the arch in the record is the proof.
TEST(TemplateLayouts, Tf32x3WgmmaCompilesForSm90aAloneInEveryLayout) {
  const auto templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  test::write_file(dir / "wgmma.toml", R"(name = "wgmma"
description = "the tf32x3 wgmma family"
[templates.tf32x3_wgmma]
BM = [64, 128]
BN = [64, 128]
STAGES = [4]
SWIZZLE = [8]
)");
  const Preset preset = load_preset(dir / "wgmma.toml");
  Target target = all_layouts("sm_90");
  target.dtypes = {DType::tf32x3};
  const SearchSpace space = enumerate_space(templates, preset, target);
  std::set<std::string> layouts;
  for (const Candidate& c : space.candidates) layouts.insert(c.tmpl->layout_of(c.values));
  EXPECT_EQ(layouts, std::set<std::string>(k_all_layouts.begin(), k_all_layouts.end()));
  size_t compiled = 0;
  ASSERT_NO_FATAL_FAILURE(expect_all_compile_without_spills(
      space, "sm_90", test::shared_compile_cache(), compiled, [&](const CompiledCandidate& c) {
        EXPECT_EQ(c.binary.arch, "sm_90a") << c.candidate->id();
        EXPECT_NE(c.binary.options.find("--gpu-architecture=sm_90a"), std::string::npos) << c.binary.options;
      }));
  EXPECT_EQ(compiled, 16u);

  Target sm80 = all_layouts("sm_80");
  sm80.dtypes = {DType::tf32x3};
  EXPECT_TRUE(enumerate_space(templates, preset, sm80).candidates.empty());
}

// warptile computes INT32 with the tiles and constraints of FP32 (4-byte elements, one register
// each), so the two need the same registers. On a spread of the default preset's warptile grids
// (sm_90, every layout) both types compile; no INT32 build spills where the FP32 build of the same
// point has registers to spare (16 below its ceiling, min(255, 65536 / threads) rounded down to 8);
// no INT32 build takes more than 32 registers above the FP32 one; and INT32 takes no more registers
// in all.
//
// The spread, not the whole grid: its nn points alone are ~900 NVRTC builds in the two types, a
// quarter of an hour on two cores. It is every n-th point of the grids in their order (n odd, so the
// layouts, the fastest-changing parameters, take turns), then, in grid order, each point that holds a
// value the stride missed: every value of every parameter, layout, threads per block and
// accumulators per thread is in it, so it has the 1024-thread tiles and the tiles of 128
// accumulators a thread, where the grids spill. Over the whole nn grid (444 points, NVRTC 13.0)
// INT32 takes 1557 fewer registers in all (more on 50 points, by at most 30), and 72 FP32 builds
// spill and 71 INT32 ones, 65 of them the same. That near tie of counts is not compared on the
// spread: a point where FP32 just fits (e.g. 167 of 168 registers, 192x128 nt) may spill in INT32,
// which the per-point rule allows. Tuning skips a build that spills unless allow_spills is set.
TEST(TemplateLayouts, WarptileInt32NeedsTheRegistersOfFloatOnASpreadOfTheDefaultGrid) {
  const auto templates = load_templates({default_templates_dir()});
  Target target = all_layouts("sm_90");
  target.dtypes = {DType::f32, DType::i32};
  const SearchSpace grid = enumerate_space(templates, load_preset(resolve_preset("default")), target, "warptile");
  const auto without_dtype = [](const ParamValues& values) {
    ParamValues point;
    for (const auto& [name, value] : values)
      if (name != "DTYPE") point.emplace_back(name, value);
    return params_to_string(point);
  };
  // The grid's points (without DTYPE) in its order, each with its builds.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Candidate*>> builds;
  for (const Candidate& c : grid.candidates) {
    const std::string point = without_dtype(c.values);
    if (builds[point].empty()) order.push_back(point);
    builds[point].push_back(&c);
  }
  ASSERT_GT(order.size(), 1500u) << "444 nn points, and as many in tn, fewer in nt and tt (BK = 8)";
  // What the spread holds every value of.
  const auto features = [](const Candidate& c) {
    std::set<std::string> f;
    for (const auto& [name, value] : c.values)
      if (name != "DTYPE" && name != "TRANS_A" && name != "TRANS_B") f.insert(fmt::format("{}={}", name, value));
    f.insert("layout " + c.tmpl->layout_of(c.values));
    f.insert(fmt::format("threads {}", c.shape.threads));
    f.insert(fmt::format("accumulators {}", c.shape.tile_m * c.shape.tile_n / c.shape.threads));
    return f;
  };
  constexpr size_t k_strided = 16;
  const size_t stride = (order.size() / k_strided) | 1;
  std::vector<std::string> spread;
  std::set<std::string> covered, all;
  for (size_t i = stride / 2; i < order.size(); i += stride) {
    spread.push_back(order[i]);
    const auto f = features(*builds.at(order[i]).front());
    covered.insert(f.begin(), f.end());
  }
  for (const std::string& point : order) {
    const auto f = features(*builds.at(point).front());
    all.insert(f.begin(), f.end());
    if (std::includes(covered.begin(), covered.end(), f.begin(), f.end())) continue;
    spread.push_back(point);
    covered.insert(f.begin(), f.end());
  }
  ASSERT_EQ(covered, all);
  ASSERT_GE(spread.size(), k_strided);
  ASSERT_LE(spread.size(), 24u) << "the spread grew: keep the test within CI's time";

  SearchSpace space;
  for (const std::string& point : spread) {
    ASSERT_EQ(builds.at(point).size(), 2u) << point << ": one build per type";
    for (const Candidate* c : builds.at(point)) space.candidates.push_back(*c);
  }
  struct Build {
    int registers = -1;
    bool spills = false;
    int64_t threads = 0;
  };
  std::map<std::string, Build> f32, i32;  // by the point without DTYPE
  test::TempDir dir;
  size_t compiled = 0;
  ASSERT_NO_FATAL_FAILURE(
      expect_all_compile_without_spills(space, "sm_90", test::shared_compile_cache(), compiled, [&](const CompiledCandidate& c) {
        const bool int32 = c.candidate->tmpl->dtype_of(c.candidate->values) == DType::i32;
        (int32 ? i32 : f32)[without_dtype(c.candidate->values)] = {
            c.binary.registers, c.binary.spill_stores + c.binary.spill_loads > 0, c.candidate->shape.threads};
      }, /*spills_allowed=*/true));
  EXPECT_EQ(compiled, space.candidates.size());
  ASSERT_EQ(f32.size(), spread.size());
  ASSERT_EQ(i32.size(), f32.size());
  int f32_spills = 0, i32_spills = 0;
  long long f32_registers = 0, i32_registers = 0;
  for (const auto& [point, f] : f32) {
    ASSERT_TRUE(i32.count(point)) << point;
    const Build& i = i32.at(point);
    const int ceiling = static_cast<int>(std::min<int64_t>(255, 65536 / f.threads / 8 * 8));
    if (!f.spills && f.registers <= ceiling - 16) EXPECT_FALSE(i.spills) << point << ": FP32 takes " << f.registers;
    EXPECT_LE(i.registers, f.registers + 32) << point;
    f32_spills += f.spills, i32_spills += i.spills;
    f32_registers += f.registers, i32_registers += i.registers;
  }
  EXPECT_LE(i32_registers, f32_registers);
  std::printf("warptile, a spread of the default grid (%zu of its %zu points, every layout), sm_90: builds that "
              "spill: %d FP32, %d INT32; registers in all: %lld FP32, %lld INT32\n",
              f32.size(), order.size(), f32_spills, i32_spills, f32_registers, i32_registers);
}

// warptile reads a transposed B in 8-k chunks of its stored rows: a BK that is not a multiple of 8
// is pruned there, with its reason, and kept in the layouts without TRANS_B.
TEST(TemplateLayouts, WarptileKeepsTransposedBToWholeChunksOfK) {
  const auto templates = load_templates({default_templates_dir()});
  const TemplateDesc& t = find_desc(templates, "warptile");
  const auto failed = [&](const std::string& bk, const std::string& layout) -> std::string {
    const auto c = t.failed_constraint(
        params_from_string("BM=128,BN=128,BK=" + bk + ",WM=64,WN=64,WNITER=2,TM=4,TN=4,PAD=4,VEC=4,SWIZZLE=8,THIN_EDGE=0," + layout),
        test::sm90());
    return c ? t.constraints[*c].reason : "";
  };
  for (const char* layout : {"TRANS_A=0,TRANS_B=0", "TRANS_A=1,TRANS_B=0"}) {
    EXPECT_EQ(failed("12", layout), "") << layout;
    EXPECT_EQ(failed("16", layout), "") << layout;
  }
  for (const char* layout : {"TRANS_A=0,TRANS_B=1", "TRANS_A=1,TRANS_B=1"}) {
    EXPECT_NE(failed("12", layout).find("TRANS_B"), std::string::npos) << layout;
    EXPECT_EQ(failed("16", layout), "") << layout;
  }
}

}  // namespace
}  // namespace cmt
