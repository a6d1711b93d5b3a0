#include "auth.hpp"

#include <algorithm>
#include <cstdint>

namespace llaisys::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer string fully so that the time does not depend on where they differ.
  const std::size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<uint8_t>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<uint8_t>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool authorized(const std::vector<std::string>& keys, std::string_view authorization, std::string_view x_api_key) {
  if (keys.empty()) return true;
  std::string_view presented;
  // "Bearer" then one or more spaces (RFC 9110 11.4: the scheme is case-insensitive).
  constexpr std::string_view bearer = "bearer";
  const bool is_bearer = authorization.size() > bearer.size() && authorization[bearer.size()] == ' ' &&
                         std::equal(bearer.begin(), bearer.end(), authorization.begin(), [](char a, char b) {
                           return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
                         });
  if (is_bearer) {
    presented = authorization.substr(bearer.size());
    presented.remove_prefix(std::min(presented.find_first_not_of(' '), presented.size()));
  } else if (!x_api_key.empty()) {
    presented = x_api_key;
  } else {
    return false;
  }
  bool ok = false;
  for (const std::string& key : keys) ok = constant_time_equal(presented, key) || ok;
  return ok;
}

}  // namespace llaisys::server
