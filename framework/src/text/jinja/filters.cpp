// Jinja2's built-in filters (those real chat templates use, with Jinja2 3.1's semantics) and Hugging
// Face's tojson override: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "jinja/builtins_support.hpp"
#include "jinja/py_string.hpp"

namespace llaisys::text::jinja {
namespace {

using FilterFn = std::function<Value(Interpreter&, const Value&, CallArgs&, const SourceLocation&)>;

Value generator(std::vector<Value> items) { return Value::list(std::move(items), ListKind::generator); }

int64_t length_of(const Value& v, const SourceLocation& where) {
  switch (v.kind()) {
    case Value::Kind::undefined: return 0;
    case Value::Kind::string: return static_cast<int64_t>(py::length(v.str()));
    case Value::Kind::list:
      if (v.list_data().kind == ListKind::generator) type_error("object of type 'generator' has no len()", where);
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::dict:
    case Value::Kind::ns: return static_cast<int64_t>(v.dict_data().entries.size());
    default: type_error(fmt::format("object of type '{}' has no len()", v.type_name()), where);
  }
}

Value do_tojson(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson", where);
  JsonOptions options;
  options.ensure_ascii = to_bool_arg(a[0], false);
  if (a[1] && !a[1]->is_none()) {
    if (a[1]->is_string()) {
      options.indent = a[1]->str();
    } else {
      const int64_t width = std::max<int64_t>(0, to_int_arg(a[1], 0, "indent", where));
      in.check_size(static_cast<std::size_t>(width), where);  // before allocating it
      options.indent = std::string(static_cast<std::size_t>(width), ' ');
    }
    options.item_separator = ",";
  }
  if (a[2] && !a[2]->is_none()) {
    if (!a[2]->is_list() || a[2]->items().size() != 2 || !a[2]->items()[0].is_string() || !a[2]->items()[1].is_string()) {
      type_error("separators must be a pair of strings", where);
    }
    options.item_separator = a[2]->items()[0].str();
    options.key_separator = a[2]->items()[1].str();
  }
  options.sort_keys = to_bool_arg(a[3], false);
  options.max_bytes = in.limits().max_output_bytes;
  return Value::string(to_json(v, options, where));
}

Value do_default(Interpreter&, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"default_value", "boolean"}, "default", where);
  const bool use_default = v.is_undefined() || (to_bool_arg(a[1], false) && !v.truthy());
  return use_default ? a[0].value_or(Value::string("")) : v;
}

Value do_trim(Interpreter&, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"chars"}, "trim", where);
  return Value::string(py::strip(to_str(v), to_str_arg(a[0]), true, true), v.is_safe());
}

Value do_join(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"d", "attribute"}, "join", where);
  const std::string separator = a[0] ? to_str(*a[0]) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v, where)) {
    if (!first) out += separator;
    first = false;
    out += to_str(a[1] ? attribute_path(in, item, *a[1], where) : item);
    in.check_size(out.size(), where);
  }
  return Value::string(std::move(out));
}

Value do_indent(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"width", "first", "blank"}, "indent", where);
  const int64_t width = a[0] && a[0]->is_string() ? 0 : std::max<int64_t>(0, to_int_arg(a[0], 4, "width", where));
  in.check_size(static_cast<std::size_t>(width), where);  // before allocating it
  const std::string indentation = a[0] && a[0]->is_string() ? a[0]->str() : std::string(static_cast<std::size_t>(width), ' ');
  const bool first = to_bool_arg(a[1], false);
  const bool blank = to_bool_arg(a[2], false);
  const std::string s = to_str(v) + "\n";  // Jinja2's quirk for splitlines
  const std::vector<std::string> lines = py::splitlines(s);
  std::string out;
  if (blank) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) out += "\n" + indentation;
      out += lines[i];
      in.check_size(out.size(), where);
    }
  } else if (!lines.empty()) {
    out = lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) {
      out += "\n" + (lines[i].empty() ? "" : indentation + lines[i]);
      in.check_size(out.size(), where);
    }
  }
  if (first) out = indentation + out;
  return Value::string(std::move(out), v.is_safe());
}

Value do_items(Interpreter&, const Value& v, CallArgs&, const SourceLocation& where) {
  if (v.is_undefined()) return generator({});
  if (!v.is_dict()) type_error("Can only get item pairs from a mapping.", where);
  std::vector<Value> pairs;
  for (const auto& [k, value] : v.dict_data().entries) pairs.push_back(Value::list({k, value}, ListKind::tuple));
  return generator(std::move(pairs));
}

Value do_replace(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"old", "new", "count"}, "replace", where);
  if (!a[0] || !a[1]) type_error("replace() missing required arguments", where);
  std::string out = py::replace(to_str(v), to_str(*a[0]), to_str(*a[1]), to_int_arg(a[2], -1, "count", where),
                                in.limits().max_output_bytes);
  in.check_size(out.size(), where);
  return Value::string(std::move(out));
}

Value do_first(Interpreter&, const Value& v, CallArgs&, const SourceLocation& where) {
  const std::vector<Value> items = iterate(v, where);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value do_last(Interpreter&, const Value& v, CallArgs&, const SourceLocation& where) {
  if (v.is_list() && v.list_data().kind == ListKind::generator) type_error("'generator' object is not reversible", where);
  const std::vector<Value> items = iterate(v, where);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

// map(attribute=..., default=...) or map('filter', *args)
Value do_map(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  std::vector<Value> out;
  if (!v.truthy()) return generator({});  // Jinja2: `if value:` before iterating
  const std::vector<Value> items = iterate(v, where);
  if (const Value* attribute = args.find_keyword("attribute")) {
    const Value* fallback = args.find_keyword("default");
    for (const Value& item : items) {
      Value mapped = attribute_path(in, item, *attribute, where);
      out.push_back(mapped.is_undefined() && fallback != nullptr ? *fallback : mapped);
    }
    return generator(std::move(out));
  }
  if (args.positional.empty()) fail("FilterArgumentError", "map requires a filter argument", where);
  const std::string name = require_str(args.positional[0], "map", where);
  CallArgs rest{.positional = std::vector<Value>(args.positional.begin() + 1, args.positional.end()), .keyword = args.keyword};
  for (const Value& item : items) {
    CallArgs copy = rest;
    out.push_back(apply_filter(in, name, item, copy, where));
  }
  return generator(std::move(out));
}

// select/reject(test, *args) and selectattr/rejectattr(attribute, test, *args)
Value select_items(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where, bool by_attribute,
                   bool keep_when) {
  if (!v.truthy()) return generator({});  // Jinja2: `if value:` before iterating
  std::size_t next = 0;
  std::optional<Value> attribute;
  if (by_attribute) {
    if (args.positional.empty()) type_error("selectattr() missing the attribute", where);
    attribute = args.positional[next++];
  }
  std::optional<std::string> test;
  if (next < args.positional.size()) test = require_str(args.positional[next++], "select", where);
  CallArgs test_args{.positional = std::vector<Value>(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end()),
                     .keyword = args.keyword};
  std::vector<Value> out;
  for (const Value& item : iterate(v, where)) {
    const Value subject = attribute ? attribute_path(in, item, *attribute, where) : item;
    bool passed;
    if (test) {
      CallArgs copy = test_args;
      passed = apply_test(in, *test, subject, copy, where);
    } else {
      passed = subject.truthy();
    }
    if (passed == keep_when) out.push_back(item);
  }
  return generator(std::move(out));
}

Value do_unique(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"case_sensitive", "attribute"}, "unique", where);
  const bool case_sensitive = to_bool_arg(a[0], false);
  std::vector<Value> seen, out;
  for (const Value& item : iterate(v, where)) {
    Value key = a[1] ? attribute_path(in, item, *a[1], where) : item;
    if (!case_sensitive && key.is_string()) key = Value::string(py::lower(key.str()));
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return generator(std::move(out));
}

// Sort key for sort/min/max/dictsort: lowercased strings unless case_sensitive.
Value sort_key(Interpreter& in, const Value& item, const std::optional<Value>& attribute, bool case_sensitive,
               const SourceLocation& where) {
  Value key = attribute ? attribute_path(in, item, *attribute, where) : item;
  if (!case_sensitive && key.is_string()) key = Value::string(py::lower(key.str()));
  return key;
}

Value do_sort(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"reverse", "case_sensitive", "attribute"}, "sort", where);
  std::vector<Value> items = iterate(v, where);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) keyed.emplace_back(sort_key(in, item, a[2], to_bool_arg(a[1], false), where), std::move(item));
  const bool reverse = to_bool_arg(a[0], false);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first, where) < 0 : compare(x.first, y.first, where) < 0;
  });
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where, bool want_max) {
  auto a = bind(args, {"case_sensitive", "attribute"}, want_max ? "max" : "min", where);
  const std::vector<Value> items = iterate(v, where);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  Value best_key = sort_key(in, items[0], a[1], to_bool_arg(a[0], false), where);
  for (std::size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(in, items[i], a[1], to_bool_arg(a[0], false), where);
    const int c = compare(key, best_key, where);
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value do_dictsort(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"case_sensitive", "by", "reverse"}, "dictsort", where);
  if (!v.is_dict()) type_error("dictsort requires a mapping", where);
  const bool by_value = a[1] && to_str(*a[1]) == "value";
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, value] : v.dict_data().entries) {
    keyed.emplace_back(sort_key(in, by_value ? value : k, std::nullopt, to_bool_arg(a[0], false), where),
                       Value::list({k, value}, ListKind::tuple));
  }
  const bool reverse = to_bool_arg(a[2], false);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first, where) < 0 : compare(x.first, y.first, where) < 0;
  });
  std::vector<Value> out;
  for (auto& [key, pair] : keyed) out.push_back(std::move(pair));
  return Value::list(std::move(out));
}

// A double's integer part as int64; Python's int would be exact at any size, 64 bits cannot be.
int64_t truncate_to_int64(double d, const SourceLocation& where) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {  // [-2^63, 2^63)
    fail("OverflowError", fmt::format("int() of {} does not fit in 64 bits", d), where);
  }
  return static_cast<int64_t>(d);
}

Value do_int(Interpreter&, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"default", "base"}, "int", where);
  const Value fallback = a[0].value_or(Value::integer(0));
  if (v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean) return Value::integer(v.as_int());
  if (v.kind() == Value::Kind::floating) {
    if (!std::isfinite(v.as_float())) return fallback;
    return Value::integer(truncate_to_int64(v.as_float(), where));
  }
  if (v.is_string()) {
    std::string s = py::strip(v.str(), std::nullopt, true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    const int base = static_cast<int>(to_int_arg(a[1], 10, "base", where));
    errno = 0;
    char* end = nullptr;
    const long long parsed = std::strtoll(s.c_str(), &end, base);
    if (!s.empty() && *end == '\0' && errno == 0) return Value::integer(parsed);
    if (!s.empty() && *end == '\0' && errno == ERANGE) {
      fail("OverflowError", fmt::format("int() of '{}' does not fit in 64 bits", s.substr(0, 40)), where);
    }
    end = nullptr;
    const double d = std::strtod(s.c_str(), &end);  // Jinja2 falls back to int(float(value))
    if (!s.empty() && *end == '\0' && std::isfinite(d)) return Value::integer(truncate_to_int64(d, where));
  }
  return fallback;
}

Value do_float(Interpreter&, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"default"}, "float", where);
  if (v.is_number()) return Value::floating(v.as_float());
  if (v.is_string()) {
    const std::string s = py::strip(v.str(), std::nullopt, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value::floating(d);
  }
  return a[0].value_or(Value::floating(0.0));
}

Value do_round(Interpreter&, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"precision", "method"}, "round", where);
  if (!v.is_number()) type_error(fmt::format("type {} doesn't define __round__ method", v.type_name()), where);
  const int64_t precision = to_int_arg(a[0], 0, "precision", where);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const std::string method = a[1] ? to_str(*a[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("FilterArgumentError", "method must be common, ceil or floor", where);
  }
  // "common" is Python's round(value, precision): an int stays an int, halves go to the even
  // neighbour (2.5 -> 2.0, 0.125 -> 0.12), and a precision finer than a double is the value itself.
  const bool integral = method == "common" && (v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean);
  if (integral && precision >= 0) return Value::integer(v.as_int());
  if (!std::isfinite(scale) || scale == 0.0 || !std::isfinite(v.as_float() * scale)) {
    return integral ? Value::integer(v.as_int()) : Value::floating(v.as_float());
  }
  const double x = v.as_float() * scale;
  const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  if (integral) return Value::integer(static_cast<int64_t>(r / scale));
  return Value::floating(r / scale);
}

Value do_sum(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"attribute", "start"}, "sum", where);
  Value total = a[1].value_or(Value::integer(0));
  for (const Value& item : iterate(v, where)) {
    total = binary_op(in, "+", total, a[0] ? attribute_path(in, item, *a[0], where) : item, where);
  }
  return total;
}

Value do_batch(Interpreter& in, const Value& v, CallArgs& args, const SourceLocation& where) {
  auto a = bind(args, {"linecount", "fill_with"}, "batch", where);
  const int64_t size = to_int_arg(a[0], 1, "linecount", where);
  if (size <= 0) fail("ValueError", "batch size must be positive", where);
  std::vector<Value> out, current;
  for (const Value& item : iterate(v, where)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == size) out.push_back(Value::list(std::exchange(current, {})));
  }
  if (!current.empty()) {
    if (a[1]) {
      in.charge(size - static_cast<int64_t>(current.size()), where);  // the fill, before allocating it
      while (static_cast<int64_t>(current.size()) < size) current.push_back(*a[1]);
    }
    out.push_back(Value::list(std::move(current)));
  }
  return generator(std::move(out));
}

Value string_filter(std::string (*fn)(std::string_view), const Value& v, bool keep_safe) {
  return Value::string(fn(to_str(v)), keep_safe && v.is_safe());
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> table = [] {
    std::map<std::string, FilterFn, std::less<>> t;
    t["tojson"] = do_tojson;
    t["default"] = t["d"] = do_default;
    t["trim"] = do_trim;
    t["join"] = do_join;
    t["indent"] = do_indent;
    t["items"] = do_items;
    t["replace"] = do_replace;
    t["first"] = do_first;
    t["last"] = do_last;
    t["map"] = do_map;
    t["unique"] = do_unique;
    t["sort"] = do_sort;
    t["dictsort"] = do_dictsort;
    t["int"] = do_int;
    t["float"] = do_float;
    t["round"] = do_round;
    t["sum"] = do_sum;
    t["batch"] = do_batch;
    t["length"] = t["count"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation& where) {
      return Value::integer(length_of(v, where));
    };
    t["select"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) { return select_items(in, v, a, w, false, true); };
    t["reject"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) { return select_items(in, v, a, w, false, false); };
    t["selectattr"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) { return select_items(in, v, a, w, true, true); };
    t["rejectattr"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) { return select_items(in, v, a, w, true, false); };
    t["min"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) { return min_max(in, v, a, w, false); };
    t["max"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) { return min_max(in, v, a, w, true); };
    t["list"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation& w) { return Value::list(iterate(v, w)); };
    t["lower"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) { return string_filter(py::lower, v, true); };
    t["upper"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) { return string_filter(py::upper, v, true); };
    t["title"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) { return string_filter(py::title, v, true); };
    t["capitalize"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) { return string_filter(py::capitalize, v, true); };
    t["string"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) {
      return v.is_string() ? v : Value::string(to_str(v));
    };
    t["safe"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) { return Value::string(to_str(v), true); };
    t["escape"] = t["e"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) {
      return v.is_safe() ? v : Value::string(html_escape(to_str(v)), true);
    };
    t["abs"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation& w) {
      if (v.kind() == Value::Kind::floating) return Value::floating(std::fabs(v.as_float()));
      if (v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean) {
        if (v.as_int() == INT64_MIN) fail("OverflowError", "integer overflow", w);
        return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
      }
      type_error(fmt::format("bad operand type for abs(): '{}'", v.type_name()), w);
    };
    t["reverse"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation& w) {
      if (v.is_string()) {
        std::vector<char32_t> cps = py::code_points(v.str());
        std::reverse(cps.begin(), cps.end());
        return Value::string(py::from_code_points(cps));
      }
      std::vector<Value> items = iterate(v, w);
      std::reverse(items.begin(), items.end());
      return generator(std::move(items));
    };
    t["attr"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) {
      auto b = bind(a, {"name"}, "attr", w);
      if (!b[0]) type_error("attr() missing the name", w);
      // Python's getattr only: no fallback to items, unlike `v.name`.
      const std::string name = to_str(*b[0]);
      if (v.is_ns()) return in.get_attr(v, name, w);
      if (auto method = bound_method(v, name)) return *method;
      return Value::undefined(fmt::format("'{} object' has no attribute '{}'", v.type_name(), name));
    };
    t["wordcount"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) {
      return Value::integer(static_cast<int64_t>(py::split(to_str(v), std::nullopt, -1).size()));
    };
    return t;
  }();
  return table;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().contains(name); }

Value apply_filter(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args,
                   const SourceLocation& where) {
  in.charge(1 + Interpreter::cost_of(operand), where);
  const auto it = filters().find(name);
  if (it == filters().end()) fail("TemplateAssertionError", fmt::format("No filter named '{}'.", name), where);
  return it->second(in, operand, args, where);
}

}  // namespace llaisys::text::jinja
