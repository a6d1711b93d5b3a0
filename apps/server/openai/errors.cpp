#include "openai/errors.hpp"

#include <boost/json.hpp>

#include "openai/response.hpp"

namespace llaisys::server {
namespace json = boost::json;

ApiError invalid_request(std::string message, std::string param, std::string code) {
  return {.status = 400, .message = std::move(message), .type = "invalid_request_error",
          .param = std::move(param), .code = std::move(code)};
}

ApiError not_found_error(std::string message, std::string code) {
  return {.status = 404, .message = std::move(message), .type = "invalid_request_error", .code = std::move(code)};
}

ApiError auth_error() {
  return {.status = 401,
          .message = "Incorrect or missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
          .type = "authentication_error",
          .code = "invalid_api_key"};
}

ApiError rate_limit_error(std::string message) {
  return {.status = 429, .message = std::move(message), .type = "rate_limit_error", .code = "too_many_requests"};
}

ApiError unavailable_error(std::string message) {
  return {.status = 503, .message = std::move(message), .type = "server_error", .code = "service_unavailable"};
}

ApiError internal_error(std::string message) {
  return {.status = 500, .message = std::move(message), .type = "server_error", .code = "internal_error"};
}

namespace {
// "'temperature' must be ..." -> "temperature".
std::string leading_param(const std::string& message) {
  if (message.size() < 3 || message.front() != '\'') return {};
  const auto end = message.find('\'', 1);
  if (end == std::string::npos || end == 1) return {};
  return message.substr(1, end - 1);
}
}  // namespace

ApiError from_parse_status(const Status& status, std::string_view context_param) {
  switch (status.code()) {
    case ErrorCode::invalid_argument:
    case ErrorCode::parse_error:
      return invalid_request(status.message(), leading_param(status.message()));
    case ErrorCode::resource_exhausted:
      return invalid_request(status.message(), std::string(context_param), "context_length_exceeded");
    case ErrorCode::not_found:
      return not_found_error(status.message());
    default:
      return internal_error(status.message());
  }
}

std::string error_body(const ApiError& error) {
  json::object inner;
  // Messages quote what the client sent (a model name, a role, a path), sometimes cut to a length:
  // invalid UTF-8 there, or a character cut in half, would make the body invalid JSON text.
  inner["message"] = sanitize_utf8(error.message);
  inner["type"] = error.type;
  inner["param"] = error.param.empty() ? json::value(nullptr) : json::value(sanitize_utf8(error.param));
  inner["code"] = error.code.empty() ? json::value(nullptr) : json::value(error.code);
  json::object body;
  body["error"] = std::move(inner);
  return json::serialize(body);
}

}  // namespace llaisys::server
