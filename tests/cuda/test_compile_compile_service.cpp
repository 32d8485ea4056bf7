// NVRTC compilation and the compile cache (real NVRTC and SQLite; no GPU needed).
#include <gtest/gtest.h>

#include <set>

#include <fstream>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "space/space.hpp"
#include "store/cubin_codec.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

struct CompileRun {
  int64_t hits = 0, compiled = 0, failed = 0;
  int64_t cubins = 0, cubin_bytes = 0, packed_bytes = 0;   // the passing builds, as compiled and as stored
  std::vector<std::string> failures;
};

CompileRun compile_all(Store& store, const std::vector<Candidate>& candidates, const std::string& arch = "sm_90") {
  const NvrtcCompiler nvrtc;
  CompileService service(store, nvrtc, arch, 0);
  service.submit_all(candidates);
  CompileRun run;
  while (auto c = service.next()) {
    if (!c->binary.ok) run.failures.push_back(c->candidate->id() + ":\n" + c->binary.log);
    if (c->binary.ok) {
      EXPECT_FALSE(c->binary.cubin.empty()) << c->candidate->id();
      EXPECT_FALSE(c->binary.lowered_name.empty()) << c->candidate->id();
      EXPECT_GT(c->binary.registers, 0) << c->candidate->id() << " (ptxas -v not parsed)";
      ++run.cubins;
      run.cubin_bytes += static_cast<int64_t>(c->binary.cubin.size());
      run.packed_bytes += static_cast<int64_t>(pack_cubin(c->binary.cubin).size());
    }
  }
  run.hits = service.stats().cache_hits;
  run.compiled = service.stats().compiled;
  run.failed = service.stats().failed;
  return run;
}

TEST(Compile, EveryQuickCandidateCompilesForSm90) {
  const auto templates = load_templates({default_templates_dir()});
  const SearchSpace space = enumerate_space(templates, load_preset(resolve_preset("quick")), test::sm90());
  ASSERT_GT(space.candidates.size(), 5u);
  // Through the tests' shared cache: a kernel another test compiled comes back as the same build.
  Store store(test::shared_compile_cache());
  const CompileRun run = compile_all(store, space.candidates);
  EXPECT_EQ(run.failed, 0);
  for (const auto& f : run.failures) ADD_FAILURE() << f;
  EXPECT_EQ(run.compiled + run.hits, static_cast<int64_t>(space.candidates.size()));
  EXPECT_GE(store.count_binaries(), static_cast<int64_t>(space.candidates.size()));

  // What the cache costs per kernel. At ca1d935 (line info, cubins stored uncompressed) these 43
  // kernels took 196,600 bytes each, the default preset 572 MiB; without line info a cubin is
  // 59,157 bytes, 12,350 as stored (zstd). The bounds leave room for the templates to grow.
  ASSERT_EQ(run.cubins, static_cast<int64_t>(space.candidates.size()));
  EXPECT_LT(run.cubin_bytes / run.cubins, 96 * 1024) << "cubins grew: line info or other debug sections?";
  EXPECT_LT(run.packed_bytes / run.cubins, 20 * 1024) << "cubins are stored larger: not compressed?";
}

TEST(Compile, SyntaxErrorIsDataWithLog) {
  test::TempDir dir;
  test::copy_builtin_templates(dir / "templates");
  {
    std::ofstream f(dir / "templates" / "naive.cuh", std::ios::app);
    f << "\nthis is not C++;\n";
  }
  const auto templates = load_templates({dir / "templates"});
  Preset preset;
  preset.templates.push_back({"naive", {}});
  const SearchSpace space = enumerate_space(templates, preset, test::sm90());
  Store store(dir / "cache.db");
  const CompileRun run = compile_all(store, space.candidates);
  ASSERT_EQ(run.failed, 1);
  EXPECT_NE(run.failures.front().find("error"), std::string::npos) << run.failures.front();
  // A failed compile is cached too: the same source fails the same way.
  EXPECT_EQ(compile_all(store, space.candidates).hits, 1);
}

TEST(Compile, CacheHitsOnRecompileAndMissesOnlyForTheEditedTemplate) {
  test::TempDir dir;
  test::copy_builtin_templates(dir / "templates");
  Preset preset;
  preset.templates.push_back({"coalesced", {{"BLOCK", {16, 32}}}});
  preset.templates.push_back({"naive", {}});
  auto templates = load_templates({dir / "templates"});
  Store store(dir / "cache.db");

  const CompileRun cold = compile_all(store, enumerate_space(templates, preset, test::sm90()).candidates);
  EXPECT_EQ(cold.compiled, 3);
  EXPECT_EQ(cold.hits, 0);
  const CompileRun warm = compile_all(store, enumerate_space(templates, preset, test::sm90()).candidates);
  EXPECT_EQ(warm.hits, 3);
  EXPECT_EQ(warm.compiled, 0);

  // Editing one template (a comment is enough: the key hashes the bytes) invalidates its entries only.
  {
    std::ofstream f(dir / "templates" / "coalesced.cuh", std::ios::app);
    f << "\n// edited\n";
  }
  templates = load_templates({dir / "templates"});
  const CompileRun edited = compile_all(store, enumerate_space(templates, preset, test::sm90()).candidates);
  EXPECT_EQ(edited.compiled, 2);
  EXPECT_EQ(edited.hits, 1);

  // An edit to a shared include invalidates every template that includes it.
  {
    std::ofstream f(dir / "templates" / "cmt_common.cuh", std::ios::app);
    f << "\n// edited\n";
  }
  templates = load_templates({dir / "templates"});
  const auto space = enumerate_space(templates, preset, test::sm90());
  const SourceBundle naive = space.candidates.back().tmpl->load_source();
  const bool naive_includes_common =
      std::any_of(naive.headers.begin(), naive.headers.end(), [](const auto& h) { return h.first == "cmt_common.cuh"; });
  const CompileRun common = compile_all(store, space.candidates);
  EXPECT_EQ(common.compiled, naive_includes_common ? 3 : 2);

  // Another arch is another key.
  EXPECT_EQ(compile_all(store, space.candidates, "sm_80").compiled, 3);
}

// The pipeline submits candidates a few at a time, as its searcher proposes them; results come back
// with the index they were submitted with, cache hits first.
TEST(Compile, CandidatesSubmittedInBatchesComeBackWithTheirIndices) {
  const auto templates = load_templates({default_templates_dir()});
  Preset preset;
  preset.templates.push_back({"coalesced", {{"BLOCK", {8, 16, 32}}}});
  const auto space = enumerate_space(templates, preset, test::sm90());
  ASSERT_EQ(space.candidates.size(), 3u);
  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  {
    CompileService service(store, nvrtc, "sm_90", 2);
    service.submit(space.candidates[2], 2);
    EXPECT_EQ(service.in_flight(), 1u);
    auto first = service.next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->index, 2u);
    EXPECT_FALSE(first->cache_hit);
    EXPECT_EQ(service.in_flight(), 0u);
    EXPECT_FALSE(service.next().has_value());
  }
  CompileService service(store, nvrtc, "sm_90", 2);
  service.submit(space.candidates[0], 0);
  service.submit(space.candidates[2], 2);  // cached by the first service
  EXPECT_EQ(service.in_flight(), 2u);
  auto hit = service.next();
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(hit->cache_hit);
  EXPECT_EQ(hit->index, 2u);
  service.submit(space.candidates[1], 1);
  std::set<size_t> compiled;
  while (auto c = service.next()) {
    EXPECT_FALSE(c->cache_hit);
    EXPECT_TRUE(c->binary.ok) << c->binary.log;
    EXPECT_EQ(c->candidate, &space.candidates[c->index]);
    compiled.insert(c->index);
  }
  EXPECT_EQ(compiled, (std::set<size_t>{0, 1}));
  EXPECT_EQ(service.stats().total, 3);
  EXPECT_EQ(service.stats().cache_hits, 1);
  EXPECT_EQ(service.stats().compiled, 2);
}

TEST(Compile, CacheKeyDelimitsFields) {
  const auto templates = load_templates({default_templates_dir()});
  Preset preset;
  preset.templates.push_back({"coalesced", {{"BLOCK", {16}}}});
  const auto space = enumerate_space(templates, preset, test::sm90());
  const Candidate& c = space.candidates.front();
  const auto options = NvrtcCompiler().options("sm_90");
  const std::string key = compile_cache_key(c, "abc", "sm_90", "13.0", options);
  EXPECT_EQ(key, compile_cache_key(c, "abc", "sm_90", "13.0", options));
  EXPECT_NE(key, compile_cache_key(c, "abd", "sm_90", "13.0", options));
  EXPECT_NE(key, compile_cache_key(c, "abc", "sm_80", "13.0", options));
  EXPECT_NE(key, compile_cache_key(c, "abc", "sm_90", "13.1", options));
  // Options "-a -b" and "-a-b" (joined differently) must not collide.
  EXPECT_NE(compile_cache_key(c, "abc", "sm_90", "13.0", {"-a", "-b"}),
            compile_cache_key(c, "abc", "sm_90", "13.0", {"-a-b"}));
  EXPECT_NE(compile_cache_key(c, "ab", "csm_90", "13.0", options), compile_cache_key(c, "abc", "sm_90", "13.0", options));
}

TEST(Compile, PtxasResourcesParse) {
  int regs = -1, st = -1, ld = -1;
  parse_ptxas_resources("ptxas info    : Used 128 registers, used 1 barriers, 16640 bytes smem\n"
                        "    0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads",
                        regs, st, ld);
  EXPECT_EQ(regs, 128);
  EXPECT_EQ(st, 8);
  EXPECT_EQ(ld, 12);
}

}  // namespace
}  // namespace cmt
