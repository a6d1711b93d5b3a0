#pragma once
// Where a tensor lives: the host, or one CUDA device.

#include <string>
#include <string_view>

#include "llaisys/core/status.hpp"

namespace llaisys {

struct Device {
  enum class Kind : uint8_t { cpu = 0, cuda = 1 };
  Kind kind = Kind::cpu;
  int index = 0;

  static constexpr Device cpu() { return {}; }
  static constexpr Device cuda(int index) { return {.kind = Kind::cuda, .index = index}; }

  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }
  bool operator==(const Device&) const = default;

  // "cpu", "cuda:0"
  std::string to_string() const;
};

// Parses "cpu", "cuda" (device 0) and "cuda:N".
Result<Device> parse_device(std::string_view text);

}  // namespace llaisys
