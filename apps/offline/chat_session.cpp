#include "chat_session.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace llaisys::offline {
namespace json = boost::json;
namespace {

double seconds_between(RequestTimes::TimePoint from, RequestTimes::TimePoint to) {
  if (from == RequestTimes::TimePoint{} || to == RequestTimes::TimePoint{} || to < from) return 0.0;
  return std::chrono::duration<double>(to - from).count();
}

void add_to(TurnStats& sum, const TurnStats& turn) {
  sum.prompt_tokens += turn.prompt_tokens;
  sum.cached_tokens += turn.cached_tokens;
  sum.new_tokens += turn.new_tokens;
  sum.completion_tokens += turn.completion_tokens;
  sum.prefill_seconds += turn.prefill_seconds;
  sum.decode_seconds += turn.decode_seconds;
  sum.finish_reason = turn.finish_reason;
}

Result<std::vector<ChatMessage>> parse_messages(const json::value& conversation) {
  const json::value* list = &conversation;
  if (const json::object* object = conversation.if_object()) {
    list = object->if_contains("messages");
    if (list == nullptr) return Status(ErrorCode::invalid_argument, "the object has no \"messages\"");
  }
  if (!list->is_array()) {
    return Status(ErrorCode::invalid_argument, "expected an array of messages or an object with \"messages\"");
  }
  std::vector<ChatMessage> messages;
  for (const json::value& item : list->as_array()) {
    const std::size_t index = messages.size();
    const json::object* message = item.if_object();
    const json::value* role = message != nullptr ? message->if_contains("role") : nullptr;
    const json::value* content = message != nullptr ? message->if_contains("content") : nullptr;
    if (role == nullptr || !role->is_string() || content == nullptr || !content->is_string()) {
      return make_error(ErrorCode::invalid_argument,
                        "message {} must be an object with string \"role\" and \"content\"", index);
    }
    const std::string_view name = role->as_string();
    if (name != "system" && name != "user" && name != "assistant") {
      return make_error(ErrorCode::invalid_argument, "message {} has role '{}'; the chat knows system, user, assistant",
                        index, name);
    }
    if (name == "system" && index != 0) {
      return make_error(ErrorCode::invalid_argument, "message {}: a system message may only come first", index);
    }
    std::string reasoning;
    if (const json::value* r = message->if_contains("reasoning_content"); r != nullptr && !r->is_null()) {
      if (!r->is_string() || name != "assistant") {
        return make_error(ErrorCode::invalid_argument, "message {}: reasoning_content must be an assistant's string",
                          index);
      }
      reasoning = r->as_string();
    }
    messages.push_back({std::string(name), std::string(content->as_string()), std::move(reasoning)});
  }
  return messages;
}

// The system prompt (when not empty) and the messages, as the chat template takes them.
json::array to_json(const std::string& system, const std::vector<ChatMessage>& messages) {
  json::array array;
  if (!system.empty()) array.push_back(json::object{{"role", "system"}, {"content", system}});
  for (const ChatMessage& m : messages) {
    json::object message{{"role", m.role}, {"content", m.content}};
    if (!m.reasoning.empty()) message["reasoning_content"] = m.reasoning;
    array.push_back(std::move(message));
  }
  return array;
}

}  // namespace

ChatSession::ChatSession(LLMEngine& engine, const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template,
                         ChatSettings settings)
    : engine_(engine), tokenizer_(tokenizer), chat_template_(chat_template), settings_(std::move(settings)) {}

json::array ChatSession::render_input(const std::vector<ChatMessage>& messages) const {
  return to_json(system_prompt_, messages);
}

Result<ChatSession::Prompt> ChatSession::build_prompt(const std::vector<ChatMessage>& messages) const {
  Prompt prompt;
  LLAISYS_ASSIGN_OR_RETURN(prompt.text,
                           chat_template_.render(render_input(messages), {.add_generation_prompt = true}));
  // The template writes the special tokens itself, so none are added (as apply_chat_template).
  if (!carried_ids_.empty() && prompt.text.size() > carried_text_.size() && prompt.text.starts_with(carried_text_)) {
    const std::string_view tail = std::string_view(prompt.text).substr(carried_text_.size());
    LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> tail_ids, tokenizer_.encode(tail, /*add_special_tokens=*/false));
    prompt.ids = carried_ids_;
    prompt.ids.insert(prompt.ids.end(), tail_ids.begin(), tail_ids.end());
    // The previous answer's last token was sampled but not run through the model (unless a stop
    // dropped the token after it): then it is new too.
    prompt.new_tokens = static_cast<int32_t>(tail_ids.size()) + (carried_last_computed_ ? 0 : 1);
  } else {
    LLAISYS_ASSIGN_OR_RETURN(prompt.ids, tokenizer_.encode(prompt.text, /*add_special_tokens=*/false));
    prompt.new_tokens = static_cast<int32_t>(prompt.ids.size());
  }
  return prompt;
}

int32_t ChatSession::answer_room() const {
  const int32_t limit = engine_.max_sequence_tokens();
  const int32_t room = settings_.max_tokens ? std::min(*settings_.max_tokens, limit / 2) : limit / 4;
  return std::max(room, 1);
}

Result<ChatSession::Prompt> ChatSession::fit_prompt(std::vector<ChatMessage>& messages, int32_t& dropped,
                                                    const TurnCallbacks& callbacks) const {
  const int64_t limit = engine_.max_sequence_tokens();
  const int64_t room = answer_room();
  std::size_t dropped_messages = 0;
  for (;;) {
    LLAISYS_ASSIGN_OR_RETURN(Prompt prompt, build_prompt(messages));
    const auto size = static_cast<int64_t>(prompt.ids.size());
    // The oldest turn: the first message and what follows it up to the next user message. The new
    // message (last) is never dropped.
    const bool can_drop = messages.size() > 1;
    if (size + room <= limit || (!can_drop && size < limit)) {
      if (dropped > 0 && callbacks.on_notice) {
        callbacks.on_notice(fmt::format("context full: dropped the oldest {} turn{} ({} messages) to fit {} tokens",
                                        dropped, dropped == 1 ? "" : "s", dropped_messages, limit));
      }
      return prompt;
    }
    if (!can_drop) {
      return make_error(ErrorCode::invalid_argument,
                        "the message does not fit the context: {} tokens with the system prompt and template, "
                        "the context holds {}",
                        size, limit);
    }
    std::size_t end = 1;
    while (end + 1 < messages.size() && messages[end].role != "user") ++end;
    messages.erase(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(end));
    dropped_messages += end;
    ++dropped;
  }
}

void ChatSession::forget_carried_ids() {
  carried_ids_.clear();
  carried_text_.clear();
  carried_last_computed_ = false;
}

Result<TurnResult> ChatSession::send(std::string user_text, const TurnCallbacks& callbacks) {
  if (user_text.empty()) return Status(ErrorCode::invalid_argument, "empty message");
  std::vector<ChatMessage> messages = messages_;
  messages.push_back({"user", std::move(user_text)});
  TurnResult result;
  LLAISYS_ASSIGN_OR_RETURN(Prompt prompt, fit_prompt(messages, result.dropped_turns, callbacks));

  GenerateRequest request{.prompt_ids = prompt.ids, .sampling = settings_.sampling};
  request.stop.max_tokens = settings_.max_tokens;
  LLAISYS_ASSIGN_OR_RETURN(RequestId id, engine_.submit(std::move(request)));
  std::optional<app::ReasoningParser> reasoning;
  if (settings_.reasoning == app::ReasoningFormat::deepseek) {
    reasoning.emplace(app::reasoning_options(prompt.text, tokenizer_));
  }
  // Each delta's text, split off the think block when the model reasons.
  auto take_text = [&](std::string_view text, bool last) {
    app::ReasoningSplit split{.reasoning = {}, .content = std::string(text)};
    if (reasoning) split = reasoning->feed(text, {}, last);
    if (!split.reasoning.empty()) {
      result.reasoning += split.reasoning;
      if (callbacks.on_reasoning) callbacks.on_reasoning(split.reasoning);
    }
    if (!split.content.empty()) {
      result.text += split.content;
      if (callbacks.on_text) callbacks.on_text(split.content);
    }
  };

  std::vector<TokenId> output_ids;
  std::optional<RequestOutput> last;
  bool stopping = false;
  bool dropped_tokens = false;  // a stop discarded tokens whose step ran the last kept one
  auto check_stop = [&] {
    if (!stopping && callbacks.should_stop && callbacks.should_stop()) {
      engine_.abort(id);  // the final output (finish_reason abort) comes with the next step
      stopping = true;
    }
  };
  while (!last && engine_.has_unfinished()) {
    check_stop();
    std::vector<RequestOutput> outputs = engine_.step();
    // A stop asked for during the step drops what the step produced: nothing shows up after it.
    check_stop();
    for (RequestOutput& output : outputs) {
      if (output.id != id) continue;
      if (stopping && !output.finished) {
        dropped_tokens = dropped_tokens || std::any_of(output.choices.begin(), output.choices.end(),
                                                       [](const ChoiceDelta& d) { return !d.token_ids.empty(); });
        continue;
      }
      for (ChoiceDelta& delta : output.choices) {
        output_ids.insert(output_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
        take_text(delta.text, delta.finish_reason.has_value());
        if (delta.finish_reason) {
          result.stats.finish_reason = *delta.finish_reason;
          result.finish_detail = delta.finish_detail;
        }
      }
      if (output.finished) last = std::move(output);
    }
  }
  if (!last) return Status(ErrorCode::internal, "the engine finished without the answer's final output");
  if (result.stats.finish_reason == FinishReason::error || result.stats.finish_reason == FinishReason::ignored) {
    return make_error(ErrorCode::internal, "the answer failed ({}): {}", to_string(result.stats.finish_reason),
                      result.finish_detail);
  }

  TurnStats& stats = result.stats;  // finish_reason is already set
  stats.prompt_tokens = last->usage.prompt_tokens;
  stats.cached_tokens = last->usage.cached_tokens;
  stats.new_tokens = prompt.new_tokens;
  stats.completion_tokens = last->usage.completion_tokens;
  stats.prefill_seconds = seconds_between(last->times.arrival, last->times.first_token);
  stats.decode_seconds = seconds_between(last->times.first_token, last->times.last_token);
  last_turn_ = stats;
  ++totals_.turns;
  totals_.dropped_turns += result.dropped_turns;
  add_to(totals_.sum, stats);

  if (result.stats.finish_reason == FinishReason::abort && result.text.empty() && result.reasoning.empty()) {
    return result;  // stopped before saying anything: the turn is forgotten, the conversation unchanged
  }
  messages.push_back({"assistant", result.text, result.reasoning});
  messages_ = std::move(messages);
  // What the engine now holds for this conversation, and the text it stands for. Ids that do not
  // decode (beyond the tokenizer's vocabulary) only mean the next turn encodes afresh.
  Result<std::string> answer_text = tokenizer_.decode(output_ids, /*skip_special_tokens=*/false);
  if (answer_text.ok()) {
    carried_ids_ = std::move(prompt.ids);
    carried_ids_.insert(carried_ids_.end(), output_ids.begin(), output_ids.end());
    carried_text_ = std::move(prompt.text) + answer_text.value();
    carried_last_computed_ = dropped_tokens && !output_ids.empty();
  } else {
    forget_carried_ids();
  }
  return result;
}

void ChatSession::clear() {
  messages_.clear();
  forget_carried_ids();
}

void ChatSession::set_system_prompt(std::string text) { system_prompt_ = std::move(text); }

json::array ChatSession::messages() const { return render_input(messages_); }

Status ChatSession::load(const json::value& conversation) {
  LLAISYS_ASSIGN_OR_RETURN(std::vector<ChatMessage> messages, parse_messages(conversation));
  std::string system;
  if (!messages.empty() && messages.front().role == "system") {
    system = std::move(messages.front().content);
    messages.erase(messages.begin());
  }
  const json::array input = to_json(system, messages);
  if (!input.empty()) {
    Result<std::string> rendered = chat_template_.render(input, {.add_generation_prompt = false});
    if (!rendered.ok()) return Status(rendered.status()).with_context("the chat template refuses the conversation");
  }
  system_prompt_ = std::move(system);
  messages_ = std::move(messages);
  forget_carried_ids();
  return Status();
}

}  // namespace llaisys::offline
