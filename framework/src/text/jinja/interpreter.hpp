#pragma once
// Executes a parsed template with Jinja2's semantics (as Hugging Face configures it: sandboxed,
// immutable containers, Undefined that fails on use, loop controls). Scopes: the render context at
// the bottom, one frame per for-loop iteration and per macro call on top; `set` writes the
// innermost frame. Limits bound time (steps), output size, and macro recursion.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.hpp"
#include "jinja/value.hpp"

namespace llaisys::text::jinja {

struct Limits {
  int64_t max_steps = 10'000'000;              // statements, expressions, loop iterations, items touched
  std::size_t max_output_bytes = 64u << 20;    // rendered text and any single string built
  int max_call_depth = 64;                     // nested macro calls
  int64_t max_range = 100'000;                 // range() length, as Jinja2's sandbox
};

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Frame> parent;
  const Value* find(std::string_view name) const;
  void set(const std::string& name, Value value);
};

class Interpreter {
 public:
  Interpreter(const Template& tmpl, std::shared_ptr<Frame> globals, Limits limits);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders with `context` as the template's variables. Throws jinja::Error.
  std::string render(std::shared_ptr<Frame> context);

  // ---- used by the built-ins ----
  Value call(const Value& callee, CallArgs& args, const SourceLocation& where);
  Value get_attr(const Value& object, std::string_view name, const SourceLocation& where);
  Value get_item(const Value& object, const Value& key, const SourceLocation& where);
  void step(const SourceLocation& where) { charge(1, where); }
  // Counts `units` of work against max_steps (loops, ranges and filters over big values cost more).
  void charge(int64_t units, const SourceLocation& where);
  // The work a built-in does over `v`: its items, or its length in 64-byte units.
  static int64_t cost_of(const Value& v);
  void check_size(std::size_t bytes, const SourceLocation& where) const;
  const Limits& limits() const { return limits_; }
  // Namespaces created during this render; emptied when the interpreter ends.
  void track_namespace(const std::shared_ptr<DictData>& data);

 private:
  enum class Flow { normal, break_, continue_ };
  Flow exec(const Body& body, std::string& out);
  Flow exec(const Stmt& stmt, std::string& out);
  void exec_for(const Stmt& stmt, std::string& out);
  void assign(const Target& target, Value value, const SourceLocation& where);
  Value define_macro(const Stmt& stmt);
  Value eval(const Expr& expr);
  Value eval_binary(const Expr& expr);
  Value eval_compare(const Expr& expr);
  Value eval_slice(const Expr& expr);
  CallArgs eval_args(const Expr& expr, std::size_t first_arg);
  Value lookup(const std::string& name) const;

  const Template& template_;
  std::shared_ptr<Frame> globals_;
  std::shared_ptr<Frame> frame_;
  Limits limits_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  std::vector<std::weak_ptr<DictData>> namespaces_;
};

// Checks that every filter and test the template names exists (Jinja2 fails at compile time).
void validate(const Template& tmpl);

// ---- built-ins (builtins.cpp) ----
Value apply_filter(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args,
                   const SourceLocation& where);
bool apply_test(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args,
                const SourceLocation& where);
bool has_filter(std::string_view name);
bool has_test(std::string_view name);
// A bound method for `object.name` when the object's Python type has that method, else nullopt.
std::optional<Value> bound_method(const Value& object, std::string_view name);
// Python operators (operators.cpp)
Value binary_op(Interpreter& in, std::string_view op, const Value& a, const Value& b, const SourceLocation& where);
bool contains(const Value& container, const Value& item, const SourceLocation& where);
// raise_exception, strftime_now, namespace, range, dict.
std::shared_ptr<Frame> make_globals(std::chrono::system_clock::time_point now);

}  // namespace llaisys::text::jinja
