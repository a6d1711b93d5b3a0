// libFuzzer target: arbitrary bytes as the body of POST /v1/chat/completions, /v1/completions and
// /v1/embeddings, parsed as the server does (apps/server/openai/request_parse.hpp) with the real
// Qwen2 tokenizer and chat template (tests/data). Checks what must hold for every body: a refused
// body maps to a 4xx API error with a message; an accepted one is a request the engine can take
// (sampling values valid for the vocabulary, ids inside it, n and stop lists within their limits,
// prompt + max_tokens within the context).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "openai/errors.hpp"
#include "openai/request_parse.hpp"

namespace {

using namespace llaisys;
using namespace llaisys::server;

constexpr int32_t kMaxModelLen = 512;

const ModelTextContext& context() {
  static const auto tokenizer = [] {
    auto loaded = text::Tokenizer::from_model_dir(LLAISYS_QWEN2_TOKENIZER_DIR);
    if (!loaded.ok()) std::abort();
    return loaded.value();
  }();
  static const auto chat_template = [] {
    auto loaded = text::ChatTemplate::from_model_dir(LLAISYS_QWEN2_TOKENIZER_DIR);
    if (!loaded.ok()) std::abort();
    return std::move(loaded).value();
  }();
  static const ModelTextContext model{.vocab_size = tokenizer->vocab_size(),
                                      .hidden_size = 64,
                                      .max_model_len = kMaxModelLen,
                                      .tokenizer = tokenizer,
                                      .chat_template = &chat_template,
                                      .chat_template_status = {},
                                      .default_stop = {"<|im_end|>"}};
  return model;
}

void check_refusal(const Status& status) {
  const ApiError error = from_parse_status(status);
  if (error.status < 400 || error.status >= 500 || error.message.empty()) std::abort();
}

bool valid_ids(const std::vector<TokenId>& ids, int32_t vocab_size) {
  for (TokenId id : ids) {
    if (id < 0 || id >= vocab_size) return false;
  }
  return true;
}

void check_request(const ParsedGenerate& parsed, const GenerateRequest& r, const ModelTextContext& model) {
  if (!r.sampling.validate(model.vocab_size).ok()) std::abort();
  if (r.num_prompt_logprobs < -1 || r.num_prompt_logprobs > kMaxTopLogprobs) std::abort();
  if (parsed.best_of != 0 && (parsed.best_of <= parsed.request.n || parsed.best_of != r.n || parsed.stream)) std::abort();
  if (r.n < 1 || r.n > kMaxN) std::abort();
  if (r.stop.stop.size() > static_cast<std::size_t>(kMaxStopStrings) + model.default_stop.size()) std::abort();
  if (!valid_ids(r.prompt_ids, model.vocab_size) || !valid_ids(r.stop.stop_token_ids, model.vocab_size)) std::abort();
  if (r.prompt_ids.size() > static_cast<std::size_t>(model.max_model_len)) std::abort();
  if (r.stop.max_tokens && (*r.stop.max_tokens < 0 ||
                            static_cast<int64_t>(r.prompt_ids.size()) + *r.stop.max_tokens > model.max_model_len)) {
    std::abort();
  }
  if (parsed.top_logprobs < 0 || parsed.top_logprobs > kMaxTopLogprobs) std::abort();
}

// Chat is one engine request; completions one per prompt.
void check_generate(const Result<ParsedGenerate>& parsed, const ModelTextContext& model) {
  if (!parsed.ok()) return check_refusal(parsed.status());
  if (parsed->kind == ApiKind::chat) return check_request(*parsed, parsed->request, model);
  if (parsed->prompts.empty() || parsed->prompts.size() > static_cast<std::size_t>(kMaxPrompts)) std::abort();
  for (std::size_t i = 0; i < parsed->prompts.size(); ++i) check_request(*parsed, parsed->prompt_request(i), model);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const ModelTextContext& model = context();
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto object = parse_json_body(body);
  if (!object.ok()) {
    check_refusal(object.status());
    return 0;
  }
  if (auto name = model_field(*object); !name.ok()) check_refusal(name.status());
  check_generate(parse_chat_request(*object, model), model);
  check_generate(parse_completion_request(*object, model), model);
  auto embed = parse_embedding_request(*object, model);
  if (!embed.ok()) {
    check_refusal(embed.status());
  } else {
    if (embed->inputs.empty() || embed->inputs.size() > static_cast<std::size_t>(kMaxEmbeddingInputs)) std::abort();
    if (embed->dimensions < 0 || embed->dimensions > model.hidden_size) std::abort();
    for (const auto& input : embed->inputs) {
      if (input.empty() || input.size() > static_cast<std::size_t>(model.max_model_len) ||
          !valid_ids(input, model.vocab_size)) {
        std::abort();
      }
    }
  }
  return 0;
}
