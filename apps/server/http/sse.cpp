#include "http/sse.hpp"

#include <fmt/format.h>

namespace llaisys::server {

std::string sse_data(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  std::size_t start = 0;
  while (true) {
    const std::size_t end = payload.find_first_of("\r\n", start);
    out += "data: ";
    out += payload.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (payload[end] == '\r' && start < payload.size() && payload[start] == '\n') ++start;
  }
  out += '\n';
  return out;
}

std::string sse_event(std::string_view type, std::string_view payload) {
  return fmt::format("event: {}\n{}", type, sse_data(payload));
}

std::string http_chunk(std::string_view data) {
  if (data.empty()) return {};
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

}  // namespace llaisys::server
