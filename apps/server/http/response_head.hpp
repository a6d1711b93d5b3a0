#pragma once
// The one place response heads are made: a Beast response header (status, reason, fields) written
// out by Beast. The session sends bodies and SSE chunks after it (http_chunk, sse.hpp) through its
// own paced writes (deadline per write, backlog bound), so only the head goes through Beast here.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llaisys::server {

struct ResponseHead {
  int status = 200;
  std::string_view content_type;                     // empty: none (204, interim responses)
  std::optional<std::size_t> content_length;         // set: Content-Length
  bool chunked = false;                              // Transfer-Encoding: chunked (streams, HTTP/1.1)
  bool event_stream = false;                         // SSE: no caching, no proxy buffering
  std::vector<std::pair<std::string, std::string>> headers;  // the route's own (Retry-After, Allow, ...)
  std::vector<std::pair<std::string, std::string>> cors;     // Access-Control-* for the request's origin
  bool close = false;                                // Connection: close
};

// "HTTP/1.1 <status> <reason>\r\n<fields>\r\n".
std::string response_head(const ResponseHead& head);

// An interim 100 Continue (before a body is read, or as the half-close probe).
inline constexpr std::string_view kInterimContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace llaisys::server
