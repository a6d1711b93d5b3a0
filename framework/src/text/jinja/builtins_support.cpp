#include "jinja/builtins_support.hpp"

#include <charconv>

namespace llaisys::text::jinja {

std::vector<std::optional<Value>> bind(const CallArgs& args, std::initializer_list<const char*> names,
                                       std::string_view function, const SourceLocation& where) {
  std::vector<std::optional<Value>> values(names.size());
  if (args.positional.size() > names.size()) {
    type_error(fmt::format("{}() takes at most {} argument(s) ({} given)", function, names.size(), args.positional.size()),
               where);
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) values[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    std::size_t index = 0;
    for (const char* name : names) {
      if (key == name) break;
      ++index;
    }
    if (index == names.size()) type_error(fmt::format("{}() got an unexpected keyword argument '{}'", function, key), where);
    if (values[index]) type_error(fmt::format("{}() got multiple values for argument '{}'", function, key), where);
    values[index] = value;
  }
  return values;
}

int64_t to_int_arg(const std::optional<Value>& v, int64_t fallback, std::string_view what, const SourceLocation& where) {
  if (!v || v->is_none()) return fallback;
  if (v->kind() == Value::Kind::integer || v->kind() == Value::Kind::boolean) return v->as_int();
  type_error(fmt::format("'{}' must be an integer, not '{}'", what, v->type_name()), where);
}

bool to_bool_arg(const std::optional<Value>& v, bool fallback) { return v ? v->truthy() : fallback; }

std::optional<std::string> to_str_arg(const std::optional<Value>& v) {
  if (!v || v->is_none()) return std::nullopt;
  return to_str(*v);
}

std::string require_str(const Value& v, std::string_view function, const SourceLocation& where) {
  if (!v.is_string()) type_error(fmt::format("{}() argument must be str, not {}", function, v.type_name()), where);
  return v.str();
}

Value attribute_path(Interpreter& in, const Value& item, const Value& attribute, const SourceLocation& where) {
  if (!attribute.is_string()) return in.get_item(item, attribute, where);
  Value current = item;
  const std::string& path = attribute.str();
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    const auto result = std::from_chars(part.data(), part.data() + part.size(), index);
    if (!part.empty() && result.ec == std::errc() && result.ptr == part.data() + part.size()) {
      current = in.get_item(current, Value::integer(index), where);
    } else {
      current = in.get_item(current, Value::string(part), where);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

}  // namespace llaisys::text::jinja
