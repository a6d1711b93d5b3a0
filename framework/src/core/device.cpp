#include "llaisys/core/device.hpp"

#include <charconv>

namespace llaisys {

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

Result<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  constexpr std::string_view prefix = "cuda:";
  if (text.starts_with(prefix)) {
    const std::string_view digits = text.substr(prefix.size());
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0 && !digits.empty()) {
      return Device::cuda(index);
    }
  }
  return make_error(ErrorCode::invalid_argument,
                    "unknown device '{}' (expected 'cpu', 'cuda' or 'cuda:N')", text);
}

}  // namespace llaisys
