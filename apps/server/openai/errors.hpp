#pragma once
// OpenAI error bodies: {"error": {"message", "type", "param", "code"}} and the HTTP status to send.

#include <string>
#include <string_view>

#include "llaisys/core/status.hpp"

namespace llaisys::server {

struct ApiError {
  int status = 500;
  std::string message;
  std::string type = "server_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
};

ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});
ApiError not_found_error(std::string message, std::string code = "not_found");
ApiError auth_error();
ApiError rate_limit_error(std::string message);
ApiError unavailable_error(std::string message);
ApiError internal_error(std::string message);

// A Status from request parsing or the engine: invalid_argument -> 400 (param guessed from a leading
// 'field' in the message), resource_exhausted from parsing -> 400 context_length_exceeded naming
// `context_param` (the field that holds the prompt), not_found -> 404, anything else -> 500.
ApiError from_parse_status(const Status& status, std::string_view context_param = "messages");

// The JSON body: {"error": {...}}.
std::string error_body(const ApiError& error);

}  // namespace llaisys::server
