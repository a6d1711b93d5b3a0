// The model's text side through the C API: prompts (text, ids or chat messages) into token ids, the
// sampling struct into the engine's request, and the tokenizer / chat template functions.

#include <cstdlib>
#include <cstring>

#include <boost/json.hpp>

#include "capi_internal.hpp"

namespace llaisys::capi {
namespace json = boost::json;
namespace {

Result<json::value> parse_json(const char* text, std::string_view what) {
  boost::system::error_code ec;
  json::value value = json::parse(text, ec);
  if (ec) return make_error(ErrorCode::invalid_argument, "{} is not valid JSON: {}", what, ec.message());
  return value;
}

// The struct sizes this library knows. A caller built against a newer header may pass a larger
// struct with fields this library would ignore: refused rather than half-honoured.
Status check_struct_size(std::string_view name, uint32_t got, std::size_t known) {
  if (got == known) return Status();
  return make_error(ErrorCode::invalid_argument,
                    "{}.struct_size is {}, this library knows {} (set it to sizeof({}) or use its _init function)",
                    name, got, known, name);
}

}  // namespace

Status EngineText::require_tokenizer() const {
  if (tokenizer) return Status();
  return Status(ErrorCode::invalid_argument,
                "the model has no tokenizer (tokenizer.json, or a GGUF file's tokenizer.ggml.*): use token ids");
}

Result<std::string> EngineText::render(const json::value& messages, const text::ChatRenderOptions& options) const {
  LLAISYS_RETURN_IF_ERROR(require_tokenizer());
  if (!chat_template) return chat_template_status;
  if (!messages.is_array() || messages.as_array().empty()) {
    return Status(ErrorCode::invalid_argument, "messages must be a non-empty JSON array");
  }
  return chat_template->render(messages, options);
}

Result<std::vector<TokenId>> prompt_ids(const EngineText& model_text, const llaisys_prompt& prompt) {
  LLAISYS_RETURN_IF_ERROR(check_struct_size("llaisys_prompt", prompt.struct_size, sizeof(llaisys_prompt)));
  const bool has_ids = prompt.token_ids != nullptr || prompt.num_token_ids != 0;
  if ((prompt.text != nullptr) + has_ids + (prompt.messages_json != nullptr) != 1) {
    return Status(ErrorCode::invalid_argument, "give exactly one of the prompt's text, token_ids or messages_json");
  }
  if (prompt.chat_template_kwargs_json != nullptr && prompt.messages_json == nullptr) {
    return Status(ErrorCode::invalid_argument, "chat_template_kwargs_json goes with messages_json");
  }
  if (has_ids) {
    if (prompt.token_ids == nullptr || prompt.num_token_ids <= 0) {
      return Status(ErrorCode::invalid_argument, "token_ids must be a non-empty array (num_token_ids > 0)");
    }
    return std::vector<TokenId>(prompt.token_ids, prompt.token_ids + prompt.num_token_ids);  // the engine checks them
  }
  if (prompt.text != nullptr) {
    LLAISYS_RETURN_IF_ERROR(model_text.require_tokenizer());
    return model_text.tokenizer->encode(prompt.text, /*add_special_tokens=*/true);
  }
  // As llaisys-offline renders "messages": the generation prompt added, the template writing the
  // special tokens (so none are added when encoding).
  LLAISYS_ASSIGN_OR_RETURN(json::value messages, parse_json(prompt.messages_json, "messages_json"));
  text::ChatRenderOptions options{.add_generation_prompt = true};
  if (prompt.chat_template_kwargs_json != nullptr) {
    LLAISYS_ASSIGN_OR_RETURN(json::value kwargs, parse_json(prompt.chat_template_kwargs_json, "chat_template_kwargs_json"));
    if (!kwargs.is_object()) return Status(ErrorCode::invalid_argument, "chat_template_kwargs_json must be a JSON object");
    options.extra_context = std::move(kwargs.as_object());
  }
  LLAISYS_ASSIGN_OR_RETURN(std::string rendered, model_text.render(messages, options));
  return model_text.tokenizer->encode(rendered, /*add_special_tokens=*/false);
}

Result<GenerateRequest> generate_request(const llaisys_sampling_params* params) {
  llaisys_sampling_params defaults;
  llaisys_sampling_params_init(&defaults);
  const llaisys_sampling_params& p = params != nullptr ? *params : defaults;
  LLAISYS_RETURN_IF_ERROR(check_struct_size("llaisys_sampling_params", p.struct_size, sizeof(llaisys_sampling_params)));
  if (p.num_stop < 0 || (p.num_stop > 0 && p.stop == nullptr)) {
    return Status(ErrorCode::invalid_argument, "stop must hold num_stop strings");
  }
  if (p.num_stop_token_ids < 0 || (p.num_stop_token_ids > 0 && p.stop_token_ids == nullptr)) {
    return Status(ErrorCode::invalid_argument, "stop_token_ids must hold num_stop_token_ids ids");
  }
  if (p.seed < -1) return make_error(ErrorCode::invalid_argument, "seed must be >= 0 (or -1: none), got {}", p.seed);
  if (p.logprobs < -1 || p.logprobs > 20) {
    return make_error(ErrorCode::invalid_argument, "logprobs must be in [0, 20] (or -1: none), got {}", p.logprobs);
  }
  GenerateRequest request;
  request.sampling = {.temperature = p.temperature,
                      .top_k = p.top_k,
                      .top_p = p.top_p,
                      .min_p = p.min_p,
                      .repetition_penalty = p.repetition_penalty,
                      .presence_penalty = p.presence_penalty,
                      .frequency_penalty = p.frequency_penalty,
                      .num_logprobs = p.logprobs};
  if (p.seed >= 0) request.sampling.seed = static_cast<uint64_t>(p.seed);
  // Range checks (max_tokens >= 0, n, temperature, ...) are the engine's, with its messages.
  request.stop.max_tokens = p.max_tokens;
  request.stop.min_tokens = p.min_tokens;
  request.stop.ignore_eos = p.ignore_eos != 0;
  for (int32_t i = 0; i < p.num_stop; ++i) {
    if (p.stop[i] == nullptr) return make_error(ErrorCode::invalid_argument, "stop[{}] is NULL", i);
    request.stop.stop.emplace_back(p.stop[i]);
  }
  request.stop.stop_token_ids.assign(p.stop_token_ids, p.stop_token_ids + p.num_stop_token_ids);
  request.n = p.n;
  request.skip_special_tokens = p.skip_special_tokens != 0;
  return request;
}

}  // namespace llaisys::capi

using llaisys::ErrorCode;
using llaisys::Status;
using llaisys::capi::guarded;
using llaisys::capi::null_argument;

extern "C" {

llaisys_status llaisys_engine_encode(const llaisys_engine* engine, const char* text, int32_t add_special_tokens,
                                     int32_t** ids, int32_t* num_ids) {
  return guarded([&]() -> Status {
    if (engine == nullptr) return null_argument("engine");
    if (text == nullptr) return null_argument("text");
    if (ids == nullptr || num_ids == nullptr) return null_argument("ids");
    LLAISYS_RETURN_IF_ERROR(engine->text.require_tokenizer());
    LLAISYS_ASSIGN_OR_RETURN(std::vector<llaisys::TokenId> encoded,
                             engine->text.tokenizer->encode(text, add_special_tokens != 0));
    auto* buffer = static_cast<int32_t*>(std::malloc(std::max<std::size_t>(encoded.size(), 1) * sizeof(int32_t)));
    if (buffer == nullptr) return Status(ErrorCode::out_of_memory, "out of memory");
    if (!encoded.empty()) std::memcpy(buffer, encoded.data(), encoded.size() * sizeof(int32_t));
    *ids = buffer;
    *num_ids = static_cast<int32_t>(encoded.size());
    return Status();
  });
}

llaisys_status llaisys_engine_decode(const llaisys_engine* engine, const int32_t* ids, int32_t num_ids,
                                     int32_t skip_special_tokens, char** text, size_t* text_len) {
  return guarded([&]() -> Status {
    if (engine == nullptr) return null_argument("engine");
    if (text == nullptr) return null_argument("text");
    if (num_ids < 0 || (num_ids > 0 && ids == nullptr)) return null_argument("ids");
    LLAISYS_RETURN_IF_ERROR(engine->text.require_tokenizer());
    const int32_t vocab = engine->info.vocab_size;
    for (int32_t i = 0; i < num_ids; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        return llaisys::make_error(ErrorCode::invalid_argument, "ids[{}] = {} is not a token id in [0, {})", i,
                                   ids[i], vocab);
      }
    }
    LLAISYS_ASSIGN_OR_RETURN(std::string decoded,
                             engine->text.tokenizer->decode({ids, static_cast<std::size_t>(num_ids)},
                                                            skip_special_tokens != 0));
    LLAISYS_ASSIGN_OR_RETURN(*text, llaisys::capi::malloc_string(decoded));
    if (text_len != nullptr) *text_len = decoded.size();
    return Status();
  });
}

llaisys_status llaisys_engine_apply_chat_template(const llaisys_engine* engine, const char* messages_json,
                                                  const char* options_json, char** text) {
  namespace json = boost::json;
  return guarded([&]() -> Status {
    if (engine == nullptr) return null_argument("engine");
    if (messages_json == nullptr) return null_argument("messages_json");
    if (text == nullptr) return null_argument("text");
    LLAISYS_ASSIGN_OR_RETURN(json::value messages, llaisys::capi::parse_json(messages_json, "messages_json"));
    llaisys::text::ChatRenderOptions options{.add_generation_prompt = true};
    if (options_json != nullptr) {
      LLAISYS_ASSIGN_OR_RETURN(json::value parsed, llaisys::capi::parse_json(options_json, "options_json"));
      if (!parsed.is_object()) return Status(ErrorCode::invalid_argument, "options_json must be a JSON object");
      for (const auto& [key, value] : parsed.as_object()) {
        if (key == "add_generation_prompt" && value.is_bool()) {
          options.add_generation_prompt = value.as_bool();
        } else if (key == "tools" && (value.is_array() || value.is_null())) {
          options.tools = value;
        } else if (key == "chat_template_kwargs" && value.is_object()) {
          options.extra_context = value.as_object();
        } else if (key == "add_generation_prompt" || key == "tools" || key == "chat_template_kwargs") {
          return llaisys::make_error(ErrorCode::invalid_argument, "'{}' must be {}", std::string_view(key),
                                     key == "add_generation_prompt" ? "true or false"
                                     : key == "tools"               ? "an array"
                                                                    : "an object");
        } else {
          return llaisys::make_error(ErrorCode::invalid_argument,
                                     "unknown chat template option '{}' (known: add_generation_prompt, tools, "
                                     "chat_template_kwargs)",
                                     std::string_view(key));
        }
      }
    }
    LLAISYS_ASSIGN_OR_RETURN(std::string rendered, engine->text.render(messages, options));
    LLAISYS_ASSIGN_OR_RETURN(*text, llaisys::capi::malloc_string(rendered));
    return Status();
  });
}

}  // extern "C"
