// Jinja2's built-in tests, the Python methods templates call on str/dict/list, and the globals
// Hugging Face provides (raise_exception, strftime_now) plus Jinja2's namespace/range/dict.

#include <ctime>
#include <functional>
#include <map>

#include "jinja/builtins_support.hpp"
#include "jinja/py_string.hpp"

namespace llaisys::text::jinja {
namespace {

__extension__ typedef __int128 Int128;  // exact intermediate results for int64 overflow checks

// ---- tests ------------------------------------------------------------------------------------

using TestFn = std::function<bool(Interpreter&, const Value&, CallArgs&, const SourceLocation&)>;

const Value& one_arg(const CallArgs& args, std::string_view test, const SourceLocation& where) {
  if (args.positional.size() != 1) type_error(fmt::format("test '{}' takes one argument", test), where);
  return args.positional[0];
}

bool same_as(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::none:
    case K::undefined: return true;
    case K::boolean: return a.as_bool() == b.as_bool();
    case K::integer: return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;  // CPython's small ints
    case K::string: return &a.str() == &b.str();
    case K::list: return &a.list_data() == &b.list_data();
    case K::dict:
    case K::ns: return &a.dict_data() == &b.dict_data();
    case K::callable: return &a.fn() == &b.fn();
    default: return false;
  }
}

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> table = [] {
    using K = Value::Kind;
    std::map<std::string, TestFn, std::less<>> t;
    auto unary = [](std::function<bool(const Value&)> f) {
      return [f](Interpreter&, const Value& v, CallArgs&, const SourceLocation&) { return f(v); };
    };
    t["defined"] = unary([](const Value& v) { return !v.is_undefined(); });
    t["undefined"] = unary([](const Value& v) { return v.is_undefined(); });
    t["none"] = unary([](const Value& v) { return v.is_none(); });
    t["boolean"] = unary([](const Value& v) { return v.kind() == K::boolean; });
    t["true"] = unary([](const Value& v) { return v.kind() == K::boolean && v.as_bool(); });
    t["false"] = unary([](const Value& v) { return v.kind() == K::boolean && !v.as_bool(); });
    t["integer"] = unary([](const Value& v) { return v.kind() == K::integer; });
    t["float"] = unary([](const Value& v) { return v.kind() == K::floating; });
    t["number"] = unary([](const Value& v) { return v.is_number(); });
    t["string"] = unary([](const Value& v) { return v.is_string(); });
    t["mapping"] = unary([](const Value& v) { return v.is_dict(); });
    t["iterable"] = unary([](const Value& v) {
      return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
    });
    t["sequence"] = unary([](const Value& v) {
      return v.is_undefined() || v.is_string() || v.is_dict() || (v.is_list() && v.list_data().kind == ListKind::list) ||
             (v.is_list() && v.list_data().kind == ListKind::tuple);
    });
    t["callable"] = unary([](const Value& v) { return v.kind() == K::callable; });
    t["escaped"] = unary([](const Value& v) { return v.is_safe(); });
    t["lower"] = unary([](const Value& v) { return py::is_lower(to_str(v)); });
    t["upper"] = unary([](const Value& v) { return py::is_upper(to_str(v)); });
    t["even"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation& w) {
      if (!v.is_number()) type_error(fmt::format("unsupported operand type(s) for %: '{}' and 'int'", v.type_name()), w);
      return v.kind() == K::floating ? std::fmod(v.as_float(), 2.0) == 0.0 : v.as_int() % 2 == 0;
    };
    t["odd"] = [](Interpreter&, const Value& v, CallArgs&, const SourceLocation& w) {
      if (!v.is_number()) type_error(fmt::format("unsupported operand type(s) for %: '{}' and 'int'", v.type_name()), w);
      return v.kind() == K::floating ? std::fabs(std::fmod(v.as_float(), 2.0)) == 1.0 : v.as_int() % 2 != 0;
    };
    t["divisibleby"] = [](Interpreter& in, const Value& v, CallArgs& a, const SourceLocation& w) {
      return binary_op(in, "%", v, one_arg(a, "divisibleby", w), w).as_float() == 0.0;
    };
    t["sameas"] = [](Interpreter&, const Value& v, CallArgs& a, const SourceLocation& w) { return same_as(v, one_arg(a, "sameas", w)); };
    t["in"] = [](Interpreter&, const Value& v, CallArgs& a, const SourceLocation& w) { return contains(one_arg(a, "in", w), v, w); };
    auto eq = [](Interpreter&, const Value& v, CallArgs& a, const SourceLocation& w) { return equals(v, one_arg(a, "eq", w)); };
    auto ne = [](Interpreter&, const Value& v, CallArgs& a, const SourceLocation& w) { return !equals(v, one_arg(a, "ne", w)); };
    t["eq"] = t["equalto"] = t["=="] = eq;
    t["ne"] = t["!="] = ne;
    auto order = [](int (*pick)(int)) {
      return [pick](Interpreter&, const Value& v, CallArgs& a, const SourceLocation& w) {
        return pick(compare(v, one_arg(a, "comparison", w), w)) != 0;
      };
    };
    t["lt"] = t["lessthan"] = t["<"] = order([](int c) { return static_cast<int>(c < 0); });
    t["le"] = t["<="] = order([](int c) { return static_cast<int>(c <= 0); });
    t["gt"] = t["greaterthan"] = t[">"] = order([](int c) { return static_cast<int>(c > 0); });
    t["ge"] = t[">="] = order([](int c) { return static_cast<int>(c >= 0); });
    return t;
  }();
  return table;
}

// ---- methods ----------------------------------------------------------------------------------

using MethodFn = std::function<Value(Interpreter&, const Value& self, CallArgs&, const SourceLocation&)>;

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  for (std::string& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

bool affix_match(const Value& self, const Value& affix, bool prefix, const SourceLocation& where) {
  auto check = [&](const Value& a) {
    if (!a.is_string()) type_error(fmt::format("{} first arg must be str or a tuple of str, not {}",
                                               prefix ? "startswith" : "endswith", a.type_name()), where);
    return prefix ? self.str().starts_with(a.str()) : self.str().ends_with(a.str());
  };
  if (affix.is_list() && affix.list_data().kind == ListKind::tuple) {
    for (const Value& a : affix.items()) {
      if (check(a)) return true;
    }
    return false;
  }
  return check(affix);
}

const std::map<std::string, MethodFn, std::less<>>& string_methods() {
  static const std::map<std::string, MethodFn, std::less<>> table = [] {
    std::map<std::string, MethodFn, std::less<>> t;
    auto strip = [](bool left, bool right, const char* name) {
      return [=](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
        auto a = bind(args, {"chars"}, name, w);
        return Value::string(py::strip(self.str(), to_str_arg(a[0]), left, right));
      };
    };
    t["strip"] = strip(true, true, "strip");
    t["lstrip"] = strip(true, false, "lstrip");
    t["rstrip"] = strip(false, true, "rstrip");
    auto split = [](bool from_right, const char* name) {
      return [=](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
        auto a = bind(args, {"sep", "maxsplit"}, name, w);
        const std::optional<std::string> sep = to_str_arg(a[0]);
        if (sep && sep->empty()) fail("ValueError", "empty separator", w);
        return str_list(py::split(self.str(), sep, to_int_arg(a[1], -1, "maxsplit", w), from_right));
      };
    };
    t["split"] = split(false, "split");
    t["rsplit"] = split(true, "rsplit");
    t["splitlines"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"keepends"}, "splitlines", w);
      return str_list(py::splitlines(self.str(), to_bool_arg(a[0], false)));
    };
    t["startswith"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      if (args.positional.empty()) type_error("startswith() takes at least 1 argument (0 given)", w);
      return Value::boolean(affix_match(self, args.positional[0], true, w));
    };
    t["endswith"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      if (args.positional.empty()) type_error("endswith() takes at least 1 argument (0 given)", w);
      return Value::boolean(affix_match(self, args.positional[0], false, w));
    };
    t["replace"] = [](Interpreter& in, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"old", "new", "count"}, "replace", w);
      if (!a[0] || !a[1]) type_error("replace expected at least 2 arguments", w);
      std::string out = py::replace(self.str(), require_str(*a[0], "replace", w), require_str(*a[1], "replace", w),
                                    to_int_arg(a[2], -1, "count", w), in.limits().max_output_bytes);
      in.check_size(out.size(), w);
      return Value::string(std::move(out));
    };
    t["join"] = [](Interpreter& in, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"iterable"}, "join", w);
      if (!a[0]) type_error("join() takes exactly one argument (0 given)", w);
      std::string out;
      bool first = true;
      for (const Value& item : iterate(*a[0], w)) {
        if (!item.is_string()) type_error(fmt::format("sequence item: expected str instance, {} found", item.type_name()), w);
        if (!first) out += self.str();
        first = false;
        out += item.str();
        in.check_size(out.size(), w);
      }
      return Value::string(std::move(out));
    };
    auto simple = [](std::string (*fn)(std::string_view)) {
      return [fn](Interpreter&, const Value& self, CallArgs&, const SourceLocation&) { return Value::string(fn(self.str())); };
    };
    t["upper"] = simple(py::upper);
    t["lower"] = simple(py::lower);
    t["title"] = simple(py::title);
    t["capitalize"] = simple(py::capitalize);
    auto find = [](bool from_right, bool raise, const char* name) {
      return [=](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
        auto a = bind(args, {"sub"}, name, w);
        if (!a[0]) type_error(fmt::format("{}() takes at least 1 argument (0 given)", name), w);
        const std::string sub = require_str(*a[0], name, w);
        const std::size_t hit = from_right ? self.str().rfind(sub) : self.str().find(sub);
        if (hit == std::string::npos) {
          if (raise) fail("ValueError", "substring not found", w);
          return Value::integer(-1);
        }
        return Value::integer(static_cast<int64_t>(py::length(std::string_view(self.str()).substr(0, hit))));
      };
    };
    t["find"] = find(false, false, "find");
    t["rfind"] = find(true, false, "rfind");
    t["index"] = find(false, true, "index");
    t["count"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"sub"}, "count", w);
      if (!a[0]) type_error("count() takes at least 1 argument (0 given)", w);
      const std::string sub = require_str(*a[0], "count", w);
      if (sub.empty()) return Value::integer(static_cast<int64_t>(py::length(self.str()) + 1));
      int64_t n = 0;
      for (std::size_t at = self.str().find(sub); at != std::string::npos; at = self.str().find(sub, at + sub.size())) ++n;
      return Value::integer(n);
    };
    auto predicate = [](bool (*p)(char32_t)) {
      return [p](Interpreter&, const Value& self, CallArgs&, const SourceLocation&) { return Value::boolean(py::all_chars(self.str(), p)); };
    };
    t["isdigit"] = predicate(py::is_digit_char);
    t["isalpha"] = predicate(py::is_alpha_char);
    t["isalnum"] = predicate(py::is_alnum_char);
    t["isspace"] = predicate(py::is_space);
    t["islower"] = [](Interpreter&, const Value& self, CallArgs&, const SourceLocation&) { return Value::boolean(py::is_lower(self.str())); };
    t["isupper"] = [](Interpreter&, const Value& self, CallArgs&, const SourceLocation&) { return Value::boolean(py::is_upper(self.str())); };
    return t;
  }();
  return table;
}

const std::map<std::string, MethodFn, std::less<>>& dict_methods() {
  static const std::map<std::string, MethodFn, std::less<>> table = [] {
    std::map<std::string, MethodFn, std::less<>> t;
    t["get"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"key", "default"}, "get", w);
      if (!a[0]) type_error("get expected at least 1 argument, got 0", w);
      const Value* found = self.dict_data().find(*a[0]);
      return found != nullptr ? *found : a[1].value_or(Value::none());
    };
    auto view = [](ListKind kind) {
      return [kind](Interpreter&, const Value& self, CallArgs&, const SourceLocation&) {
        std::vector<Value> items;
        for (const auto& [k, v] : self.dict_data().entries) {
          items.push_back(kind == ListKind::dict_items ? Value::list({k, v}, ListKind::tuple)
                                                       : (kind == ListKind::dict_keys ? k : v));
        }
        return Value::list(std::move(items), kind);
      };
    };
    t["items"] = view(ListKind::dict_items);
    t["keys"] = view(ListKind::dict_keys);
    t["values"] = view(ListKind::dict_values);
    return t;
  }();
  return table;
}

const std::map<std::string, MethodFn, std::less<>>& list_methods() {
  static const std::map<std::string, MethodFn, std::less<>> table = [] {
    std::map<std::string, MethodFn, std::less<>> t;
    t["index"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"value"}, "index", w);
      if (!a[0]) type_error("index expected at least 1 argument, got 0", w);
      for (std::size_t i = 0; i < self.items().size(); ++i) {
        if (equals(self.items()[i], *a[0])) return Value::integer(static_cast<int64_t>(i));
      }
      fail("ValueError", fmt::format("{} is not in list", repr(*a[0])), w);
    };
    t["count"] = [](Interpreter&, const Value& self, CallArgs& args, const SourceLocation& w) {
      auto a = bind(args, {"value"}, "count", w);
      if (!a[0]) type_error("count() takes exactly one argument (0 given)", w);
      int64_t n = 0;
      for (const Value& v : self.items()) n += equals(v, *a[0]);
      return Value::integer(n);
    };
    return t;
  }();
  return table;
}

// Methods that would mutate a container: Jinja2's ImmutableSandboxedEnvironment refuses them.
bool is_mutating(const Value& object, std::string_view name) {
  static const char* const list_names[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
  static const char* const dict_names[] = {"pop", "popitem", "setdefault", "update", "clear"};
  if (object.is_list()) return std::find(std::begin(list_names), std::end(list_names), name) != std::end(list_names);
  if (object.is_dict()) return std::find(std::begin(dict_names), std::end(dict_names), name) != std::end(dict_names);
  return false;
}

Value bind_method(const Value& self, std::string name, const MethodFn& fn) {
  auto callable = std::make_shared<Callable>();
  callable->name = name;
  callable->call = [self, fn](Interpreter& in, CallArgs& args, const SourceLocation& where) {
    in.charge(1 + Interpreter::cost_of(self), where);
    return fn(in, self, args, where);
  };
  return Value::callable(std::move(callable));
}

}  // namespace

bool has_test(std::string_view name) { return tests().contains(name); }

bool apply_test(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args, const SourceLocation& where) {
  in.charge(1 + Interpreter::cost_of(operand), where);
  const auto it = tests().find(name);
  if (it == tests().end()) fail("TemplateAssertionError", fmt::format("No test named '{}'.", name), where);
  return it->second(in, operand, args, where);
}

std::optional<Value> bound_method(const Value& object, std::string_view name) {
  const std::map<std::string, MethodFn, std::less<>>* table = nullptr;
  if (object.is_string()) table = &string_methods();
  if (object.is_dict()) table = &dict_methods();
  if (object.is_list() && (object.list_data().kind == ListKind::list || object.list_data().kind == ListKind::tuple)) {
    table = &list_methods();
  }
  if (is_mutating(object, name)) {
    const std::string method(name);
    const std::string type = object.type_name();
    return bind_method(object, method, [method, type](Interpreter&, const Value&, CallArgs&, const SourceLocation& where) -> Value {
      fail("SecurityError", fmt::format("access to attribute '{}' of '{}' object is unsafe.", method, type), where);
    });
  }
  if (table == nullptr) return std::nullopt;
  const auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return bind_method(object, std::string(name), it->second);
}

// ---- globals ----------------------------------------------------------------------------------

std::shared_ptr<Frame> make_globals(std::chrono::system_clock::time_point now) {
  auto globals = std::make_shared<Frame>();
  auto add = [&](const char* name, std::function<Value(Interpreter&, CallArgs&, const SourceLocation&)> fn) {
    auto callable = std::make_shared<Callable>();
    callable->name = name;
    callable->call = std::move(fn);
    globals->set(name, Value::callable(std::move(callable)));
  };
  add("raise_exception", [](Interpreter&, CallArgs& args, const SourceLocation& where) -> Value {
    fail("TemplateError", args.positional.empty() ? std::string() : to_str(args.positional[0]), where);
  });
  add("strftime_now", [now](Interpreter&, CallArgs& args, const SourceLocation& where) {
    auto a = bind(args, {"format"}, "strftime_now", where);
    const std::string format = a[0] ? to_str(*a[0]) : "";
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm local{};
    localtime_r(&t, &local);
    std::string out(256, '\0');
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"  // the template chooses the format, as in Python
    const std::size_t n = format.empty() ? 0 : std::strftime(out.data(), out.size(), format.c_str(), &local);
#pragma GCC diagnostic pop
    out.resize(n);
    return Value::string(std::move(out));
  });
  add("namespace", [](Interpreter& in, CallArgs& args, const SourceLocation& where) {
    auto data = make_namespace_data();
    in.track_namespace(data);
    for (const Value& initial : args.positional) {
      if (!initial.is_dict()) type_error("namespace() positional argument must be a mapping", where);
      for (const auto& [k, v] : initial.dict_data().entries) data->set(k, v);
    }
    for (const auto& [k, v] : args.keyword) data->set(Value::string(k), v);
    return Value::ns(std::move(data));
  });
  add("dict", [](Interpreter&, CallArgs& args, const SourceLocation& where) {
    auto data = std::make_shared<DictData>();
    for (const Value& initial : args.positional) {
      if (!initial.is_dict()) type_error("dict() positional argument must be a mapping", where);
      for (const auto& [k, v] : initial.dict_data().entries) data->set(k, v);
    }
    for (const auto& [k, v] : args.keyword) data->set(Value::string(k), v);
    return Value::dict(std::move(data));
  });
  add("range", [](Interpreter& in, CallArgs& args, const SourceLocation& where) {
    if (args.positional.empty() || args.positional.size() > 3) type_error("range expected 1 to 3 arguments", where);
    int64_t values[3] = {0, 0, 1};
    for (std::size_t i = 0; i < args.positional.size(); ++i) {
      const Value& v = args.positional[i];
      if (v.kind() != Value::Kind::integer && v.kind() != Value::Kind::boolean) {
        type_error(fmt::format("'{}' object cannot be interpreted as an integer", v.type_name()), where);
      }
      values[args.positional.size() == 1 ? 1 : i] = v.as_int();
    }
    const int64_t start = values[0], stop = values[1], step_by = values[2];
    if (step_by == 0) fail("ValueError", "range() arg 3 must not be zero", where);
    const Int128 span = step_by > 0 ? static_cast<Int128>(stop) - start : static_cast<Int128>(start) - stop;
    const Int128 count = span <= 0 ? 0 : (span + (step_by > 0 ? step_by : -step_by) - 1) / (step_by > 0 ? step_by : -step_by);
    if (count > in.limits().max_range) {
      fail("OverflowError", fmt::format("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", in.limits().max_range), where);
    }
    in.charge(static_cast<int64_t>(count), where);
    std::vector<Value> items;
    items.reserve(static_cast<std::size_t>(count));
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::integer(start + i * step_by));
    return Value::list(std::move(items));
  });
  return globals;
}

}  // namespace llaisys::text::jinja
