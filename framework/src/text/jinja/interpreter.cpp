#include "jinja/interpreter.hpp"

#include <algorithm>

#include "utf8.hpp"

namespace llaisys::text::jinja {

// ---- frames -----------------------------------------------------------------------------------

const Value* Frame::find(std::string_view name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent.get()) {
    for (const auto& [k, v] : f->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Frame::set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

// ---- interpreter ------------------------------------------------------------------------------

Interpreter::Interpreter(const Template& tmpl, std::shared_ptr<Frame> globals, Limits limits)
    : template_(tmpl), globals_(std::move(globals)), limits_(limits) {}

Interpreter::~Interpreter() {
  // A namespace may hold itself (set ns.me = ns); emptying them all breaks such cycles.
  for (const auto& weak : namespaces_) {
    if (auto data = weak.lock()) data->entries.clear();
  }
}

void Interpreter::track_namespace(const std::shared_ptr<DictData>& data) { namespaces_.push_back(data); }

std::string Interpreter::render(std::shared_ptr<Frame> context) {
  context->parent = globals_;
  frame_ = std::move(context);
  std::string out;
  exec(template_.body, out);
  return out;
}

int64_t Interpreter::cost_of(const Value& v) {
  if (v.is_list()) return static_cast<int64_t>(v.items().size());
  if (v.is_dict() || v.is_ns()) return static_cast<int64_t>(v.dict_data().entries.size());
  if (v.is_string()) return static_cast<int64_t>(v.str().size() / 64);
  return 0;
}

void Interpreter::charge(int64_t units, const SourceLocation& where) {
  steps_ += units;
  if (steps_ > limits_.max_steps) {
    fail("LimitError", fmt::format("template ran more than {} steps", limits_.max_steps), where);
  }
}

void Interpreter::check_size(std::size_t bytes, const SourceLocation& where) const {
  if (bytes > limits_.max_output_bytes) {
    fail("LimitError", fmt::format("template output exceeds {} bytes", limits_.max_output_bytes), where);
  }
}

Value Interpreter::lookup(const std::string& name) const {
  if (const Value* v = frame_->find(name)) return *v;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

Interpreter::Flow Interpreter::exec(const Body& body, std::string& out) {
  for (const StmtPtr& stmt : body) {
    const Flow flow = exec(*stmt, out);
    if (flow != Flow::normal) return flow;
  }
  return Flow::normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, std::string& out) {
  step(stmt.where);
  switch (stmt.kind) {
    case StmtKind::text: out += stmt.text; break;
    case StmtKind::output: {
      const Value v = eval(*stmt.expr);
      if (v.is_string()) {
        out += v.str();
      } else {
        out += to_str(v);
      }
      break;
    }
    case StmtKind::if_:
      for (const auto& [test, body] : stmt.branches) {
        if (eval(*test).truthy()) return exec(body, out);
      }
      return exec(stmt.else_body, out);
    case StmtKind::for_: exec_for(stmt, out); break;
    case StmtKind::set: assign(stmt.target, eval(*stmt.expr), stmt.where); break;
    case StmtKind::set_block: {
      std::string captured;
      exec(stmt.body, captured);
      Value value = Value::string(std::move(captured));
      if (stmt.expr) {
        // The filter chain was parsed with a null innermost operand: apply it from the inside out.
        std::vector<const Expr*> chain;
        for (const Expr* e = stmt.expr.get(); e != nullptr; e = e->children[0].get()) chain.push_back(e);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          CallArgs args = eval_args(**it, 1);
          value = apply_filter(*this, (*it)->name, value, args, (*it)->where);
        }
      }
      assign(stmt.target, std::move(value), stmt.where);
      break;
    }
    case StmtKind::macro: frame_->set(stmt.name, define_macro(stmt)); break;
    case StmtKind::filter_block: {
      std::string captured;
      exec(stmt.body, captured);
      Value value = Value::string(std::move(captured));
      std::vector<const Expr*> chain;
      for (const Expr* e = stmt.expr.get(); e != nullptr; e = e->children[0].get()) chain.push_back(e);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        CallArgs args = eval_args(**it, 1);
        value = apply_filter(*this, (*it)->name, value, args, (*it)->where);
      }
      out += to_str(value);
      break;
    }
    case StmtKind::break_: return Flow::break_;
    case StmtKind::continue_: return Flow::continue_;
  }
  check_size(out.size(), stmt.where);
  return Flow::normal;
}

void Interpreter::assign(const Target& target, Value value, const SourceLocation& where) {
  if (!target.attribute.empty()) {
    const Value holder = lookup(target.names[0]);
    if (!holder.is_ns()) fail("TemplateRuntimeError", "cannot assign attribute on non-namespace object", where);
    holder.ns_data().set(Value::string(target.attribute), std::move(value));
    return;
  }
  if (!target.is_tuple) {
    frame_->set(target.names[0], std::move(value));
    return;
  }
  const std::vector<Value> items = iterate(value, where);
  if (items.size() != target.names.size()) {
    fail("ValueError",
         items.size() > target.names.size()
             ? fmt::format("too many values to unpack (expected {})", target.names.size())
             : fmt::format("not enough values to unpack (expected {}, got {})", target.names.size(), items.size()),
         where);
  }
  for (std::size_t i = 0; i < items.size(); ++i) frame_->set(target.names[i], items[i]);
}

void Interpreter::exec_for(const Stmt& stmt, std::string& out) {
  const Value iterable = eval(*stmt.expr);
  std::vector<Value> items = iterate(iterable, stmt.expr->where);
  charge(static_cast<int64_t>(items.size()), stmt.where);
  const std::shared_ptr<Frame> outer = frame_;
  if (stmt.condition) {  // `for x in xs if cond`: filtered before loop.* is computed
    std::vector<Value> kept;
    for (Value& item : items) {
      frame_ = std::make_shared<Frame>(Frame{.parent = outer});
      assign(stmt.target, item, stmt.where);
      const bool keep = eval(*stmt.condition).truthy();
      frame_ = outer;
      if (keep) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const auto length = static_cast<int64_t>(items.size());
  // loop.cycle reads the current index from a cell shared with this loop.
  auto index_cell = std::make_shared<int64_t>(0);
  auto cycle = std::make_shared<Callable>();
  cycle->name = "cycle";
  cycle->call = [index_cell](Interpreter&, CallArgs& args, const SourceLocation& where) -> Value {
    if (args.positional.empty()) type_error("no items for cycling given", where);
    return args.positional[static_cast<std::size_t>(*index_cell) % args.positional.size()];
  };
  const Value cycle_value = Value::callable(std::move(cycle));
  static const Value keys[] = {Value::string("index"),  Value::string("index0"), Value::string("revindex"),
                               Value::string("revindex0"), Value::string("first"), Value::string("last"),
                               Value::string("length"), Value::string("depth"), Value::string("depth0"),
                               Value::string("previtem"), Value::string("nextitem"), Value::string("cycle")};
  for (int64_t i = 0; i < length; ++i) {
    charge(4, stmt.where);  // a frame and a loop object per iteration
    *index_cell = i;
    frame_ = std::make_shared<Frame>(Frame{.parent = outer});
    auto loop = std::make_shared<DictData>();
    loop->entries.reserve(12);
    loop->entries.emplace_back(keys[0], Value::integer(i + 1));
    loop->entries.emplace_back(keys[1], Value::integer(i));
    loop->entries.emplace_back(keys[2], Value::integer(length - i));
    loop->entries.emplace_back(keys[3], Value::integer(length - i - 1));
    loop->entries.emplace_back(keys[4], Value::boolean(i == 0));
    loop->entries.emplace_back(keys[5], Value::boolean(i == length - 1));
    loop->entries.emplace_back(keys[6], Value::integer(length));
    loop->entries.emplace_back(keys[7], Value::integer(1));
    loop->entries.emplace_back(keys[8], Value::integer(0));
    if (i > 0) loop->entries.emplace_back(keys[9], items[static_cast<std::size_t>(i - 1)]);
    if (i + 1 < length) loop->entries.emplace_back(keys[10], items[static_cast<std::size_t>(i + 1)]);
    loop->entries.emplace_back(keys[11], cycle_value);
    frame_->set("loop", Value::dict(std::move(loop)));
    assign(stmt.target, items[static_cast<std::size_t>(i)], stmt.where);
    const Flow flow = exec(stmt.body, out);
    frame_ = outer;
    if (flow == Flow::break_) break;
  }
  frame_ = outer;
  if (length == 0) exec(stmt.else_body, out);
}

Value Interpreter::define_macro(const Stmt& stmt) {
  auto macro = std::make_shared<Callable>();
  macro->name = stmt.name;
  macro->is_macro = true;
  // Weak: the frame holds the macro, so a strong reference would be a cycle that is never freed.
  const std::weak_ptr<Frame> closure = frame_;
  const Stmt* definition = &stmt;
  macro->call = [closure, definition](Interpreter& in, CallArgs& args, const SourceLocation& where) -> Value {
    if (++in.call_depth_ > in.limits_.max_call_depth) {
      fail("LimitError", fmt::format("macro calls nested deeper than {}", in.limits_.max_call_depth), where);
    }
    const std::shared_ptr<Frame> caller_frame = in.frame_;
    std::shared_ptr<Frame> parent = closure.lock();
    in.frame_ = std::make_shared<Frame>(Frame{.parent = parent ? parent : in.globals_});
    const auto& params = definition->params;
    if (args.positional.size() > params.size()) {
      fail("TypeError", fmt::format("macro '{}' takes not more than {} argument(s)", definition->name, params.size()), where);
    }
    for (const auto& [key, value] : args.keyword) {
      if (std::find(params.begin(), params.end(), key) == params.end()) {
        fail("TypeError", fmt::format("macro '{}' takes no keyword argument '{}'", definition->name, key), where);
      }
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (i < args.positional.size()) {
        in.frame_->set(params[i], args.positional[i]);
      } else if (const Value* kw = args.find_keyword(params[i])) {
        in.frame_->set(params[i], *kw);
      } else if (definition->defaults[i]) {
        in.frame_->set(params[i], in.eval(*definition->defaults[i]));
      } else {
        in.frame_->set(params[i], Value::undefined(fmt::format("parameter '{}' was not provided", params[i])));
      }
    }
    std::string out;
    in.exec(definition->body, out);
    in.frame_ = caller_frame;
    --in.call_depth_;
    return Value::string(std::move(out));
  };
  return Value::callable(std::move(macro));
}

Value Interpreter::call(const Value& callee, CallArgs& args, const SourceLocation& where) {
  if (callee.is_undefined()) fail("UndefinedError", callee.undefined_message(), where);
  if (callee.kind() != Value::Kind::callable) type_error(fmt::format("'{}' object is not callable", callee.type_name()), where);
  const std::shared_ptr<Frame> saved = frame_;
  const int saved_depth = call_depth_;
  try {
    Value result = callee.fn().call(*this, args, where);
    return result;
  } catch (...) {
    frame_ = saved;  // unwinding through a macro: leave the interpreter consistent
    call_depth_ = saved_depth;
    throw;
  }
}

Value Interpreter::get_attr(const Value& object, std::string_view name, const SourceLocation& where) {
  switch (object.kind()) {
    case Value::Kind::undefined: fail("UndefinedError", object.undefined_message(), where);
    case Value::Kind::ns:
    case Value::Kind::dict: {
      if (object.is_dict()) {
        if (auto method = bound_method(object, name)) return *method;
      }
      if (const Value* v = object.dict_data().find(name)) return *v;
      return Value::undefined(fmt::format("'{}' has no attribute '{}'",
                                          object.is_ns() ? "Namespace" : "dict object", name));
    }
    case Value::Kind::none: return Value::undefined(fmt::format("'None' has no attribute '{}'", name));
    default:
      if (auto method = bound_method(object, name)) return *method;
      return Value::undefined(fmt::format("'{} object' has no attribute '{}'", object.type_name(), name));
  }
}

Value Interpreter::get_item(const Value& object, const Value& key, const SourceLocation& where) {
  switch (object.kind()) {
    case Value::Kind::undefined: fail("UndefinedError", object.undefined_message(), where);
    case Value::Kind::dict:
    case Value::Kind::ns: {
      if (const Value* v = object.dict_data().find(key)) return *v;
      if (key.is_string() && object.is_dict()) {
        if (auto method = bound_method(object, key.str())) return *method;
      }
      break;
    }
    case Value::Kind::list: {
      if (object.list_data().kind == ListKind::generator || !(key.kind() == Value::Kind::integer || key.kind() == Value::Kind::boolean)) {
        break;
      }
      const auto size = static_cast<int64_t>(object.items().size());
      int64_t index = key.as_int();
      if (index < 0) index += size;
      if (index >= 0 && index < size) return object.items()[static_cast<std::size_t>(index)];
      break;
    }
    case Value::Kind::string: {
      if (!(key.kind() == Value::Kind::integer || key.kind() == Value::Kind::boolean)) break;
      const std::vector<Value> chars = iterate(object, where);
      const auto size = static_cast<int64_t>(chars.size());
      int64_t index = key.as_int();
      if (index < 0) index += size;
      if (index >= 0 && index < size) return chars[static_cast<std::size_t>(index)];
      break;
    }
    default: break;
  }
  if (key.is_string()) return get_attr(object, key.str(), where);
  return Value::undefined(fmt::format("{} object has no element {}", object.type_name(), repr(key)));
}

CallArgs Interpreter::eval_args(const Expr& expr, std::size_t first_arg) {
  CallArgs args;
  for (std::size_t i = first_arg; i < expr.children.size(); ++i) args.positional.push_back(eval(*expr.children[i]));
  for (const auto& [key, value] : expr.kwargs) args.keyword.emplace_back(key, eval(*value));
  if (expr.dyn_args) {
    for (Value& v : iterate(eval(*expr.dyn_args), expr.where)) args.positional.push_back(std::move(v));
  }
  if (expr.dyn_kwargs) {
    const Value kwargs = eval(*expr.dyn_kwargs);
    if (!kwargs.is_dict()) type_error("argument after ** must be a mapping", expr.where);
    for (const auto& [k, v] : kwargs.dict_data().entries) {
      if (!k.is_string()) type_error("keywords must be strings", expr.where);
      args.keyword.emplace_back(k.str(), v);
    }
  }
  return args;
}

Value Interpreter::eval(const Expr& expr) {
  step(expr.where);
  switch (expr.kind) {
    case ExprKind::literal: return expr.literal;
    case ExprKind::name: return lookup(expr.name);
    case ExprKind::list:
    case ExprKind::tuple: {
      std::vector<Value> items;
      items.reserve(expr.children.size());
      for (const ExprPtr& child : expr.children) items.push_back(eval(*child));
      return Value::list(std::move(items), expr.kind == ExprKind::tuple ? ListKind::tuple : ListKind::list);
    }
    case ExprKind::dict: {
      auto data = std::make_shared<DictData>();
      for (std::size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        data->set(eval(*expr.children[i]), eval(*expr.children[i + 1]));
      }
      return Value::dict(std::move(data));
    }
    case ExprKind::getattr: return get_attr(eval(*expr.children[0]), expr.name, expr.where);
    case ExprKind::getitem: {
      const Value object = eval(*expr.children[0]);
      return get_item(object, eval(*expr.children[1]), expr.where);
    }
    case ExprKind::slice: return eval_slice(expr);
    case ExprKind::call: {
      const Value callee = eval(*expr.children[0]);
      CallArgs args = eval_args(expr, 1);
      return call(callee, args, expr.where);
    }
    case ExprKind::filter: {
      const Value operand = eval(*expr.children[0]);
      CallArgs args = eval_args(expr, 1);
      return apply_filter(*this, expr.name, operand, args, expr.where);
    }
    case ExprKind::test: {
      const Value operand = eval(*expr.children[0]);
      CallArgs args = eval_args(expr, 1);
      return Value::boolean(apply_test(*this, expr.name, operand, args, expr.where));
    }
    case ExprKind::not_: return Value::boolean(!eval(*expr.children[0]).truthy());
    case ExprKind::neg:
    case ExprKind::pos: {
      const Value v = eval(*expr.children[0]);
      if (v.kind() == Value::Kind::floating) return Value::floating(expr.kind == ExprKind::neg ? -v.as_float() : v.as_float());
      if (v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean) {
        if (expr.kind == ExprKind::pos) return Value::integer(v.as_int());
        if (v.as_int() == INT64_MIN) fail("OverflowError", "integer overflow", expr.where);
        return Value::integer(-v.as_int());
      }
      if (v.is_undefined()) fail("UndefinedError", v.undefined_message(), expr.where);
      type_error(fmt::format("bad operand type for unary {}: '{}'", expr.kind == ExprKind::neg ? '-' : '+', v.type_name()),
                 expr.where);
    }
    case ExprKind::binary: return eval_binary(expr);
    case ExprKind::compare: return eval_compare(expr);
    case ExprKind::and_: {
      Value left = eval(*expr.children[0]);
      return left.truthy() ? eval(*expr.children[1]) : left;
    }
    case ExprKind::or_: {
      Value left = eval(*expr.children[0]);
      return left.truthy() ? left : eval(*expr.children[1]);
    }
    case ExprKind::condexpr:
      if (eval(*expr.children[1]).truthy()) return eval(*expr.children[0]);
      if (expr.children[2]) return eval(*expr.children[2]);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
  }
  return Value();
}

Value Interpreter::eval_binary(const Expr& expr) {
  const Value a = eval(*expr.children[0]);
  const Value b = eval(*expr.children[1]);
  Value result = binary_op(*this, expr.name, a, b, expr.where);
  if (result.is_string()) check_size(result.str().size(), expr.where);
  charge(cost_of(result), expr.where);
  return result;
}

Value Interpreter::eval_compare(const Expr& expr) {
  Value left = eval(*expr.children[0]);
  for (std::size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = eval(*expr.children[i + 1]);
    const std::string& op = expr.ops[i];
    bool ok = false;
    if (op == "==") {
      ok = equals(left, right);
    } else if (op == "!=") {
      ok = !equals(left, right);
    } else if (op == "in") {
      ok = contains(right, left, expr.where);
    } else if (op == "notin") {
      ok = !contains(right, left, expr.where);
    } else {
      if (left.is_undefined() || right.is_undefined()) {
        fail("UndefinedError", (left.is_undefined() ? left : right).undefined_message(), expr.where);
      }
      const int c = compare(left, right, expr.where);
      ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!ok) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval_slice(const Expr& expr) {
  const Value object = eval(*expr.children[0]);
  std::optional<int64_t> parts[3];
  for (int k = 0; k < 3; ++k) {
    if (!expr.children[static_cast<std::size_t>(k) + 1]) continue;
    const Value v = eval(*expr.children[static_cast<std::size_t>(k) + 1]);
    if (v.is_none()) continue;
    if (v.kind() != Value::Kind::integer && v.kind() != Value::Kind::boolean) {
      type_error("slice indices must be integers or None", expr.where);
    }
    parts[k] = v.as_int();
  }
  if (object.is_undefined()) fail("UndefinedError", object.undefined_message(), expr.where);
  const bool is_string = object.is_string();
  if (!is_string && !(object.is_list() && object.list_data().kind != ListKind::generator)) {
    return Value::undefined(fmt::format("{} object has no element slice", object.type_name()));
  }
  const std::vector<Value> items = is_string ? iterate(object, expr.where) : object.items();
  const auto size = static_cast<int64_t>(items.size());
  const int64_t step_by = parts[2].value_or(1);
  if (step_by == 0) fail("ValueError", "slice step cannot be zero", expr.where);
  // Python's slice.indices()
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback, int64_t lower, int64_t upper) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) x += size;
    return std::clamp(x, lower, upper);
  };
  int64_t start, stop;
  if (step_by > 0) {
    start = clamp(parts[0], 0, 0, size);
    stop = clamp(parts[1], size, 0, size);
  } else {
    start = clamp(parts[0], size - 1, -1, size - 1);
    stop = clamp(parts[1], -1, -1, size - 1);
  }
  std::vector<Value> out;
  for (int64_t i = start; step_by > 0 ? i < stop : i > stop; i += step_by) out.push_back(items[static_cast<std::size_t>(i)]);
  if (is_string) {
    std::string joined;
    for (const Value& c : out) joined += c.str();
    return Value::string(std::move(joined), object.is_safe());
  }
  return Value::list(std::move(out), object.list_data().kind == ListKind::tuple ? ListKind::tuple : ListKind::list);
}

// ---- validation -------------------------------------------------------------------------------

namespace {

void validate_expr(const Expr* e) {
  if (e == nullptr) return;
  if (e->kind == ExprKind::filter && !has_filter(e->name)) {
    fail("TemplateAssertionError", fmt::format("No filter named '{}'.", e->name), e->where);
  }
  if (e->kind == ExprKind::test && !has_test(e->name)) {
    fail("TemplateAssertionError", fmt::format("No test named '{}'.", e->name), e->where);
  }
  for (const ExprPtr& child : e->children) validate_expr(child.get());
  for (const auto& kw : e->kwargs) validate_expr(kw.second.get());
  validate_expr(e->dyn_args.get());
  validate_expr(e->dyn_kwargs.get());
}

void validate_body(const Body& body) {
  for (const StmtPtr& s : body) {
    validate_expr(s->expr.get());
    validate_expr(s->condition.get());
    for (const auto& [test, branch] : s->branches) {
      validate_expr(test.get());
      validate_body(branch);
    }
    for (const ExprPtr& d : s->defaults) validate_expr(d.get());
    validate_body(s->body);
    validate_body(s->else_body);
  }
}

}  // namespace

void validate(const Template& tmpl) { validate_body(tmpl.body); }

}  // namespace llaisys::text::jinja
