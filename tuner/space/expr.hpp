// Integer expressions over named template parameters, used by descriptors for constraints,
// launch shapes and requirements. Grammar (C precedence):
//   expr   := or ;  or := and ('||' and)* ;  and := cmp ('&&' cmp)*
//   cmp    := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum    := prod (('+'|'-') prod)* ;  prod := unary (('*'|'/'|'%') unary)*
//   unary  := ('-'|'!') unary | primary
//   primary:= INTEGER | IDENT | IDENT '(' expr (',' expr)* ')' | '(' expr ')'
// Functions: min(a,b), max(a,b), ceil_div(a,b), pow2(a) (1 if a is a power of two, else 0).
// Division and modulo truncate like C; dividing by zero is an error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace cmt {

/// Resolves an identifier to its value, or nullopt if unknown.
using ExprLookup = std::function<std::optional<int64_t>(std::string_view)>;

class Expr {
 public:
  struct Node;

  Expr();
  /// Parses text; throws UsageError("... at column C: message").
  static Expr parse(std::string_view text);

  /// Evaluates; throws UsageError on an unknown identifier, division by zero, or a result outside
  /// int64 (naming the operator and its operands).
  int64_t eval(const ExprLookup& lookup) const;
  /// Evaluates with identifiers taken from parameter values.
  int64_t eval(const ParamValues& values) const;

  /// The source text, as written.
  const std::string& text() const { return m_text; }
  /// Identifiers used (not function names), sorted, unique.
  std::vector<std::string> identifiers() const;

 private:
  std::string m_text;
  std::shared_ptr<const Node> m_root;
};

}  // namespace cmt
