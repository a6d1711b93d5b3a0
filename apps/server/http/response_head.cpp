#include "http/response_head.hpp"

#include <sstream>

#include <boost/beast/http.hpp>

namespace llaisys::server {
namespace http = boost::beast::http;

std::string response_head(const ResponseHead& head) {
  http::response_header<> h;
  h.version(11);
  h.result(static_cast<unsigned>(head.status));
  if (!head.content_type.empty()) h.set(http::field::content_type, head.content_type);
  if (head.event_stream) {
    h.set(http::field::cache_control, "no-cache");
    h.set("X-Accel-Buffering", "no");
  }
  if (head.content_length) h.set(http::field::content_length, std::to_string(*head.content_length));
  if (head.chunked) h.set(http::field::transfer_encoding, "chunked");
  for (const auto& [name, value] : head.headers) h.insert(name, value);
  for (const auto& [name, value] : head.cors) h.insert(name, value);
  if (head.close) h.set(http::field::connection, "close");
  std::ostringstream out;  // Beast writes the start line, the fields and the blank line
  out << h;
  return std::move(out).str();
}

}  // namespace llaisys::server
