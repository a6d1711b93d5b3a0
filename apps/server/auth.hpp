#pragma once
// API keys: constant-time comparison and extraction from Authorization / x-api-key headers.

#include <string>
#include <string_view>
#include <vector>

namespace llaisys::server {

// Compares without an early exit on the first differing byte (the time depends only on the lengths).
bool constant_time_equal(std::string_view a, std::string_view b);

// True when `keys` is empty, or the "Authorization: Bearer KEY" or "x-api-key: KEY" value matches one
// of them. Every key is compared (no early exit), so timing does not reveal which one matched.
bool authorized(const std::vector<std::string>& keys, std::string_view authorization, std::string_view x_api_key);

}  // namespace llaisys::server
