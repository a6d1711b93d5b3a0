#pragma once
// OpenAI request bodies -> engine requests, with every field type- and range-checked.
//
// Errors are Statuses: invalid_argument -> HTTP 400 (the message names the field first, in quotes,
// so the error's "param" can be filled in); resource_exhausted -> HTTP 400 context_length_exceeded.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/engine/request.hpp"
#include "llaisys/grammar/grammar_compiler.hpp"
#include "llaisys/model/types.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "reasoning.hpp"

namespace llaisys::server {

inline constexpr int32_t kMaxN = 16;              // choices per prompt (n, best_of)
inline constexpr int32_t kMaxTopLogprobs = 20;    // chat top_logprobs and completions logprobs
inline constexpr int32_t kMaxStopStrings = 16;
inline constexpr int32_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit
// Engine requests one HTTP request keeps in flight: the prompts of a completions batch (all at
// once), the inputs of an embeddings request (a window that moves as they finish).
inline constexpr int32_t kMaxEngineRequestsPerJob = 256;
inline constexpr int32_t kMaxPrompts = kMaxEngineRequestsPerJob;  // completions batch
inline constexpr int32_t kDefaultCompletionMaxTokens = 16;        // OpenAI's default on /v1/completions
inline constexpr int32_t kMaxLogitBias = 1024;
inline constexpr int32_t kMaxStopTokenIds = 1024;

// What request parsing needs to know about the model.
struct ModelTextContext {
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;    // the width of an embedding
  int32_t max_model_len = 0;  // prompt + generated tokens
  std::shared_ptr<const text::Tokenizer> tokenizer;  // may be null
  const text::ChatTemplate* chat_template = nullptr;  // null: chat_template_status says why
  Status chat_template_status;
  // Whether chat_template puts a request's tools into the prompt (renders_tools); a request with
  // tools is refused when it does not. Whoever sets chat_template sets this.
  bool chat_template_renders_tools = true;
  std::vector<std::string> default_stop;  // e.g. "<|im_end|>" for the ChatML fallback (chat only)
  std::shared_ptr<grammar::GrammarCompiler> grammars;  // structured output; null without a tokenizer
  // How chat outputs are split into reasoning and content (resolved: never "auto").
  app::ReasoningFormat reasoning_format = app::ReasoningFormat::none;
};

enum class ApiKind : uint8_t { chat, completion };

// One prompt of a completions request (a batch holds several).
struct CompletionPrompt {
  std::vector<TokenId> ids;
  std::string text;            // with echo: the prompt as text (as given, or its ids decoded)
  int32_t max_tokens = 0;      // checked against the context for this prompt
};

struct ParsedGenerate {
  ApiKind kind = ApiKind::chat;
  // What the engine gets. Chat: the request. Completions: what every prompt shares (prompt_ids and
  // max_tokens come from `prompts`, n from best_of). request.n: the choices returned per prompt.
  GenerateRequest request;
  std::vector<CompletionPrompt> prompts;  // completions: in order (choice index = prompt * n + j)
  // Completions: > request.n: the candidates per prompt, of which the request.n with the highest
  // cumulative logprob are returned. 0: none.
  int32_t best_of = 0;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;       // return logprobs (chat: "logprobs": true; completions: "logprobs": k)
  int32_t top_logprobs = 0;
  bool parse_tools = false;    // tools given and tool_choice is not "none"
  bool echo = false;           // completions: prepend the prompt's text (and its logprobs)
  // Chat with a reasoning model: where its output starts (app::ReasoningParser); nullopt: the output
  // is all content.
  std::optional<app::ReasoningOptions> reasoning;

  // The engine request of completions prompt `i`.
  GenerateRequest prompt_request(std::size_t i) const;
};

struct ParsedEmbed {
  std::vector<std::vector<TokenId>> inputs;
  bool base64 = false;
  int32_t dimensions = 0;      // > 0: keep the first d components, L2-normalised again
};

// JSON text -> value, with a depth limit (deep nesting is an error, never a stack overflow) and
// UTF-8 validation. The body must be an object.
Result<boost::json::object> parse_json_body(std::string_view body);

// The "model" field (required string).
Result<std::string> model_field(const boost::json::object& body);

// The three parsers first check every field against openai/field_table.hpp: an unknown or refused
// field is a 400 naming it.
Result<ParsedGenerate> parse_chat_request(const boost::json::object& body, const ModelTextContext& model);
Result<ParsedGenerate> parse_completion_request(const boost::json::object& body, const ModelTextContext& model);
Result<ParsedEmbed> parse_embedding_request(const boost::json::object& body, const ModelTextContext& model);

// The output budget `max_tokens` (named `key` in errors) against the context of `request.prompt_ids`,
// vLLM's way: a request that cannot fit is refused with context_length_exceeded rather than silently
// cut; without a value the request may use the rest of the context. Sets request.stop.max_tokens.
Status limit_output_tokens(std::optional<int64_t> max_tokens, std::string_view key, const ModelTextContext& model,
                           GenerateRequest& request);

// Whether the template renders tools: a probe tool's name must appear in the prompt it renders for
// one user message (the ChatML fallback and many base models' templates leave tools out).
bool renders_tools(const text::ChatTemplate& chat_template);

struct RenderedChat {
  std::string text;
  std::vector<TokenId> ids;
};

// Chat messages rendered by the template (content parts joined, tool_call arguments given to the
// template as objects), then encoded without added special tokens. `template_kwargs`: extra template
// variables (chat_template_kwargs, e.g. enable_thinking).
Result<RenderedChat> render_messages(const boost::json::value& messages, const boost::json::value& tools,
                                     const ModelTextContext& model, const boost::json::object& template_kwargs = {});

// chat_template_kwargs: an object of at most 64 template variables; the template's own inputs
// (messages, tools, add_generation_prompt) are refused by name. reasoning_effort "none" on a
// reasoning model adds enable_thinking false (Qwen3's switch) unless the kwargs set it.
Result<boost::json::object> template_kwargs(const boost::json::object& body, const ModelTextContext& model);

}  // namespace llaisys::server
