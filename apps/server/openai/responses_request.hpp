#pragma once
// OpenAI Responses API request bodies (POST /v1/responses) -> the chat machinery's request.
//
// A Responses request is translated into the chat-completions body it means (instructions and input
// items as messages, function tools and tool_choice in the chat form, text.format as
// response_format) and parsed by parse_chat_request, so that templates, tool calls, forced tool
// calls, structured output and sampling behave exactly as on /v1/chat/completions. Every top-level
// field is honoured, accepted as having no effect on the output (store, metadata, user, ...), or
// refused with a 400 that names it; unknown fields are refused too. docs/SERVER.md lists them.

#include <boost/json.hpp>

#include "openai/errors.hpp"
#include "openai/request_parse.hpp"

namespace llaisys::server {

struct ParsedResponses {
  ParsedGenerate generate;
  // The request's settings as every Response object repeats them, defaults filled in:
  // instructions, tools (function tools in the Responses form), tool_choice, parallel_tool_calls,
  // temperature, top_p, text, metadata, max_output_tokens.
  boost::json::object settings;
};

Result<ParsedResponses> parse_responses_request(const boost::json::object& body, const ModelTextContext& model);

// from_parse_status for this route: a prompt over the context is the fault of 'input'.
ApiError responses_parse_error(const Status& status);

}  // namespace llaisys::server
