#pragma once
// Server-sent events framing and HTTP/1.1 chunked transfer coding, as pure functions.

#include <string>
#include <string_view>

namespace llaisys::server {

// "data: {payload}\n\n". The payload must not contain a newline (compact JSON never does; any
// newline is split into several data lines, as the SSE specification joins them back).
std::string sse_data(std::string_view payload);
// "event: {type}\n" then sse_data(payload): a named event, as the Responses API streams them.
std::string sse_event(std::string_view type, std::string_view payload);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
inline constexpr std::string_view kSseKeepAlive = ": keep-alive\n\n";

// One chunk of a chunked body: "{hex size}\r\n{data}\r\n" (empty data gives nothing: an empty
// chunk would end the body). kLastChunk ends the body.
std::string http_chunk(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace llaisys::server
