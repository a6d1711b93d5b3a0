#pragma once
// A setting's allowed range and the check every app runs on values from flags and files alike (a
// TOML file skips CLI11's checks), with one message: "key = value is outside [lo, hi]".

#include <cstdint>
#include <string_view>

#include "llaisys/core/status.hpp"

namespace llaisys::app {

struct ValueRange {
  int64_t lo, hi;
};

inline Status check_range(std::string_view key, int64_t value, ValueRange range) {
  if (value >= range.lo && value <= range.hi) return Status();
  return make_error(ErrorCode::invalid_argument, "{} = {} is outside [{}, {}]", key, value, range.lo, range.hi);
}

}  // namespace llaisys::app
