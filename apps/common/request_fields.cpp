#include "request_fields.hpp"

#include <cmath>

namespace llaisys::app {
namespace json = boost::json;

Status bad_field(std::string_view key, std::string_view expected) {
  return make_error(ErrorCode::invalid_argument, "'{}' must be {}", key, expected);
}

Result<std::optional<double>> number_field(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<double>();
  if (!v->is_number()) return bad_field(key, "a number");
  const double d = v->to_number<double>();
  if (!std::isfinite(d)) return bad_field(key, "a finite number");
  return std::optional<double>(d);
}

Result<std::optional<int64_t>> int_field(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<int64_t>();
  if (v->is_int64()) return std::optional<int64_t>(v->as_int64());
  if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return std::optional<int64_t>(static_cast<int64_t>(v->as_uint64()));
  }
  // 2.0 is an integer to JavaScript clients.
  if (v->is_double() && std::isfinite(v->as_double()) && std::trunc(v->as_double()) == v->as_double() &&
      std::fabs(v->as_double()) < 9.0e15) {
    return std::optional<int64_t>(static_cast<int64_t>(v->as_double()));
  }
  return bad_field(key, "an integer");
}

Result<std::optional<bool>> bool_field(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<bool>();
  if (!v->is_bool()) return bad_field(key, "true or false");
  return std::optional<bool>(v->as_bool());
}

Result<std::optional<std::string>> string_field(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) return bad_field(key, "a string");
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<std::vector<TokenId>> token_ids_field(const json::value& value, std::string_view key, int32_t vocab_size) {
  if (!value.is_array() || value.as_array().empty()) {
    return make_error(ErrorCode::invalid_argument, "'{}' must be a non-empty array of token ids", key);
  }
  std::vector<TokenId> ids;
  ids.reserve(value.as_array().size());
  for (const json::value& v : value.as_array()) {
    if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() >= vocab_size) {
      return make_error(ErrorCode::invalid_argument, "'{}' holds {} which is not a token id in [0, {})", key,
                        json::serialize(v).substr(0, 40), vocab_size);
    }
    ids.push_back(static_cast<TokenId>(v.as_int64()));
  }
  return ids;
}

Result<std::vector<std::string>> stop_strings_field(const json::object& object, std::string_view key) {
  std::vector<std::string> out;
  const json::value* v = object.if_contains(key);
  if (v == nullptr || v->is_null()) return out;
  if (v->is_string()) {
    out.emplace_back(v->as_string());
  } else if (v->is_array()) {
    for (const json::value& s : v->as_array()) {
      if (!s.is_string()) return bad_field(key, "a string or a list of strings");
      out.emplace_back(s.as_string());
    }
  } else {
    return bad_field(key, "a string or a list of strings");
  }
  return out;
}

}  // namespace llaisys::app
