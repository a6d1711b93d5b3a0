#include "openai/request_parse.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "openai/field_table.hpp"
#include "openai/tool_calls.hpp"
#include "request_fields.hpp"
#include "structured_output.hpp"

namespace llaisys::server {
namespace json = boost::json;
using app::bad_field;
using app::bool_field;
using app::int_field;
using app::number_field;
using app::string_field;

namespace {

constexpr std::size_t kMaxJsonDepth = 64;

Status set_float(const json::object& body, std::string_view key, float& out) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<double> v, number_field(body, key));
  if (v) {
    if (std::fabs(*v) > 1.0e6) return bad_field(key, "a number of sensible size");
    out = static_cast<float>(*v);
  }
  return Status();
}

Status parse_logit_bias(const json::object& body, int32_t vocab_size, SamplingParams& sampling) {
  const json::value* v = body.if_contains("logit_bias");
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_object()) return bad_field("logit_bias", "an object mapping token ids to biases");
  if (v->as_object().size() > static_cast<std::size_t>(kMaxLogitBias)) {
    return make_error(ErrorCode::invalid_argument, "'logit_bias' has more than {} entries", kMaxLogitBias);
  }
  for (const auto& [key, bias] : v->as_object()) {
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= vocab_size) {
      return make_error(ErrorCode::invalid_argument, "'logit_bias' key '{}' is not a token id in [0, {})",
                        std::string_view(key).substr(0, 40), vocab_size);
    }
    if (!bias.is_number() || bias.to_number<double>() < -100.0 || bias.to_number<double>() > 100.0) {
      return bad_field("logit_bias", "an object whose values are numbers in [-100, 100]");
    }
    sampling.logit_bias.emplace_back(static_cast<TokenId>(id), static_cast<float>(bias.to_number<double>()));
  }
  return Status();
}

// Fields shared by chat and completions (everything but the prompt and logprobs).
Status parse_common(const json::object& body, const ModelTextContext& model, ParsedGenerate& out) {
  GenerateRequest& r = out.request;
  SamplingParams& s = r.sampling;
  LLAISYS_RETURN_IF_ERROR(set_float(body, "temperature", s.temperature));
  LLAISYS_RETURN_IF_ERROR(set_float(body, "top_p", s.top_p));
  LLAISYS_RETURN_IF_ERROR(set_float(body, "min_p", s.min_p));
  LLAISYS_RETURN_IF_ERROR(set_float(body, "presence_penalty", s.presence_penalty));
  LLAISYS_RETURN_IF_ERROR(set_float(body, "frequency_penalty", s.frequency_penalty));
  LLAISYS_RETURN_IF_ERROR(set_float(body, "repetition_penalty", s.repetition_penalty));
  if (s.temperature < 0.0f || s.temperature > 2.0f) return bad_field("temperature", "in [0, 2]");
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) return bad_field("top_p", "in (0, 1]");
  if (s.min_p < 0.0f || s.min_p > 1.0f) return bad_field("min_p", "in [0, 1]");
  if (s.presence_penalty < -2.0f || s.presence_penalty > 2.0f) return bad_field("presence_penalty", "in [-2, 2]");
  if (s.frequency_penalty < -2.0f || s.frequency_penalty > 2.0f) return bad_field("frequency_penalty", "in [-2, 2]");
  if (!(s.repetition_penalty > 0.0f && s.repetition_penalty <= 2.0f)) {
    return bad_field("repetition_penalty", "in (0, 2]");
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> top_k, int_field(body, "top_k"));
  if (top_k) {
    if (*top_k < -1 || *top_k > model.vocab_size) return bad_field("top_k", fmt::format("-1, 0 (off) or up to {}", model.vocab_size));
    s.top_k = *top_k < 0 ? 0 : static_cast<int32_t>(*top_k);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> seed, int_field(body, "seed"));
  if (seed) s.seed = static_cast<uint64_t>(*seed);
  LLAISYS_RETURN_IF_ERROR(parse_logit_bias(body, model.vocab_size, s));

  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> n, int_field(body, "n"));
  if (n) {
    if (*n < 1 || *n > kMaxN) {
      return make_error(ErrorCode::invalid_argument, "'n' must be between 1 and {} (got {})", kMaxN, *n);
    }
    r.n = static_cast<int32_t>(*n);
  }
  LLAISYS_ASSIGN_OR_RETURN(r.stop.stop, app::stop_strings_field(body, "stop"));
  if (r.stop.stop.size() > static_cast<std::size_t>(kMaxStopStrings)) {
    return make_error(ErrorCode::invalid_argument, "'stop' may hold at most {} strings", kMaxStopStrings);
  }
  for (const std::string& stop : r.stop.stop) {
    if (stop.empty()) return bad_field("stop", "non-empty strings");
    if (stop.size() > 256) return bad_field("stop", "strings of at most 256 bytes");
  }
  if (!r.stop.stop.empty() && !model.tokenizer) {
    return Status(ErrorCode::invalid_argument, "'stop' needs a model with a tokenizer");
  }
  if (const json::value* v = body.if_contains("stop_token_ids"); v != nullptr && !v->is_null()) {
    // Checked against every sampled token: bounded like logit_bias.
    if (v->is_array() && v->as_array().size() > static_cast<std::size_t>(kMaxStopTokenIds)) {
      return make_error(ErrorCode::invalid_argument, "'stop_token_ids' may hold at most {} ids", kMaxStopTokenIds);
    }
    if (v->is_array() && v->as_array().empty()) {
      // nothing
    } else {
      LLAISYS_ASSIGN_OR_RETURN(r.stop.stop_token_ids, app::token_ids_field(*v, "stop_token_ids", model.vocab_size));
    }
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> ignore_eos, bool_field(body, "ignore_eos"));
  r.stop.ignore_eos = ignore_eos.value_or(false);
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> speculative, bool_field(body, "speculative"));
  r.speculative = speculative.value_or(true);
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> skip_special, bool_field(body, "skip_special_tokens"));
  r.skip_special_tokens = skip_special.value_or(true);
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> min_tokens, int_field(body, "min_tokens"));
  if (min_tokens) {
    if (*min_tokens < 0 || *min_tokens > model.max_model_len) return bad_field("min_tokens", "in [0, max_model_len]");
    r.stop.min_tokens = static_cast<int32_t>(*min_tokens);
  }

  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> stream, bool_field(body, "stream"));
  out.stream = stream.value_or(false);
  if (const json::value* v = body.if_contains("stream_options"); v != nullptr && !v->is_null()) {
    if (!v->is_object()) return bad_field("stream_options", "an object");
    LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> usage, bool_field(v->as_object(), "include_usage"));
    out.include_usage = usage.value_or(false);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> cache_salt, string_field(body, "cache_salt"));
  if (cache_salt) {
    if (cache_salt->empty() || cache_salt->size() > 256) return bad_field("cache_salt", "a string of 1 to 256 bytes");
    r.cache_salt = std::move(*cache_salt);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<grammar::GrammarSpec> spec, app::structured_output_spec(body));
  if (spec) {
    if (!model.grammars) return Status(ErrorCode::invalid_argument, "structured output needs a model with a tokenizer");
    LLAISYS_ASSIGN_OR_RETURN(r.grammar, model.grammars->compile(*spec));
  }
  return Status();
}

// The output budget `max_tokens` (named `key` in errors) for a prompt of `prompt` tokens, against
// the context, vLLM's way: a request that cannot fit is refused with context_length_exceeded rather
// than silently cut. Absent, it is `default_max` (at most the rest of the context), or the rest of
// the context.
Result<int32_t> output_budget(std::optional<int64_t> max_tokens, std::string_view key, const ModelTextContext& model,
                              int64_t prompt, std::optional<int32_t> default_max) {
  if (prompt >= model.max_model_len) {
    return make_error(ErrorCode::resource_exhausted,
                      "This model's maximum context length is {} tokens. However, your prompt has {} tokens, "
                      "leaving no room for the completion.",
                      model.max_model_len, prompt);
  }
  if (!max_tokens) {
    const auto rest = static_cast<int32_t>(model.max_model_len - prompt);
    return default_max ? std::min(*default_max, rest) : rest;
  }
  if (*max_tokens < 1) return make_error(ErrorCode::invalid_argument, "'{}' must be at least 1 (got {})", key, *max_tokens);
  if (*max_tokens > model.max_model_len) {
    return make_error(ErrorCode::invalid_argument, "'{}' is {}, more than this model's maximum context length of {} tokens",
                      key, *max_tokens, model.max_model_len);
  }
  if (prompt + *max_tokens > model.max_model_len) {
    return make_error(ErrorCode::resource_exhausted,
                      "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the "
                      "prompt, {} for the completion). Please reduce the prompt or {}.",
                      model.max_model_len, prompt + *max_tokens, prompt, *max_tokens, key);
  }
  return static_cast<int32_t>(*max_tokens);
}

// max_tokens or max_completion_tokens (the latter wins) for a prompt of `prompt` tokens: output_budget.
Result<int32_t> max_tokens_for(const json::object& body, const ModelTextContext& model, int64_t prompt,
                               std::optional<int32_t> default_max) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> max_tokens, int_field(body, "max_completion_tokens"));
  if (max_tokens) return output_budget(max_tokens, "max_completion_tokens", model, prompt, default_max);
  LLAISYS_ASSIGN_OR_RETURN(max_tokens, int_field(body, "max_tokens"));
  return output_budget(max_tokens, "max_tokens", model, prompt, default_max);
}

Result<std::string> join_content(const json::value& content, std::string_view role) {
  if (content.is_string()) return std::string(content.as_string());
  if (content.is_null()) return std::string();
  if (!content.is_array()) return bad_field("messages", "objects whose 'content' is a string or a list of text parts");
  std::string text;
  for (const json::value& part : content.as_array()) {
    const json::object* p = part.if_object();
    const json::value* type = p != nullptr ? p->if_contains("type") : nullptr;
    if (type == nullptr || !type->is_string()) {
      return bad_field("messages", "objects whose content parts have a 'type'");
    }
    if (type->as_string() != "text") {
      return make_error(ErrorCode::invalid_argument, "'messages' content part type '{}' is not supported ({} message); "
                        "only 'text' parts are", std::string_view(type->as_string()).substr(0, 40), role);
    }
    const json::value* t = p->if_contains("text");
    if (t == nullptr || !t->is_string()) return bad_field("messages", "text parts with a string 'text'");
    text += t->as_string();
  }
  return text;
}

Result<json::value> normalize_message(const json::value& message) {
  const json::object* m = message.if_object();
  if (m == nullptr) return bad_field("messages", "a list of objects");
  const json::value* role = m->if_contains("role");
  if (role == nullptr || !role->is_string()) return bad_field("messages", "objects with a string 'role'");
  std::string_view r = role->as_string();
  if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer") {
    return make_error(ErrorCode::invalid_argument,
                      "'messages' role '{}' is not one of system, developer, user, assistant, tool", r.substr(0, 40));
  }
  json::object out = *m;
  if (r == "developer") out["role"] = "system";
  const json::value* content = m->if_contains("content");
  const bool has_tool_calls = m->if_contains("tool_calls") != nullptr && !m->at("tool_calls").is_null();
  if (content == nullptr || content->is_null()) {
    if (r != "assistant" || !has_tool_calls) {
      if (r != "assistant") return make_error(ErrorCode::invalid_argument, "'messages' {} message needs 'content'", r);
    }
    out["content"] = "";
  } else {
    LLAISYS_ASSIGN_OR_RETURN(std::string text, join_content(*content, r));
    out["content"] = std::move(text);
  }
  if (has_tool_calls) {
    const json::value& calls = m->at("tool_calls");
    if (!calls.is_array()) return bad_field("messages", "objects whose 'tool_calls' is a list");
    json::array normalized;
    for (const json::value& call : calls.as_array()) {
      if (!call.is_object()) return bad_field("messages", "objects whose 'tool_calls' holds objects");
      json::object c = call.as_object();
      if (json::value* fn = c.if_contains("function"); fn != nullptr && fn->is_object()) {
        if (json::value* args = fn->as_object().if_contains("arguments"); args != nullptr && args->is_string()) {
          boost::system::error_code ec;
          json::parse_options options;
          options.max_depth = kMaxJsonDepth;
          json::value parsed = json::parse(args->as_string(), ec, {}, options);
          if (!ec) *args = std::move(parsed);  // templates expect a mapping (as vLLM gives them)
        }
      }
      normalized.push_back(std::move(c));
    }
    out["tool_calls"] = std::move(normalized);
  }
  return json::value(std::move(out));
}

// The prompts of a completions request: a string, a list of ids, or a list of either (a batch).
Result<std::vector<const json::value*>> completion_prompts(const json::object& body) {
  constexpr std::string_view kExpected = "a string, a list of token ids, or a list of strings or of token-id lists";
  const json::value* prompt = body.if_contains("prompt");
  if (prompt == nullptr || prompt->is_null()) return bad_field("prompt", kExpected);
  if (prompt->is_string()) return std::vector<const json::value*>{prompt};
  if (!prompt->is_array() || prompt->as_array().empty()) return bad_field("prompt", kExpected);
  const json::array& list = prompt->as_array();
  if (!list.front().is_string() && !list.front().is_array()) return std::vector<const json::value*>{prompt};
  if (list.size() > static_cast<std::size_t>(kMaxPrompts)) {
    return make_error(ErrorCode::invalid_argument, "'prompt' may hold at most {} prompts (got {})", kMaxPrompts,
                      list.size());
  }
  std::vector<const json::value*> prompts;
  for (const json::value& item : list) {
    if (item.kind() != list.front().kind()) return bad_field("prompt", kExpected);
    prompts.push_back(&item);
  }
  return prompts;
}

// best_of: request.n candidates per prompt, of which the n with the highest cumulative logprob are
// returned. Ranking needs each token's logprob, so the engine reports them even when not asked.
Status parse_best_of(const json::object& body, ParsedGenerate& out) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> best_of, int_field(body, "best_of"));
  const int32_t n = out.request.n;
  if (!best_of || *best_of == n) return Status();
  if (*best_of < n || *best_of > kMaxN) {
    return make_error(ErrorCode::invalid_argument, "'best_of' must be between n ({}) and {} (got {})", n, kMaxN, *best_of);
  }
  if (out.stream) return Status(ErrorCode::invalid_argument, "'best_of' greater than n cannot be streamed");
  out.best_of = static_cast<int32_t>(*best_of);
  out.request.sampling.num_logprobs = std::max(out.request.sampling.num_logprobs, 0);
  return Status();
}

}  // namespace

Result<json::object> parse_json_body(std::string_view body) {
  if (body.empty()) return Status(ErrorCode::invalid_argument, "the request body is empty; send a JSON object");
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  boost::system::error_code ec;
  json::value value = json::parse(body, ec, {}, options);
  if (ec) {
    return make_error(ErrorCode::invalid_argument, "the request body is not valid JSON: {}", ec.message());
  }
  if (!value.is_object()) return Status(ErrorCode::invalid_argument, "the request body must be a JSON object");
  return std::move(value.as_object());
}

Result<std::string> model_field(const json::object& body) {
  const json::value* v = body.if_contains("model");
  if (v == nullptr || !v->is_string()) return bad_field("model", "a string naming a served model (see GET /v1/models)");
  return std::string(v->as_string());
}

Status limit_output_tokens(std::optional<int64_t> max_tokens, std::string_view key, const ModelTextContext& model,
                           GenerateRequest& request) {
  LLAISYS_ASSIGN_OR_RETURN(request.stop.max_tokens, output_budget(max_tokens, key, model,
                                                                  static_cast<int64_t>(request.prompt_ids.size()),
                                                                  std::nullopt));
  return Status();
}

Result<RenderedChat> render_messages(const json::value& messages, const json::value& tools,
                                     const ModelTextContext& model, const json::object& template_kwargs) {
  if (!messages.is_array() || messages.as_array().empty()) return bad_field("messages", "a non-empty list");
  if (model.chat_template == nullptr || !model.tokenizer) {
    return Status(ErrorCode::invalid_argument,
                  fmt::format("this model cannot take chat messages: {}", model.chat_template_status.message()));
  }
  json::array normalized;
  for (const json::value& message : messages.as_array()) {
    LLAISYS_ASSIGN_OR_RETURN(json::value m, normalize_message(message));
    normalized.push_back(std::move(m));
  }
  text::ChatRenderOptions options{.add_generation_prompt = true, .extra_context = template_kwargs};
  if (!tools.is_null()) options.tools = tools;
  auto rendered = model.chat_template->render(normalized, options);
  if (!rendered.ok()) {
    return make_error(ErrorCode::invalid_argument, "'messages' could not be rendered by the chat template: {}",
                      rendered.status().message());
  }
  RenderedChat out{.text = std::move(rendered).value(), .ids = {}};
  LLAISYS_ASSIGN_OR_RETURN(out.ids, model.tokenizer->encode(out.text, /*add_special_tokens=*/false));
  return out;
}

Result<json::object> template_kwargs(const json::object& body, const ModelTextContext& model) {
  constexpr std::size_t kMaxKwargs = 64;
  json::object out;
  if (const json::value* v = body.if_contains("chat_template_kwargs"); v != nullptr && !v->is_null()) {
    if (!v->is_object() || v->as_object().size() > kMaxKwargs) {
      return bad_field("chat_template_kwargs",
                       fmt::format("an object of at most {} template variables, e.g. {{\"enable_thinking\": false}}",
                                   kMaxKwargs));
    }
    for (const auto& [key, value] : v->as_object()) {
      if (key == "messages" || key == "tools" || key == "add_generation_prompt") {
        return make_error(ErrorCode::invalid_argument,
                          "'chat_template_kwargs.{}' cannot be set: the template gets the request's own", key);
      }
    }
    out = v->as_object();
  }
  const json::value* effort = body.if_contains("reasoning_effort");
  if (effort != nullptr && effort->is_string() && effort->as_string() == "none" &&
      model.reasoning_format != app::ReasoningFormat::none && !out.contains("enable_thinking")) {
    out["enable_thinking"] = false;
  }
  return out;
}

bool renders_tools(const text::ChatTemplate& chat_template) {
  constexpr std::string_view kProbe = "llaisys_probe_tool_5f2c9e";
  const json::value messages = json::array{json::object{{"role", "user"}, {"content", "hi"}}};
  json::object function{{"name", kProbe},
                        {"description", "probe"},
                        {"parameters", json::object{{"type", "object"}, {"properties", json::object()}}}};
  const text::ChatRenderOptions options{
      .tools = json::array{json::object{{"type", "function"}, {"function", std::move(function)}}},
      .add_generation_prompt = true};
  auto rendered = chat_template.render(messages, options);
  return rendered.ok() && rendered->find(kProbe) != std::string::npos;
}

Result<ParsedGenerate> parse_chat_request(const json::object& body, const ModelTextContext& model) {
  LLAISYS_RETURN_IF_ERROR(check_request_fields(body, Endpoint::chat));
  ParsedGenerate out;
  out.kind = ApiKind::chat;
  const json::value* messages = body.if_contains("messages");
  if (messages == nullptr) return bad_field("messages", "a non-empty list");
  json::value tools;
  if (const json::value* t = body.if_contains("tools"); t != nullptr && !t->is_null()) {
    if (!t->is_array()) return bad_field("tools", "a list of {\"type\": \"function\", \"function\": {...}} objects");
    for (const json::value& tool : t->as_array()) {
      const json::object* o = tool.if_object();
      const json::value* fn = o != nullptr ? o->if_contains("function") : nullptr;
      if (fn == nullptr || !fn->is_object() || !fn->as_object().contains("name") ||
          !fn->as_object().at("name").is_string()) {
        return bad_field("tools", "a list of {\"type\": \"function\", \"function\": {\"name\", ...}} objects");
      }
    }
    if (!t->as_array().empty()) tools = *t;
  }
  if (!tools.is_null() && model.chat_template != nullptr && !model.chat_template_renders_tools) {
    return Status(ErrorCode::invalid_argument,
                  "'tools' cannot be used with this model: its chat template does not put tools into the prompt "
                  "(serve it with a template that does: --chat-template)");
  }
  bool tool_choice_none = false;
  std::optional<ForcedToolCalls> forced;
  if (const json::value* c = body.if_contains("tool_choice"); c != nullptr && !c->is_null()) {
    if (c->is_string()) {
      if (c->as_string() != "none" && c->as_string() != "auto" && c->as_string() != "required") {
        return bad_field("tool_choice", "\"none\", \"auto\", \"required\" or a {\"type\": \"function\"} object");
      }
      tool_choice_none = c->as_string() == "none";
      if (c->as_string() == "required") forced = ForcedToolCalls{};
    } else if (!c->is_object()) {
      return bad_field("tool_choice", "\"none\", \"auto\", \"required\" or a {\"type\": \"function\"} object");
    } else {
      const json::value* fn = c->as_object().if_contains("function");
      const json::value* name = fn != nullptr && fn->is_object() ? fn->as_object().if_contains("name") : nullptr;
      if (name == nullptr || !name->is_string()) {
        return bad_field("tool_choice", "{\"type\": \"function\", \"function\": {\"name\": ...}} to force a function");
      }
      forced = ForcedToolCalls{.function = std::string(name->as_string())};
    }
  }
  if (forced && tools.is_null()) {
    return Status(ErrorCode::invalid_argument, "'tool_choice' forces a tool call but the request has no 'tools'");
  }
  out.parse_tools = !tools.is_null() && !tool_choice_none;
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> parallel, bool_field(body, "parallel_tool_calls"));
  if (forced && parallel == false) forced->parallel = false;
  LLAISYS_RETURN_IF_ERROR(parse_common(body, model, out));
  // At most one call when the model chooses: generation stops where the first call's block closes
  // (ToolCallParser takes a block whose closing marker was cut off).
  if (out.parse_tools && !forced && parallel == false) out.request.stop.stop.push_back(std::string(kToolCallClose));
  if (forced) {
    if (out.request.grammar) {
      return Status(ErrorCode::invalid_argument,
                    "'tool_choice' forces a tool call and the request also asks for structured output; give one");
    }
    if (!model.grammars) return Status(ErrorCode::invalid_argument, "'tool_choice' needs a model with a tokenizer");
    LLAISYS_ASSIGN_OR_RETURN(out.request.grammar, forced_tool_call_grammar(tools, *forced, *model.grammars));
  }
  LLAISYS_ASSIGN_OR_RETURN(json::object kwargs, template_kwargs(body, model));
  LLAISYS_ASSIGN_OR_RETURN(RenderedChat rendered, render_messages(*messages, tools, model, kwargs));
  out.request.prompt_ids = std::move(rendered.ids);
  if (model.reasoning_format == app::ReasoningFormat::deepseek) {
    out.reasoning = app::reasoning_options(rendered.text, *model.tokenizer);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> logprobs, bool_field(body, "logprobs"));
  out.logprobs = logprobs.value_or(false);
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> top, int_field(body, "top_logprobs"));
  if (top) {
    if (*top < 0 || *top > kMaxTopLogprobs) return bad_field("top_logprobs", fmt::format("in [0, {}]", kMaxTopLogprobs));
    if (!out.logprobs) return Status(ErrorCode::invalid_argument, "'top_logprobs' needs \"logprobs\": true");
    out.top_logprobs = static_cast<int32_t>(*top);
  }
  if (out.logprobs) out.request.sampling.num_logprobs = out.top_logprobs;
  for (const std::string& stop : model.default_stop) {
    if (std::find(out.request.stop.stop.begin(), out.request.stop.stop.end(), stop) == out.request.stop.stop.end()) {
      out.request.stop.stop.push_back(stop);
    }
  }
  LLAISYS_ASSIGN_OR_RETURN(out.request.stop.max_tokens,
                           max_tokens_for(body, model, static_cast<int64_t>(out.request.prompt_ids.size()), std::nullopt));
  return out;
}

Result<ParsedGenerate> parse_completion_request(const json::object& body, const ModelTextContext& model) {
  LLAISYS_RETURN_IF_ERROR(check_request_fields(body, Endpoint::completions));
  ParsedGenerate out;
  out.kind = ApiKind::completion;
  LLAISYS_ASSIGN_OR_RETURN(std::vector<const json::value*> prompts, completion_prompts(body));
  LLAISYS_RETURN_IF_ERROR(parse_common(body, model, out));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> echo, bool_field(body, "echo"));
  out.echo = echo.value_or(false);
  if (const json::value* lp = body.if_contains("logprobs"); lp != nullptr && !lp->is_null()) {
    if (lp->is_bool()) {
      out.logprobs = lp->as_bool();
    } else {
      LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> k, int_field(body, "logprobs"));
      if (*k < 0 || *k > kMaxTopLogprobs) return bad_field("logprobs", fmt::format("an integer in [0, {}]", kMaxTopLogprobs));
      out.logprobs = true;
      out.top_logprobs = static_cast<int32_t>(*k);
    }
  }
  if (out.logprobs) out.request.sampling.num_logprobs = out.top_logprobs;
  if (out.logprobs && out.echo) out.request.num_prompt_logprobs = out.top_logprobs;
  LLAISYS_RETURN_IF_ERROR(parse_best_of(body, out));
  for (const json::value* prompt : prompts) {
    CompletionPrompt p;
    if (prompt->is_string()) {
      if (!model.tokenizer) return Status(ErrorCode::invalid_argument, "'prompt' text needs a model with a tokenizer");
      if (prompt->as_string().empty()) return bad_field("prompt", "a non-empty string");
      LLAISYS_ASSIGN_OR_RETURN(p.ids, model.tokenizer->encode(prompt->as_string(), true));
      if (p.ids.empty()) return bad_field("prompt", "text that encodes to at least one token");
      if (out.echo) p.text = std::string(prompt->as_string());
    } else {
      LLAISYS_ASSIGN_OR_RETURN(p.ids, app::token_ids_field(*prompt, "prompt", model.vocab_size));
      if (out.echo && model.tokenizer) {
        auto text = model.tokenizer->decode(p.ids, true);
        if (text.ok()) p.text = std::move(text).value();
      }
    }
    LLAISYS_ASSIGN_OR_RETURN(p.max_tokens, max_tokens_for(body, model, static_cast<int64_t>(p.ids.size()),
                                                          kDefaultCompletionMaxTokens));
    out.prompts.push_back(std::move(p));
  }
  return out;
}

Result<ParsedEmbed> parse_embedding_request(const json::object& body, const ModelTextContext& model) {
  LLAISYS_RETURN_IF_ERROR(check_request_fields(body, Endpoint::embeddings));
  ParsedEmbed out;
  const json::value* input = body.if_contains("input");
  if (input == nullptr || input->is_null()) return bad_field("input", "a string, a list of strings or token ids");
  auto add_text = [&](const json::value& v) -> Status {
    if (!model.tokenizer) return Status(ErrorCode::invalid_argument, "'input' text needs a model with a tokenizer");
    if (v.as_string().empty()) return bad_field("input", "non-empty strings");
    LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, model.tokenizer->encode(v.as_string(), true));
    if (ids.empty()) return bad_field("input", "text that encodes to at least one token");
    out.inputs.push_back(std::move(ids));
    return Status();
  };
  if (input->is_string()) {
    LLAISYS_RETURN_IF_ERROR(add_text(*input));
  } else if (input->is_array() && !input->as_array().empty()) {
    const json::array& list = input->as_array();
    if (list.front().is_number()) {
      LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, app::token_ids_field(*input, "input", model.vocab_size));
      out.inputs.push_back(std::move(ids));
    } else {
      if (list.size() > static_cast<std::size_t>(kMaxEmbeddingInputs)) {
        return make_error(ErrorCode::invalid_argument, "'input' may hold at most {} items", kMaxEmbeddingInputs);
      }
      for (const json::value& item : list) {
        if (item.is_string()) {
          LLAISYS_RETURN_IF_ERROR(add_text(item));
        } else if (item.is_array()) {
          LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, app::token_ids_field(item, "input", model.vocab_size));
          out.inputs.push_back(std::move(ids));
        } else {
          return bad_field("input", "a string, a list of strings, a list of token ids or a list of such lists");
        }
      }
    }
  } else {
    return bad_field("input", "a string, a non-empty list of strings or token ids");
  }
  for (const std::vector<TokenId>& ids : out.inputs) {
    if (static_cast<int64_t>(ids.size()) > model.max_model_len) {
      return make_error(ErrorCode::resource_exhausted,
                        "This model's maximum context length is {} tokens. However, an input has {} tokens.",
                        model.max_model_len, ids.size());
    }
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> format, string_field(body, "encoding_format"));
  if (format && *format != "float" && *format != "base64") return bad_field("encoding_format", "\"float\" or \"base64\"");
  out.base64 = format && *format == "base64";
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> dimensions, int_field(body, "dimensions"));
  if (dimensions) {
    if (*dimensions < 1 || *dimensions > model.hidden_size) {
      return bad_field("dimensions", fmt::format("in [1, {}] (this model's embedding size)", model.hidden_size));
    }
    out.dimensions = static_cast<int32_t>(*dimensions);
  }
  return out;
}

GenerateRequest ParsedGenerate::prompt_request(std::size_t i) const {
  GenerateRequest r = request;
  r.prompt_ids = prompts[i].ids;
  r.stop.max_tokens = prompts[i].max_tokens;
  r.n = std::max(r.n, best_of);
  return r;
}

}  // namespace llaisys::server
