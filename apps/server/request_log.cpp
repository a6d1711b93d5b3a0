#include "request_log.hpp"

#include <array>
#include <cctype>

#include <fmt/format.h>

namespace llaisys::server {

std::string escape_for_log(std::string_view text, std::size_t max_len) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string redact_secrets(std::string_view text) {
  std::string out(text);
  // key=..., api_key=..., token=... in query strings; "Bearer xyz".
  static constexpr std::array<std::string_view, 5> markers = {"key=", "token=", "secret=", "password=", "Bearer "};
  for (std::string_view marker : markers) {
    std::size_t pos = 0;
    while ((pos = out.find(marker, pos)) != std::string::npos) {
      const std::size_t start = pos + marker.size();
      std::size_t end = start;
      while (end < out.size() && out[end] != '&' && out[end] != ' ' && out[end] != ';') ++end;
      if (end > start) out.replace(start, end - start, "[redacted]");
      pos = start + (end > start ? 10 : 0);
    }
  }
  return out;
}

std::string format_log_line(const RequestLogEntry& e) {
  std::string line = fmt::format("request id={} \"{} {}\" model=\"{}\" status={} prompt_tokens={} completion_tokens={} "
                                 "cached_tokens={}",
                                 escape_for_log(e.id, 64), escape_for_log(e.method, 16),
                                 escape_for_log(redact_secrets(e.target)), escape_for_log(e.model, 128), e.status,
                                 e.prompt_tokens, e.completion_tokens, e.cached_tokens);
  if (e.ttft_ms >= 0) line += fmt::format(" ttft_ms={:.1f}", e.ttft_ms);
  line += fmt::format(" duration_ms={:.1f}", e.duration_ms);
  if (!e.finish.empty()) line += fmt::format(" finish=\"{}\"", escape_for_log(redact_secrets(e.finish)));
  return line;
}

}  // namespace llaisys::server
