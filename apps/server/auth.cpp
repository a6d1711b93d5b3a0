#include "auth.hpp"

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
  constexpr std::string_view bearer = "Bearer ";
  if (authorization.size() > bearer.size() && authorization.substr(0, bearer.size()) == bearer) {
    presented = authorization.substr(bearer.size());
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
