// `cm-tune compile`'s exit status against the real binary: every candidate compiled, some failed
// (named, cached, --allow-failures, --json), none compiled.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;
using Split = test::SplitResult;
using test::expect_error;
using test::expect_line;
using test::run_split;

// --- compile's exit status -------------------------------------------------------------------

/// `cm-tune compile` of the fixture template compile_error (an even V does not compile) for sm_90,
/// with the values of V given, in dir, on dir's database.
Split compile_values(const test::TempDir& dir, const std::string& values, const std::string& more = "") {
  test::write_file(dir / "preset.toml", fmt::format("[templates.compile_error]\nV = [{}]\n", values));
  return run_split(dir, fmt::format("--quiet --templates '{}' compile --config preset.toml --arch sm_90 --db c.db {}",
                                    test::fixture_templates().string(), more));
}

const std::string k_v2_error =
    "compile_error[V=2]: compile_error.cuh(11): error: static assertion failed with \"FIXTURE: an even V does not "
    "compile\"";

TEST(CompileExit, EveryCandidateCompiledIsZero) {
  test::TempDir dir;
  const Split r = compile_values(dir, "1, 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("compiled 2 (2 fresh, 0 cache hits), failed 0,", 0), 0u) << r.out;
}

TEST(CompileExit, SomeFailedIsOneNamingTheFirstAndItsReason) {
  test::TempDir dir;
  const Split first = compile_values(dir, "1, 2, 4");
  expect_line(first, cli::k_exit_failure, "2 of 3 candidates failed to compile; the first: " + k_v2_error);
  EXPECT_NE(first.out.find("compiled 1 (1 fresh, 0 cache hits), failed 2,"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("  FAILED compile_error[V=2]\n    compile_error.cuh(11): error:"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("  FAILED compile_error[V=4]\n"), std::string::npos) << first.out;

  // Failures are cached: a rerun compiles nothing and still says so.
  const Split again = compile_values(dir, "1, 2, 4");
  expect_line(again, cli::k_exit_failure, "2 of 3 candidates failed to compile; the first: " + k_v2_error);
  EXPECT_NE(again.out.find("(0 fresh, 3 cache hits), failed 2,"), std::string::npos) << again.out;

  // --allow-failures: the cache holds what compiles, and that is enough.
  const Split allowed = compile_values(dir, "1, 2, 4", "--allow-failures");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_EQ(allowed.err, "");
  EXPECT_NE(allowed.out.find("  FAILED compile_error[V=2]\n"), std::string::npos) << allowed.out;

  const Split json = compile_values(dir, "1, 2, 4", "--json");
  expect_line(json, cli::k_exit_failure, "2 of 3 candidates failed to compile; the first: " + k_v2_error);
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc.at("failed"), 2);
  ASSERT_EQ(doc.at("failures").size(), 2u);
  for (const auto& failure : doc.at("failures")) {   // the fields of a failure, pinned
    EXPECT_EQ(failure.size(), 2u) << failure.dump();
    EXPECT_TRUE(failure.at("candidate").is_string()) << failure.dump();
    EXPECT_NE(failure.at("log").get<std::string>().find("error"), std::string::npos) << failure.dump();
  }
}

TEST(CompileExit, NoneCompiledIsOneEvenWithAllowFailuresAndListsFiveInFull) {
  test::TempDir dir;
  const std::string line =
      "7 of 7 candidates failed to compile (none compiled); the first: " + k_v2_error;
  const Split r = compile_values(dir, "2, 4, 6, 8, 10, 12, 14");
  expect_line(r, cli::k_exit_failure, line);
  size_t shown = 0;
  for (size_t at = r.out.find("  FAILED "); at != std::string::npos; at = r.out.find("  FAILED ", at + 1)) ++shown;
  EXPECT_EQ(shown, 5u) << r.out;
  EXPECT_NE(r.out.find("  ... and 2 more failed (--json lists every one)\n"), std::string::npos) << r.out;
  expect_line(compile_values(dir, "2, 4, 6, 8, 10, 12, 14", "--allow-failures"), cli::k_exit_failure, line);
}

}  // namespace
}  // namespace cmt
