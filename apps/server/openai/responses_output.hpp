#pragma once
// Engine outputs -> Responses API objects and stream events (POST /v1/responses).
//
// The output is a list of items in the order the model wrote them: for a reasoning model, a reasoning
// item (one reasoning_text part: its think block, app::ReasoningParser) first, then a message item
// (one output_text part) for each run of text, a function_call item for each tool call
// ToolCallParser finds.
// Whitespace that only separates text from a following call is no item; an output with no item at
// all is one message (empty text included). The stream is response.created, response.in_progress,
// then for each item output_item.added, its content (content_part.added, output_text.delta... or
// reasoning_text.delta..., output_text.done or reasoning_text.done, content_part.done; or
// function_call_arguments.delta and .done), output_item.done,
// and last response.completed, or response.incomplete when max_output_tokens (or the context) cut the
// output. An engine failure ends the stream with an `error` event instead. Every event carries its
// `type` and a `sequence_number` counting from 0; the non-streaming body is the final response
// object, built by the same steps.

#include <optional>
#include <string>

#include <boost/json.hpp>

#include "openai/response.hpp"
#include "openai/tool_calls.hpp"

namespace llaisys::server {

class ResponsesWriter final : public GenerationWriter {
 public:
  // `settings`: what parse_responses_request gathered for the Response object to repeat.
  // `reasoning`: ParsedGenerate::reasoning (set for reasoning models).
  ResponsesWriter(boost::json::object settings, bool parse_tools, std::optional<app::ReasoningOptions> reasoning,
                  ResponseMeta meta);

  std::string stream_start() override;
  // One prompt: `prompt` is always 0.
  std::string stream_events(const RequestOutput& output, std::size_t prompt = 0) override;
  void accumulate(const RequestOutput& output, std::size_t prompt = 0) override;
  std::string body() const override;  // the response object

  const std::optional<ApiError>& error() const override { return error_; }
  Usage usage() const override { return usage_; }
  std::string finish_summary() const override;

 private:
  // Applies one engine output; the events go to `events_` when it is set (streaming).
  void take(const RequestOutput& output);
  void add_reasoning(std::string_view text);
  void close_reasoning();
  void add_text(std::string_view text);
  void add_call(const ToolCall& call);
  void open_message();
  void close_message(std::string_view status);
  void finish(const ChoiceDelta& last);
  void emit(std::string_view type, boost::json::object fields);
  boost::json::object response_object() const;

  boost::json::object settings_;
  bool parse_tools_;
  ResponseMeta meta_;
  ToolCallParser parser_;
  std::optional<app::ReasoningParser> reasoning_;
  std::optional<std::size_t> reasoning_item_;  // the index in output_ of the open reasoning item
  std::string reasoning_text_;
  boost::json::array output_;             // the items so far
  std::optional<std::size_t> message_;    // the index in output_ of the message taking text now
  std::string message_text_;              // its text so far
  std::string held_space_;                // whitespace that no message has taken yet
  std::string status_ = "in_progress";    // then completed, incomplete or failed
  int64_t completed_at_ = 0;
  int64_t sequence_ = 0;
  std::string* events_ = nullptr;
  Usage usage_;
  std::optional<ApiError> error_;
};

}  // namespace llaisys::server
