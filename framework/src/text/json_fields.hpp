#pragma once
// Small typed accessors for tokenizer.json / tokenizer_config.json objects with clear errors.

#include <string>
#include <string_view>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "llaisys/core/status.hpp"

namespace llaisys::text::json_fields {

inline Result<const boost::json::object*> object_of(const boost::json::value& v, std::string_view what) {
  if (!v.is_object()) return make_error(ErrorCode::parse_error, "{} must be an object", what);
  return &v.get_object();
}

inline std::string_view type_of(const boost::json::object& o) {
  const boost::json::value* t = o.if_contains("type");
  return t != nullptr && t->is_string() ? std::string_view(t->get_string()) : std::string_view();
}

inline Result<bool> bool_or(const boost::json::object& o, std::string_view key, bool fallback) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_bool()) return make_error(ErrorCode::parse_error, "'{}' must be true or false", key);
  return v->get_bool();
}

inline Result<std::string> string_or(const boost::json::object& o, std::string_view key, std::string fallback) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_string()) return make_error(ErrorCode::parse_error, "'{}' must be a string", key);
  return std::string(v->get_string());
}

inline Result<std::string> required_string(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return make_error(ErrorCode::parse_error, "'{}' must be a string", key);
  return std::string(v->get_string());
}

}  // namespace llaisys::text::json_fields
