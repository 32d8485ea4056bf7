// NVRTC compilation and the compile cache (real NVRTC and SQLite; no GPU needed).
#include <gtest/gtest.h>

#include <fstream>

#include "cuda/nvrtc_compiler.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"
#include "tune/compile_service.hpp"

namespace cmt {
namespace {

struct CompileRun {
  int64_t hits = 0, compiled = 0, failed = 0;
  std::vector<std::string> failures;
};

CompileRun compile_all(Store& store, const std::vector<Candidate>& candidates, const std::string& arch = "sm_90") {
  CompileService service(store, arch, 0);
  service.start(candidates);
  CompileRun run;
  while (auto c = service.next()) {
    if (!c->binary.ok) run.failures.push_back(c->candidate->id() + ":\n" + c->binary.log);
    if (c->binary.ok) {
      EXPECT_FALSE(c->binary.cubin.empty()) << c->candidate->id();
      EXPECT_FALSE(c->binary.lowered_name.empty()) << c->candidate->id();
      EXPECT_GT(c->binary.registers, 0) << c->candidate->id() << " (ptxas -v not parsed)";
    }
  }
  run.hits = service.stats().cache_hits;
  run.compiled = service.stats().compiled;
  run.failed = service.stats().failed;
  return run;
}

TEST(Compile, EveryQuickCandidateCompilesForSm90) {
  const auto templates = load_templates({default_templates_dir()});
  const SearchSpace space = enumerate_space(templates, load_preset(resolve_preset("quick")));
  ASSERT_GT(space.candidates.size(), 5u);
  test::TempDir dir;
  Store store(dir / "cache.db");
  const CompileRun run = compile_all(store, space.candidates);
  EXPECT_EQ(run.failed, 0);
  for (const auto& f : run.failures) ADD_FAILURE() << f;
  EXPECT_EQ(run.compiled, static_cast<int64_t>(space.candidates.size()));
  EXPECT_EQ(store.count_binaries(), static_cast<int64_t>(space.candidates.size()));
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
  const SearchSpace space = enumerate_space(templates, preset);
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

  const CompileRun cold = compile_all(store, enumerate_space(templates, preset).candidates);
  EXPECT_EQ(cold.compiled, 3);
  EXPECT_EQ(cold.hits, 0);
  const CompileRun warm = compile_all(store, enumerate_space(templates, preset).candidates);
  EXPECT_EQ(warm.hits, 3);
  EXPECT_EQ(warm.compiled, 0);

  // Editing one template (a comment is enough: the key hashes the bytes) invalidates its entries only.
  {
    std::ofstream f(dir / "templates" / "coalesced.cuh", std::ios::app);
    f << "\n// edited\n";
  }
  templates = load_templates({dir / "templates"});
  const CompileRun edited = compile_all(store, enumerate_space(templates, preset).candidates);
  EXPECT_EQ(edited.compiled, 2);
  EXPECT_EQ(edited.hits, 1);

  // An edit to a shared include invalidates every template that includes it.
  {
    std::ofstream f(dir / "templates" / "cmt_common.cuh", std::ios::app);
    f << "\n// edited\n";
  }
  templates = load_templates({dir / "templates"});
  const auto space = enumerate_space(templates, preset);
  const SourceBundle naive = space.candidates.back().tmpl->load_source();
  const bool naive_includes_common =
      std::any_of(naive.headers.begin(), naive.headers.end(), [](const auto& h) { return h.first == "cmt_common.cuh"; });
  const CompileRun common = compile_all(store, space.candidates);
  EXPECT_EQ(common.compiled, naive_includes_common ? 3 : 2);

  // Another arch is another key.
  EXPECT_EQ(compile_all(store, space.candidates, "sm_80").compiled, 3);
}

TEST(Compile, CacheKeyDelimitsFields) {
  const auto templates = load_templates({default_templates_dir()});
  Preset preset;
  preset.templates.push_back({"coalesced", {{"BLOCK", {16}}}});
  const auto space = enumerate_space(templates, preset);
  const Candidate& c = space.candidates.front();
  const auto options = compile_options("sm_90");
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
