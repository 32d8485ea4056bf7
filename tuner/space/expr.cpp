#include "space/expr.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <limits>

#include "core/error.hpp"

namespace cmt {

/// The tree's operators and node kinds: named, not file-local, because Expr::Node (declared in
/// expr.hpp) holds them.
namespace expr_tree {
enum class Op { neg, logical_not, mul, div, mod, add, sub, lt, le, gt, ge, eq, ne, logical_and, logical_or };
enum class Kind { number, ident, unary, binary, call };
}  // namespace expr_tree

namespace {

using expr_tree::Kind;
using expr_tree::Op;

/// Known functions and their argument counts.
struct FunctionSpec {
  const char* name;
  size_t arity;
};
constexpr FunctionSpec k_functions[] = {{"min", 2}, {"max", 2}, {"ceil_div", 2}, {"pow2", 1}};

const FunctionSpec* find_function(std::string_view name) {
  for (const auto& f : k_functions)
    if (name == f.name) return &f;
  return nullptr;
}

/// Parentheses, unary operators and operator chains nested deeper than this are refused. The
/// parser, the evaluator and the tree's destructor all recurse once per level, so without a bound
/// a long enough expression ("((((...", "----...1", "1+1+...+1") overflowed the stack.
/// Descriptors nest a handful of levels.
constexpr size_t k_max_depth = 200;

}  // namespace

struct Expr::Node {
  Kind kind = Kind::number;
  Op op = Op::add;                               // unary and binary
  int64_t number = 0;                            // number
  std::string name;                              // identifier or function name
  std::vector<std::shared_ptr<const Node>> args; // operands or call arguments
  size_t column = 1;                             // 1-based, for error messages
  size_t depth = 1;                              // levels of the tree below and including this node
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;

/// Recursive-descent parser over the grammar in expr.hpp; one instance per parse.
class Parser {
 public:
  explicit Parser(std::string_view text) : m_text(text) {}

  /// Parses the whole text or throws UsageError with a column.
  NodePtr parse_all() {
    skip_space();
    if (m_pos == m_text.size()) fail(m_pos, "empty expression");
    NodePtr root = parse_or();
    skip_space();
    if (m_pos != m_text.size()) fail(m_pos, fmt::format("unexpected '{}' after a complete expression{}", token_at(m_pos), hint(m_pos)));
    return root;
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    throw UsageError(fmt::format("bad expression '{}' at column {}: {}", printable(m_text), pos + 1, printable(message)));
  }

  [[noreturn]] void too_deep(size_t pos) const {
    fail(pos, fmt::format("nested more than {} levels deep (parentheses, unary operators, or a chain of binary "
                          "operators, which nest left to right)", k_max_depth));
  }

  /// Sets a new node's depth from its operands', refusing a tree deeper than k_max_depth.
  void set_depth(Expr::Node& node) const {
    size_t below = 0;
    for (const auto& arg : node.args) below = std::max(below, arg->depth);
    node.depth = below + 1;
    if (node.depth > k_max_depth) too_deep(node.column - 1);
  }

  void skip_space() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }

  /// Consumes op (after whitespace) if it is next; a one-character op must not be the start of a longer one.
  bool accept(std::string_view op) {
    skip_space();
    if (m_text.substr(m_pos, op.size()) != op) return false;
    if (op.size() == 1 && m_pos + 1 < m_text.size()) {
      const char next = m_text[m_pos + 1];
      // "<" must not eat the start of "<=", "!" must not eat "!=", and so on.
      if ((op == "<" || op == ">" || op == "!" || op == "=") && next == '=') return false;
    }
    m_pos += op.size();
    return true;
  }

  /// " (did you mean '&&'?)" for the single-character spellings of C's two-character operators.
  std::string hint(size_t pos) const {
    const char c = m_text[pos];
    const bool doubled = pos + 1 < m_text.size() && m_text[pos + 1] == c;
    if ((c == '&' || c == '|' || c == '=') && !doubled) return fmt::format(" (did you mean '{}{}'?)", c, c);
    return "";
  }

  /// A short spelling of whatever starts at pos, for messages.
  std::string token_at(size_t pos) const {
    if (pos >= m_text.size()) return "end of expression";
    const char c = m_text[pos];
    size_t end = pos + 1;
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      while (end < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[end])) || m_text[end] == '_')) ++end;
    }
    return std::string(m_text.substr(pos, end - pos));
  }

  NodePtr make_binary(Op op, NodePtr lhs, NodePtr rhs, size_t pos) const {
    auto node = std::make_shared<Expr::Node>();
    node->kind = Kind::binary;
    node->op = op;
    node->column = pos + 1;
    node->args = {std::move(lhs), std::move(rhs)};
    set_depth(*node);
    return node;
  }

  NodePtr parse_or() {
    NodePtr lhs = parse_and();
    for (;;) {
      const size_t at = (skip_space(), m_pos);
      if (!accept("||")) return lhs;
      lhs = make_binary(Op::logical_or, lhs, parse_and(), at);
    }
  }

  NodePtr parse_and() {
    NodePtr lhs = parse_cmp();
    for (;;) {
      const size_t at = (skip_space(), m_pos);
      if (!accept("&&")) return lhs;
      lhs = make_binary(Op::logical_and, lhs, parse_cmp(), at);
    }
  }

  NodePtr parse_cmp() {
    NodePtr lhs = parse_sum();
    const size_t at = (skip_space(), m_pos);
    // Two-character operators first so "<=" is not read as "<".
    static constexpr std::pair<std::string_view, Op> k_ops[] = {
        {"==", Op::eq}, {"!=", Op::ne}, {"<=", Op::le}, {">=", Op::ge}, {"<", Op::lt}, {">", Op::gt}};
    for (const auto& [spelling, op] : k_ops)
      if (accept(spelling)) return make_binary(op, lhs, parse_sum(), at);
    return lhs;
  }

  NodePtr parse_sum() {
    NodePtr lhs = parse_prod();
    for (;;) {
      const size_t at = (skip_space(), m_pos);
      if (accept("+")) {
        lhs = make_binary(Op::add, lhs, parse_prod(), at);
      } else if (accept("-")) {
        lhs = make_binary(Op::sub, lhs, parse_prod(), at);
      } else {
        return lhs;
      }
    }
  }

  NodePtr parse_prod() {
    NodePtr lhs = parse_unary();
    for (;;) {
      const size_t at = (skip_space(), m_pos);
      if (accept("*")) {
        lhs = make_binary(Op::mul, lhs, parse_unary(), at);
      } else if (accept("/")) {
        lhs = make_binary(Op::div, lhs, parse_unary(), at);
      } else if (accept("%")) {
        lhs = make_binary(Op::mod, lhs, parse_unary(), at);
      } else {
        return lhs;
      }
    }
  }

  NodePtr parse_unary() {
    const size_t at = (skip_space(), m_pos);
    // Every level of recursion (a parenthesis, a call's arguments, a unary operator) passes here.
    if (++m_nesting > k_max_depth) too_deep(at);
    struct Leave {
      size_t& nesting;
      ~Leave() { --nesting; }
    } leave{m_nesting};
    Op op;
    if (accept("-")) {
      op = Op::neg;
    } else if (accept("!")) {
      op = Op::logical_not;
    } else {
      return parse_primary();
    }
    auto node = std::make_shared<Expr::Node>();
    node->kind = Kind::unary;
    node->op = op;
    node->column = at + 1;
    node->args = {parse_unary()};
    set_depth(*node);
    return node;
  }

  NodePtr parse_primary() {
    skip_space();
    const size_t at = m_pos;
    if (at >= m_text.size()) fail(at, "expected a number, a parameter name or '(' but the expression ended");
    const char c = m_text[at];
    auto node = std::make_shared<Expr::Node>();
    node->column = at + 1;

    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos]))) {
        const int digit = m_text[m_pos] - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail(at, "integer literal is too large");
        value = value * 10 + digit;
        ++m_pos;
      }
      if (m_pos < m_text.size() && (std::isalpha(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
        fail(m_pos, fmt::format("unexpected '{}' after a number", token_at(m_pos)));
      node->kind = Kind::number;
      node->number = value;
      return node;
    }

    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
        ++m_pos;
      node->name = std::string(m_text.substr(at, m_pos - at));
      skip_space();
      if (m_pos < m_text.size() && m_text[m_pos] == '(') {
        const FunctionSpec* spec = find_function(node->name);
        if (!spec) fail(at, fmt::format("unknown function '{}' (known: min, max, ceil_div, pow2)", node->name));
        ++m_pos;
        node->kind = Kind::call;
        node->args.push_back(parse_or());
        while (accept(",")) node->args.push_back(parse_or());
        skip_space();
        if (!accept(")")) fail(m_pos, fmt::format("expected ',' or ')' in the arguments of {}, found '{}'", node->name, token_at(m_pos)));
        if (node->args.size() != spec->arity)
          fail(at, fmt::format("{} takes {} argument{}, got {}", spec->name, spec->arity, spec->arity == 1 ? "" : "s",
                               node->args.size()));
        set_depth(*node);
        return node;
      }
      node->kind = Kind::ident;
      return node;
    }

    if (c == '(') {
      ++m_pos;
      NodePtr inner = parse_or();
      skip_space();
      if (!accept(")")) fail(m_pos, fmt::format("expected ')' to close the '(' at column {}, found '{}'", at + 1, token_at(m_pos)));
      return inner;
    }

    fail(at, fmt::format("expected a number, a parameter name or '(', found '{}'{}", token_at(at), hint(at)));
  }

  std::string_view m_text;
  size_t m_pos = 0;
  size_t m_nesting = 0;   // parse_unary calls in progress
};

/// Evaluates a tree; errors name the whole expression and the column of the failing part.
class Evaluator {
 public:
  Evaluator(const std::string& text, const ExprLookup& lookup) : m_text(text), m_lookup(lookup) {}

  int64_t eval(const Expr::Node& node) const {
    switch (node.kind) {
      case Kind::number:
        return node.number;
      case Kind::ident: {
        const std::optional<int64_t> value = m_lookup(node.name);
        if (!value) fail(node, fmt::format("unknown identifier '{}'", node.name));
        return *value;
      }
      case Kind::unary: {
        const int64_t v = eval(*node.args[0]);
        return node.op == Op::neg ? sub(node, 0, v) : static_cast<int64_t>(v == 0);
      }
      case Kind::binary:
        return eval_binary(node);
      case Kind::call:
        return eval_call(node);
    }
    return 0;
  }

 private:
  [[noreturn]] void fail(const Expr::Node& node, const std::string& message) const {
    throw UsageError(fmt::format("expression '{}' at column {}: {}", printable(m_text), node.column, printable(message)));
  }

  // A result outside int64 is an error, not a wrapped value: wrapped, a product of large
  // parameters could come out small and pass a constraint such as "BM*BN*BK*4 <= limit". (And
  // signed overflow in C++ itself is undefined behaviour.)
  [[noreturn]] void overflow(const Expr::Node& node, int64_t a, std::string_view op, int64_t b) const {
    fail(node, fmt::format("{} {} {} overflows a 64-bit integer", a, op, b));
  }

  int64_t add(const Expr::Node& node, int64_t a, int64_t b) const {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) overflow(node, a, "+", b);
    return r;
  }
  int64_t sub(const Expr::Node& node, int64_t a, int64_t b) const {
    int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) overflow(node, a, "-", b);
    return r;
  }
  int64_t mul(const Expr::Node& node, int64_t a, int64_t b) const {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) overflow(node, a, "*", b);
    return r;
  }

  int64_t divide(const Expr::Node& node, int64_t a, int64_t b, bool modulo) const {
    if (b == 0) fail(node, modulo ? "modulo by zero" : "division by zero");
    // INT64_MIN / -1 does not fit (and traps on x86); INT64_MIN % -1 is 0, but C++ leaves it undefined.
    if (b == -1) return modulo ? 0 : sub(node, 0, a);
    return modulo ? a % b : a / b;
  }

  int64_t eval_binary(const Expr::Node& node) const {
    const int64_t a = eval(*node.args[0]);
    // && and || short-circuit like C, so "TM > 0 && BM % TM == 0" is safe.
    if (node.op == Op::logical_and) return a != 0 && eval(*node.args[1]) != 0;
    if (node.op == Op::logical_or) return a != 0 || eval(*node.args[1]) != 0;
    const int64_t b = eval(*node.args[1]);
    switch (node.op) {
      case Op::mul: return mul(node, a, b);
      case Op::div: return divide(node, a, b, false);
      case Op::mod: return divide(node, a, b, true);
      case Op::add: return add(node, a, b);
      case Op::sub: return sub(node, a, b);
      case Op::lt: return a < b;
      case Op::le: return a <= b;
      case Op::gt: return a > b;
      case Op::ge: return a >= b;
      case Op::eq: return a == b;
      case Op::ne: return a != b;
      default: return 0;
    }
  }

  int64_t eval_call(const Expr::Node& node) const {
    const int64_t a = eval(*node.args[0]);
    if (node.name == "pow2") return a > 0 && (a & (a - 1)) == 0;
    const int64_t b = eval(*node.args[1]);
    if (node.name == "min") return std::min(a, b);
    if (node.name == "max") return std::max(a, b);
    // ceil_div: the mathematical ceiling of a/b, built on C's truncating division.
    if (b == 0) fail(node, "division by zero in ceil_div");
    const int64_t q = divide(node, a, b, false);
    const bool inexact = b != -1 && a % b != 0;
    return inexact && ((a < 0) == (b < 0)) ? q + 1 : q;   // |q| <= 2^62 here, so q + 1 fits
  }

  const std::string& m_text;
  const ExprLookup& m_lookup;
};

void collect_identifiers(const Expr::Node& node, std::vector<std::string>& out) {
  if (node.kind == Kind::ident) out.push_back(node.name);
  for (const auto& arg : node.args) collect_identifiers(*arg, out);
}

}  // namespace

Expr::Expr() = default;

Expr Expr::parse(std::string_view text) {
  Expr expr;
  expr.m_text = std::string(text);
  expr.m_root = Parser(expr.m_text).parse_all();
  return expr;
}

int64_t Expr::eval(const ExprLookup& lookup) const {
  if (!m_root) throw UsageError("cannot evaluate an empty expression");
  return Evaluator(m_text, lookup).eval(*m_root);
}

int64_t Expr::eval(const ParamValues& values) const {
  return eval([&values](std::string_view name) { return find_param(values, name); });
}

std::vector<std::string> Expr::identifiers() const {
  std::vector<std::string> out;
  if (m_root) collect_identifiers(*m_root, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace cmt
