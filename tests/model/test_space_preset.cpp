// Presets (tuner/space/preset.hpp): loading, settings, error messages, resolution of --config.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fmt/format.h>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using test::k_space_fixtures;

using test::usage_error;

/// Sets an environment variable for one scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_old) {
      setenv(m_name, m_old->c_str(), 1);
    } else {
      unsetenv(m_name);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

class PresetErrors : public ::testing::Test {
 protected:
  /// Writes text as a preset, loads and validates it, and returns the error message.
  std::string error_for(const std::string& text) {
    const fs::path file = m_dir / "bad.toml";
    test::write_file(file, text);
    return usage_error([&] {
      const Preset preset = load_preset(file);
      validate_preset(preset, m_templates);
    });
  }

  /// Expects "FILE:LINE: KEY: ..." containing message.
  void expect_error(const std::string& text, int line, const std::string& key, const std::string& message) {
    const std::string msg = error_for(text);
    const std::string prefix = fmt::format("{}:{}: {}: ", (m_dir / "bad.toml").string(), line, key);
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "expected prefix: " << prefix << "\n got: " << msg;
    EXPECT_NE(msg.find(message), std::string::npos) << "expected: " << message << "\n got: " << msg;
  }

  test::TempDir m_dir;
  std::vector<TemplateDesc> m_templates = load_templates({k_space_fixtures / "templates"});
};

TEST(PresetLoad, ReadsEveryField) {
  const fs::path file = k_space_fixtures / "presets" / "full.toml";
  const Preset p = load_preset(file);
  EXPECT_EQ(p.file, file);
  EXPECT_EQ(p.name, "full");
  EXPECT_EQ(p.description, "Every fixture template");
  EXPECT_EQ(p.content_hash, hash_hex(test::read_file(file)));
  EXPECT_EQ(p.content_hash.size(), 32u);

  // [tune] overrides three settings; the rest keep their defaults.
  const TuneSettings defaults;
  EXPECT_DOUBLE_EQ(p.tune.budget_ms, 5.0);   // an integer is accepted for a floating-point setting
  EXPECT_EQ(p.tune.min_samples, 3);
  EXPECT_DOUBLE_EQ(p.tune.abandon_factor, 2.5);
  EXPECT_EQ(p.tune.max_samples, defaults.max_samples);
  EXPECT_EQ(p.tune.warmup, defaults.warmup);
  EXPECT_EQ(p.tune.retime_top, defaults.retime_top);
  EXPECT_EQ(p.tune.retime_rounds, defaults.retime_rounds);

  // Sorted by name, although the file lists toy first.
  ASSERT_EQ(p.templates.size(), 2u);
  EXPECT_EQ(p.templates[0].name, "other");
  EXPECT_EQ(p.templates[1].name, "toy");
  EXPECT_EQ(p.templates[0].values.at("X"), (std::vector<int64_t>{3, 1}));   // order as written
  EXPECT_EQ(p.templates[0].values.size(), 1u);
  EXPECT_TRUE(p.templates[1].values.empty());
  EXPECT_EQ(p.templates[0].line, 12);
  EXPECT_EQ(p.templates[1].line, 10);
  EXPECT_EQ(p.templates[0].value_lines.at("X"), 13);
}

TEST(PresetLoad, NameDefaultsToTheFileStemAndTuneToDefaults) {
  test::TempDir dir;
  test::write_file(dir / "mine.toml", "[templates.toy]\n");
  const Preset p = load_preset(dir / "mine.toml");
  EXPECT_EQ(p.name, "mine");
  EXPECT_EQ(p.description, "");
  const TuneSettings defaults;
  EXPECT_DOUBLE_EQ(p.tune.budget_ms, defaults.budget_ms);
  EXPECT_EQ(p.tune.max_samples, defaults.max_samples);
}

TEST(PresetLoad, HashFollowsTheBytes) {
  test::TempDir dir;
  test::write_file(dir / "a.toml", "name = \"a\"\n[templates.toy]\n");
  test::write_file(dir / "b.toml", "name = \"a\"\n\n[templates.toy]\n");   // same meaning, other bytes
  EXPECT_NE(load_preset(dir / "a.toml").content_hash, load_preset(dir / "b.toml").content_hash);
  EXPECT_EQ(load_preset(dir / "a.toml").content_hash, load_preset(dir / "a.toml").content_hash);
}

TEST_F(PresetErrors, TomlSyntaxErrorNamesFileAndLine) {
  const std::string msg = error_for("name = \"x\"\n\n[templates.toy\nA = [1]\n");
  const std::string prefix = (m_dir / "bad.toml").string() + ":3: TOML syntax error at column ";
  EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
}

TEST_F(PresetErrors, UnknownParameter) {
  expect_error("name = \"x\"\n[templates.toy]\nA = [1]\nZZ = [2]\n", 4, "templates.toy.ZZ",
               "unknown parameter 'ZZ' of template 'toy' (parameters: A, B, C)");
}

TEST_F(PresetErrors, NonIntegerValues) {
  expect_error("[templates.toy]\nA = [1, \"two\"]\n", 2, "templates.toy.A", "values must be non-negative integers");
  expect_error("[templates.toy]\nA = [1.5]\n", 2, "templates.toy.A", "values must be non-negative integers");
  expect_error("[templates.toy]\nA = 4\n", 2, "templates.toy.A", "must be an array of non-negative integers");
}

TEST_F(PresetErrors, EmptyValues) {
  expect_error("[templates.toy]\n\nB = []\n", 3, "templates.toy.B", "values must not be empty");
}

TEST_F(PresetErrors, NegativeValues) {
  expect_error("name = \"x\"\n[templates.toy]\nC = [8, -16]\n", 3, "templates.toy.C", "values must be non-negative integers");
  // Zero is a legitimate value (padding, a feature switched off).
  EXPECT_EQ(error_for("[templates.toy]\nC = [0, 8]\n"), "<no UsageError thrown>");
}

TEST_F(PresetErrors, RepeatedOrHugeValues) {
  expect_error("[templates.toy]\nC = [8, 16, 8]\n", 2, "templates.toy.C", "value 8 appears twice");
  expect_error("[templates.toy]\nC = [4294967296]\n", 2, "templates.toy.C", "does not fit an int");
}

TEST_F(PresetErrors, UnknownTuneKey) {
  expect_error("[tune]\nbudget_ms = 5\nbudget = 5\n[templates.toy]\n", 3, "tune.budget",
               "unknown key (known: budget_ms, min_samples");
}

TEST_F(PresetErrors, WrongValueTypes) {
  expect_error("[tune]\nmin_samples = \"ten\"\n[templates.toy]\n", 2, "tune.min_samples", "must be an integer");
  expect_error("[tune]\nwarmup = 1.5\n[templates.toy]\n", 2, "tune.warmup", "must be an integer");
  expect_error("[tune]\nbudget_ms = \"5\"\n[templates.toy]\n", 2, "tune.budget_ms", "must be a number");
  expect_error("name = 3\n[templates.toy]\n", 1, "name", "must be a string");
  expect_error("description = [\"a\"]\n[templates.toy]\n", 1, "description", "must be a string");
  expect_error("tune = 3\n[templates.toy]\n", 1, "tune", "must be a table");
  expect_error("templates = [1]\n", 1, "templates", "must be a table");
  expect_error("[templates]\ntoy = [1]\n", 2, "templates.toy", "must be a table of parameter value lists");
}

TEST_F(PresetErrors, OutOfRangeSettings) {
  expect_error("[tune]\nbudget_ms = 0\n[templates.toy]\n", 2, "tune.budget_ms", "must be > 0");
  expect_error("[tune]\nmin_samples = 0\n[templates.toy]\n", 2, "tune.min_samples", "must be an integer >= 1");
  expect_error("[tune]\nabandon_factor = 0.5\n[templates.toy]\n", 2, "tune.abandon_factor", "must be >= 1");
  expect_error("[tune]\nmin_samples = 50\nmax_samples = 20\n[templates.toy]\n", 3, "tune.max_samples",
               "max_samples (20) must be >= min_samples (50)");
}

TEST_F(PresetErrors, AllowSpillsIsABoolean) {
  test::write_file(m_dir / "spills.toml", "[tune]\nallow_spills = true\n[templates.toy]\n");
  EXPECT_TRUE(load_preset(m_dir / "spills.toml").tune.allow_spills);
  test::write_file(m_dir / "nospills.toml", "[templates.toy]\n");
  EXPECT_FALSE(load_preset(m_dir / "nospills.toml").tune.allow_spills);
  expect_error("[tune]\nallow_spills = 1\n[templates.toy]\n", 2, "tune.allow_spills", "must be true or false");
}

TEST_F(PresetErrors, SeveralGridsPerTemplateAreSearchedOnceEach) {
  // Grid 1: A=1, B in {1,2}, C=8 -> 2 valid. Grid 2: A in {1,2}, B=2, C=8 -> (1,2) repeats, (2,2) is new.
  test::write_file(m_dir / "grids.toml",
                   "[[templates.toy]]\nA = [1]\nB = [1, 2]\nC = [8]\n\n"
                   "[[templates.toy]]\nA = [1, 2]\nB = [2]\nC = [8]\n");
  const Preset preset = load_preset(m_dir / "grids.toml");
  ASSERT_EQ(preset.templates.size(), 2u);
  EXPECT_EQ(preset.templates[0].line, 1);
  EXPECT_EQ(preset.templates[1].line, 6);
  const SearchSpace space = enumerate_space(m_templates, preset, test::sm90());
  ASSERT_EQ(space.stats.size(), 1u);
  EXPECT_EQ(space.stats[0].raw, 4);
  EXPECT_EQ(space.stats[0].valid, 3);
  ASSERT_EQ(space.candidates.size(), 3u);
  EXPECT_EQ(params_to_string(space.candidates[2].values), "A=2,B=2,C=8");
  EXPECT_EQ(space.stats[0].pruned.back().reason, "already in an earlier grid of this preset");
  EXPECT_EQ(space.stats[0].pruned.back().count, 1);
  // A mistake in the second grid is reported at its own line.
  expect_error("[[templates.toy]]\nA = [1]\n[[templates.toy]]\nZZ = [1]\n", 4, "templates.toy.ZZ", "unknown parameter 'ZZ'");
}

TEST_F(PresetErrors, UnknownTemplate) {
  expect_error("name = \"x\"\n\n[templates.nosuch]\nA = [1]\n", 3, "templates.nosuch",
               "unknown template 'nosuch' (known: other, toy)");
  // The first mistake in the file is reported, not the first in name order.
  expect_error("[templates.zzz]\n[templates.aaa]\n", 1, "templates.zzz", "unknown template 'zzz'");
  expect_error("[templates.toy]\nZZ = [1]\nAA = [1]\n", 2, "templates.toy.ZZ", "unknown parameter 'ZZ'");
}

TEST_F(PresetErrors, UnknownTemplateIsAlsoCaughtByEnumerate) {
  test::write_file(m_dir / "bad.toml", "[templates.toy]\n[templates.nosuch]\n");
  const Preset preset = load_preset(m_dir / "bad.toml");
  const std::string msg = usage_error([&] { (void)enumerate_space(m_templates, preset, test::sm90()); });
  EXPECT_EQ(msg.rfind((m_dir / "bad.toml").string() + ":2: templates.nosuch: unknown template 'nosuch'", 0), 0u) << msg;
}

TEST_F(PresetErrors, UnknownTopLevelKeyAndMissingTemplates) {
  expect_error("name = \"x\"\nbudget_ms = 5\n[templates.toy]\n", 2, "budget_ms", "unknown key (known: name, description, tune, templates)");
  expect_error("name = \"x\"\n", 1, "templates", "the preset names no template");
  expect_error("templates = {}\n", 1, "templates", "the preset names no template");
}

TEST(PresetResolve, BareNamesLookInTheConfigsFolder) {
  const ScopedEnv env("CMTUNE_CONFIGS", (k_space_fixtures / "presets").string());
  EXPECT_EQ(default_configs_dir(), k_space_fixtures / "presets");
  EXPECT_EQ(resolve_preset("full"), k_space_fixtures / "presets" / "full.toml");
  const std::string msg = usage_error([] { (void)resolve_preset("nosuch"); });
  EXPECT_NE(msg.find("unknown preset 'nosuch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(available: full, toy_only)"), std::string::npos) << msg;
}

TEST(PresetResolve, PathsAreUsedAsGiven) {
  const std::string path = (k_space_fixtures / "presets" / "toy_only.toml").string();
  EXPECT_EQ(resolve_preset(path), fs::path(path));
  test::TempDir dir;
  test::write_file(dir / "p.toml", "[templates.toy]\n");
  // Ending in .toml makes it a path even without a slash: relative to the working folder.
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir.path());
  EXPECT_EQ(resolve_preset("p.toml"), fs::path("p.toml"));
  EXPECT_THROW((void)resolve_preset("q.toml"), UsageError);
  fs::current_path(old_cwd);
  const std::string msg = usage_error([&] { (void)resolve_preset((dir / "missing.toml").string()); });
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  EXPECT_THROW((void)resolve_preset(""), UsageError);
}

TEST(PresetResolve, DefaultConfigsDirIsTheSourceTree) {
  const char* saved = std::getenv("CMTUNE_CONFIGS");
  const std::optional<std::string> old = saved ? std::optional<std::string>(saved) : std::nullopt;
  unsetenv("CMTUNE_CONFIGS");
  EXPECT_EQ(default_configs_dir(), fs::path(CMTUNE_SOURCE_DIR) / "configs");
  if (old) setenv("CMTUNE_CONFIGS", old->c_str(), 1);
}

}  // namespace
}  // namespace cmt
