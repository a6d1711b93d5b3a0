#pragma once
// ChatSession: one conversation with a model, turn after turn, on an LLMEngine that the caller's
// thread steps (the terminal chat's model of work: one request at a time, stopped between steps).
//
// Contract:
//  - The conversation is a list of messages (an optional system prompt first, then user and
//    assistant messages) rendered with the model's chat template on every turn.
//  - Token ids carry over: the ids of the previous turn (its prompt and every generated id,
//    including the EOS that ended the answer) are kept, and the next prompt is those ids plus the
//    encoding of only the text the template adds after them. So turn k's prompt starts with exactly
//    the ids the engine computed in turn k-1, and the prefix cache serves all of it but the last
//    partial block and the answer's last token (sampled, never run through the model). When the
//    template's new rendering does not start with the carried text (the system prompt changed,
//    turns were dropped, an answer held special tokens the template leaves out, a /load), the whole
//    conversation is rendered and encoded afresh; then reuse stops where the answer's re-encoding
//    differs from the ids that were generated (TurnStats::new_tokens tells which happened).
//  - Before each turn the conversation is fitted into the context: while prompt + the answer's room
//    (max_tokens, at most half the context; a quarter of it without max_tokens) exceeds
//    max_sequence_tokens(), the oldest turn (a user message and the answers after it) is dropped,
//    never the system prompt nor the new message; on_notice gets one line saying so. A new message
//    that does not fit even alone is refused (invalid_argument), never truncated.
//  - A turn that fails (template error, refused message, engine error) leaves the conversation as
//    it was. A stopped turn (should_stop) keeps the partial answer as the assistant message; one
//    stopped before any text is dropped with its user message.
//  - Reasoning models (ChatSettings::reasoning deepseek): the answer's think block is split off as it
//    streams (app::ReasoningParser; on_reasoning gets it, on_text the rest) and kept as the assistant
//    message's reasoning_content, which the template may render back or drop (Qwen3 drops it for
//    turns before the last user message: the next turn's prompt then has no reasoning in it, and the
//    carried ids give way to a fresh encoding).
//  - Not thread-safe; the engine must not run other requests meanwhile.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "reasoning.hpp"

namespace llaisys::offline {

struct ChatSettings {
  SamplingParams sampling;
  std::optional<int32_t> max_tokens;  // per answer; unset: until EOS or the end of the context
  app::ReasoningFormat reasoning = app::ReasoningFormat::none;
};

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
  std::string reasoning;  // assistant: its think block (reasoning_content to the template when set)
};

// One turn's tokens and times (the engine's usage and RequestTimes of its request).
struct TurnStats {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  // Prompt tokens the model has not run yet: what the template added for this message, plus the
  // previous answer's last token (sampled, never fed back); all of them after a fresh encoding.
  // prefilled - new is then what the cache's block granularity leaves to recompute (< block size).
  int32_t new_tokens = 0;
  int32_t completion_tokens = 0;
  double prefill_seconds = 0.0;   // submitted -> first token
  double decode_seconds = 0.0;    // first token -> last token
  FinishReason finish_reason = FinishReason::stop;  // how the (last) turn ended
  int32_t prefilled_tokens() const { return prompt_tokens - cached_tokens; }
  // completion tokens after the first (the first comes out of the prefill)
  int32_t decoded_tokens() const { return completion_tokens > 1 ? completion_tokens - 1 : 0; }
};

struct ChatTotals {
  int32_t turns = 0;
  int32_t dropped_turns = 0;      // dropped to fit the context, over the whole session
  TurnStats sum;                  // summed over turns
};

struct TurnResult {
  std::string text;               // the whole answer, as streamed (without the think block)
  std::string reasoning;          // the think block's text (reasoning models)
  std::string finish_detail;      // stats.finish_reason says how it ended
  TurnStats stats;
  int32_t dropped_turns = 0;      // dropped before this turn
};

struct TurnCallbacks {
  std::function<void(std::string_view)> on_text;    // each new piece of the answer (complete UTF-8)
  std::function<void(std::string_view)> on_reasoning;  // each new piece of the think block
  std::function<void(std::string_view)> on_notice;  // one-line notices (turns dropped)
  std::function<bool()> should_stop;                // polled between engine steps; true stops the answer
};

class ChatSession {
 public:
  ChatSession(LLMEngine& engine, const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template,
              ChatSettings settings);

  // One turn: the user's message, the answer streamed through callbacks.on_text.
  Result<TurnResult> send(std::string user_text, const TurnCallbacks& callbacks);

  // A new conversation; the system prompt stays.
  void clear();
  // Empty text removes the system prompt (the template's default applies).
  void set_system_prompt(std::string text);
  const std::string& system_prompt() const { return system_prompt_; }

  // The conversation as OpenAI-style messages, the system prompt first when set (assistant messages
  // with reasoning_content when they had a think block).
  boost::json::array messages() const;
  // Replaces the conversation: an array of {role, content} (system, user, assistant; content a
  // string; an assistant's string reasoning_content is kept), or an object with such a "messages" array. A system message is accepted first only.
  // The messages are rendered once to report template errors now rather than at the next turn.
  Status load(const boost::json::value& conversation);

  const std::optional<TurnStats>& last_turn() const { return last_turn_; }
  const ChatTotals& totals() const { return totals_; }
  std::size_t num_messages() const { return messages_.size(); }
  // Tokens the next turn carries over (0 after a change that forces a fresh encoding).
  int32_t carried_tokens() const { return static_cast<int32_t>(carried_ids_.size()); }
  int32_t context_tokens() const { return engine_.max_sequence_tokens(); }

 private:
  struct Prompt {
    std::string text;              // the template's rendering
    std::vector<TokenId> ids;
    int32_t new_tokens = 0;        // see TurnStats::new_tokens
  };

  boost::json::array render_input(const std::vector<ChatMessage>& messages) const;
  Result<Prompt> build_prompt(const std::vector<ChatMessage>& messages) const;
  // Drops the oldest turns until prompt + answer room fits; returns the prompt to run.
  Result<Prompt> fit_prompt(std::vector<ChatMessage>& messages, int32_t& dropped,
                            const TurnCallbacks& callbacks) const;
  int32_t answer_room() const;
  void forget_carried_ids();

  LLMEngine& engine_;
  const text::Tokenizer& tokenizer_;
  const text::ChatTemplate& chat_template_;
  ChatSettings settings_;
  std::string system_prompt_;
  std::vector<ChatMessage> messages_;  // user and assistant messages, oldest first
  // What the previous turn left in the engine: its prompt + generated ids, and the text they stand
  // for (the template's rendering of that prompt + the answer's ids decoded with special tokens).
  std::vector<TokenId> carried_ids_;
  std::string carried_text_;
  bool carried_last_computed_ = false;  // the last carried id went through the model
  std::optional<TurnStats> last_turn_;
  ChatTotals totals_;
};

}  // namespace llaisys::offline
