#include "jinja/parser.hpp"

#include <charconv>
#include <initializer_list>

#include "jinja/lexer.hpp"

namespace llaisys::text::jinja {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Template parse_template() {
    Template t;
    t.body = subparse({});
    if (current().type != TokenType::eof) error(fmt::format("unexpected '{}'", current().value));
    return t;
  }

 private:
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
    Parser& parser;
    explicit DepthGuard(Parser& p) : parser(p) {
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

  // ---- statements ----
  // Parses until a {% name %} with name in `end_names` (left unconsumed: current() is that name).
  Body subparse(std::initializer_list<std::string_view> end_names) {
    DepthGuard guard(*this);
    Body body;
    while (current().type != TokenType::eof) {
      const Token& t = current();
      if (t.type == TokenType::data) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::text;
        s->where = t.where;
        s->text = t.value;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokenType::var_begin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::output;
        s->where = t.where;
        next();
        s->expr = parse_tuple(true, {});
        if (current().type != TokenType::var_end) error(fmt::format("expected end of print statement, got {}", describe(current())));
        next();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::block_begin) {
        next();
        if (current().type == TokenType::name) {
          for (std::string_view end : end_names) {
            if (current().value == end) return body;
          }
        }
        body.push_back(parse_statement());
      } else {
        error(fmt::format("unexpected {}", describe(t)));
      }
    }
    if (end_names.size() > 0) {
      error(fmt::format("unexpected end of template: expected '{}'", *end_names.begin() == "else" || *end_names.begin() == "elif"
                                                                        ? *(end_names.end() - 1)
                                                                        : *end_names.begin()));
    }
    return body;
  }

  StmtPtr parse_statement() {
    if (current().type != TokenType::name) error(fmt::format("expected a tag name, got {}", describe(current())));
    const Token& tag = current();
    const std::string name = tag.value;
    auto s = std::make_unique<Stmt>();
    s->where = tag.where;
    next();
    if (name == "if") return parse_if(std::move(s));
    if (name == "for") return parse_for(std::move(s));
    if (name == "set") return parse_set(std::move(s));
    if (name == "macro") return parse_macro(std::move(s));
    if (name == "filter") return parse_filter_block(std::move(s));
    if (name == "generation") {  // Hugging Face's AssistantTracker extension: renders its body
      expect_block_end();
      s->kind = StmtKind::if_;
      auto always = make(ExprKind::literal, s->where);
      always->literal = Value::boolean(true);
      Body body = subparse({"endgeneration"});
      next();
      expect_block_end();
      s->branches.emplace_back(std::move(always), std::move(body));
      return s;
    }
    if (name == "break" || name == "continue") {
      s->kind = name == "break" ? StmtKind::break_ : StmtKind::continue_;
      expect_block_end();
      return s;
    }
    if (name.starts_with("end") || name == "else" || name == "elif") {
      fail("TemplateSyntaxError", fmt::format("unexpected '{}'", name), tag.where);
    }
    fail("TemplateSyntaxError", fmt::format("encountered unknown tag '{}'", name), tag.where);
  }

  StmtPtr parse_if(StmtPtr s) {
    s->kind = StmtKind::if_;
    while (true) {
      ExprPtr test = parse_tuple(false, {});
      expect_block_end();
      Body body = subparse({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(test), std::move(body));
      const std::string tag = next().value;
      if (tag == "elif") continue;
      if (tag == "else") {
        expect_block_end();
        s->else_body = subparse({"endif"});
        next();
      }
      expect_block_end();
      return s;
    }
  }

  Target parse_assign_target(bool with_namespace, std::initializer_list<std::string_view> extra_end) {
    Target target;
    if (with_namespace && current().type == TokenType::name && peek().type == TokenType::op && peek().value == ".") {
      target.names.push_back(next().value);
      next();
      target.attribute = expect_name();
      return target;
    }
    const bool parenthesized = skip_op("(");
    while (true) {
      target.names.push_back(expect_name());
      if (!skip_op(",")) break;
      target.is_tuple = true;
      if (current().type != TokenType::name) break;
      bool end = false;
      for (std::string_view e : extra_end) end |= is_name(e);
      if (end) break;
    }
    if (parenthesized) {
      expect_op(")");
      target.is_tuple = true;
    }
    for (const std::string& n : target.names) {
      if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None") {
        error(fmt::format("cannot assign to '{}'", n));
      }
    }
    return target;
  }

  StmtPtr parse_for(StmtPtr s) {
    s->kind = StmtKind::for_;
    s->target = parse_assign_target(false, {"in"});
    if (!skip_name("in")) error(fmt::format("expected 'in', got {}", describe(current())));
    s->expr = parse_tuple(false, {"recursive"});
    if (skip_name("if")) s->condition = parse_expression(true);
    if (skip_name("recursive")) error("recursive loops are not supported");
    expect_block_end();
    s->body = subparse({"endfor", "else"});
    if (next().value == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"});
      next();
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(StmtPtr s) {
    s->target = parse_assign_target(true, {});
    if (skip_op("=")) {
      s->kind = StmtKind::set;
      s->expr = parse_tuple(true, {});
      expect_block_end();
      return s;
    }
    s->kind = StmtKind::set_block;
    if (is_op("|")) s->expr = parse_filters(nullptr, false);
    expect_block_end();
    s->body = subparse({"endset"});
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(StmtPtr s) {
    s->kind = StmtKind::macro;
    s->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (is_op(")")) break;
      s->params.push_back(expect_name());
      if (skip_op("=")) {
        s->defaults.push_back(parse_expression(true));
      } else {
        if (!s->defaults.empty() && s->defaults.back()) error("non-default argument follows default argument");
        s->defaults.push_back(nullptr);
      }
    }
    next();
    expect_block_end();
    s->body = subparse({"endmacro"});
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(StmtPtr s) {
    s->kind = StmtKind::filter_block;
    s->expr = parse_filters(nullptr, true);
    expect_block_end();
    s->body = subparse({"endfilter"});
    next();
    expect_block_end();
    return s;
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
          index->literal = Value::integer(std::stoll(next().value));
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
        e->name += "." + expect_name();
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
      e->name += "." + expect_name();
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

}  // namespace

Template parse(std::string_view source) { return Parser(tokenize(source)).parse_template(); }

}  // namespace llaisys::text::jinja
