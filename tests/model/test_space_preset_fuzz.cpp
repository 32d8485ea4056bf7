// Seeded random testing of the TOML loaders: presets (tuner/space/preset.hpp) and template
// descriptors with their constraint fragments (tuner/space/template_desc.hpp). The helpers and how
// to replay or extend a run are in test_fuzz_support.hpp.
//
// Seeds are the real files: every configs/*.toml and fixture preset, every templates/*.toml and
// templates/common/*.toml. Properties: loading never crashes (the sanitizer build checks memory
// and undefined behaviour); every refusal is a one-line UsageError naming the file; an accepted
// preset holds only what the format allows and survives a round trip through TOML; an accepted
// descriptor names only what is in scope, and its expressions evaluate at a point to a value or a
// one-line UsageError, the same way twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/test_fuzz_support.hpp"
#include "space/preset.hpp"
#include "space/target.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using fuzz::Rng;

const std::vector<std::string>& toml_dictionary() {
  static const std::vector<std::string> tokens = {
      "[", "]", "[[", "]]", "=", " = ", "\"", "'", "\"\"\"", "'''", "{", "}", ",", "#", "\n", "\r\n", ".", "\\", "\\u0000",
      "\\n", "\\U0010FFFF", "\\ud800", "true", "false", "[tune]", "[templates.x]", "[[templates.warptile]]",
      "[templates.\"a\\nb\"]", "budget_ms = ", "min_samples = ", "max_samples = ", "abandon_factor = ", "allow_spills = ",
      "name = ", "description = ", "BM = [", "values = [", "[[param]]", "[[constraint]]", "check = ", "reason = ",
      "[derived]", "[launch]", "[requires]", "include = [", "applies = ", "\"common/warp_tile.toml\"", "\"../x.toml\"",
      "\"/etc/passwd\"", "DEVICE_SMEM_PER_BLOCK", "1979-05-27T07:32:00Z", "0x7fffffffffffffff", "1_000", "+inf", "-nan",
      "3.0e308", "\xff", "\xc3\xa9", "\x00", "a.b.c = 1", "x = {a = 1}", "[a.b]", "[[a]]"};
  return tokens;
}

struct SeedFile {
  fs::path path;   // where it lies in the working copy
  std::string text;
};

std::vector<SeedFile> toml_files(const fs::path& folder) {
  std::vector<SeedFile> out;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().extension() == ".toml") out.push_back({entry.path(), test::read_file(entry.path())});
  std::sort(out.begin(), out.end(), [](const SeedFile& a, const SeedFile& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> texts(const std::vector<SeedFile>& files) {
  std::vector<std::string> out;
  for (const SeedFile& f : files) out.push_back(f.text);
  return out;
}

// ---- Presets ----

/// What the format allows of a loaded preset; empty when all holds, else what does not.
std::string preset_violation(const Preset& p) {
  const TuneSettings& t = p.tune;
  if (!(t.budget_ms > 0) || t.min_samples < 1 || t.max_samples < t.min_samples || t.warmup < 0 || t.retime_top < 0 ||
      t.retime_rounds < 0 || !(t.abandon_factor >= 1))
    return "a [tune] setting out of its range";
  if (p.name.empty()) return "an empty name";
  if (p.templates.empty()) return "no template";
  if (!std::is_sorted(p.templates.begin(), p.templates.end(),
                      [](const PresetTemplate& a, const PresetTemplate& b) { return a.name < b.name; }))
    return "templates not sorted by name";
  for (const PresetTemplate& entry : p.templates) {
    for (const auto& [param, values] : entry.values) {
      if (values.empty()) return "an empty value list for " + param;
      if (std::set<int64_t>(values.begin(), values.end()).size() != values.size()) return "a value twice in " + param;
      for (const int64_t v : values)
        if (v < 0 || v > std::numeric_limits<int>::max()) return "a value that does not fit an int in " + param;
    }
  }
  return "";
}

/// A TOML basic string: quotes, backslashes and control characters escaped. (Written here, not by
/// toml++'s writer, which 3.3.0 gets wrong for keys holding control characters and for strings
/// that start with a line break.)
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04X}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The preset written back as TOML: every setting, and each template's grids as [[templates.NAME]].
std::string to_toml(const Preset& p) {
  const TuneSettings& t = p.tune;
  std::string out = fmt::format("name = {}\ndescription = {}\n", quoted(p.name), quoted(p.description));
  // fmt writes the shortest text that reads back as the same double; "inf" is TOML too.
  out += fmt::format(
      "[tune]\nbudget_ms = {}\nmin_samples = {}\nmax_samples = {}\nwarmup = {}\nretime_top = {}\nretime_rounds = {}\n"
      "abandon_factor = {}\nallow_spills = {}\n",
      t.budget_ms, t.min_samples, t.max_samples, t.warmup, t.retime_top, t.retime_rounds, t.abandon_factor, t.allow_spills);
  for (const PresetTemplate& entry : p.templates) {
    out += fmt::format("[[templates.{}]]\n", quoted(entry.name));
    for (const auto& [param, values] : entry.values) {
      std::string list;
      for (const int64_t v : values) list += (list.empty() ? "" : ", ") + std::to_string(v);
      out += fmt::format("{} = [{}]\n", quoted(param), list);
    }
  }
  return out;
}

bool same_content(const Preset& a, const Preset& b) {
  const auto settings = [](const TuneSettings& t) {
    return std::make_tuple(t.budget_ms, t.min_samples, t.max_samples, t.warmup, t.retime_top, t.retime_rounds,
                           t.abandon_factor, t.allow_spills);
  };
  if (a.name != b.name || a.description != b.description || settings(a.tune) != settings(b.tune) ||
      a.templates.size() != b.templates.size())
    return false;
  for (size_t i = 0; i < a.templates.size(); ++i)
    if (a.templates[i].name != b.templates[i].name || a.templates[i].values != b.templates[i].values) return false;
  return true;
}

TEST(PresetFuzz, MutatedPresetsLoadOrFailWithOneLineNamingTheFile) {
  std::vector<SeedFile> seeds = toml_files(default_configs_dir());
  for (SeedFile& f : toml_files(fs::path(CMTUNE_TEST_FIXTURES) / "space" / "presets")) seeds.push_back(std::move(f));
  ASSERT_GE(seeds.size(), 4u);
  const std::vector<std::string> corpus = texts(seeds);
  test::TempDir dir;
  const fs::path file = dir / "fuzz.toml", copy = dir / "round_trip.toml";
  const int count = fuzz::iterations(4000);
  fuzz::announce("presets", count);
  int failures = 0, accepted = 0;
  for (int i = 0; i < count && failures < fuzz::k_max_reported_failures; ++i) {
    Rng rng(fuzz::base_seed(), i);
    const std::string input =
        rng.chance(0.9) ? fuzz::mutate(rng, rng.pick(corpus), toml_dictionary(), corpus) : fuzz::garbage(rng, toml_dictionary());
    test::write_file(file, input);
    Preset preset;
    fuzz::Outcome outcome;
    if (!fuzz::run_checked([&] { preset = load_preset(file); }, {file.string()}, i, input, outcome)) {
      ++failures;
      continue;
    }
    if (!outcome.accepted) continue;
    ++accepted;
    if (const std::string why = preset_violation(preset); !why.empty()) {
      ADD_FAILURE() << "iteration " << i << ": accepted a preset with " << why << "\n  input: \"" << fuzz::escaped(input)
                    << "\"";
      ++failures;
      continue;
    }
    // Written back and read again, it means the same.
    const std::string written = to_toml(preset);
    test::write_file(copy, written);
    Preset again;
    fuzz::Outcome reread;
    if (!fuzz::run_checked([&] { again = load_preset(copy); }, {copy.string()}, i, written, reread) || !reread.accepted ||
        !same_content(preset, again)) {
      ADD_FAILURE() << "iteration " << i << ": the round trip through TOML changed the preset (" << reread.message
                    << ")\n  input: \"" << fuzz::escaped(input) << "\"\n  written: \"" << fuzz::escaped(written) << "\"";
      ++failures;
    }
  }
  EXPECT_GT(accepted, count / 20) << "too few mutated presets were valid: the properties of accepted ones went untested";
}

TEST(PresetFuzz, ControlCharactersInKeysAndValuesStayOneLine) {
  // Quoted keys and strings may hold any character; the messages quoting them used to span lines.
  test::TempDir dir;
  test::write_file(dir / "p.toml", "[templates.\"a\\nb\"]\nX = [-1]\n");
  const std::string what = test::usage_error([&] { (void)load_preset(dir / "p.toml"); });
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_NE(what.find("templates.a\\nb.X"), std::string::npos) << what;

  test::write_file(dir / "q.toml", "[tune]\n\"budget\\u0007\" = 1\n[templates.x]\n");
  const std::string bell = test::usage_error([&] { (void)load_preset(dir / "q.toml"); });
  EXPECT_NE(bell.find("tune.budget\\x07: unknown key"), std::string::npos) << bell;
}

TEST(PresetFuzz, NonAsciiWhereTomlLooksForWhitespaceIsAnErrorOrText) {
  // toml++ 3.3.0 reached __builtin_unreachable() on these code points where it looks for whitespace
  // (tuner/space/toml_reader.cpp replaces the function): undefined behaviour, which the sanitizer
  // build stops at. Each is now an ordinary syntax error, key or text.
  test::TempDir dir;
  const auto load = [&](const std::string& text) {
    test::write_file(dir / "p.toml", text);
    return load_preset(dir / "p.toml");
  };
  for (const char* cp : {"\xc2\xa1", "\xc3\xa9", "\xd2\x99", "\xe3\x80\x81", "\xef\xbb\xbe"}) {   // U+00A1 ... U+FEFE
    SCOPED_TRACE(fuzz::escaped(cp));
    const std::string after_bare_key = test::usage_error([&] { (void)load(std::string("[templates.caf") + cp + "]\n"); });
    EXPECT_NE(after_bare_key.find("TOML syntax error"), std::string::npos) << after_bare_key;
    const std::string quoted_key = test::usage_error([&] { (void)load(std::string("\"") + cp + "\" = 1\n[templates.x]\n"); });
    EXPECT_NE(quoted_key.find(": unknown key"), std::string::npos) << quoted_key;
    const Preset p = load(std::string("description = \"\"\"\\\n") + cp + "\"\"\"\n[templates.x]\n");
    EXPECT_EQ(p.description, cp);
  }
  // Real non-ASCII whitespace is still refused where TOML wants a space or tab.
  const std::string nbsp = test::usage_error([&] { (void)load("name\xc2\xa0= \"x\"\n[templates.x]\n"); });
  EXPECT_NE(nbsp.find("TOML syntax error"), std::string::npos) << nbsp;
}

// ---- Descriptors ----

/// Names an expression of an accepted descriptor may use, for the scope check.
std::set<std::string> names_in_scope(const TemplateDesc& d, bool problem) {
  std::set<std::string> names;
  for (const auto& p : d.params) names.insert(p.name);
  for (const auto& v : d.derived) names.insert(v.name);
  for (const auto& t : target_names()) names.insert(t.first);
  if (problem) names.insert({"M", "N", "K", "BATCH"});
  return names;
}

/// What the format allows of a loaded descriptor; empty when all holds, else what does not.
std::string descriptor_violation(const TemplateDesc& d, const std::string& stem) {
  if (d.name != stem) return "a name other than the file's stem";
  if (d.params.empty()) return "no parameter";
  std::set<std::string> seen;
  for (const auto& p : d.params) {
    if (!seen.insert(p.name).second) return "parameter " + p.name + " twice";
    if (is_target_name(p.name)) return "a DEVICE_ parameter";
    if (p.values.empty()) return "no values for " + p.name;
    for (const int64_t v : p.values)
      if (v < 0 || v > std::numeric_limits<int>::max()) return "a value that does not fit an int";
  }
  for (const auto& v : d.derived)
    if (!seen.insert(v.name).second) return "derived value " + v.name + " named twice";
  std::vector<const Expr*> exprs = {&d.threads, &d.tile_m, &d.tile_n, &d.dynamic_smem, &d.grid_z, &d.align_bytes,
                                    &d.ld_multiple};
  if (d.problems_per_block) exprs.push_back(&*d.problems_per_block);
  if (d.problems_per_block && !d.batched) return "problems_per_block without batched";
  for (const auto& v : d.derived) exprs.push_back(&v.expr);
  for (const auto& c : d.constraints) exprs.push_back(&c.check);
  const std::set<std::string> scope = names_in_scope(d, false);
  for (const Expr* e : exprs)
    for (const std::string& name : e->identifiers())
      if (!scope.count(name)) return "'" + e->text() + "' names '" + name + "', which is not in scope";
  if (d.applies) {
    const std::set<std::string> with_problem = names_in_scope(d, true);
    for (const std::string& name : d.applies->identifiers())
      if (!with_problem.count(name)) return "applies names '" + name + "'";
  }
  return "";
}

/// Evaluates every expression of a descriptor at its first point, as the space does; the outcomes
/// as text (values or messages), so two runs can be compared.
std::string evaluate_all(const TemplateDesc& d, int iteration, const std::string& input, bool& ok) {
  ParamValues point;
  for (const auto& p : d.params) point.emplace_back(p.name, p.values.front());
  const Target target = test::sm90();
  std::string out;
  const auto step = [&](const std::function<std::string()>& f) {
    fuzz::Outcome outcome;
    std::string value;
    ok = fuzz::run_checked([&] { value = f(); }, {"template '"}, iteration, input, outcome) && ok;
    out += (outcome.accepted ? value : outcome.message) + ";";
  };
  step([&] {
    const auto failed = d.failed_constraint(point, target);
    return failed ? std::to_string(*failed) : std::string("none");
  });
  step([&] {
    const LaunchShape s = d.launch_shape(point, target);
    return fmt::format("{} {} {} {} {} {}", s.threads, s.tile_m, s.tile_n, s.dynamic_smem, s.grid_z, s.problems_per_block);
  });
  step([&] { return d.requirements(point, target).to_string(); });
  step([&] { return std::to_string(d.applies_to(point, target, Problem{128, 96, 4096})); });
  return out;
}

TEST(DescriptorFuzz, MutatedDescriptorsAndFragmentsLoadOrFailWithOneLine) {
  // A working copy of the templates (the sources must sit beside their descriptors), plus the space
  // fixtures' small descriptors; each iteration overwrites one file and puts it back afterwards.
  test::TempDir dir;
  test::copy_builtin_templates(dir.path());
  for (const auto& entry : fs::directory_iterator(fs::path(CMTUNE_TEST_FIXTURES) / "space" / "templates"))
    fs::copy_file(entry.path(), dir / entry.path().filename().string());
  const std::vector<SeedFile> descriptors = toml_files(dir.path());
  // Which descriptors include each fragment; the fragments no descriptor includes are not fuzzed.
  std::map<fs::path, std::vector<fs::path>> includers;
  for (const SeedFile& d : descriptors)
    for (const fs::path& f : load_template(d.path).includes) includers[fs::canonical(f)].push_back(d.path);
  std::vector<SeedFile> fragments = toml_files(dir / "common");
  fragments.erase(std::remove_if(fragments.begin(), fragments.end(),
                                 [&](const SeedFile& f) { return !includers.count(fs::canonical(f.path)); }),
                  fragments.end());
  ASSERT_GE(descriptors.size(), 10u);
  ASSERT_FALSE(fragments.empty());
  std::vector<std::string> corpus = texts(descriptors);
  for (const std::string& t : texts(fragments)) corpus.push_back(t);

  const int count = fuzz::iterations(3000);
  fuzz::announce("descriptors", count);
  int failures = 0, accepted = 0, with_fragment = 0;
  for (int i = 0; i < count && failures < fuzz::k_max_reported_failures; ++i) {
    Rng rng(fuzz::base_seed(), i);
    const bool fragment = rng.chance(0.2);
    const SeedFile& target = fragment ? rng.pick(fragments) : rng.pick(descriptors);
    const fs::path load = fragment ? rng.pick(includers.at(fs::canonical(target.path))) : target.path;
    const std::string input =
        rng.chance(0.9) ? fuzz::mutate(rng, target.text, toml_dictionary(), corpus) : fuzz::garbage(rng, toml_dictionary());
    test::write_file(target.path, input);
    TemplateDesc desc;
    fuzz::Outcome outcome;
    const bool ok = fuzz::run_checked([&] { desc = load_template(load); }, {dir.path().string()}, i, input, outcome);
    test::write_file(target.path, target.text);
    if (!ok) {
      ++failures;
      continue;
    }
    if (!outcome.accepted) continue;
    ++accepted;
    with_fragment += fragment ? 1 : 0;
    if (const std::string why = descriptor_violation(desc, load.stem().string()); !why.empty()) {
      ADD_FAILURE() << "iteration " << i << ": accepted a descriptor with " << why << "\n  input: \""
                    << fuzz::escaped(input) << "\"";
      ++failures;
      continue;
    }
    bool evaluated = true;
    const std::string first = evaluate_all(desc, i, input, evaluated);
    const std::string second = evaluate_all(desc, i, input, evaluated);
    if (!evaluated || first != second) {
      if (evaluated) ADD_FAILURE() << "iteration " << i << ": two evaluations differ: " << first << " / " << second;
      ++failures;
    }
  }
  EXPECT_GT(accepted, count / 20) << "too few mutated descriptors were valid: the properties of accepted ones went untested";
  EXPECT_GT(with_fragment, 0) << "no mutated fragment was accepted";
}

TEST(DescriptorFuzz, AnIncludeTheSystemCannotLookUpIsAUsageError) {
  // A name too long for the file system made std::filesystem throw filesystem_error out of the
  // loader (exit code 1, "filesystem error: status: File name too long") instead of naming the key.
  test::TempDir dir;
  for (const char* f : {"toy.toml", "toy.cuh", "toy_common.cuh", "toy_inner.cuh"})
    fs::copy_file(fs::path(CMTUNE_TEST_FIXTURES) / "space" / "templates" / f, dir / f);
  const std::string toy = test::read_file(dir / "toy.toml");
  test::write_file(dir / "toy.toml", "include = [\"" + std::string(5000, 'a') + ".toml\"]\n" + toy);
  const std::string what = test::usage_error([&] { (void)load_template(dir / "toy.toml"); });
  EXPECT_NE(what.find(":1: include[0]: cannot read '"), std::string::npos) << what.substr(0, 300);
  // The folder of all templates, too.
  const std::string folder = test::usage_error([&] { (void)load_templates({dir / std::string(5000, 'b')}); });
  EXPECT_NE(folder.find("does not exist"), std::string::npos) << folder.substr(0, 300);
}

TEST(DescriptorFuzz, ALongChainOfDerivedValuesIsRefusedNotAStackOverflow) {
  // Each derived value is evaluated inside the one naming it: 20000 of them, each naming the one
  // before, crashed cm-tune with a stack overflow (and took seconds to load).
  test::TempDir dir;
  for (const char* f : {"toy.toml", "toy.cuh", "toy_common.cuh", "toy_inner.cuh"})
    fs::copy_file(fs::path(CMTUNE_TEST_FIXTURES) / "space" / "templates" / f, dir / f);
  const std::string toy = test::read_file(dir / "toy.toml");
  const auto with_chain = [&](int length) {
    std::string derived = "[derived]\nD0 = \"A\"\n";
    for (int i = 1; i < length; ++i) derived += fmt::format("D{} = \"D{} + 1\"\n", i, i - 1);
    std::string text = toy;
    text.replace(text.find("[launch]"), 8, derived + "\n[launch]");
    text.replace(text.find("threads = \"A*B*C\""), 17, fmt::format("threads = \"A*B*C + D{}\"", length - 1));
    test::write_file(dir / "toy.toml", text);
  };
  with_chain(20000);
  const std::string what = test::usage_error([&] { (void)load_template(dir / "toy.toml"); });
  EXPECT_NE(what.find(": derived.D64: 'D64' ends a chain of more than 64 derived values"), std::string::npos)
      << what.substr(0, 300);
  // 64 are fine, and evaluate.
  with_chain(64);
  const TemplateDesc desc = load_template(dir / "toy.toml");
  EXPECT_EQ(desc.launch_shape({{"A", 1}, {"B", 2}, {"C", 8}}, test::sm90()).threads, 16 + 63 + 1);
}

}  // namespace
}  // namespace cmt
