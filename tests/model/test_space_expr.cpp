// Expression parser and evaluator (tuner/space/expr.hpp).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/error.hpp"
#include "space/expr.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

int64_t eval_const(const std::string& text) {
  return Expr::parse(text).eval([](std::string_view) { return std::optional<int64_t>{}; });
}

using test::usage_error;

std::string parse_error(const std::string& text) {
  return usage_error([&] { (void)Expr::parse(text); });
}

TEST(ExprEval, Literals) {
  EXPECT_EQ(eval_const("0"), 0);
  EXPECT_EQ(eval_const("  42 "), 42);
  EXPECT_EQ(eval_const("9223372036854775807"), std::numeric_limits<int64_t>::max());
}

TEST(ExprEval, ArithmeticPrecedenceAndAssociativity) {
  EXPECT_EQ(eval_const("1 + 2 * 3"), 7);
  EXPECT_EQ(eval_const("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval_const("10 - 4 - 3"), 3);     // left-associative
  EXPECT_EQ(eval_const("100 / 10 / 5"), 2);   // left-associative
  EXPECT_EQ(eval_const("2 * 3 % 4"), 2);      // (2*3)%4, same level, left to right
  EXPECT_EQ(eval_const("2 + 3 % 2"), 3);
  EXPECT_EQ(eval_const("-2 * 3"), -6);
  EXPECT_EQ(eval_const("- -3"), 3);
  EXPECT_EQ(eval_const("2 - -3"), 5);
  EXPECT_EQ(eval_const("((((7))))"), 7);
}

TEST(ExprEval, ComparisonAndLogicPrecedence) {
  EXPECT_EQ(eval_const("1 + 2 < 4"), 1);      // arithmetic binds tighter than comparison
  EXPECT_EQ(eval_const("1 + 2 < 3"), 0);
  EXPECT_EQ(eval_const("3 <= 3"), 1);
  EXPECT_EQ(eval_const("3 >= 4"), 0);
  EXPECT_EQ(eval_const("3 > 2"), 1);
  EXPECT_EQ(eval_const("3 == 3"), 1);
  EXPECT_EQ(eval_const("3 != 3"), 0);
  EXPECT_EQ(eval_const("1 || 0 && 0"), 1);    // && binds tighter than ||
  EXPECT_EQ(eval_const("(1 || 0) && 0"), 0);
  EXPECT_EQ(eval_const("1 < 2 && 2 < 1"), 0);
  EXPECT_EQ(eval_const("!0 + 1"), 2);         // unary binds tighter than +
  EXPECT_EQ(eval_const("!5"), 0);
  EXPECT_EQ(eval_const("!!5"), 1);
  EXPECT_EQ(eval_const("5 && 7"), 1);         // logical results are 0 or 1
}

TEST(ExprEval, DivisionTruncatesLikeC) {
  EXPECT_EQ(eval_const("7 / 2"), 3);
  EXPECT_EQ(eval_const("-7 / 2"), -3);
  EXPECT_EQ(eval_const("7 / -2"), -3);
  EXPECT_EQ(eval_const("-7 % 2"), -1);
  EXPECT_EQ(eval_const("7 % -2"), 1);
  EXPECT_EQ(eval_const("-9223372036854775807 - 1"), std::numeric_limits<int64_t>::min());
  // The one quotient outside int64 is an error, as every overflow is (it used to wrap).
  EXPECT_NE(test::usage_error([] { (void)eval_const("(-9223372036854775807 - 1) / -1"); }).find("overflows"),
            std::string::npos);
  EXPECT_EQ(eval_const("(-9223372036854775807 - 1) % -1"), 0);
}

TEST(ExprEval, Functions) {
  EXPECT_EQ(eval_const("min(3, 5)"), 3);
  EXPECT_EQ(eval_const("max(-1, -4)"), -1);
  EXPECT_EQ(eval_const("ceil_div(7, 2)"), 4);
  EXPECT_EQ(eval_const("ceil_div(8, 2)"), 4);
  EXPECT_EQ(eval_const("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(eval_const("ceil_div(7, -2)"), -3);
  EXPECT_EQ(eval_const("ceil_div(-7, -2)"), 4);
  EXPECT_EQ(eval_const("pow2(64)"), 1);
  EXPECT_EQ(eval_const("pow2(1)"), 1);
  EXPECT_EQ(eval_const("pow2(48)"), 0);
  EXPECT_EQ(eval_const("pow2(0)"), 0);
  EXPECT_EQ(eval_const("pow2(-4)"), 0);
  EXPECT_EQ(eval_const("max(min(100, 64), ceil_div(10, 3)) * 2"), 128);
  EXPECT_EQ(eval_const("min (1 + 1 , 3)"), 2);   // spaces around the call
}

TEST(ExprEval, IdentifiersFromParamValues) {
  const Expr e = Expr::parse("(BM/TM)*(BN/TN) <= 1024 && BM % TM == 0");
  const ParamValues ok{{"BM", 128}, {"BN", 64}, {"TM", 8}, {"TN", 4}};
  const ParamValues too_many{{"BM", 256}, {"BN", 256}, {"TM", 2}, {"TN", 2}};
  EXPECT_EQ(e.eval(ok), 1);
  EXPECT_EQ(e.eval(too_many), 0);
  EXPECT_EQ(Expr::parse("BM_2 + _x").eval(ParamValues{{"BM_2", 3}, {"_x", 4}}), 7);
  EXPECT_EQ(Expr::parse("BM*2").eval([](std::string_view name) -> std::optional<int64_t> {
    if (name == "BM") return 21;
    return std::nullopt;
  }),
            42);
}

TEST(ExprEval, LogicShortCircuits) {
  // The right operand is never evaluated, so the division by zero is not reached.
  EXPECT_EQ(eval_const("0 && 1 / 0"), 0);
  EXPECT_EQ(eval_const("1 || 1 % 0"), 1);
  EXPECT_EQ(Expr::parse("TM > 0 && BM % TM == 0").eval(ParamValues{{"TM", 0}, {"BM", 8}}), 0);
}

TEST(ExprEval, DivisionByZeroNamesTheExpression) {
  const Expr e = Expr::parse("BM / (TM - 8)");
  const std::string msg = usage_error([&] { (void)e.eval(ParamValues{{"BM", 64}, {"TM", 8}}); });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'BM / (TM - 8)'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column 4"), std::string::npos) << msg;   // the '/'

  const std::string mod = usage_error([] { (void)eval_const("5 % 0"); });
  EXPECT_NE(mod.find("modulo by zero"), std::string::npos) << mod;
  EXPECT_NE(mod.find("'5 % 0'"), std::string::npos) << mod;

  const std::string cdiv = usage_error([] { (void)eval_const("ceil_div(1, 0)"); });
  EXPECT_NE(cdiv.find("division by zero"), std::string::npos) << cdiv;
}

TEST(ExprEval, UnknownIdentifierIsAnError) {
  const Expr e = Expr::parse("BM + QQ");
  const std::string msg = usage_error([&] { (void)e.eval(ParamValues{{"BM", 1}}); });
  EXPECT_NE(msg.find("unknown identifier 'QQ'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column 6"), std::string::npos) << msg;
}

TEST(ExprEval, DefaultConstructedCannotBeEvaluated) {
  const Expr e;
  EXPECT_TRUE(e.text().empty());
  EXPECT_TRUE(e.identifiers().empty());
  EXPECT_THROW((void)e.eval(ParamValues{}), UsageError);
}

TEST(ExprParse, KeepsTextAndListsIdentifiers) {
  const Expr e = Expr::parse("BM/TM + min(BN, BM) * TN");
  EXPECT_EQ(e.text(), "BM/TM + min(BN, BM) * TN");
  EXPECT_EQ(e.identifiers(), (std::vector<std::string>{"BM", "BN", "TM", "TN"}));   // sorted, unique, no "min"
  EXPECT_TRUE(Expr::parse("1 + 2").identifiers().empty());
}

TEST(ExprParse, ErrorsNameTheColumn) {
  struct Case {
    std::string text;
    std::string column;
    std::string message;
  };
  const Case cases[] = {
      {"BM + * 2", "column 6", "expected a number"},
      {"(BM", "column 4", "expected ')'"},
      {"", "column 1", "empty expression"},
      {"   ", "column 4", "empty expression"},
      {"BM BN", "column 4", "unexpected 'BN'"},
      {"foo(1)", "column 1", "unknown function 'foo'"},
      {"min(1)", "column 1", "min takes 2 arguments, got 1"},
      {"pow2(1, 2)", "column 1", "pow2 takes 1 argument, got 2"},
      {"min(1 2)", "column 7", "expected ',' or ')'"},
      {"1 & 2", "column 3", "did you mean '&&'"},
      {"1 | 2", "column 3", "did you mean '||'"},
      {"A = 2", "column 3", "did you mean '=='"},
      {"3x", "column 2", "after a number"},
      {"99999999999999999999", "column 1", "too large"},
      {"1 < 2 < 3", "column 7", "unexpected '<'"},   // comparisons do not chain
      {"BM + $", "column 6", "found '$'"},
      {"2 *", "column 4", "expression ended"},
  };
  for (const Case& c : cases) {
    const std::string msg = parse_error(c.text);
    EXPECT_NE(msg.find("'" + c.text + "'"), std::string::npos) << c.text << " -> " << msg;
    EXPECT_NE(msg.find(c.column + ":"), std::string::npos) << c.text << " -> " << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.text << " -> " << msg;
  }
}

}  // namespace
}  // namespace cmt
