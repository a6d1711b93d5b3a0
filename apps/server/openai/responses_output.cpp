#include "openai/responses_output.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "http/sse.hpp"

namespace llaisys::server {
namespace json = boost::json;

namespace {

constexpr int kIdDigits = 32;

bool blank(std::string_view text) { return text.find_first_not_of(" \t\r\n") == std::string_view::npos; }

json::object output_text_part(std::string_view text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json::object usage_object(const Usage& usage, int64_t reasoning_tokens) {
  // llaisys's prefix cache fills itself as a side effect of every request: nothing is written to it
  // on request, so cache_write_tokens is 0.
  return {{"input_tokens", usage.prompt_tokens},
          {"input_tokens_details", json::object{{"cached_tokens", usage.cached_tokens}, {"cache_write_tokens", 0}}},
          {"output_tokens", usage.completion_tokens},
          {"output_tokens_details", json::object{{"reasoning_tokens", reasoning_tokens}}},
          {"total_tokens", usage.total_tokens()}};
}

json::object reasoning_text_part(std::string_view text) { return {{"type", "reasoning_text"}, {"text", text}}; }

}  // namespace

ResponsesWriter::ResponsesWriter(json::object settings, bool parse_tools, std::optional<app::ReasoningOptions> reasoning,
                                 ResponseMeta meta)
    : settings_(std::move(settings)), parse_tools_(parse_tools), meta_(std::move(meta)) {
  if (reasoning) reasoning_.emplace(*reasoning);
}

void ResponsesWriter::emit(std::string_view type, json::object fields) {
  const int64_t sequence = sequence_++;
  if (events_ == nullptr) return;
  json::object event{{"type", type}};
  for (auto& [key, value] : fields) event[key] = std::move(value);
  event["sequence_number"] = sequence;
  *events_ += sse_event(type, json::serialize(event));
}

std::string ResponsesWriter::stream_start() {
  std::string events;
  events_ = &events;
  emit("response.created", {{"response", response_object()}});
  emit("response.in_progress", {{"response", response_object()}});
  events_ = nullptr;
  return events;
}

std::string ResponsesWriter::stream_events(const RequestOutput& output, std::size_t /*prompt*/) {
  std::string events;
  events_ = &events;
  take(output);
  events_ = nullptr;
  return events;
}

void ResponsesWriter::accumulate(const RequestOutput& output, std::size_t /*prompt*/) { take(output); }

void ResponsesWriter::take(const RequestOutput& output) {
  usage_ = output.usage;
  for (const ChoiceDelta& delta : output.choices) {
    if (delta.index != 0 || status_ != "in_progress") continue;
    if (delta.finish_reason == FinishReason::error) {
      finish(delta);
      continue;
    }
    std::string text = delta.text;
    if (reasoning_) {
      app::ReasoningSplit split = reasoning_->feed(delta.text, delta.token_ids, delta.finish_reason.has_value());
      add_reasoning(split.reasoning);
      text = std::move(split.content);
    }
    if (!parse_tools_) {
      add_text(text);
    } else {
      ToolParseResult result = parser_.feed(text);
      if (delta.finish_reason) result.append(parser_.finish());
      // Text and calls in the order the model wrote them.
      std::size_t at = 0;
      for (std::size_t i = 0; i < result.calls.size(); ++i) {
        add_text(std::string_view(result.content).substr(at, result.call_offsets[i] - at));
        at = result.call_offsets[i];
        add_call(result.calls[i]);
      }
      add_text(std::string_view(result.content).substr(at));
    }
    if (delta.finish_reason) finish(delta);
  }
}

void ResponsesWriter::add_reasoning(std::string_view text) {
  if (text.empty()) return;
  if (!reasoning_item_) {
    reasoning_item_ = output_.size();
    json::object item{{"id", "rs_" + random_hex(kIdDigits)},
                      {"type", "reasoning"},
                      {"status", "in_progress"},
                      {"summary", json::array()},
                      {"content", json::array()},
                      {"encrypted_content", nullptr}};
    output_.push_back(item);
    const auto index = static_cast<int64_t>(*reasoning_item_);
    emit("response.output_item.added", {{"output_index", index}, {"item", std::move(item)}});
    emit("response.content_part.added", {{"item_id", output_[*reasoning_item_].as_object().at("id")},
                                         {"output_index", index},
                                         {"content_index", 0},
                                         {"part", reasoning_text_part("")}});
  }
  reasoning_text_ += text;
  emit("response.reasoning_text.delta", {{"item_id", output_[*reasoning_item_].as_object().at("id")},
                                         {"output_index", static_cast<int64_t>(*reasoning_item_)},
                                         {"content_index", 0},
                                         {"delta", text}});
}

void ResponsesWriter::close_reasoning() {
  if (!reasoning_item_) return;
  json::object& item = output_[*reasoning_item_].as_object();
  const auto index = static_cast<int64_t>(*reasoning_item_);
  const json::value id = item.at("id");
  emit("response.reasoning_text.done",
       {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", reasoning_text_}});
  emit("response.content_part.done",
       {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", reasoning_text_part(reasoning_text_)}});
  item["status"] = "completed";
  item["content"] = json::array{reasoning_text_part(reasoning_text_)};
  emit("response.output_item.done", {{"output_index", index}, {"item", item}});
  reasoning_item_.reset();
}

void ResponsesWriter::add_text(std::string_view text) {
  if (text.empty()) return;
  if (!message_) {
    // Whitespace before a call (Qwen2.5 writes "\n" between text and a call) is no message.
    held_space_ += text;
    if (blank(held_space_)) return;
    open_message();
    text = held_space_;
  }
  message_text_ += text;
  emit("response.output_text.delta", {{"item_id", output_[*message_].as_object().at("id")},
                                      {"output_index", static_cast<int64_t>(*message_)},
                                      {"content_index", 0},
                                      {"delta", text},
                                      {"logprobs", json::array()}});
  held_space_.clear();
}

void ResponsesWriter::open_message() {
  close_reasoning();
  message_ = output_.size();
  json::object item{{"id", "msg_" + random_hex(kIdDigits)},
                    {"type", "message"},
                    {"status", "in_progress"},
                    {"content", json::array()},
                    {"role", "assistant"}};
  output_.push_back(item);
  const auto index = static_cast<int64_t>(*message_);
  emit("response.output_item.added", {{"output_index", index}, {"item", std::move(item)}});
  emit("response.content_part.added", {{"item_id", output_[*message_].as_object().at("id")},
                                       {"output_index", index},
                                       {"content_index", 0},
                                       {"part", output_text_part("")}});
}

void ResponsesWriter::close_message(std::string_view status) {
  json::object& item = output_[*message_].as_object();
  const auto index = static_cast<int64_t>(*message_);
  const json::value id = item.at("id");
  emit("response.output_text.done", {{"item_id", id},
                                     {"output_index", index},
                                     {"content_index", 0},
                                     {"text", message_text_},
                                     {"logprobs", json::array()}});
  emit("response.content_part.done",
       {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", output_text_part(message_text_)}});
  item["status"] = status;
  item["content"] = json::array{output_text_part(message_text_)};
  emit("response.output_item.done", {{"output_index", index}, {"item", item}});
  message_.reset();
  message_text_.clear();
}

void ResponsesWriter::add_call(const ToolCall& call) {
  held_space_.clear();
  close_reasoning();
  if (message_) close_message("completed");
  const auto index = static_cast<int64_t>(output_.size());
  json::object item{{"id", "fc_" + random_hex(kIdDigits)},
                    {"type", "function_call"},
                    {"status", "in_progress"},
                    {"arguments", ""},
                    {"call_id", call.id},
                    {"name", call.name}};
  const json::value id = item.at("id");
  emit("response.output_item.added", {{"output_index", index}, {"item", item}});
  // A call is only known once its block is complete: its arguments come as one delta.
  emit("response.function_call_arguments.delta", {{"item_id", id}, {"output_index", index}, {"delta", call.arguments}});
  emit("response.function_call_arguments.done",
       {{"item_id", id}, {"name", call.name}, {"output_index", index}, {"arguments", call.arguments}});
  item["status"] = "completed";
  item["arguments"] = call.arguments;
  output_.push_back(item);
  emit("response.output_item.done", {{"output_index", index}, {"item", std::move(item)}});
}

void ResponsesWriter::finish(const ChoiceDelta& last) {
  switch (*last.finish_reason) {
    case FinishReason::error:
      status_ = "failed";
      error_ = internal_error(fmt::format("generation failed: {}", last.finish_detail));
      emit("error", {{"code", "server_error"}, {"message", error_->message}, {"param", nullptr}});
      return;
    case FinishReason::abort:
      status_ = "cancelled";  // the client is gone: nothing more is sent
      return;
    case FinishReason::length:
    case FinishReason::ignored:
      status_ = "incomplete";
      break;
    case FinishReason::stop:
      status_ = "completed";
      break;
  }
  close_reasoning();
  const bool answered = std::ranges::any_of(output_, [](const json::value& item) {
    return item.as_object().at("type") != "reasoning";
  });
  if (!message_ && !answered) {
    // No message or call: one message with whatever text there was (only whitespace, or none).
    const std::string text = std::move(held_space_);
    held_space_.clear();
    open_message();
    add_text(text);
  }
  if (message_) close_message(status_);
  completed_at_ = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  emit(status_ == "completed" ? "response.completed" : "response.incomplete", {{"response", response_object()}});
}

json::object ResponsesWriter::response_object() const {
  json::object r{{"id", meta_.id},
                 {"object", "response"},
                 {"created_at", meta_.created},
                 {"status", status_},
                 {"background", false},
                 {"completed_at", status_ == "completed" ? json::value(completed_at_) : json::value(nullptr)},
                 {"error", nullptr},
                 {"incomplete_details", status_ == "incomplete"
                                            ? json::value(json::object{{"reason", "max_output_tokens"}})
                                            : json::value(nullptr)},
                 {"model", meta_.model},
                 {"output", output_},
                 {"previous_response_id", nullptr},
                 {"reasoning", nullptr},
                 {"store", false},  // nothing is kept (docs/SERVER.md)
                 {"truncation", "disabled"}};
  for (const auto& [key, value] : settings_) r[key] = value;
  if (status_ != "in_progress") r["usage"] = usage_object(usage_, reasoning_ ? reasoning_->reasoning_tokens() : 0);
  return r;
}

std::string ResponsesWriter::body() const { return json::serialize(response_object()); }

std::string ResponsesWriter::finish_summary() const {
  std::string out = status_;
  for (const json::value& item : output_) {
    out += fmt::format(" {}", std::string_view(item.as_object().at("type").as_string()));
  }
  if (error_) out += " error: " + error_->message;
  return out;
}

}  // namespace llaisys::server
