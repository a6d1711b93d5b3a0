#pragma once
// One log line per request: id, model, status, tokens, TTFT, duration; control characters escaped
// and secrets redacted, so nothing a client sends can forge or corrupt a log line.

#include <cstdint>
#include <string>
#include <string_view>

namespace llaisys::server {

struct RequestLogEntry {
  std::string id;
  std::string method;
  std::string target;
  std::string model;
  int status = 0;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  double ttft_ms = -1;       // < 0: none
  double duration_ms = 0;
  std::string finish;        // finish reason(s) or error message
};

// Escapes bytes < 0x20, 0x7f, '"' and '\\' (as \n, \t, \xNN ...), and cuts at `max_len` bytes.
std::string escape_for_log(std::string_view text, std::size_t max_len = 200);
// Replaces the value of api-key-like query parameters and Bearer tokens with "[redacted]".
std::string redact_secrets(std::string_view text);
std::string format_log_line(const RequestLogEntry& entry);

}  // namespace llaisys::server
