// Python semantics of jinja::Value: truthiness, equality, ordering, str(), repr(), json.dumps.

#include "jinja/value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <unicode/uchar.h>

#include "utf8.hpp"

namespace llaisys::text::jinja {
namespace {

constexpr int kMaxDepth = 512;

void check_depth(int depth, const SourceLocation& where) {
  if (depth > kMaxDepth) fail("LimitError", "value nested too deeply", where);
}

uint32_t checked_depth(uint32_t deepest_child) {
  if (deepest_child + 1 > kMaxValueDepth) fail("LimitError", fmt::format("values nested deeper than {}", kMaxValueDepth), {});
  return deepest_child + 1;
}

const DictData& empty_dict() {
  static const DictData instance;
  return instance;
}

}  // namespace

// ---- containers -------------------------------------------------------------------------------

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

std::shared_ptr<DictData> make_namespace_data() {
  struct Deleter {
    void operator()(DictData* data) const {
      thread_local std::vector<DictData*>* queue = nullptr;
      if (queue != nullptr) {  // freed by the entries of one being freed: later, not nested
        queue->push_back(data);
        return;
      }
      std::vector<DictData*> pending{data};
      queue = &pending;
      while (!pending.empty()) {
        DictData* next = pending.back();
        pending.pop_back();
        delete next;  // may queue the namespaces only it held
      }
      queue = nullptr;
    }
  };
  return std::shared_ptr<DictData>(new DictData(), Deleter{});
}

void DictData::set(Value key, Value value) {
  depth = std::max(depth, checked_depth(std::max(key.depth(), value.depth())));
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::find_keyword(std::string_view name) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::list(std::vector<Value> items, ListKind kind) {
  uint32_t deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, item.depth());
  auto data = std::make_shared<ListData>(ListData{std::move(items), kind});
  data->depth = checked_depth(deepest);
  return Value(Kind::list, std::shared_ptr<const ListData>(std::move(data)));
}

Value Value::dict(std::shared_ptr<DictData> data) {
  uint32_t deepest = 0;
  for (const auto& [k, v] : data->entries) deepest = std::max({deepest, k.depth(), v.depth()});
  data->depth = checked_depth(deepest);
  return Value(Kind::dict, std::shared_ptr<const DictData>(std::move(data)));
}

uint32_t Value::depth() const {
  switch (kind_) {
    case Kind::list: return list_data().depth;
    case Kind::dict:
    case Kind::ns: return dict_data().depth;
    default: return 0;
  }
}

const DictData& Value::dict_data() const {
  if (kind_ == Kind::ns) return *std::get<std::shared_ptr<DictData>>(storage_);
  if (kind_ != Kind::dict) return empty_dict();
  return *std::get<std::shared_ptr<const DictData>>(storage_);
}

std::string Value::undefined_message() const {
  if (const auto* s = std::get_if<std::shared_ptr<const StringData>>(&storage_); s != nullptr && *s) return (*s)->text;
  return "value is undefined";
}

Value Value::from_json(const boost::json::value& json, int max_depth) {
  if (max_depth < 0) fail("LimitError", "JSON input nested too deeply", {});
  switch (json.kind()) {
    case boost::json::kind::null: return none();
    case boost::json::kind::bool_: return boolean(json.get_bool());
    case boost::json::kind::int64: return integer(json.get_int64());
    case boost::json::kind::uint64:
      if (json.get_uint64() > static_cast<uint64_t>(INT64_MAX)) return floating(static_cast<double>(json.get_uint64()));
      return integer(static_cast<int64_t>(json.get_uint64()));
    case boost::json::kind::double_: return floating(json.get_double());
    case boost::json::kind::string: return string(std::string(json.get_string()));
    case boost::json::kind::array: {
      std::vector<Value> items;
      items.reserve(json.get_array().size());
      for (const auto& item : json.get_array()) items.push_back(from_json(item, max_depth - 1));
      return list(std::move(items));
    }
    case boost::json::kind::object: {
      auto data = std::make_shared<DictData>();
      data->entries.reserve(json.get_object().size());
      for (const auto& entry : json.get_object()) {
        data->set(string(std::string(entry.key())), from_json(entry.value(), max_depth - 1));
      }
      return dict(std::move(data));
    }
  }
  return none();
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return as_bool();
    case Kind::integer: return as_int() != 0;
    case Kind::floating: return as_float() != 0.0;
    case Kind::string: return !str().empty();
    case Kind::list: return list_data().kind == ListKind::generator || !items().empty();
    case Kind::dict: return !dict_data().entries.empty();
    case Kind::callable:
    case Kind::ns: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return is_safe() ? "Markup" : "str";
    case Kind::list:
      switch (list_data().kind) {
        case ListKind::list: return "list";
        case ListKind::tuple: return "tuple";
        case ListKind::generator: return "generator";
        case ListKind::dict_items: return "dict_items";
        case ListKind::dict_keys: return "dict_keys";
        case ListKind::dict_values: return "dict_values";
      }
      return "list";
    case Kind::dict: return "dict";
    case Kind::callable: return fn().is_macro ? "Macro" : "builtin_function_or_method";
    case Kind::ns: return "Namespace";
  }
  return "object";
}

// ---- equality and order -----------------------------------------------------------------------

bool equals(const Value& a, const Value& b, int depth) {
  check_depth(depth, {});
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind() == K::floating || b.kind() == K::floating) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::undefined:
    case K::none: return true;
    case K::string: return a.str() == b.str();
    case K::list: {
      const bool a_tuple = a.list_data().kind == ListKind::tuple, b_tuple = b.list_data().kind == ListKind::tuple;
      if (a.list_data().kind == ListKind::generator || b.list_data().kind == ListKind::generator) {
        return &a.list_data() == &b.list_data();
      }
      if (a_tuple != b_tuple || a.items().size() != b.items().size()) return false;
      for (std::size_t i = 0; i < a.items().size(); ++i) {
        if (!equals(a.items()[i], b.items()[i], depth + 1)) return false;
      }
      return true;
    }
    case K::dict: {
      const auto& x = a.dict_data().entries;
      const auto& y = b.dict_data().entries;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = b.dict_data().find(k);
        if (other == nullptr || !equals(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case K::callable: return &a.fn() == &b.fn();
    case K::ns: return &a.ns_data() == &b.ns_data();
    default: return false;
  }
}

int compare(const Value& a, const Value& b, const SourceLocation& where, int depth) {
  check_depth(depth, where);
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::floating || b.kind() == Value::Kind::floating) {
      const double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) return a.str().compare(b.str()) < 0 ? -1 : (a.str() == b.str() ? 0 : 1);
  if (a.is_list() && b.is_list() && a.list_data().kind == b.list_data().kind &&
      a.list_data().kind != ListKind::generator) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      if (!equals(x[i], y[i], depth + 1)) return compare(x[i], y[i], where, depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  type_error(fmt::format("'<' not supported between instances of '{}' and '{}'", a.type_name(), b.type_name()), where);
}

// ---- str / repr -------------------------------------------------------------------------------

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
  const std::string sci(buffer, result.ptr);
  // sci: [-]D[.DDD]e[+-]XX
  const bool negative = sci[0] == '-';
  const std::size_t e = sci.find('e');
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::stoi(sci.substr(e + 1));
  const int decimal_point = exponent + 1;  // digits before the point
  std::string out = negative ? "-" : "";
  if (decimal_point > -4 && decimal_point <= 16) {
    if (decimal_point <= 0) {
      out.append("0.");
      out.append(static_cast<std::size_t>(-decimal_point), '0');
      out.append(digits);
    } else if (static_cast<std::size_t>(decimal_point) >= digits.size()) {
      out.append(digits);
      out.append(static_cast<std::size_t>(decimal_point) - digits.size(), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, static_cast<std::size_t>(decimal_point));
      out.push_back('.');
      out.append(digits, static_cast<std::size_t>(decimal_point));
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1);
  }
  out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

namespace {

bool is_printable(char32_t cp) {
  if (cp == U' ') return true;
  const int8_t type = u_charType(static_cast<UChar32>(cp));
  switch (type) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR: return false;
    default: return true;
  }
}

}  // namespace

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t n = utf8::valid_sequence_length(s, i);
    if (n == 0) {  // not valid UTF-8 (cannot come from JSON): show the byte
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(s[i]));
      ++i;
      continue;
    }
    const char32_t cp = utf8::decode_at(s, i, n);
    if (cp == static_cast<char32_t>(quote) || cp == U'\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == U'\n') {
      out += "\\n";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (cp == U'\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    } else if (cp < 0x80 || is_printable(cp)) {
      out.append(s.substr(i, n));
    } else if (cp <= 0xFF) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    } else if (cp <= 0xFFFF) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
    } else {
      out += fmt::format("\\U{:08x}", static_cast<unsigned>(cp));
    }
    i += n;
  }
  out += quote;
  return out;
}

std::string repr(const Value& v, int depth) {
  check_depth(depth, {});
  using K = Value::Kind;
  switch (v.kind()) {
    case K::undefined: return "Undefined";
    case K::string: return v.is_safe() ? "Markup(" + string_repr(v.str()) + ")" : string_repr(v.str());
    case K::list: {
      const ListKind kind = v.list_data().kind;
      if (kind == ListKind::generator) return "<generator object at 0x0>";
      std::string inner;
      for (std::size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) inner += ", ";
        inner += repr(v.items()[i], depth + 1);
      }
      switch (kind) {
        case ListKind::tuple: return "(" + inner + (v.items().size() == 1 ? ",)" : ")");
        case ListKind::dict_items: return "dict_items([" + inner + "])";
        case ListKind::dict_keys: return "dict_keys([" + inner + "])";
        case ListKind::dict_values: return "dict_values([" + inner + "])";
        default: return "[" + inner + "]";
      }
    }
    case K::dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, value] : v.dict_data().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr(k, depth + 1) + ": " + repr(value, depth + 1);
      }
      return out + "}";
    }
    case K::ns: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, value] : v.dict_data().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr(k, depth + 1) + ": " + repr(value, depth + 1);
      }
      return out + "}>";
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::undefined: return "";
    case K::none: return "None";
    case K::boolean: return v.as_bool() ? "True" : "False";
    case K::integer: return std::to_string(v.as_int());
    case K::floating: return float_repr(v.as_float());
    case K::string: return v.str();
    case K::callable: return v.fn().is_macro ? fmt::format("<Macro '{}'>", v.fn().name)
                                             : fmt::format("<built-in function {}>", v.fn().name);
    default: return repr(v);
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// ---- json.dumps -------------------------------------------------------------------------------

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            out += fmt::format("\\u{:04x}", c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    std::size_t n = utf8::valid_sequence_length(s, i);
    if (n == 0) n = 1;
    if (!ensure_ascii) {
      out.append(s.substr(i, n));
    } else {
      const char32_t cp = n == 1 ? 0xFFFD : utf8::decode_at(s, i, n);
      if (cp < 0x10000) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
      } else {
        const char32_t v = cp - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xD800 + (v >> 10)),
                           static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      }
    }
    i += n;
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return float_repr(d);
}

std::string json_key(const Value& key, const SourceLocation& where) {
  switch (key.kind()) {
    case Value::Kind::string: return key.str();
    case Value::Kind::integer: return std::to_string(key.as_int());
    case Value::Kind::floating: return json_float(key.as_float());
    case Value::Kind::boolean: return key.as_bool() ? "true" : "false";
    case Value::Kind::none: return "null";
    default: type_error(fmt::format("keys must be str, int, float, bool or None, not {}", key.type_name()), where);
  }
}

void dump(std::string& out, const Value& v, const JsonOptions& o, const SourceLocation& where, int depth) {
  check_depth(depth, where);
  if (out.size() > o.max_bytes) fail("LimitError", fmt::format("JSON output exceeds {} bytes", o.max_bytes), where);
  auto newline = [&](int level) {
    if (!o.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) {
      out += *o.indent;
      if (out.size() > o.max_bytes) fail("LimitError", fmt::format("JSON output exceeds {} bytes", o.max_bytes), where);
    }
  };
  using K = Value::Kind;
  switch (v.kind()) {
    case K::none: out += "null"; return;
    case K::boolean: out += v.as_bool() ? "true" : "false"; return;
    case K::integer: out += std::to_string(v.as_int()); return;
    case K::floating: out += json_float(v.as_float()); return;
    case K::string: json_string(out, v.str(), o.ensure_ascii); return;
    case K::list: {
      const ListKind kind = v.list_data().kind;
      if (kind != ListKind::list && kind != ListKind::tuple) break;
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += o.item_separator;
        newline(depth + 1);
        dump(out, v.items()[i], o, where, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case K::dict: {
      const auto& entries = v.dict_data().entries;
      if (entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      items.reserve(entries.size());
      for (const auto& [k, value] : entries) items.emplace_back(json_key(k, where), &value);
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += o.item_separator;
        newline(depth + 1);
        json_string(out, items[i].first, o.ensure_ascii);
        out += o.key_separator;
        dump(out, *items[i].second, o, where, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: break;
  }
  type_error(fmt::format("Object of type {} is not JSON serializable", v.type_name()), where);
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options, const SourceLocation& where) {
  std::string out;
  dump(out, v, options, where, 0);
  return out;
}

std::vector<Value> iterate(const Value& v, const SourceLocation& where) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::undefined: return {};
    case K::list: {
      const ListData& data = v.list_data();
      if (data.kind == ListKind::generator) {
        if (data.exhausted) return {};
        data.exhausted = true;
      }
      return data.items;
    }
    case K::dict: {
      std::vector<Value> keys;
      for (const auto& [k, value] : v.dict_data().entries) keys.push_back(k);
      return keys;
    }
    case K::string: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      for (std::size_t i = 0; i < s.size();) {
        std::size_t n = utf8::valid_sequence_length(s, i);
        if (n == 0) n = 1;
        chars.push_back(Value::string(s.substr(i, n), v.is_safe()));
        i += n;
      }
      return chars;
    }
    default: type_error(fmt::format("'{}' object is not iterable", v.type_name()), where);
  }
}

}  // namespace llaisys::text::jinja
