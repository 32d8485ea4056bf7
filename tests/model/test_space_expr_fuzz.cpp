// Seeded random testing of the expression parser and evaluator (tuner/space/expr.hpp); the helpers
// and how to replay or extend a run are in test_fuzz_support.hpp.
//
// Properties: parsing and evaluating never crash (the sanitizer build, scripts/test_sanitized.sh,
// turns memory errors, undefined behaviour and stack overflows into failures); every refusal is a
// one-line UsageError naming the expression; an accepted expression keeps its text, names valid
// identifiers and evaluates the same way twice; and randomly built expressions evaluate to exactly
// what 128-bit arithmetic gives, or to the error (division by zero, overflow) it predicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/test_fuzz_support.hpp"
#include "space/expr.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using fuzz::Rng;

constexpr int64_t k_min = std::numeric_limits<int64_t>::min();
constexpr int64_t k_max = std::numeric_limits<int64_t>::max();

/// Every expression the built-in and fixture descriptors hold: the mutation seeds.
std::vector<std::string> descriptor_expressions() {
  std::vector<fs::path> folders = {default_templates_dir()};
  for (const char* fixture : {"space/templates", "export/templates"})
    folders.push_back(fs::path(CMTUNE_TEST_FIXTURES) / fixture);
  std::set<std::string> texts;
  std::vector<TemplateDesc> descriptors;
  for (const fs::path& folder : folders)   // one at a time: a fixture may reuse a built-in name
    for (TemplateDesc& t : load_templates({folder})) descriptors.push_back(std::move(t));
  for (const TemplateDesc& t : descriptors) {
    for (const auto& d : t.derived) texts.insert(d.expr.text());
    for (const auto& c : t.constraints) texts.insert(c.check.text());
    for (const Expr* e : {&t.threads, &t.tile_m, &t.tile_n, &t.dynamic_smem, &t.grid_z, &t.align_bytes, &t.ld_multiple})
      texts.insert(e->text());
    if (t.applies) texts.insert(t.applies->text());
  }
  return {texts.begin(), texts.end()};
}

const std::vector<std::string>& expr_dictionary() {
  static const std::vector<std::string> tokens = {
      "(", ")", "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "!", ",", " ", "\t", "\n",
      "min(", "max(", "ceil_div(", "pow2(", "min", "floor(", "BM", "TM", "_x", "M", "DEVICE_SMEM_PER_BLOCK",
      "&", "|", "=", "((", "))", "-(", "/0", "%0", "*9223372036854775807", "(-9223372036854775807 - 1)", "1a", "$",
      "\xc3\xa9", "\x00"};
  return tokens;
}

/// Values a parameter may have in the evaluator: the edges of int64 and of the operators.
int64_t edge_value(Rng& rng) {
  static const std::vector<int64_t> values = {0, 1, -1, 2, -2, 3, 4, 8, 32, 64, 128, 1024, 2147483647, 4294967296LL,
                                              3037000499LL, 3037000500LL, 4611686018427387904LL, k_max, k_min,
                                              k_max - 1, k_min + 1};
  if (rng.chance(0.8)) return rng.pick(values);
  return static_cast<int64_t>(rng.bits()) >> rng.below(64);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// An evaluation's outcome, comparable: a value or a UsageError's message.
struct Evaluated {
  std::optional<int64_t> value;
  std::string error;
  bool operator==(const Evaluated& o) const { return value == o.value && error == o.error; }
};

TEST(ExprFuzz, MutatedDescriptorExpressionsParseOrFailWithOneLine) {
  const std::vector<std::string> corpus = descriptor_expressions();
  ASSERT_GT(corpus.size(), 50u) << "the descriptors' expressions are the seeds";
  const int count = fuzz::iterations(20000);
  fuzz::announce("expressions", count);
  int failures = 0, accepted = 0, evaluated = 0;
  for (int i = 0; i < count && failures < fuzz::k_max_reported_failures; ++i) {
    Rng rng(fuzz::base_seed(), i);
    const std::string input =
        rng.chance(0.85) ? fuzz::mutate(rng, rng.pick(corpus), expr_dictionary(), corpus) : fuzz::garbage(rng, expr_dictionary());
    Expr expr;
    fuzz::Outcome parsed;
    if (!fuzz::run_checked([&] { expr = Expr::parse(input); }, {"expression '"}, i, input, parsed)) {
      ++failures;
      continue;
    }
    if (!parsed.accepted) continue;
    ++accepted;
    const std::vector<std::string> names = expr.identifiers();
    const bool names_ok = std::is_sorted(names.begin(), names.end()) &&
                          std::adjacent_find(names.begin(), names.end()) == names.end() &&
                          std::all_of(names.begin(), names.end(), is_identifier);
    if (expr.text() != input || !names_ok) {
      ADD_FAILURE() << "iteration " << i << ": text or identifiers wrong\n  input: \"" << fuzz::escaped(input) << "\"";
      ++failures;
      continue;
    }
    // Each name gets a value at an edge; one in ten is unknown.
    std::map<std::string, std::optional<int64_t>> values;
    for (const std::string& name : names) values[name] = rng.chance(0.1) ? std::nullopt : std::optional(edge_value(rng));
    const ExprLookup lookup = [&](std::string_view name) -> std::optional<int64_t> {
      const auto it = values.find(std::string(name));
      return it == values.end() ? std::nullopt : it->second;
    };
    Evaluated runs[2];
    bool ok = true;
    for (Evaluated& run : runs) {
      fuzz::Outcome outcome;
      ok = ok && fuzz::run_checked([&] { run.value = expr.eval(lookup); }, {"expression '"}, i, input, outcome);
      run.error = outcome.message;
      // The evaluator's only refusals: a name without a value, a division by zero, an overflow.
      if (ok && !outcome.accepted && outcome.message.find("unknown identifier") == std::string::npos &&
          outcome.message.find("by zero") == std::string::npos && outcome.message.find("overflows") == std::string::npos) {
        ADD_FAILURE() << "iteration " << i << ": unexpected evaluation error: " << outcome.message;
        ok = false;
      }
    }
    if (ok && !(runs[0] == runs[1])) {
      ADD_FAILURE() << "iteration " << i << ": two evaluations differ\n  input: \"" << fuzz::escaped(input) << "\"";
      ok = false;
    }
    failures += ok ? 0 : 1;
    evaluated += runs[0].value ? 1 : 0;
  }
  // The generator must reach the evaluator, or this test would pass without testing it.
  EXPECT_GT(accepted, count / 10) << "too few mutated expressions parsed";
  EXPECT_GT(evaluated, count / 20) << "too few expressions evaluated";
}

// ---- Random expression trees against exact arithmetic ----

/// A random expression over A, B, C and non-negative literals, evaluated here in 128-bit integers
/// with the documented semantics: C's truncating division, short-circuit && and ||, division by
/// zero and results outside int64 are errors, operands evaluated left to right.
struct Tree {
  enum Kind { literal, variable, unary, binary, call } kind = literal;
  std::string op;   // the operator or function
  int64_t value = 0;
  std::vector<std::unique_ptr<Tree>> args;
};

struct Exact {
  std::optional<int64_t> value;
  std::string error;   // the part of the message the evaluator must print
};

Exact error(const std::string& what) { return {std::nullopt, what}; }

Exact fit(__int128 v) {
  if (v < k_min || v > k_max) return error("overflows");
  return {static_cast<int64_t>(v), ""};
}

Exact exact(const Tree& t, const std::map<std::string, int64_t>& vars) {
  switch (t.kind) {
    case Tree::literal:
      return {t.value, ""};
    case Tree::variable:
      return {vars.at(t.op), ""};
    case Tree::unary: {
      const Exact a = exact(*t.args[0], vars);
      if (!a.value) return a;
      return t.op == "-" ? fit(-static_cast<__int128>(*a.value)) : Exact{*a.value == 0, ""};
    }
    case Tree::binary:
    case Tree::call: {
      const Exact a = exact(*t.args[0], vars);
      if (!a.value) return a;
      if (t.op == "&&" && *a.value == 0) return {0, ""};
      if (t.op == "||" && *a.value != 0) return {1, ""};
      if (t.op == "pow2") return {*a.value > 0 && (*a.value & (*a.value - 1)) == 0, ""};
      const Exact b = exact(*t.args[1], vars);
      if (!b.value) return b;
      const __int128 x = *a.value, y = *b.value;
      if (t.op == "&&" || t.op == "||") return {y != 0, ""};
      if (t.op == "+") return fit(x + y);
      if (t.op == "-") return fit(x - y);
      if (t.op == "*") return fit(x * y);
      if (t.op == "/") return y == 0 ? error("division by zero") : fit(x / y);
      if (t.op == "%") return y == 0 ? error("modulo by zero") : fit(x % y);
      if (t.op == "ceil_div") {
        if (y == 0) return error("division by zero");
        const __int128 q = x / y;
        return fit(x % y != 0 && ((x < 0) == (y < 0)) ? q + 1 : q);
      }
      if (t.op == "min") return {std::min(*a.value, *b.value), ""};
      if (t.op == "max") return {std::max(*a.value, *b.value), ""};
      if (t.op == "<") return {x < y, ""};
      if (t.op == "<=") return {x <= y, ""};
      if (t.op == ">") return {x > y, ""};
      if (t.op == ">=") return {x >= y, ""};
      if (t.op == "==") return {x == y, ""};
      if (t.op == "!=") return {x != y, ""};
      break;
    }
  }
  ADD_FAILURE() << "unknown operator " << t.op;
  return error("?");
}

std::unique_ptr<Tree> random_tree(Rng& rng, int depth) {
  auto t = std::make_unique<Tree>();
  if (depth == 0 || rng.chance(0.25)) {
    if (rng.chance(0.5)) {
      t->kind = Tree::variable;
      t->op = std::string(1, static_cast<char>('A' + rng.below(3)));
    } else {
      t->kind = Tree::literal;   // literals are non-negative; negative values come from '-' and the variables
      t->value = std::max<int64_t>(0, edge_value(rng));
    }
    return t;
  }
  static const std::vector<std::string> binary = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
  static const std::vector<std::string> calls = {"min", "max", "ceil_div", "pow2"};
  const size_t what = rng.below(10);
  if (what < 2) {
    t->kind = Tree::unary;
    t->op = rng.chance(0.7) ? "-" : "!";
    t->args.push_back(random_tree(rng, depth - 1));
  } else if (what < 8) {
    t->kind = Tree::binary;
    t->op = rng.pick(binary);
    t->args.push_back(random_tree(rng, depth - 1));
    t->args.push_back(random_tree(rng, depth - 1));
  } else {
    t->kind = Tree::call;
    t->op = rng.pick(calls);
    for (size_t n = t->op == "pow2" ? 1 : 2; n > 0; --n) t->args.push_back(random_tree(rng, depth - 1));
  }
  return t;
}

/// The tree as text, every operation parenthesized, with random spacing.
std::string render(Rng& rng, const Tree& t) {
  const auto space = [&] { return rng.chance(0.5) ? std::string(rng.below(3), ' ') : std::string(); };
  switch (t.kind) {
    case Tree::literal: return std::to_string(t.value);
    case Tree::variable: return t.op;
    case Tree::unary: return t.op + space() + "(" + render(rng, *t.args[0]) + ")";
    case Tree::binary:
      return "(" + render(rng, *t.args[0]) + space() + t.op + space() + render(rng, *t.args[1]) + ")";
    case Tree::call: {
      std::string text = t.op + space() + "(" + render(rng, *t.args[0]);
      if (t.args.size() > 1) text += "," + space() + render(rng, *t.args[1]);
      return text + ")";
    }
  }
  return "";
}

TEST(ExprFuzz, RandomExpressionsMatchExactArithmetic) {
  const int count = fuzz::iterations(20000);
  fuzz::announce("expression trees", count);
  int failures = 0, errors = 0, values = 0;
  for (int i = 0; i < count && failures < fuzz::k_max_reported_failures; ++i) {
    Rng rng(fuzz::base_seed(), i);
    const std::unique_ptr<Tree> tree = random_tree(rng, 1 + static_cast<int>(rng.below(5)));
    const std::map<std::string, int64_t> vars = {{"A", edge_value(rng)}, {"B", edge_value(rng)}, {"C", edge_value(rng)}};
    const std::string text = render(rng, *tree);
    const Exact want = exact(*tree, vars);
    Evaluated got;
    try {
      got.value = Expr::parse(text).eval(ParamValues(vars.begin(), vars.end()));
    } catch (const UsageError& e) {
      got.error = e.what();
    }
    const bool same = want.value ? got.value == want.value : got.error.find(want.error) != std::string::npos;
    if (!same) {
      ADD_FAILURE() << "iteration " << i << ": " << text << " with A=" << vars.at("A") << " B=" << vars.at("B")
                    << " C=" << vars.at("C") << ": expected "
                    << (want.value ? std::to_string(*want.value) : "an error with '" + want.error + "'") << ", got "
                    << (got.value ? std::to_string(*got.value) : "'" + got.error + "'");
      ++failures;
    }
    (want.value ? values : errors) += 1;
  }
  // Both outcomes must be common, or one side of the comparison goes untested.
  EXPECT_GT(values, count / 5);
  EXPECT_GT(errors, count / 20);
}

// ---- Regressions the fuzzing found ----

TEST(ExprFuzz, DeepNestingIsRefusedNotAStackOverflow) {
  // Each of these recursed once per level in the parser, the evaluator or the tree's destructor
  // and crashed the process with a stack overflow.
  const std::string deep_parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  std::string long_chain = "1";
  for (int n = 0; n < 100000; ++n) long_chain += "+1";
  std::string deep_calls;
  for (int n = 0; n < 50000; ++n) deep_calls += "min(1,";
  deep_calls += "1" + std::string(50000, ')');
  for (const std::string& text :
       {deep_parens, std::string(100000, '-') + "1", std::string(100000, '!') + "0", long_chain, deep_calls}) {
    const std::string what = test::usage_error([&] { (void)Expr::parse(text); });
    EXPECT_NE(what.find("levels deep"), std::string::npos) << what.substr(0, 200);
  }
  // Well under the limit is fine.
  EXPECT_EQ(Expr::parse(std::string(60, '(') + "7" + std::string(60, ')')).eval(ParamValues{}), 7);
  std::string chain = "0";
  for (int n = 0; n < 150; ++n) chain += " + 1";
  EXPECT_EQ(Expr::parse(chain).eval(ParamValues{}), 150);
}

TEST(ExprFuzz, OverflowIsAnErrorNotAWrappedValue) {
  // Wrapped, 2^32 * 2^32 was 0 and would pass "BM*BN <= limit".
  const auto eval_error = [](const std::string& text, const ParamValues& values = {}) {
    return test::usage_error([&] { (void)Expr::parse(text).eval(values); });
  };
  EXPECT_NE(eval_error("4294967296 * 4294967296").find("4294967296 * 4294967296 overflows a 64-bit integer"),
            std::string::npos);
  EXPECT_NE(eval_error("9223372036854775807 + 1").find("overflows"), std::string::npos);
  EXPECT_NE(eval_error("-9223372036854775807 - 2").find("overflows"), std::string::npos);
  EXPECT_NE(eval_error("-X", {{"X", k_min}}).find("overflows"), std::string::npos);
  EXPECT_NE(eval_error("X / -1", {{"X", k_min}}).find("overflows"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(X, -1)", {{"X", k_min}}).find("overflows"), std::string::npos);
  EXPECT_EQ(Expr::parse("X % -1").eval(ParamValues{{"X", k_min}}), 0);   // fits: no error
  EXPECT_EQ(Expr::parse("-9223372036854775807 - 1").eval(ParamValues{}), k_min);
  // The column points at the operator that overflowed.
  EXPECT_NE(eval_error("1 + 4294967296 * 4294967296").find("column 16"), std::string::npos);
}

TEST(ExprFuzz, MessagesQuotingControlCharactersStayOneLine) {
  const std::string parse = test::usage_error([] { (void)Expr::parse("BM +\n* 2"); });
  EXPECT_EQ(parse.find('\n'), std::string::npos) << parse;
  EXPECT_NE(parse.find("'BM +\\n* 2'"), std::string::npos) << parse;
  const std::string eval = test::usage_error([] { (void)Expr::parse("1 /\r\n0").eval(ParamValues{}); });
  EXPECT_EQ(eval.find('\n'), std::string::npos) << eval;
  EXPECT_NE(eval.find("'1 /\\r\\n0'"), std::string::npos) << eval;
}

}  // namespace
}  // namespace cmt
