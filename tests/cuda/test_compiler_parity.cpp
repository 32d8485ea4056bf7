// The tuner times NVRTC's build of a kernel; an exported header runs nvcc's build of the same source.
// For the multistage and clusterk templates the two must be the same machine code, or the header runs
// something other than what was measured (they once differed by 14 registers and 1.5-2% in speed).
// Real NVRTC and nvcc; no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda/nvrtc_compiler.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "elf_sections.hpp"
#include "test_support.hpp"
#include "tune/compile_service.hpp"

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

  // NVRTC, exactly as the tuner compiles (compile service, sm_90).
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService service(store, nvrtc, "sm_90", 0);
  service.submit_all(candidates);
  std::map<std::string, std::string> nvrtc_text;  // lowered name -> the kernel's .text section
  std::set<std::string> sources;
  std::string instantiations;
  while (auto c = service.next()) {
    ASSERT_TRUE(c->binary.ok) << c->candidate->id() << ":\n" << c->binary.log;
    const std::string cubin(c->binary.cubin.begin(), c->binary.cubin.end());
    const auto text = test::elf_sections(cubin, ".text." + c->binary.lowered_name);
    ASSERT_EQ(text.size(), 1u) << c->candidate->id() << ": no .text section for " << c->binary.lowered_name;
    nvrtc_text[c->binary.lowered_name] = text.begin()->second;
    sources.insert(c->candidate->tmpl->source_path.filename().string());
    instantiations += fmt::format("template __global__ void {}(int, int, int, float, const float*, int, const float*, "
                                  "int, float, float*, int{});\n",
                                  c->candidate->tmpl->name_expression(c->candidate->values),
                                  c->candidate->tmpl->batched ? ", long long, long long, long long" : "");
  }
  ASSERT_EQ(nvrtc_text.size(), candidates.size());

  // nvcc, as a project compiling an exported header would (-O3, sm_90), from the same sources.
  std::string unit;
  for (const auto& s : sources) unit += fmt::format("#include \"{}\"\n", s);
  test::write_file(dir / "all.cu", unit + instantiations);
  const auto built = test::run_command(fmt::format("'{}' -std=c++17 -O3 -arch=sm_90 -cubin -I'{}' -o '{}' '{}' 2>&1",
                                                   test::nvcc_path(), default_templates_dir().string(),
                                                   (dir / "all.cubin").string(), (dir / "all.cu").string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const auto nvcc_text = test::elf_sections(test::read_file(dir / "all.cubin"), ".text.");

  for (const auto& [name, code] : nvrtc_text) {
    const auto it = nvcc_text.find(".text." + name);
    ASSERT_NE(it, nvcc_text.end()) << "nvcc did not build " << name;
    EXPECT_EQ(it->second.size(), code.size()) << name << ": code sizes differ";
    EXPECT_TRUE(it->second == code) << name << ": NVRTC and nvcc built different machine code";
  }
}

}  // namespace
}  // namespace cmt
