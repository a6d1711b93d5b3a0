#pragma once
// Helpers shared by the built-in filters, tests, methods and globals.

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "jinja/interpreter.hpp"

namespace llaisys::text::jinja {

// Binds call arguments to a Python-style parameter list; unknown keywords and extra positional
// arguments are TypeErrors naming `function`.
std::vector<std::optional<Value>> bind(const CallArgs& args, std::initializer_list<const char*> names,
                                       std::string_view function, const SourceLocation& where);

// Argument conversions with Python's error messages.
int64_t to_int_arg(const std::optional<Value>& v, int64_t fallback, std::string_view what, const SourceLocation& where);
bool to_bool_arg(const std::optional<Value>& v, bool fallback);
std::optional<std::string> to_str_arg(const std::optional<Value>& v);
std::string require_str(const Value& v, std::string_view function, const SourceLocation& where);

// Jinja2's attribute path lookup for map/sort/selectattr ("a.b" and "0" as an index).
Value attribute_path(Interpreter& in, const Value& item, const Value& attribute, const SourceLocation& where);

}  // namespace llaisys::text::jinja
