#pragma once
// Engine outputs -> OpenAI response bodies and stream chunks (chat.completion / text_completion),
// including tool calls, logprobs in the chat and the completions formats, and usage.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/engine/request.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "openai/errors.hpp"
#include "openai/request_parse.hpp"
#include "openai/tool_calls.hpp"

namespace llaisys::server {

struct ResponseMeta {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// `digits` random hex digits: the random part of response, item and tool call ids.
std::string random_hex(int digits);

// Bytes that are not valid UTF-8 become U+FFFD, so any token's bytes can go into JSON.
std::string sanitize_utf8(std::string_view bytes);

// `reasoning_tokens`: set for reasoning models, as completion_tokens_details.reasoning_tokens.
boost::json::object usage_json(const Usage& usage, std::optional<int64_t> reasoning_tokens = std::nullopt);

// A logprob as JSON, which has no infinities or NaN (Boost.JSON would write them bare, which no
// client parses): -inf (a token the request forbids) is -9999.0, as vLLM sends it; NaN (non-finite
// logits) is null; +inf cannot occur (a logprob is at most 0) and is 0.
boost::json::value logprob_json(float logprob);

// The bytes a logprob entry reports for token `id`: what it adds to a text (Tokenizer::piece_bytes:
// SentencePiece's "▁" as a space, a byte token "<0x0A>" as its byte), a special token's own text;
// "<id>" without a tokenizer.
std::string logprob_token_bytes(const text::Tokenizer* tokenizer, TokenId id);

// What a generation job renders the engine's outputs with: chat / completions chunks and bodies
// (GenerationResponse below) or Responses API events and objects (openai/responses_output.hpp).
// `prompt` is the index of the engine request an output belongs to: one per prompt of a completions
// batch, else always 0.
class GenerationWriter {
 public:
  virtual ~GenerationWriter() = default;
  // Streaming: the SSE events due before the engine's first output (sent with the headers).
  virtual std::string stream_start() { return {}; }
  // Streaming: the SSE events for one engine output, the stream's last ones once every prompt's
  // request has finished.
  virtual std::string stream_events(const RequestOutput& output, std::size_t prompt = 0) = 0;
  // Non-streaming: collect; then body() (or error()).
  virtual void accumulate(const RequestOutput& output, std::size_t prompt = 0) = 0;
  virtual std::string body() const = 0;
  // Set when the engine failed the request (finish_reason error).
  virtual const std::optional<ApiError>& error() const = 0;
  virtual Usage usage() const = 0;  // summed over the prompts
  virtual std::string finish_summary() const = 0;  // how the request ended, for the log
};

class GenerationResponse final : public GenerationWriter {
 public:
  GenerationResponse(const ParsedGenerate& parsed, ResponseMeta meta, std::shared_ptr<const text::Tokenizer> tokenizer);

  // One engine request per prompt (chat has one). Streaming: once every prompt's request has
  // finished, also the usage chunk (with include_usage) and "data: [DONE]". A failed request ends
  // with an error event, then [DONE].
  std::string stream_events(const RequestOutput& output, std::size_t prompt = 0) override;
  void accumulate(const RequestOutput& output, std::size_t prompt = 0) override;
  std::string body() const override;

  const std::optional<ApiError>& error() const override { return error_; }
  Usage usage() const override;
  std::string finish_summary() const override;  // the choices' finish reasons

 private:
  struct Choice {
    std::size_t prompt = 0;
    std::string text;
    std::vector<ToolCall> calls;
    ToolCallParser parser;
    std::optional<app::ReasoningParser> reasoning;  // reasoning models: splits the think block off
    std::string reasoning_text;
    boost::json::array chat_logprobs;  // chat: content entries
    boost::json::array tokens, token_logprobs, top_logprobs, text_offsets;  // completions format
    // The next text_offset: the byte lengths of the entries' token strings added up (as vLLM does),
    // the echoed prompt's included.
    int64_t next_offset = 0;
    double cumulative_logprob = 0.0;   // of the sampled tokens: best_of's ranking
    std::optional<std::string> finish_reason;
    bool started = false;
    bool prompt_logprobs_added = false;  // echo: the prompt's entries lead the choice's logprobs
  };
  struct Prompt {
    std::string text;                  // echo
    TokenId first_token = -1;          // echo + logprobs: the entry without a logprob
    std::vector<TokenLogprob> logprobs;  // echo + logprobs: tokens 1.. of the prompt (engine)
    Usage usage;
    bool finished = false;
  };

  // One delta taken into its choice: what it added (reasoning, content, completed tool calls,
  // logprobs) and the finish reason when it is the choice's last.
  struct TakenDelta {
    Choice* choice;
    std::string reasoning;
    ToolParseResult result;
    boost::json::value logprobs;
    std::optional<std::string> finish;
  };
  // Records what `output` says about its prompt (usage, prompt logprobs, finished).
  void take_output(const RequestOutput& output, std::size_t prompt);
  bool all_finished() const;
  // Applies `delta` to its choice; nothing for a delta outside the choices or a failed one (recorded
  // as the request's error).
  std::optional<TakenDelta> take(const ChoiceDelta& delta, std::size_t prompt);
  // Applies one delta to its choice: returns the new content text and the tool calls it completed,
  // and sets `reasoning` to the new reasoning text.
  ToolParseResult apply(Choice& choice, const ChoiceDelta& delta, std::string& reasoning);
  // completion_tokens_details.reasoning_tokens over the choices (reasoning models only).
  std::optional<int64_t> reasoning_tokens() const;
  boost::json::value delta_logprobs(Choice& choice, const ChoiceDelta& delta);
  // Completions format: appends one entry (`top` null for the prompt's first token) to the choice
  // and to `out` (this delta's arrays).
  void add_completion_entry(Choice& choice, boost::json::object& out, TokenId token, boost::json::value logprob,
                            const std::vector<std::pair<TokenId, float>>* top);
  std::string finish_reason(const Choice& choice, const ChoiceDelta& delta);
  boost::json::object chunk_base() const;
  void record_error(const ChoiceDelta& delta);
  // The choices returned for `prompt`, best first when best_of ranks them.
  std::vector<const Choice*> returned_choices(std::size_t prompt) const;

  ParsedGenerate parsed_;  // no prompts kept
  ResponseMeta meta_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  int32_t candidates_ = 1;  // engine choices per prompt (best_of, else n)
  std::vector<Prompt> prompts_;
  std::vector<Choice> choices_;  // [prompt x candidates_]
  std::optional<ApiError> error_;
};

}  // namespace llaisys::server
