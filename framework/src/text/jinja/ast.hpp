#pragma once
// The syntax tree of a parsed template: expressions and statements, each with its source location.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.hpp"

namespace llaisys::text::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  literal,    // literal
  name,       // name
  list,       // children: elements
  tuple,      // children: elements
  dict,       // children: key, value, key, value...
  getattr,    // children[0].name
  getitem,    // children[0][children[1]]
  slice,      // children[0][start:stop:step], absent parts null
  call,       // children[0](children[1..], kwargs, *dyn_args, **dyn_kwargs)
  filter,     // name: filter; children[0] operand (null inside {% filter %}), children[1..] args
  test,       // name: test; children[0] operand, children[1..] args
  not_,       // not children[0]
  neg,        // -children[0]
  pos,        // +children[0]
  binary,     // name: + - * / // % ** ~ ; children[0], children[1]
  compare,    // children[0] ops[0] children[1] ops[1] children[2]...
  and_,
  or_,
  condexpr,   // children[0] if children[1] else children[2] (may be null)
};

struct Expr {
  ExprKind kind = ExprKind::literal;
  SourceLocation where;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::string> ops;  // compare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args;
  ExprPtr dyn_kwargs;
};

enum class StmtKind : uint8_t { text, output, if_, for_, set, set_block, macro, filter_block, break_, continue_ };

// Assignment targets: a name, a namespace attribute (ns.attr), or a tuple of names.
struct Target {
  std::vector<std::string> names;  // one name, or several for tuple unpacking
  std::string attribute;           // set ns.attribute: names[0] is the namespace
  bool is_tuple = false;
};

struct Stmt {
  StmtKind kind = StmtKind::text;
  SourceLocation where;
  std::string text;                                // text
  ExprPtr expr;                                    // output / set value / for iterable / filter chain
  std::vector<std::pair<ExprPtr, Body>> branches;  // if / elif
  Body body;                                       // for, set_block, macro, filter_block
  Body else_body;                                  // if else, for else
  Target target;                                   // for, set, set_block
  ExprPtr condition;                               // for ... if condition
  // macro
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;                   // per param, null when required
};

struct Template {
  Body body;
};

}  // namespace llaisys::text::jinja
