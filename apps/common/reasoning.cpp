#include "reasoning.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llaisys::app {

namespace {

constexpr std::string_view kSpace = " \t\r\n";

std::string_view trim_left(std::string_view s) {
  const std::size_t i = s.find_first_not_of(kSpace);
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

std::string_view trim_right(std::string_view s) {
  const std::size_t i = s.find_last_not_of(kSpace);
  return i == std::string_view::npos ? std::string_view() : s.substr(0, i + 1);
}

// The length of the longest suffix of `s` that is a proper prefix of `marker`.
std::size_t partial_marker(std::string_view s, std::string_view marker) {
  for (std::size_t k = std::min(s.size(), marker.size() - 1); k > 0; --k) {
    if (marker.starts_with(s.substr(s.size() - k))) return k;
  }
  return 0;
}

}  // namespace

Result<std::optional<ReasoningFormat>> parse_reasoning_format(std::string_view value, std::string_view what) {
  if (value == "auto") return std::optional<ReasoningFormat>();
  if (value == "deepseek") return std::optional<ReasoningFormat>(ReasoningFormat::deepseek);
  if (value == "none") return std::optional<ReasoningFormat>(ReasoningFormat::none);
  return make_error(ErrorCode::invalid_argument, "{} = '{}': expected auto, deepseek or none", what,
                    value.substr(0, 64));
}

std::string_view to_string(ReasoningFormat format) {
  return format == ReasoningFormat::deepseek ? "deepseek" : "none";
}

ReasoningFormat detect_reasoning_format(const text::ChatTemplate* chat_template, const text::Tokenizer* tokenizer) {
  if (chat_template != nullptr && chat_template->source().find(kThinkOpen) != std::string::npos) {
    return ReasoningFormat::deepseek;
  }
  if (tokenizer != nullptr && tokenizer->token_id(kThinkOpen) && tokenizer->token_id(kThinkClose)) {
    return ReasoningFormat::deepseek;
  }
  return ReasoningFormat::none;
}

Result<ReasoningFormat> resolve_reasoning_format(std::string_view value, std::string_view what,
                                                 const text::ChatTemplate* chat_template,
                                                 const text::Tokenizer* tokenizer) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<ReasoningFormat> format, parse_reasoning_format(value, what));
  return format ? *format : detect_reasoning_format(chat_template, tokenizer);
}

ReasoningOptions reasoning_options(std::string_view rendered_prompt, const text::Tokenizer& tokenizer) {
  return {.start = reasoning_start(rendered_prompt), .close_token = tokenizer.token_id(kThinkClose)};
}

ReasoningStart reasoning_start(std::string_view rendered_prompt) {
  const std::string_view end = trim_right(rendered_prompt);
  if (end.ends_with(kThinkOpen)) return ReasoningStart::inside;
  if (end.ends_with(kThinkClose)) return ReasoningStart::content;
  return ReasoningStart::detect;
}

void ReasoningSplit::append(ReasoningSplit next) {
  reasoning += next.reasoning;
  content += next.content;
}

ReasoningParser::ReasoningParser(ReasoningOptions options)
    : state_(options.start == ReasoningStart::detect    ? State::undecided
             : options.start == ReasoningStart::inside ? State::reasoning
                                                       : State::content),
      close_token_(options.close_token), saw_reasoning_(options.start == ReasoningStart::inside) {}

ReasoningSplit ReasoningParser::feed(std::string_view text, std::span<const TokenId> tokens, bool last) {
  ReasoningSplit out;
  const State before = state_;
  switch (state_) {
    case State::undecided:
      held_ += text;
      take_undecided(out);
      break;
    case State::reasoning:
      held_ += text;
      take_reasoning(out);
      break;
    case State::content:
      take_content(text, out);
      break;
  }
  auto n = static_cast<int64_t>(tokens.size());
  if (before != State::content && state_ == State::content && close_token_) {
    // Closed in this feed: the tokens after "</think>" are the answer's.
    const auto close = std::ranges::find(tokens, *close_token_);
    if (close != tokens.end()) n = close - tokens.begin() + 1;
  }
  if (state_ == State::undecided) {
    undecided_tokens_ += n;
  } else if (before == State::undecided) {
    if (saw_reasoning_) reasoning_tokens_ += undecided_tokens_ + n;
    undecided_tokens_ = 0;
  } else if (before == State::reasoning) {
    reasoning_tokens_ += n;
  }
  if (last) out.append(finish());
  return out;
}

ReasoningSplit ReasoningParser::finish() {
  ReasoningSplit out;
  if (state_ == State::undecided) {
    out.content = std::move(held_);
    state_ = State::content;
  } else if (state_ == State::reasoning) {
    std::string_view tail = trim_right(held_);
    if (!reasoning_started_) tail = trim_left(tail);
    out.reasoning = std::string(tail);
  }
  held_.clear();
  return out;
}

void ReasoningParser::take_undecided(ReasoningSplit& out) {
  const std::string_view rest = trim_left(held_);
  if (rest.starts_with(kThinkOpen)) {
    state_ = State::reasoning;
    saw_reasoning_ = true;
    held_ = std::string(rest.substr(kThinkOpen.size()));
    take_reasoning(out);
  } else if (!kThinkOpen.starts_with(rest)) {  // cannot become "<think>": the output is all answer
    state_ = State::content;
    out.content += held_;
    held_.clear();
  }
}

void ReasoningParser::take_reasoning(ReasoningSplit& out) {
  if (!reasoning_started_) {
    const std::size_t first = held_.find_first_not_of(kSpace);
    held_.erase(0, first == std::string::npos ? held_.size() : first);
    if (held_.empty()) return;
  }
  if (const std::size_t close = held_.find(kThinkClose); close != std::string::npos) {
    out.reasoning += trim_right(std::string_view(held_).substr(0, close));
    const std::string rest = held_.substr(close + kThinkClose.size());
    held_.clear();
    state_ = State::content;
    after_block_ = true;
    take_content(rest, out);
    return;
  }
  // Emit all but a possible start of "</think>" and the whitespace before it (dropped if the block
  // closes next, emitted if more reasoning follows).
  const std::string_view open = std::string_view(held_).substr(0, held_.size() - partial_marker(held_, kThinkClose));
  const std::size_t emit = trim_right(open).size();
  out.reasoning.append(held_, 0, emit);
  if (emit > 0) reasoning_started_ = true;
  held_.erase(0, emit);
}

void ReasoningParser::take_content(std::string_view text, ReasoningSplit& out) {
  if (after_block_ && !content_started_) {
    text = trim_left(text);
    if (text.empty()) return;
    content_started_ = true;
  }
  out.content += text;
}

}  // namespace llaisys::app
