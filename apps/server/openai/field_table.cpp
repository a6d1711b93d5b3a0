#include "openai/field_table.hpp"

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>

#include "request_fields.hpp"

namespace llaisys::server {
namespace json = boost::json;

namespace {

constexpr uint8_t kChat = static_cast<uint8_t>(Endpoint::chat);
constexpr uint8_t kCompletions = static_cast<uint8_t>(Endpoint::completions);
constexpr uint8_t kEmbeddings = static_cast<uint8_t>(Endpoint::embeddings);
constexpr uint8_t kGenerate = kChat | kCompletions;
constexpr uint8_t kAll = kGenerate | kEmbeddings;

constexpr RequestField honoured(std::string_view name, uint8_t endpoints) {
  return {.name = name, .endpoints = endpoints, .use = FieldUse::honoured};
}
constexpr RequestField ignored(std::string_view name, uint8_t endpoints, ValueType type) {
  return {.name = name, .endpoints = endpoints, .use = FieldUse::ignored, .type = type};
}
constexpr RequestField refused(std::string_view name, uint8_t endpoints, std::string_view why,
                               std::string_view accepted = "") {
  return {.name = name, .endpoints = endpoints, .use = FieldUse::refused, .accepted = accepted, .why = why};
}

// docs/SERVER.md, "Request fields", has a row for each, in this order.
constexpr auto kFields = std::to_array<RequestField>({
    // OpenAI's fields.
    honoured("model", kAll),
    honoured("messages", kChat),
    honoured("prompt", kCompletions),
    honoured("input", kEmbeddings),
    honoured("max_tokens", kGenerate),
    honoured("max_completion_tokens", kGenerate),
    honoured("temperature", kGenerate),
    honoured("top_p", kGenerate),
    honoured("n", kGenerate),
    honoured("seed", kGenerate),
    honoured("stop", kGenerate),
    honoured("presence_penalty", kGenerate),
    honoured("frequency_penalty", kGenerate),
    honoured("logit_bias", kGenerate),
    honoured("logprobs", kGenerate),
    honoured("top_logprobs", kChat),
    honoured("stream", kGenerate),
    honoured("stream_options", kGenerate),
    honoured("stream_options.include_usage", kGenerate),
    refused("stream_options.include_obfuscation", kGenerate, "chunks carry no obfuscation padding", "false"),
    honoured("response_format", kGenerate),
    honoured("tools", kChat),
    honoured("tool_choice", kChat),
    honoured("parallel_tool_calls", kChat),
    honoured("echo", kCompletions),
    honoured("best_of", kCompletions),
    refused("suffix", kCompletions, "no model here has an infilling (insertion) format", "\"\""),
    honoured("dimensions", kEmbeddings),
    honoured("encoding_format", kEmbeddings),
    ignored("user", kAll, ValueType::string),
    ignored("store", kChat, ValueType::boolean),
    ignored("metadata", kChat, ValueType::metadata),
    ignored("safety_identifier", kChat, ValueType::string),
    ignored("prompt_cache_key", kChat, ValueType::string),
    ignored("prompt_cache_retention", kChat, ValueType::string),
    ignored("service_tier", kChat, ValueType::string),
    ignored("prediction", kChat, ValueType::object),
    refused("modalities", kChat, "llaisys's models write text only", R"(["text"])"),
    refused("audio", kChat, "llaisys's models write text only"),
    refused("reasoning_effort", kChat,
            "llaisys does not grade reasoning effort (\"none\" turns a reasoning model's thinking off)", "\"none\""),
    refused("verbosity", kChat, "only \"medium\", the default, is what llaisys's models write", "\"medium\""),
    refused("web_search_options", kChat, "llaisys has no built-in tools"),
    refused("functions", kChat, "deprecated by OpenAI; send the functions as 'tools'"),
    refused("function_call", kChat, "deprecated by OpenAI; send it as 'tool_choice'"),
    refused("moderation", kChat, "llaisys runs no moderation model"),
    refused("prompt_cache_options", kChat,
            "llaisys has no cache breakpoints or lifetimes to set (its prefix cache is automatic)"),
    // vLLM's extensions.
    honoured("top_k", kGenerate),
    honoured("min_p", kGenerate),
    honoured("repetition_penalty", kGenerate),
    honoured("min_tokens", kGenerate),
    honoured("ignore_eos", kGenerate),
    honoured("stop_token_ids", kGenerate),
    honoured("skip_special_tokens", kGenerate),
    honoured("cache_salt", kGenerate),
    honoured("speculative", kGenerate),  // llaisys: false opts this request out of --speculative
    honoured("chat_template_kwargs", kChat),
    honoured("guided_json", kGenerate),
    honoured("guided_regex", kGenerate),
    honoured("guided_choice", kGenerate),
    honoured("guided_grammar", kGenerate),
    honoured("structured_outputs", kGenerate),
    honoured("guided_decoding_backend", kGenerate),
    refused("guided_whitespace_pattern", kGenerate, "the JSON grammar's whitespace is fixed"),
    refused("structural_tag", kGenerate, "llaisys does not implement it"),
    refused("include_stop_str_in_output", kGenerate, "stop strings are never part of the text", "false"),
});

bool has_members(Endpoint endpoint, std::string_view parent) {
  return std::ranges::any_of(kFields, [&](const RequestField& f) {
    return f.applies_to(endpoint) && f.name.size() > parent.size() && f.name.starts_with(parent) &&
           f.name[parent.size()] == '.';
  });
}

Status check_type(const RequestField& field, const json::value& value) {
  switch (field.type) {
    case ValueType::any: return Status();
    case ValueType::boolean: return value.is_bool() ? Status() : app::bad_field(field.name, "true or false");
    case ValueType::string: return value.is_string() ? Status() : app::bad_field(field.name, "a string");
    case ValueType::object: return value.is_object() ? Status() : app::bad_field(field.name, "an object");
    case ValueType::metadata: return check_metadata(value, field.name);
  }
  return Status();
}

Status check_members(const json::object& object, Endpoint endpoint, std::string_view parent) {
  for (const auto& [key, value] : object) {
    const std::string name = parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, std::string_view(key));
    const RequestField* field = find_request_field(endpoint, name);
    if (field == nullptr) {
      return make_error(ErrorCode::invalid_argument, "'{}' is not a {} field llaisys knows",
                        std::string_view(name).substr(0, 64), endpoint_path(endpoint));
    }
    if (value.is_null()) continue;
    if (field->use == FieldUse::ignored) LLAISYS_RETURN_IF_ERROR(check_type(*field, value));
    if (field->use == FieldUse::refused && (field->accepted.empty() || json::parse(field->accepted) != value)) {
      return make_error(ErrorCode::invalid_argument, "'{}' is not supported: {}", field->name, field->why);
    }
    if (value.is_object() && has_members(endpoint, field->name)) {
      LLAISYS_RETURN_IF_ERROR(check_members(value.as_object(), endpoint, field->name));
    }
  }
  return Status();
}

}  // namespace

std::string_view to_string(FieldUse use) {
  switch (use) {
    case FieldUse::honoured: return "honoured";
    case FieldUse::ignored: return "ignored";
    case FieldUse::refused: return "refused";
  }
  return "?";
}

std::string_view endpoint_path(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::chat: return "/v1/chat/completions";
    case Endpoint::completions: return "/v1/completions";
    case Endpoint::embeddings: return "/v1/embeddings";
  }
  return "?";
}

std::span<const RequestField> request_fields() { return kFields; }

const RequestField* find_request_field(Endpoint endpoint, std::string_view name) {
  const auto it =
      std::ranges::find_if(kFields, [&](const RequestField& f) { return f.name == name && f.applies_to(endpoint); });
  return it == kFields.end() ? nullptr : &*it;
}

Status check_request_fields(const json::object& body, Endpoint endpoint) { return check_members(body, endpoint, ""); }

Status check_metadata(const json::value& metadata, std::string_view field) {
  const json::object* m = metadata.if_object();
  if (m == nullptr || m->size() > 16) return app::bad_field(field, "an object of at most 16 string values");
  for (const auto& [key, value] : *m) {
    if (key.size() > 64 || !value.is_string() || value.as_string().size() > 512) {
      return app::bad_field(field, "an object of strings (keys up to 64 characters, values up to 512)");
    }
  }
  return Status();
}

}  // namespace llaisys::server
