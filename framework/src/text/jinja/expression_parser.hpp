#pragma once
// The expression half of the Jinja parser: the token stream and Jinja2's expression grammar with
// its operator precedence (or < and < not < comparisons < + - < ~ < * / // % < ** < unary <
// filters/tests < postfix). The statement parser (parser.cpp) builds on it.

#include <charconv>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.hpp"
#include "jinja/lexer.hpp"
#include "jinja/parser.hpp"

namespace llaisys::text::jinja {

class ExpressionParser {
 public:
  explicit ExpressionParser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

 protected:
  // ---- token stream ----
  const Token& current() const { return tokens_[index_]; }
  const Token& peek(std::size_t ahead = 1) const {
    return tokens_[std::min(index_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return t;
  }
  bool is_op(std::string_view op) const { return current().type == TokenType::op && current().value == op; }
  bool is_name(std::string_view name) const { return current().type == TokenType::name && current().value == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void error(const std::string& message) const { fail("TemplateSyntaxError", message, current().where); }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case TokenType::eof: return "end of template";
      case TokenType::block_end: return "end of statement block";
      case TokenType::var_end: return "end of print statement";
      case TokenType::string: return "string";
      default: return "'" + t.value + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) error(fmt::format("expected '{}', got {}", op, describe(current())));
  }
  std::string expect_name() {
    if (current().type != TokenType::name) error(fmt::format("expected a name, got {}", describe(current())));
    return next().value;
  }
  void expect_block_end() {
    if (current().type != TokenType::block_end) error(fmt::format("expected end of statement block, got {}", describe(current())));
    next();
  }

  // Every recursive descent step passes through here: deep nesting is an error, not a crash.
  struct DepthGuard {
    ExpressionParser& parser;
    explicit DepthGuard(ExpressionParser& p) : parser(p) {
      if (++parser.depth_ > kMaxNesting) parser.error(fmt::format("template nested deeper than {} levels", kMaxNesting));
    }
    ~DepthGuard() { --parser.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
  };

  ExprPtr make(ExprKind kind, SourceLocation where) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->where = where;
    return e;
  }

  // ---- expressions ----
  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    const Token& t = current();
    if (t.type == TokenType::var_end || t.type == TokenType::block_end || t.type == TokenType::eof) return true;
    if (t.type == TokenType::op && t.value == ")") return true;
    for (std::string_view e : extra_end) {
      if (t.type == TokenType::name && t.value == e) return true;
    }
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                      bool explicit_parentheses = false) {
    DepthGuard guard(*this);
    const SourceLocation where = current().where;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) error(fmt::format("expected an expression, got {}", describe(current())));
    }
    auto e = make(ExprKind::tuple, where);
    e->children = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    ExprPtr expr = parse_or();
    if (!with_condexpr) return expr;
    while (is_name("if")) {
      const SourceLocation where = next().where;
      ExprPtr test = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_expression(true);
      auto e = make(ExprKind::condexpr, where);
      e->children.push_back(std::move(expr));
      e->children.push_back(std::move(test));
      e->children.push_back(std::move(otherwise));
      expr = std::move(e);
    }
    return expr;
  }

  ExprPtr binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, SourceLocation where) {
    auto e = make(kind, where);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const SourceLocation where = next().where;
      left = binary(ExprKind::or_, "or", std::move(left), parse_and(), where);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const SourceLocation where = next().where;
      left = binary(ExprKind::and_, "and", std::move(left), parse_not(), where);
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      auto e = make(ExprKind::not_, next().where);
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const SourceLocation where = current().where;
    ExprPtr first = parse_math1();
    std::unique_ptr<Expr> e;
    while (true) {
      std::string op;
      if (current().type == TokenType::op &&
          (current().value == "==" || current().value == "!=" || current().value == "<" || current().value == "<=" ||
           current().value == ">" || current().value == ">=")) {
        op = next().value;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().type == TokenType::name && peek().value == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!e) {
        e = make(ExprKind::compare, where);
        e->children.push_back(std::move(first));
      }
      e->ops.push_back(op);
      e->children.push_back(parse_math1());
    }
    return e ? std::move(e) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      left = binary(ExprKind::binary, t.value, std::move(left), parse_concat(), t.where);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const Token& t = next();
      left = binary(ExprKind::binary, "~", std::move(left), parse_math2(), t.where);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      left = binary(ExprKind::binary, t.value, std::move(left), parse_pow(), t.where);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token& t = next();
      left = binary(ExprKind::binary, "**", std::move(left), parse_unary(true), t.where);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      node = make(t.value == "-" ? ExprKind::neg : ExprKind::pos, t.where);
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = current();
    switch (t.type) {
      case TokenType::name: {
        next();
        auto e = make(ExprKind::literal, t.where);
        if (t.value == "true" || t.value == "True") {
          e->literal = Value::boolean(true);
        } else if (t.value == "false" || t.value == "False") {
          e->literal = Value::boolean(false);
        } else if (t.value == "none" || t.value == "None") {
          e->literal = Value::none();
        } else {
          e->kind = ExprKind::name;
          e->name = t.value;
        }
        return e;
      }
      case TokenType::string: {
        auto e = make(ExprKind::literal, t.where);
        std::string value;
        while (current().type == TokenType::string) value += next().value;
        e->literal = Value::string(std::move(value));
        return e;
      }
      case TokenType::integer: {
        next();
        auto e = make(ExprKind::literal, t.where);
        int64_t value = 0;
        const auto result = std::from_chars(t.value.data(), t.value.data() + t.value.size(), value);
        if (result.ec != std::errc()) {
          e->literal = Value::floating(std::strtod(t.value.c_str(), nullptr));  // beyond int64: approximate
        } else {
          e->literal = Value::integer(value);
        }
        return e;
      }
      case TokenType::floating: {
        next();
        auto e = make(ExprKind::literal, t.where);
        e->literal = Value::floating(std::strtod(t.value.c_str(), nullptr));
        return e;
      }
      case TokenType::op:
        if (t.value == "(") {
          next();
          ExprPtr inner = parse_tuple(true, {}, true);
          expect_op(")");
          return inner;
        }
        if (t.value == "[") {
          next();
          auto e = make(ExprKind::list, t.where);
          while (!is_op("]")) {
            if (!e->children.empty()) expect_op(",");
            if (is_op("]")) break;
            e->children.push_back(parse_expression(true));
          }
          next();
          return e;
        }
        if (t.value == "{") {
          next();
          auto e = make(ExprKind::dict, t.where);
          while (!is_op("}")) {
            if (!e->children.empty()) expect_op(",");
            if (is_op("}")) break;
            e->children.push_back(parse_expression(true));
            expect_op(":");
            e->children.push_back(parse_expression(true));
          }
          next();
          return e;
        }
        break;
      default: break;
    }
    error(fmt::format("unexpected {}", describe(t)));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const SourceLocation where = next().where;
        if (current().type == TokenType::name) {
          auto e = make(ExprKind::getattr, where);
          e->name = next().value;
          e->children.push_back(std::move(node));
          node = std::move(e);
        } else if (current().type == TokenType::integer) {
          auto e = make(ExprKind::getitem, where);
          auto index = make(ExprKind::literal, current().where);
          const std::string& digits = next().value;
          int64_t value = 0;
          const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
          if (result.ec != std::errc()) fail("TemplateSyntaxError", "integer index out of range", index->where);
          index->literal = Value::integer(value);
          e->children.push_back(std::move(node));
          e->children.push_back(std::move(index));
          node = std::move(e);
        } else {
          error(fmt::format("expected a name after '.', got {}", describe(current())));
        }
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(*this);
    const SourceLocation where = next().where;  // '['
    ExprPtr parts[3];
    bool is_slice = false;
    if (!is_op(":")) parts[0] = parse_expression(true);
    if (skip_op(":")) {
      is_slice = true;
      if (!is_op("]") && !is_op(":")) parts[1] = parse_expression(true);
      if (skip_op(":")) {
        if (!is_op("]")) parts[2] = parse_expression(true);
      }
    }
    expect_op("]");
    auto e = make(is_slice ? ExprKind::slice : ExprKind::getitem, where);
    e->children.push_back(std::move(node));
    if (is_slice) {
      for (auto& p : parts) e->children.push_back(std::move(p));
    } else {
      if (!parts[0]) error("expected a subscript");
      e->children.push_back(std::move(parts[0]));
    }
    return e;
  }

  // Arguments of a call, filter or test: positional, name=value, *args, **kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (skip_op("*")) {
        e.dyn_args = parse_expression(true);
      } else if (skip_op("**")) {
        e.dyn_kwargs = parse_expression(true);
      } else if (current().type == TokenType::name && peek().type == TokenType::op && peek().value == "=") {
        std::string key = next().value;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty() || e.dyn_args || e.dyn_kwargs) error("invalid syntax for function call expression");
        e.children.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr node) {
    DepthGuard guard(*this);
    auto e = make(ExprKind::call, node->where);  // errors point at the callee
    e->children.push_back(std::move(node));
    parse_call_args(*e);
    return e;
  }

  // `| name(args)` chains; with start_inline the first filter has no leading '|'.
  ExprPtr parse_filters(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      auto e = make(ExprKind::filter, current().where);
      e->name = expect_name();
      while (is_op(".")) {
        next();
        e->name += '.';
        e->name += expect_name();
      }
      e->children.push_back(std::move(node));
      if (is_op("(")) parse_call_args(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filters(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_test(ExprPtr node) {
    const SourceLocation where = next().where;  // 'is'
    const bool negated = skip_name("not");
    auto e = make(ExprKind::test, where);
    e->name = expect_name();
    while (is_op(".")) {
      next();
      e->name += '.';
        e->name += expect_name();
    }
    e->children.push_back(std::move(node));
    const Token& t = current();
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((t.type == TokenType::name || t.type == TokenType::string || t.type == TokenType::integer ||
                t.type == TokenType::floating || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) error("you cannot chain multiple tests with is");
      e->children.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return e;
    auto n = make(ExprKind::not_, where);
    n->children.push_back(std::move(e));
    return n;
  }

  std::vector<Token> tokens_;
  std::size_t index_ = 0;
  int depth_ = 0;
};

}  // namespace llaisys::text::jinja
