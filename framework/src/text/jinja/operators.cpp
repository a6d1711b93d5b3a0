// Python's binary operators and `in` over jinja::Value, including Markup's escaping on `+`.

#include <cmath>

#include "jinja/interpreter.hpp"

namespace llaisys::text::jinja {
namespace {

__extension__ typedef __int128 Int128;  // exact intermediate results for int64 overflow checks

bool is_int(const Value& v) { return v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean; }

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b, const SourceLocation& where) {
  if (a.is_undefined() || b.is_undefined()) fail("UndefinedError", (a.is_undefined() ? a : b).undefined_message(), where);
  type_error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name()), where);
}

Value checked_int(Int128 v, const SourceLocation& where) {
  if (v > INT64_MAX || v < INT64_MIN) fail("OverflowError", "integer result too large", where);
  return Value::integer(static_cast<int64_t>(v));
}

Value repeat(Interpreter& in, const Value& seq, int64_t times, const SourceLocation& where) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    in.check_size(seq.str().size() * static_cast<std::size_t>(std::min<int64_t>(times, INT32_MAX)), where);
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value::string(std::move(out), seq.is_safe());
  }
  in.check_size(seq.items().size() * static_cast<std::size_t>(std::min<int64_t>(times, INT32_MAX)) * 16, where);
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out), seq.list_data().kind);
}

double floor_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

Value binary_op(Interpreter& in, std::string_view op, const Value& a, const Value& b, const SourceLocation& where) {
  using K = Value::Kind;
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  const bool numbers = a.is_number() && b.is_number();
  const bool floats = numbers && (a.kind() == K::floating || b.kind() == K::floating);
  if (op == "+") {
    if (numbers) {
      if (floats) return Value::floating(a.as_float() + b.as_float());
      return checked_int(static_cast<Int128>(a.as_int()) + b.as_int(), where);
    }
    if (a.is_string() && b.is_string()) {
      if (a.is_safe() != b.is_safe()) {  // Markup + str escapes the plain side
        return Value::string(a.is_safe() ? a.str() + html_escape(b.str()) : html_escape(a.str()) + b.str(), true);
      }
      return Value::string(a.str() + b.str(), a.is_safe());
    }
    if (a.is_list() && b.is_list() && a.list_data().kind == b.list_data().kind &&
        (a.list_data().kind == ListKind::list || a.list_data().kind == ListKind::tuple)) {
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items), a.list_data().kind);
    }
    if (a.is_undefined() || b.is_undefined()) unsupported(op, a, b, where);
    if (a.is_string() && !a.is_safe()) {
      type_error(fmt::format("can only concatenate str (not \"{}\") to str", b.type_name()), where);
    }
    if (a.is_list() && (a.list_data().kind == ListKind::list || a.list_data().kind == ListKind::tuple)) {
      type_error(fmt::format("can only concatenate {} (not \"{}\") to {}", a.type_name(), b.type_name(), a.type_name()), where);
    }
    unsupported(op, a, b, where);
  }
  if (op == "-") {
    if (!numbers) unsupported(op, a, b, where);
    if (floats) return Value::floating(a.as_float() - b.as_float());
    return checked_int(static_cast<Int128>(a.as_int()) - b.as_int(), where);
  }
  if (op == "*") {
    if (numbers) {
      if (floats) return Value::floating(a.as_float() * b.as_float());
      return checked_int(static_cast<Int128>(a.as_int()) * b.as_int(), where);
    }
    const bool a_seq = a.is_string() || (a.is_list() && (a.list_data().kind == ListKind::list || a.list_data().kind == ListKind::tuple));
    const bool b_seq = b.is_string() || (b.is_list() && (b.list_data().kind == ListKind::list || b.list_data().kind == ListKind::tuple));
    if (a_seq && is_int(b)) return repeat(in, a, b.as_int(), where);
    if (b_seq && is_int(a)) return repeat(in, b, a.as_int(), where);
    if (a_seq && b.is_number()) type_error(fmt::format("can't multiply sequence by non-int of type '{}'", b.type_name()), where);
    unsupported(op, a, b, where);
  }
  if (op == "/") {
    if (!numbers) unsupported(op, a, b, where);
    if (b.as_float() == 0.0) fail("ZeroDivisionError", "division by zero", where);
    return Value::floating(a.as_float() / b.as_float());
  }
  if (op == "//" || op == "%") {
    if (!numbers) {
      if (a.is_string() && op == "%") fail("TypeError", "printf-style string formatting is not supported", where);
      unsupported(op, a, b, where);
    }
    if (floats) {
      if (b.as_float() == 0.0) fail("ZeroDivisionError", op == "//" ? "float floor division by zero" : "float modulo", where);
      const double m = floor_mod(a.as_float(), b.as_float());
      if (op == "%") return Value::floating(m);
      return Value::floating(std::round((a.as_float() - m) / b.as_float()));  // exact: a - m is a multiple of b
    }
    if (b.as_int() == 0) fail("ZeroDivisionError", "integer division or modulo by zero", where);
    const int64_t x = a.as_int(), y = b.as_int();
    if (x == INT64_MIN && y == -1) fail("OverflowError", "integer result too large", where);
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      --q;
      r += y;
    }
    return Value::integer(op == "//" ? q : r);
  }
  if (op == "**") {
    if (!numbers) unsupported(op, a, b, where);
    if (!floats && b.as_int() >= 0) {
      Int128 result = 1;
      Int128 base = a.as_int();
      int64_t e = b.as_int();
      while (e > 0) {
        if (e & 1) {
          result *= base;
          if (result > INT64_MAX || result < INT64_MIN) fail("OverflowError", "integer result too large", where);
        }
        e >>= 1;
        if (e > 0) {
          base *= base;
          if (base > INT64_MAX || base < INT64_MIN) fail("OverflowError", "integer result too large", where);
        }
      }
      return Value::integer(static_cast<int64_t>(result));
    }
    if (a.as_float() == 0.0 && b.as_float() < 0) fail("ZeroDivisionError", "0.0 cannot be raised to a negative power", where);
    return Value::floating(std::pow(a.as_float(), b.as_float()));
  }
  fail("TemplateSyntaxError", fmt::format("unknown operator '{}'", op), where);
}

bool contains(const Value& container, const Value& item, const SourceLocation& where) {
  switch (container.kind()) {
    case Value::Kind::undefined: return false;
    case Value::Kind::string:
      if (!item.is_string()) {
        type_error(fmt::format("'in <string>' requires string as left operand, not {}", item.type_name()), where);
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::list:
      for (const Value& v : iterate(container, where)) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Kind::dict:
    case Value::Kind::ns: return container.dict_data().find(item) != nullptr;
    default: type_error(fmt::format("argument of type '{}' is not iterable", container.type_name()), where);
  }
}

}  // namespace llaisys::text::jinja
