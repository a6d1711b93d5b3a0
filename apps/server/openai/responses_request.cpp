#include "openai/responses_request.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "openai/field_table.hpp"
#include "request_fields.hpp"

namespace llaisys::server {
namespace json = boost::json;
using app::bad_field;
using app::bool_field;
using app::int_field;
using app::string_field;

namespace {

// Accepted and without effect on the output (docs/SERVER.md, Responses API): nothing is stored,
// there is one service tier, no built-in tool, and logprobs are not produced.
constexpr std::array<std::string_view, 9> kNoEffect = {
    "store", "metadata", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier",
    "max_tool_calls", "top_logprobs"};
// Read by the translation below; each is honoured or, for values llaisys does not implement, refused.
constexpr std::array<std::string_view, 22> kRead = {
    "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
    "temperature", "top_p", "text", "stream", "stream_options", "truncation", "reasoning", "include", "background",
    "previous_response_id", "conversation", "prompt", "context_management", "moderation", "prompt_cache_options"};

bool present(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && !v->is_null();
}

Status refused(std::string_view field, std::string_view why) {
  return make_error(ErrorCode::invalid_argument, "'{}' is not supported: {}", field, why);
}

Status check_known_fields(const json::object& body) {
  for (const auto& [key, value] : body) {
    const std::string_view k = key;
    if (std::ranges::find(kRead, k) == kRead.end() && std::ranges::find(kNoEffect, k) == kNoEffect.end()) {
      return make_error(ErrorCode::invalid_argument, "'{}' is not a Responses API field llaisys knows",
                        k.substr(0, 64));
    }
  }
  return Status();
}

// The fields that ask for what llaisys does not do: stored state, background runs, hosted prompts,
// reasoning, optional outputs.
Status check_refused_fields(const json::object& body) {
  if (present(body, "previous_response_id")) {
    return refused("previous_response_id",
                   "llaisys stores no responses (store is false); send the whole conversation in 'input'");
  }
  if (present(body, "conversation")) {
    return refused("conversation", "llaisys stores no conversations; send the whole conversation in 'input'");
  }
  for (const char* field : {"prompt", "context_management", "moderation", "prompt_cache_options"}) {
    if (present(body, field)) return refused(field, "llaisys does not implement it");
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> background, bool_field(body, "background"));
  if (background == true) return refused("background", "responses are generated while the request is open");
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> truncation, string_field(body, "truncation"));
  if (truncation && *truncation != "disabled") {
    return refused("truncation", "an input over the context is refused (\"disabled\"), never cut");
  }
  // "reasoning.encrypted_content" asks for reasoning items to carry their content encrypted, for a
  // stateless client to send back: llaisys's reasoning items carry it in the clear ('content'), and
  // reasoning items sent back are read from there. Accepted without effect; openai-node's
  // ResponsesToolRunner sends it on every request.
  if (const json::value* include = body.if_contains("include"); include != nullptr && !include->is_null()) {
    if (!include->is_array()) return bad_field("include", "a list of strings");
    for (const json::value& value : include->as_array()) {
      if (!value.is_string()) return bad_field("include", "a list of strings");
      if (value.as_string() == "reasoning.encrypted_content") continue;
      return make_error(ErrorCode::invalid_argument,
                        "'include' value '{}' is not supported: llaisys produces none of the optional outputs",
                        std::string_view(value.as_string()).substr(0, 64));
    }
  }
  if (const json::value* reasoning = body.if_contains("reasoning"); reasoning != nullptr && !reasoning->is_null()) {
    if (!reasoning->is_object()) return bad_field("reasoning", "an object");
    for (const auto& [key, value] : reasoning->as_object()) {
      if (value.is_null() || (key == "effort" && value.is_string() && value.as_string() == "none")) continue;
      return make_error(ErrorCode::invalid_argument,
                        "'reasoning.{}' is not supported: llaisys neither grades reasoning effort nor summarises "
                        "reasoning (effort \"none\" turns a reasoning model's thinking off)",
                        std::string_view(key).substr(0, 64));
    }
  }
  if (const json::value* options = body.if_contains("stream_options"); options != nullptr && !options->is_null()) {
    if (!options->is_object()) return bad_field("stream_options", "an object");
    for (const auto& [key, value] : options->as_object()) {
      if (key != "include_obfuscation") {
        return make_error(ErrorCode::invalid_argument, "'stream_options.{}' is not supported",
                          std::string_view(key).substr(0, 64));
      }
      if (!value.is_null() && !value.is_bool()) return bad_field("stream_options.include_obfuscation", "true or false");
      if (value.is_bool() && value.as_bool()) {
        return refused("stream_options.include_obfuscation", "delta events carry no obfuscation padding");
      }
    }
  }
  return Status();
}

// Type checks of the fields that have no effect, so that a malformed one is still a 400.
Status check_no_effect_fields(const json::object& body) {
  LLAISYS_RETURN_IF_ERROR(bool_field(body, "store").status());
  for (const char* field : {"user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier"}) {
    LLAISYS_RETURN_IF_ERROR(string_field(body, field).status());
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> max_tool_calls, int_field(body, "max_tool_calls"));
  if (max_tool_calls && *max_tool_calls < 0) return bad_field("max_tool_calls", "a non-negative integer");
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> top_logprobs, int_field(body, "top_logprobs"));
  if (top_logprobs && (*top_logprobs < 0 || *top_logprobs > kMaxTopLogprobs)) {
    return bad_field("top_logprobs", fmt::format("in [0, {}]", kMaxTopLogprobs));
  }
  if (const json::value* metadata = body.if_contains("metadata"); metadata != nullptr && !metadata->is_null()) {
    LLAISYS_RETURN_IF_ERROR(check_metadata(*metadata, "metadata"));
  }
  return Status();
}

// The text of a message's content: a string, or a list of input_text / output_text parts (joined).
Result<std::string> content_text(const json::value& content, std::string_view field) {
  if (content.is_string()) return std::string(content.as_string());
  if (!content.is_array()) return bad_field(field, "items whose 'content' is a string or a list of text parts");
  std::string text;
  for (const json::value& part : content.as_array()) {
    const json::object* p = part.if_object();
    const json::value* type = p != nullptr ? p->if_contains("type") : nullptr;
    if (type == nullptr || !type->is_string()) return bad_field(field, "items whose content parts have a string 'type'");
    const std::string_view t = type->as_string();
    if (t != "input_text" && t != "output_text") {
      return make_error(ErrorCode::invalid_argument,
                        "'{}' content part type '{}' is not supported: only input_text and output_text are", field,
                        t.substr(0, 40));
    }
    const json::value* part_text = p->if_contains("text");
    if (part_text == nullptr || !part_text->is_string()) return bad_field(field, "text parts with a string 'text'");
    text += part_text->as_string();
  }
  return text;
}

Result<std::string> required_string(const json::object& item, std::string_view key, std::string_view type) {
  const json::value* v = item.if_contains(key);
  if (v == nullptr || !v->is_string() || (key != "arguments" && v->as_string().empty())) {
    return make_error(ErrorCode::invalid_argument, "'input' item of type '{}' needs a string '{}'", type, key);
  }
  return std::string(v->as_string());
}

// `instructions` and `input` as chat messages. Consecutive function_call items join the assistant
// message before them as its tool_calls, as a chat client sends one assistant turn with its calls.
// A reasoning item's text: its reasoning_text parts joined (what llaisys's reasoning items carry),
// else its summary_text parts (another server's items); encrypted content cannot be read.
Result<std::string> reasoning_item_text(const json::object& item) {
  if (const json::value* encrypted = item.if_contains("encrypted_content");
      encrypted != nullptr && !encrypted->is_null()) {
    return refused("input", "reasoning items with 'encrypted_content' cannot be read; send their 'content'");
  }
  std::string text;
  for (const char* key : {"content", "summary"}) {
    const json::value* parts = item.if_contains(key);
    if (parts == nullptr || parts->is_null()) continue;
    if (!parts->is_array()) return bad_field("input", "reasoning items whose 'content' and 'summary' are lists");
    for (const json::value& part : parts->as_array()) {
      const json::object* p = part.if_object();
      const json::value* t = p != nullptr ? p->if_contains("text") : nullptr;
      if (t == nullptr || !t->is_string()) {
        return bad_field("input", "reasoning items whose parts are {\"type\", \"text\"} objects");
      }
      if (!text.empty()) text += "\n";
      text += t->as_string();
    }
    if (!text.empty()) break;
  }
  return text;
}

Result<json::array> input_messages(const json::object& body) {
  json::array messages;
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> instructions, string_field(body, "instructions"));
  if (instructions) messages.push_back(json::object{{"role", "system"}, {"content", *instructions}});
  const std::size_t first_input = messages.size();
  const json::value* input = body.if_contains("input");
  if (input != nullptr && input->is_string()) {
    messages.push_back(json::object{{"role", "user"}, {"content", input->as_string()}});
    return messages;
  }
  if (input == nullptr || !input->is_array() || input->as_array().empty()) {
    return bad_field("input", "a string or a non-empty list of items");
  }
  // A reasoning item's text goes to the assistant turn it precedes as its reasoning_content (the chat
  // template decides whether to render it back); one that precedes no assistant turn is a turn of
  // its own with empty content.
  std::optional<std::string> reasoning;
  const auto assistant_turn = [&](json::object message) {
    if (reasoning) message["reasoning_content"] = std::move(*reasoning);
    reasoning.reset();
    messages.push_back(std::move(message));
  };
  const auto flush_reasoning = [&] {
    if (reasoning) assistant_turn(json::object{{"role", "assistant"}, {"content", ""}});
  };
  for (const json::value& value : input->as_array()) {
    const json::object* item = value.if_object();
    if (item == nullptr) return bad_field("input", "a list of objects");
    std::string_view type = "message";
    if (const json::value* t = item->if_contains("type"); t != nullptr && !t->is_null()) {
      if (!t->is_string()) return bad_field("input", "items whose 'type' is a string");
      type = t->as_string();
    }
    if (type == "message") {
      const json::value* role = item->if_contains("role");
      const std::string_view r = role != nullptr && role->is_string() ? std::string_view(role->as_string()) : "";
      if (r != "user" && r != "assistant" && r != "system" && r != "developer") {
        return bad_field("input", "message items whose 'role' is user, assistant, system or developer");
      }
      const json::value* content = item->if_contains("content");
      if (content == nullptr) return bad_field("input", "message items with a 'content'");
      LLAISYS_ASSIGN_OR_RETURN(std::string text, content_text(*content, "input"));
      if (r == "assistant") {
        assistant_turn(json::object{{"role", r}, {"content", std::move(text)}});
      } else {
        flush_reasoning();
        messages.push_back(json::object{{"role", r}, {"content", std::move(text)}});
      }
    } else if (type == "reasoning") {
      LLAISYS_ASSIGN_OR_RETURN(std::string text, reasoning_item_text(*item));
      if (!text.empty()) reasoning = reasoning ? *reasoning + "\n" + text : text;  // an empty one carries nothing
    } else if (type == "function_call") {
      LLAISYS_ASSIGN_OR_RETURN(std::string call_id, required_string(*item, "call_id", type));
      LLAISYS_ASSIGN_OR_RETURN(std::string name, required_string(*item, "name", type));
      LLAISYS_ASSIGN_OR_RETURN(std::string arguments, required_string(*item, "arguments", type));
      json::object call{{"id", call_id},
                        {"type", "function"},
                        {"function", json::object{{"name", name}, {"arguments", arguments}}}};
      json::object* last = messages.size() > first_input ? &messages.back().as_object() : nullptr;
      if (last == nullptr || last->at("role") != "assistant" || reasoning) {
        assistant_turn(json::object{{"role", "assistant"}, {"content", nullptr}});
        last = &messages.back().as_object();
      }
      json::value& calls = (*last)["tool_calls"];
      if (!calls.is_array()) calls = json::array();
      calls.as_array().push_back(std::move(call));
    } else if (type == "function_call_output") {
      LLAISYS_ASSIGN_OR_RETURN(std::string call_id, required_string(*item, "call_id", type));
      const json::value* output = item->if_contains("output");
      if (output == nullptr) return bad_field("input", "function_call_output items with an 'output'");
      LLAISYS_ASSIGN_OR_RETURN(std::string text, content_text(*output, "input"));
      flush_reasoning();
      messages.push_back(json::object{{"role", "tool"}, {"tool_call_id", call_id}, {"content", std::move(text)}});
    } else {
      return make_error(ErrorCode::invalid_argument,
                        "'input' item type '{}' is not supported: only message, reasoning, function_call and "
                        "function_call_output are",
                        type.substr(0, 40));
    }
  }
  flush_reasoning();
  return messages;
}

struct Tools {
  json::array chat;       // {"type": "function", "function": {...}}, what the chat parser takes
  json::array responses;  // the Responses form, as the Response object repeats them
};

// Function tools only; "strict" defaults to true in the Responses API.
Result<Tools> function_tools(const json::object& body) {
  Tools out;
  const json::value* tools = body.if_contains("tools");
  if (tools == nullptr || tools->is_null()) return out;
  if (!tools->is_array()) return bad_field("tools", "a list of function tools");
  for (const json::value& value : tools->as_array()) {
    const json::object* tool = value.if_object();
    const json::value* type = tool != nullptr ? tool->if_contains("type") : nullptr;
    if (type == nullptr || !type->is_string()) return bad_field("tools", "a list of objects with a string 'type'");
    if (type->as_string() != "function") {
      return make_error(ErrorCode::invalid_argument, "'tools' type '{}' is not supported: only function tools are",
                        std::string_view(type->as_string()).substr(0, 40));
    }
    json::object function;
    json::object echo{{"type", "function"}};
    for (const auto& [key, v] : *tool) {
      if (key == "type") continue;
      if (key == "name") {
        if (!v.is_string() || v.as_string().empty()) return bad_field("tools", "function tools with a string 'name'");
      } else if (key == "description") {
        if (!v.is_string() && !v.is_null()) return bad_field("tools", "function tools whose 'description' is a string");
      } else if (key == "parameters") {
        if (!v.is_object() && !v.is_null()) return bad_field("tools", "function tools whose 'parameters' is an object");
      } else if (key == "strict") {
        if (!v.is_bool() && !v.is_null()) return bad_field("tools", "function tools whose 'strict' is true or false");
      } else {
        return make_error(ErrorCode::invalid_argument, "'tools' function field '{}' is not supported",
                          std::string_view(key).substr(0, 40));
      }
      if (!v.is_null()) function[key] = v;
    }
    if (!function.contains("name")) return bad_field("tools", "function tools with a string 'name'");
    if (!function.contains("strict")) function["strict"] = true;
    echo["name"] = function.at("name");
    if (function.contains("description")) echo["description"] = function.at("description");
    echo["parameters"] = function.contains("parameters") ? function.at("parameters") : json::value(nullptr);
    echo["strict"] = function.at("strict");
    out.chat.push_back(json::object{{"type", "function"}, {"function", std::move(function)}});
    out.responses.push_back(std::move(echo));
  }
  return out;
}

// "none" | "auto" | "required" | {"type": "function", "name"} -> the chat form.
Result<json::value> chat_tool_choice(const json::value& choice) {
  if (choice.is_string()) return choice;  // the chat parser checks the words
  const json::object* o = choice.if_object();
  const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
  if (type == nullptr || !type->is_string()) {
    return bad_field("tool_choice", "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}");
  }
  if (type->as_string() != "function") {
    return make_error(ErrorCode::invalid_argument, "'tool_choice' type '{}' is not supported: only function tools are",
                      std::string_view(type->as_string()).substr(0, 40));
  }
  const json::value* name = o->if_contains("name");
  if (name == nullptr || !name->is_string()) return bad_field("tool_choice", "{\"type\": \"function\", \"name\": ...}");
  return json::value(json::object{{"type", "function"}, {"function", json::object{{"name", *name}}}});
}

// text.format -> the chat response_format (absent for plain text); `echo` gets what the Response
// object repeats.
Result<json::value> response_format(const json::object& body, json::object& echo) {
  echo = json::object{{"format", json::object{{"type", "text"}}}};
  const json::value* text = body.if_contains("text");
  if (text == nullptr || text->is_null()) return json::value(nullptr);
  if (!text->is_object()) return bad_field("text", "an object");
  for (const auto& [key, value] : text->as_object()) {
    if (key == "format" || value.is_null()) continue;
    // verbosity "medium" is the default, which is what every llaisys output is.
    if (key == "verbosity" && value.is_string() && value.as_string() == "medium") continue;
    return make_error(ErrorCode::invalid_argument, "'text.{}' is not supported", std::string_view(key).substr(0, 40));
  }
  const json::value* format = text->as_object().if_contains("format");
  if (format == nullptr || format->is_null()) return json::value(nullptr);
  const json::object* f = format->if_object();
  const json::value* type = f != nullptr ? f->if_contains("type") : nullptr;
  if (type == nullptr || !type->is_string()) {
    return bad_field("text.format", "an object with a 'type' of \"text\", \"json_object\" or \"json_schema\"");
  }
  const std::string_view t = type->as_string();
  echo["format"] = *f;
  if (t == "text") return json::value(nullptr);
  if (t == "json_object") return json::value(json::object{{"type", "json_object"}});
  if (t != "json_schema") {
    return make_error(ErrorCode::invalid_argument,
                      "'text.format' type '{}' is not supported (\"text\", \"json_object\" or \"json_schema\")",
                      t.substr(0, 40));
  }
  json::object schema_spec;
  for (const auto& [key, value] : *f) {
    if (key == "type" || key == "description") continue;  // the description is not shown to the model
    if (key == "name") {
      if (!value.is_string()) return bad_field("text.format.name", "a string");
    } else if (key == "strict") {
      if (!value.is_bool() && !value.is_null()) return bad_field("text.format.strict", "true or false");
    } else if (key != "schema") {
      return make_error(ErrorCode::invalid_argument, "'text.format.{}' is not supported",
                        std::string_view(key).substr(0, 40));
    }
    schema_spec[key] = value;
  }
  if (!schema_spec.contains("name")) return bad_field("text.format.name", "a string (the json_schema format's name)");
  if (!present(schema_spec, "schema")) return bad_field("text.format.schema", "a JSON Schema");
  return json::value(json::object{{"type", "json_schema"}, {"json_schema", std::move(schema_spec)}});
}

}  // namespace

Result<ParsedResponses> parse_responses_request(const json::object& body, const ModelTextContext& model) {
  LLAISYS_RETURN_IF_ERROR(check_known_fields(body));
  LLAISYS_RETURN_IF_ERROR(check_refused_fields(body));
  LLAISYS_RETURN_IF_ERROR(check_no_effect_fields(body));

  ParsedResponses out;
  json::object& settings = out.settings;
  json::object chat;
  LLAISYS_ASSIGN_OR_RETURN(chat["messages"], input_messages(body));
  LLAISYS_ASSIGN_OR_RETURN(Tools tools, function_tools(body));
  if (!tools.chat.empty()) chat["tools"] = std::move(tools.chat);
  settings["tools"] = std::move(tools.responses);
  settings["tool_choice"] = "auto";
  if (const json::value* choice = body.if_contains("tool_choice"); choice != nullptr && !choice->is_null()) {
    LLAISYS_ASSIGN_OR_RETURN(chat["tool_choice"], chat_tool_choice(*choice));
    settings["tool_choice"] = *choice;
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> parallel, bool_field(body, "parallel_tool_calls"));
  if (parallel) chat["parallel_tool_calls"] = *parallel;
  settings["parallel_tool_calls"] = parallel.value_or(true);
  for (const char* key : {"temperature", "top_p", "stream"}) {
    if (present(body, key)) chat[key] = body.at(key);
  }
  if (const json::value* reasoning = body.if_contains("reasoning"); reasoning != nullptr && reasoning->is_object()) {
    const json::value* effort = reasoning->as_object().if_contains("effort");
    if (effort != nullptr && effort->is_string()) chat["reasoning_effort"] = *effort;  // "none" (checked above)
  }
  json::object text;
  LLAISYS_ASSIGN_OR_RETURN(json::value format, response_format(body, text));
  if (!format.is_null()) chat["response_format"] = std::move(format);
  settings["text"] = std::move(text);

  auto parsed = parse_chat_request(chat, model);
  if (!parsed.ok()) {
    // The chat parser names the messages it rendered; here they came from 'input'.
    std::string message = parsed.status().message();
    if (message.starts_with("'messages'")) message.replace(0, 10, "'input'");
    return Status(parsed.status().code(), std::move(message));
  }
  out.generate = std::move(parsed).value();
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> max_output_tokens, int_field(body, "max_output_tokens"));
  LLAISYS_RETURN_IF_ERROR(limit_output_tokens(max_output_tokens, "max_output_tokens", model, out.generate.request));

  // The values as sent (a float would repeat 0.7 as 0.699999988); 1 is the default of both.
  settings["temperature"] = present(body, "temperature") ? body.at("temperature") : json::value(1.0);
  settings["top_p"] = present(body, "top_p") ? body.at("top_p") : json::value(1.0);
  settings["instructions"] = present(body, "instructions") ? body.at("instructions") : json::value(nullptr);
  settings["max_output_tokens"] = max_output_tokens ? json::value(*max_output_tokens) : json::value(nullptr);
  settings["metadata"] = present(body, "metadata") ? body.at("metadata") : json::value(json::object());
  return out;
}

ApiError responses_parse_error(const Status& status) { return from_parse_status(status, "input"); }

}  // namespace llaisys::server
