#include "llaisys/core/status.hpp"

namespace llaisys {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::ok: return "ok";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::io_error: return "io_error";
    case ErrorCode::parse_error: return "parse_error";
    case ErrorCode::plugin_error: return "plugin_error";
    case ErrorCode::internal: return "internal";
    case ErrorCode::cancelled: return "cancelled";
    case ErrorCode::resource_exhausted: return "resource_exhausted";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return fmt::format("{}: {}", llaisys::to_string(code_), message_);
}

}  // namespace llaisys
