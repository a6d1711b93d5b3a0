#include "jinja/parser.hpp"

#include <initializer_list>
#include <utility>

#include "jinja/expression_parser.hpp"

namespace llaisys::text::jinja {
namespace {

// Statements: {% if %}, {% for %}, {% set %} (and block set), {% macro %}, {% filter %},
// {% break %}/{% continue %}, HF's {% generation %}; text and {{ }} between them.
class Parser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  Template parse_template() {
    Template t;
    t.body = subparse({});
    if (current().type != TokenType::eof) error(fmt::format("unexpected '{}'", current().value));
    return t;
  }

 private:
  int loop_depth_ = 0;  // for bodies around the current statement (within its macro)

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
      // Jinja2 refuses these outside a loop at compile time; running them would cut the output.
      if (loop_depth_ == 0) fail("TemplateSyntaxError", fmt::format("'{}' outside of a loop", name), tag.where);
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
    ++loop_depth_;
    s->body = subparse({"endfor", "else"});
    --loop_depth_;  // a for's else runs after the loop: no break or continue there
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
    const int outer_loops = std::exchange(loop_depth_, 0);  // a macro body is not inside the caller's loop
    s->body = subparse({"endmacro"});
    loop_depth_ = outer_loops;
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

};

}  // namespace

Template parse(std::string_view source) { return Parser(tokenize(source)).parse_template(); }

}  // namespace llaisys::text::jinja
