#pragma once
// Values of the Jinja interpreter, with Python semantics: none/undefined, bool, int, float, str
// (optionally "safe", i.e. Jinja2's Markup), list/tuple/generator, dict (insertion-ordered),
// callables (macros, built-ins, bound methods) and namespaces. Lists and dicts are shared and
// immutable (templates run in Jinja2's ImmutableSandboxedEnvironment); namespaces are mutable.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/json/value.hpp>

#include "jinja/error.hpp"

namespace llaisys::text::jinja {

class Value;
class Interpreter;

enum class ListKind : uint8_t { list, tuple, generator, dict_items, dict_keys, dict_values };

// Containers nested deeper than this cannot be built (their destruction would recurse that deep).
inline constexpr uint32_t kMaxValueDepth = 1000;

struct ListData {
  std::vector<Value> items;
  ListKind kind = ListKind::list;
  mutable bool exhausted = false;  // a generator iterates once, like Python's
  uint32_t depth = 1;              // 1 + the deepest container inside
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;  // insertion order
  uint32_t depth = 1;                            // 1 + the deepest container inside
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

// A namespace's data. Namespaces are the one mutable container: a template can chain them link by
// link (ns.next = namespace()) past any depth checked when a value is stored, so their deleter
// never recurses: a namespace freed while another is being freed waits in a queue instead.
std::shared_ptr<DictData> make_namespace_data();

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The keyword `name` (removed from keyword), or nullptr.
  const Value* find_keyword(std::string_view name) const;
};

struct Callable {
  std::string name;
  bool is_macro = false;
  std::function<Value(Interpreter&, CallArgs&, const SourceLocation&)> call;
};

struct StringData {
  std::string text;
  bool safe = false;  // Jinja2 Markup
};

class Value {
 public:
  enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, callable, ns };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {}) {
    Value v;
    if (!hint.empty()) v.storage_ = std::make_shared<const StringData>(StringData{std::move(hint)});
    return v;
  }
  static Value none() { return Value(Kind::none); }
  static Value boolean(bool b) { return Value(Kind::boolean, b); }
  static Value integer(int64_t i) { return Value(Kind::integer, i); }
  static Value floating(double f) { return Value(Kind::floating, f); }
  static Value string(std::string s, bool safe = false) {
    return Value(Kind::string, std::make_shared<const StringData>(StringData{std::move(s), safe}));
  }
  // Both throw a LimitError beyond kMaxValueDepth.
  static Value list(std::vector<Value> items, ListKind kind = ListKind::list);
  static Value dict(std::shared_ptr<DictData> data);
  static Value callable(std::shared_ptr<const Callable> fn) { return Value(Kind::callable, std::move(fn)); }
  static Value ns(std::shared_ptr<DictData> data) { return Value(Kind::ns, std::move(data)); }
  // Converts JSON (object key order kept); depth beyond `max_depth` throws.
  static Value from_json(const boost::json::value& json, int max_depth = 256);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_dict() const { return kind_ == Kind::dict; }
  bool is_ns() const { return kind_ == Kind::ns; }

  bool as_bool() const { return std::get<bool>(scalar_); }
  int64_t as_int() const { return kind_ == Kind::boolean ? (as_bool() ? 1 : 0) : std::get<int64_t>(scalar_); }
  double as_float() const { return kind_ == Kind::floating ? std::get<double>(scalar_) : static_cast<double>(as_int()); }
  const std::string& str() const { return std::get<std::shared_ptr<const StringData>>(storage_)->text; }
  bool is_safe() const { return is_string() && std::get<std::shared_ptr<const StringData>>(storage_)->safe; }
  const ListData& list_data() const { return *std::get<std::shared_ptr<const ListData>>(storage_); }
  const std::vector<Value>& items() const { return list_data().items; }
  const DictData& dict_data() const;
  DictData& ns_data() const { return *std::get<std::shared_ptr<DictData>>(storage_); }
  const Callable& fn() const { return *std::get<std::shared_ptr<const Callable>>(storage_); }
  // The name an undefined value stands for ("'x' is undefined" / "'dict object' has no attribute 'y'").
  std::string undefined_message() const;

  // Container nesting: 0 for scalars.
  uint32_t depth() const;
  // Python truthiness.
  bool truthy() const;
  // Python's type name ("str", "int", "dict", "NoneType", "generator", ...).
  std::string type_name() const;

 private:
  explicit Value(Kind kind) : kind_(kind) {}
  template <class T>
  Value(Kind kind, T scalar) : kind_(kind), scalar_(scalar) {}
  Value(Kind kind, std::shared_ptr<const StringData> s) : kind_(kind), storage_(std::move(s)) {}
  Value(Kind kind, std::shared_ptr<const ListData> l) : kind_(kind), storage_(std::move(l)) {}
  Value(Kind kind, std::shared_ptr<const DictData> d) : kind_(kind), storage_(std::move(d)) {}
  Value(Kind kind, std::shared_ptr<const Callable> c) : kind_(kind), storage_(std::move(c)) {}
  Value(Kind kind, std::shared_ptr<DictData> d) : kind_(kind), storage_(std::move(d)) {}

  Kind kind_ = Kind::undefined;
  std::variant<std::monostate, bool, int64_t, double> scalar_;
  std::variant<std::monostate, std::shared_ptr<const StringData>, std::shared_ptr<const ListData>,
               std::shared_ptr<const DictData>, std::shared_ptr<const Callable>, std::shared_ptr<DictData>>
      storage_;
};

// ---- Python semantics (value_ops.cpp) ----
bool equals(const Value& a, const Value& b, int depth = 0);
// <0, 0, >0; throws a TypeError for unordered types.
int compare(const Value& a, const Value& b, const SourceLocation& where, int depth = 0);
std::string to_str(const Value& v);   // str(v); undefined -> ""
std::string repr(const Value& v, int depth = 0);
std::string float_repr(double d);
std::string string_repr(std::string_view s);
std::string html_escape(std::string_view s);

struct JsonOptions {
  std::optional<std::string> indent;  // nullopt: single line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
  std::size_t max_bytes = SIZE_MAX;  // a LimitError beyond this
};
// Python's json.dumps; throws a TypeError for values JSON cannot hold.
std::string to_json(const Value& v, const JsonOptions& options, const SourceLocation& where);

// Items of an iterable value (list, dict keys, string characters); throws for non-iterables.
// Marks generators exhausted.
std::vector<Value> iterate(const Value& v, const SourceLocation& where);

}  // namespace llaisys::text::jinja
