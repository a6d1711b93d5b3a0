// Strings and numbers for the JSON Schema front end: minLength/maxLength, pattern (compile_regex), format,
// minimum/maximum/exclusive*, multipleOf 1, number formats.

#include <algorithm>

#include "json_schema_compiler.hpp"
#include "llaisys/grammar/regex.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace {

std::string_view sv(const json::string& s) { return {s.data(), s.size()}; }

}  // namespace

Result<int64_t> SchemaCompiler::read_count(const json::object& s, std::string_view key, const std::string& path) const {
  const json::value* v = s.if_contains(key);
  if (v == nullptr) return int64_t{-1};
  const auto d = decimal_of(*v);
  if (!d || d->negative || !d->is_integer()) {
    return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a non-negative integer", path, key);
  }
  if (d->int_digits.size() > 18 || (d->int_digits.empty() ? 0 : std::stoll(d->int_digits)) > options_.max_repeat_bound) {
    return make_error(ErrorCode::invalid_argument, "{}: '{}' {} is too large (at most {} is supported)", path, key,
                      d->to_string(), options_.max_repeat_bound);
  }
  return d->int_digits.empty() ? int64_t{0} : static_cast<int64_t>(std::stoll(d->int_digits));
}

// ---- strings ----

Result<ExprPtr> SchemaCompiler::compile_string(const json::object& s, const std::string& path) {
  LLAISYS_ASSIGN_OR_RETURN(const int64_t min_len, read_count(s, "minLength", path));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t max_len, read_count(s, "maxLength", path));
  ExprPtr raw;  // the decoded text, when pattern or format constrain it
  if (const json::value* p = s.if_contains("pattern")) {
    if (!p->is_string()) return make_error(ErrorCode::invalid_argument, "{}: 'pattern' must be a string", path);
    auto r = compile_regex(sv(p->get_string()));
    if (!r.ok()) return make_error(ErrorCode::invalid_argument, "{}: 'pattern': {}", path, r.status().message());
    raw = std::move(*r);
  }
  if (const json::value* f = s.if_contains("format")) {
    if (!f->is_string()) return make_error(ErrorCode::invalid_argument, "{}: 'format' must be a string", path);
    const std::string_view name = sv(f->get_string());
    if (format_kind(name) != FormatKind::number) {  // number formats say nothing about strings
      auto r = string_format(name);
      if (!r.ok()) return make_error(ErrorCode::invalid_argument, "{}: {}", path, r.status().message());
      if (*r != nullptr && raw != nullptr) {
        return make_error(ErrorCode::invalid_argument, "{}: 'pattern' together with 'format' is not supported", path);
      }
      if (*r != nullptr) raw = std::move(*r);
    }
  }
  if (max_len >= 0 && min_len > max_len && unsatisfiable_.empty()) {
    unsatisfiable_ = fmt::format("{}: 'minLength' is above 'maxLength'", path);
  }
  if (raw == nullptr) {
    if (min_len <= 0 && max_len < 0) return any_string();  // one expression, so shared() makes one rule of it
    return seq({literal("\""), repeat_bounded(json_string_char(), std::max<int64_t>(min_len, 0), max_len,
                                              fmt::format("{} chars", path)),
                literal("\"")});
  }
  auto bounded = restrict_length(raw, std::max<int64_t>(min_len, 0), max_len);
  if (!bounded.ok()) return make_error(ErrorCode::invalid_argument, "{}: {}", path, bounded.status().message());
  return seq({literal("\""), escape_raw_text(*bounded), literal("\"")});
}

// ---- numbers ----

Result<ExprPtr> SchemaCompiler::compile_number(const json::object& s, bool integer_only, const std::string& path) {
  NumberSpec spec;
  auto bound = [&](std::string_view key) -> Result<std::optional<Decimal>> {
    const json::value* v = s.if_contains(key);
    if (v == nullptr || v->is_bool()) return std::optional<Decimal>();
    auto d = decimal_of(*v);
    if (!d) return make_error(ErrorCode::invalid_argument, "{}: '{}' must be a number", path, key);
    return d;
  };
  // Draft 4 spelled exclusive bounds as booleans beside minimum/maximum.
  auto draft4 = [&](std::string_view key) {
    const json::value* v = s.if_contains(key);
    return v != nullptr && v->is_bool() && v->get_bool();
  };
  auto tighten = [](std::optional<NumberBound>& cur, const Decimal& d, bool exclusive, bool lower) {
    if (!cur) {
      cur = NumberBound{d, exclusive};
      return;
    }
    const int c = compare(d, cur->value);
    if ((lower ? c > 0 : c < 0) || (c == 0 && exclusive)) cur = NumberBound{d, exclusive};
  };
  LLAISYS_ASSIGN_OR_RETURN(auto minimum, bound("minimum"));
  LLAISYS_ASSIGN_OR_RETURN(auto maximum, bound("maximum"));
  LLAISYS_ASSIGN_OR_RETURN(auto xmin, bound("exclusiveMinimum"));
  LLAISYS_ASSIGN_OR_RETURN(auto xmax, bound("exclusiveMaximum"));
  if (minimum) tighten(spec.lo, *minimum, draft4("exclusiveMinimum"), true);
  if (maximum) tighten(spec.hi, *maximum, draft4("exclusiveMaximum"), false);
  if (xmin) tighten(spec.lo, *xmin, true, true);
  if (xmax) tighten(spec.hi, *xmax, true, false);
  if (const json::value* m = s.if_contains("multipleOf")) {
    const auto d = decimal_of(*m);
    if (!d || d->to_string() != "1") {
      return make_error(ErrorCode::invalid_argument, "{}: 'multipleOf' is not supported in response schemas (only 1)", path);
    }
    integer_only = true;
  }
  if (const json::value* f = s.if_contains("format"); f != nullptr && f->is_string()) {
    const std::string_view name = sv(f->get_string());
    if (format_kind(name) == FormatKind::unknown) {
      return make_error(ErrorCode::invalid_argument, "{}: format '{}' is not supported in response schemas", path, name);
    }
    if (name == "int32") {
      integer_only = true;
      tighten(spec.lo, *decimal_of(json::value(int64_t{-2147483648LL})), false, true);
      tighten(spec.hi, *decimal_of(json::value(int64_t{2147483647LL})), false, false);
    } else if (name == "int64") {
      integer_only = true;
    }
  }
  spec.integer_only = integer_only;
  ExprPtr e = number_expr(spec);
  if (e->kind == Expr::Kind::nothing && unsatisfiable_.empty()) {
    unsatisfiable_ = fmt::format("{}: no {} of at most {} digits lies within the bounds", path,
                                 integer_only ? "integer" : "number", kMaxIntegerDigits);
  }
  return e;
}

}  // namespace llaisys::grammar::json_schema_detail
