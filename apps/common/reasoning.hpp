#pragma once
// Reasoning models (Qwen3, QwQ, the DeepSeek-R1 distills) write their reasoning between "<think>" and
// "</think>" before the answer. ReasoningParser splits generated text into the reasoning and the
// answer as it streams, for the server's `reasoning_content` and the offline apps' `reasoning`.
//
// One format is known, llama.cpp's and vLLM's "deepseek": a think block at the very start of the
// output (leading whitespace allowed) is reasoning, and so is everything up to "</think>" when the
// prompt itself ended inside an opened block (the R1 distills' templates end the generation prompt
// with "<think>\n"). The reasoning is what lies between the markers without its leading and trailing
// whitespace (Qwen3's template strips it the same way when it renders a turn back), the content is
// what follows "</think>" without its leading whitespace. A "<think>" anywhere else is content.
// An unterminated block (the output was cut) is all reasoning.
//
// The split does not depend on how the text is cut into deltas: markers split across tokens or
// chunks are held back until decided, and whitespace at the end of the reasoning is held until
// something follows it. Concatenating what feed() and finish() return gives the same strings as one
// feed of the whole text.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "llaisys/core/status.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::app {

inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

enum class ReasoningFormat : uint8_t { none, deepseek };

// "auto" (nullopt: detect per model), "deepseek" or "none"; anything else is invalid_argument naming
// `what` (the flag or key).
Result<std::optional<ReasoningFormat>> parse_reasoning_format(std::string_view value, std::string_view what);
std::string_view to_string(ReasoningFormat format);

// "auto": deepseek when the model's chat template writes a think block (its source mentions
// "<think>") or its vocabulary has both markers as tokens (Qwen3's 151667 / 151668); none otherwise.
ReasoningFormat detect_reasoning_format(const text::ChatTemplate* chat_template, const text::Tokenizer* tokenizer);
// A model's format from a flag or key's value: parse_reasoning_format, "auto" detected.
Result<ReasoningFormat> resolve_reasoning_format(std::string_view value, std::string_view what,
                                                 const text::ChatTemplate* chat_template,
                                                 const text::Tokenizer* tokenizer);

// Where the output starts, read from the end of the rendered prompt: inside a think block the template
// opened ("...<think>\n"), after one it already closed (Qwen3 with enable_thinking false renders an
// empty "<think>\n\n</think>\n\n": the output is all answer), or undecided (the model may open one).
enum class ReasoningStart : uint8_t { detect, inside, content };
ReasoningStart reasoning_start(std::string_view rendered_prompt);

// How one output is parsed: where it starts, and the id of "</think>" when the vocabulary has it as
// one token (Qwen3, the R1 distills), which makes reasoning_tokens() exact however the tokens are
// grouped into deltas.
struct ReasoningOptions {
  ReasoningStart start = ReasoningStart::detect;
  std::optional<TokenId> close_token;
};
// The options of the answer to `rendered_prompt` (the chat template's output) with `tokenizer`'s
// vocabulary.
ReasoningOptions reasoning_options(std::string_view rendered_prompt, const text::Tokenizer& tokenizer);

struct ReasoningSplit {
  std::string reasoning;
  std::string content;
  void append(ReasoningSplit next);
};

class ReasoningParser {
 public:
  enum class State : uint8_t { undecided, reasoning, content };

  explicit ReasoningParser(ReasoningOptions options = {});

  // `tokens`: the generated tokens `text` came from, for reasoning_tokens(). `last`: the output ends
  // with this text (finish() follows).
  ReasoningSplit feed(std::string_view text, std::span<const TokenId> tokens = {}, bool last = false);
  // The end of the output: what is still held back (an undecided start is content; a partial
  // closing marker inside the reasoning is reasoning text).
  ReasoningSplit finish();

  // Where the next text goes: undecided while the output may still open a think block.
  State state() const { return state_; }
  // Whether a think block was opened (by the model or the prompt).
  bool saw_reasoning() const { return saw_reasoning_; }
  // The tokens fed while inside the think block, its markers included (OpenAI's
  // completion_tokens_details.reasoning_tokens). A feed that closes the block counts up to the
  // close_token when it has one, else whole (with one token per feed, as the engine streams, that is
  // exact); tokens fed while the start was undecided count once it is decided for a block.
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

 private:
  void take_undecided(ReasoningSplit& out);
  void take_reasoning(ReasoningSplit& out);
  void take_content(std::string_view text, ReasoningSplit& out);

  State state_;
  std::optional<TokenId> close_token_;
  std::string held_;               // undecided: everything so far; reasoning: the undecided tail
  bool reasoning_started_ = false;  // reasoning: a non-whitespace byte was emitted
  bool content_started_ = false;    // content after "</think>": a non-whitespace byte was emitted
  bool after_block_ = false;        // content follows a think block (its leading whitespace is dropped)
  bool saw_reasoning_ = false;
  int64_t reasoning_tokens_ = 0;
  int64_t undecided_tokens_ = 0;
};

}  // namespace llaisys::app
