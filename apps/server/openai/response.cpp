#include "openai/response.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "http/sse.hpp"

namespace llaisys::server {
namespace json = boost::json;

std::string random_hex(int digits) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string out;
  while (static_cast<int>(out.size()) < digits) out += fmt::format("{:016x}", rng());
  return out.substr(0, static_cast<std::size_t>(digits));
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000;
    }
    bool ok = len > 0 && i + len <= s.size();
    uint32_t cp = len > 0 ? (c & (0xFFu >> (len + 1))) : 0;
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

json::object usage_json(const Usage& usage, std::optional<int64_t> reasoning_tokens) {
  json::object out{{"prompt_tokens", usage.prompt_tokens},
                   {"completion_tokens", usage.completion_tokens},
                   {"total_tokens", usage.total_tokens()},
                   {"prompt_tokens_details", json::object{{"cached_tokens", usage.cached_tokens}}}};
  if (reasoning_tokens) out["completion_tokens_details"] = json::object{{"reasoning_tokens", *reasoning_tokens}};
  return out;
}

std::string logprob_token_bytes(const text::Tokenizer* tokenizer, TokenId id) {
  if (tokenizer == nullptr) return fmt::format("<{}>", id);
  if (tokenizer->is_special(id)) return tokenizer->token_text(id).value_or("");
  return tokenizer->piece_bytes(id);
}

GenerationResponse::GenerationResponse(const ParsedGenerate& parsed, ResponseMeta meta,
                                       std::shared_ptr<const text::Tokenizer> tokenizer)
    : meta_(std::move(meta)), tokenizer_(std::move(tokenizer)),
      candidates_(std::max({parsed.request.n, parsed.best_of, 1})) {
  parsed_.kind = parsed.kind;
  parsed_.request.n = std::max(parsed.request.n, 1);
  parsed_.stream = parsed.stream;
  parsed_.include_usage = parsed.include_usage;
  parsed_.logprobs = parsed.logprobs;
  parsed_.top_logprobs = parsed.top_logprobs;
  parsed_.parse_tools = parsed.parse_tools;
  parsed_.echo = parsed.echo;
  parsed_.reasoning = parsed.reasoning;
  prompts_.resize(std::max<std::size_t>(parsed.prompts.size(), 1));
  for (std::size_t i = 0; i < parsed.prompts.size(); ++i) {
    prompts_[i].text = parsed.prompts[i].text;
    prompts_[i].first_token = parsed.prompts[i].ids.empty() ? -1 : parsed.prompts[i].ids.front();
  }
  choices_.resize(prompts_.size() * static_cast<std::size_t>(candidates_));
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    choices_[i].prompt = i / static_cast<std::size_t>(candidates_);
    if (parsed.reasoning) choices_[i].reasoning.emplace(*parsed.reasoning);
  }
}

namespace {
json::array byte_list(std::string_view bytes) {
  json::array out;
  for (char c : bytes) out.push_back(static_cast<unsigned char>(c));
  return out;
}

// NaN ranks below everything in best_of.
double rank_value(float logprob) {
  return std::isnan(logprob) ? -std::numeric_limits<double>::infinity() : static_cast<double>(logprob);
}
}  // namespace

json::value logprob_json(float logprob) {
  if (std::isfinite(logprob)) return static_cast<double>(logprob);
  if (std::isnan(logprob)) return nullptr;
  return logprob < 0 ? -9999.0 : 0.0;
}

void GenerationResponse::add_completion_entry(Choice& choice, json::object& out, TokenId token, json::value logprob,
                                              const std::vector<std::pair<TokenId, float>>* top) {
  json::value tops = nullptr;
  if (top != nullptr) {
    // A dict keyed by text (the legacy format): distinct tokens with equal text collide, and the
    // more likely one (listed first) keeps the key.
    json::object dict;
    for (const auto& [id, lp] : *top) {
      if (static_cast<int32_t>(dict.size()) >= parsed_.top_logprobs) break;
      dict.emplace(sanitize_utf8(logprob_token_bytes(tokenizer_.get(), id)), logprob_json(lp));
    }
    tops = std::move(dict);
  }
  const std::string bytes = logprob_token_bytes(tokenizer_.get(), token);
  json::string text(sanitize_utf8(bytes));
  out["tokens"].as_array().push_back(text);
  out["token_logprobs"].as_array().push_back(logprob);
  out["top_logprobs"].as_array().push_back(tops);
  out["text_offset"].as_array().push_back(choice.next_offset);
  choice.tokens.push_back(std::move(text));
  choice.token_logprobs.push_back(std::move(logprob));
  choice.top_logprobs.push_back(std::move(tops));
  choice.text_offsets.push_back(choice.next_offset);
  choice.next_offset += static_cast<int64_t>(bytes.size());
}

json::value GenerationResponse::delta_logprobs(Choice& choice, const ChoiceDelta& delta) {
  for (const TokenLogprob& lp : delta.logprobs) choice.cumulative_logprob += rank_value(lp.logprob);
  const bool add_prompt = parsed_.echo && !choice.prompt_logprobs_added;
  if (!parsed_.logprobs || (delta.logprobs.empty() && !add_prompt)) return nullptr;
  const text::Tokenizer* tokenizer = tokenizer_.get();
  if (parsed_.kind == ApiKind::chat) {
    json::array content;
    for (const TokenLogprob& lp : delta.logprobs) {
      const std::string bytes = logprob_token_bytes(tokenizer, lp.token);
      json::array top;
      for (const auto& [id, logprob] : lp.top) {
        if (static_cast<int32_t>(top.size()) >= parsed_.top_logprobs) break;
        const std::string b = logprob_token_bytes(tokenizer, id);
        top.push_back(
            json::object{{"token", sanitize_utf8(b)}, {"logprob", logprob_json(logprob)}, {"bytes", byte_list(b)}});
      }
      json::object entry{{"token", sanitize_utf8(bytes)}, {"logprob", logprob_json(lp.logprob)}, {"bytes", byte_list(bytes)},
                         {"top_logprobs", std::move(top)}};
      choice.chat_logprobs.push_back(entry);
      content.push_back(std::move(entry));
    }
    return json::object{{"content", std::move(content)}};
  }
  json::object out{{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
                   {"text_offset", json::array()}};
  if (add_prompt) {  // the prompt's tokens first; its first token has no logprob
    choice.prompt_logprobs_added = true;
    const Prompt& prompt = prompts_[choice.prompt];
    if (prompt.first_token >= 0) add_completion_entry(choice, out, prompt.first_token, nullptr, nullptr);
    for (const TokenLogprob& lp : prompt.logprobs) {
      add_completion_entry(choice, out, lp.token, logprob_json(lp.logprob), &lp.top);
    }
  }
  for (const TokenLogprob& lp : delta.logprobs) {
    add_completion_entry(choice, out, lp.token, logprob_json(lp.logprob), &lp.top);
  }
  return out;
}

ToolParseResult GenerationResponse::apply(Choice& choice, const ChoiceDelta& delta, std::string& reasoning) {
  std::string content = delta.text;
  if (choice.reasoning) {
    app::ReasoningSplit split = choice.reasoning->feed(delta.text, delta.token_ids, delta.finish_reason.has_value());
    reasoning = std::move(split.reasoning);
    content = std::move(split.content);
    choice.reasoning_text += reasoning;
  }
  ToolParseResult result;
  if (parsed_.parse_tools) {  // tool calls are read from the answer, after the reasoning
    result = choice.parser.feed(content);
    if (delta.finish_reason) result.append(choice.parser.finish());
  } else {
    result.content = std::move(content);
  }
  choice.text += result.content;
  for (const ToolCall& c : result.calls) choice.calls.push_back(c);
  return result;
}

std::string GenerationResponse::finish_reason(const Choice& choice, const ChoiceDelta& delta) {
  switch (*delta.finish_reason) {
    case FinishReason::stop: return choice.calls.empty() ? "stop" : "tool_calls";
    case FinishReason::length:
    case FinishReason::ignored: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::error: return "error";
  }
  return "stop";
}

void GenerationResponse::record_error(const ChoiceDelta& delta) {
  if (!error_) error_ = internal_error(fmt::format("generation failed: {}", delta.finish_detail));
}

json::object GenerationResponse::chunk_base() const {
  return {{"id", meta_.id},
          {"object", parsed_.kind == ApiKind::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta_.created},
          {"model", meta_.model}};
}

void GenerationResponse::take_output(const RequestOutput& output, std::size_t prompt) {
  Prompt& p = prompts_[prompt];
  p.usage = output.usage;
  if (!output.prompt_logprobs.empty()) p.logprobs = output.prompt_logprobs;
  if (output.finished) p.finished = true;
}

bool GenerationResponse::all_finished() const {
  return std::ranges::all_of(prompts_, [](const Prompt& p) { return p.finished; });
}

std::optional<int64_t> GenerationResponse::reasoning_tokens() const {
  if (!parsed_.reasoning) return std::nullopt;
  int64_t sum = 0;
  for (const Choice& c : choices_) sum += c.reasoning->reasoning_tokens();
  return sum;
}

Usage GenerationResponse::usage() const {
  Usage sum;
  for (const Prompt& p : prompts_) {
    sum.prompt_tokens += p.usage.prompt_tokens;
    sum.completion_tokens += p.usage.completion_tokens;
    sum.cached_tokens += p.usage.cached_tokens;
  }
  return sum;
}

std::string GenerationResponse::stream_events(const RequestOutput& output, std::size_t prompt) {
  std::string events;
  if (prompt >= prompts_.size()) return events;
  take_output(output, prompt);
  for (const ChoiceDelta& delta : output.choices) {
    std::optional<TakenDelta> taken = take(delta, prompt);
    if (!taken) continue;
    Choice& choice = *taken->choice;
    const ToolParseResult& result = taken->result;
    json::value& logprobs = taken->logprobs;
    const std::optional<std::string>& finish = taken->finish;
    const bool first = !choice.started;
    if (!first && taken->reasoning.empty() && result.content.empty() && result.calls.empty() && !finish &&
        logprobs.is_null()) {
      continue;
    }
    choice.started = true;
    // Streams never rank (best_of > n is refused), so a candidate is a returned choice.
    json::object c{{"index", static_cast<int64_t>(prompt) * parsed_.request.n + delta.index}};
    if (parsed_.kind == ApiKind::chat) {
      json::object d;
      if (first) d["role"] = "assistant";
      if (!taken->reasoning.empty()) d["reasoning_content"] = taken->reasoning;
      if (!result.content.empty() || first) d["content"] = result.content;
      if (!result.calls.empty()) {
        json::array calls;
        for (const ToolCall& call : result.calls) {
          const auto index = static_cast<int64_t>(choice.calls.size() - result.calls.size() + calls.size());
          calls.push_back(json::object{{"index", index},
                                       {"id", call.id},
                                       {"type", "function"},
                                       {"function", json::object{{"name", call.name}, {"arguments", call.arguments}}}});
        }
        d["tool_calls"] = std::move(calls);
      }
      c["delta"] = std::move(d);
    } else {
      c["text"] = first && parsed_.echo ? prompts_[prompt].text + result.content : result.content;
    }
    c["logprobs"] = std::move(logprobs);
    c["finish_reason"] = finish ? json::value(*finish) : json::value(nullptr);
    json::object chunk = chunk_base();
    chunk["choices"] = json::array{std::move(c)};
    events += sse_data(json::serialize(chunk));
  }
  if (output.finished && all_finished()) {
    if (error_) {
      events += sse_data(error_body(*error_));
    } else if (parsed_.include_usage) {
      json::object chunk = chunk_base();
      chunk["choices"] = json::array();
      chunk["usage"] = usage_json(usage(), reasoning_tokens());
      events += sse_data(json::serialize(chunk));
    }
    events += kSseDone;
  }
  return events;
}

void GenerationResponse::accumulate(const RequestOutput& output, std::size_t prompt) {
  if (prompt >= prompts_.size()) return;
  take_output(output, prompt);
  for (const ChoiceDelta& delta : output.choices) (void)take(delta, prompt);
}

std::optional<GenerationResponse::TakenDelta> GenerationResponse::take(const ChoiceDelta& delta, std::size_t prompt) {
  if (delta.index < 0 || delta.index >= candidates_) return std::nullopt;
  Choice& choice = choices_[prompt * static_cast<std::size_t>(candidates_) + static_cast<std::size_t>(delta.index)];
  if (delta.finish_reason == FinishReason::error) {
    record_error(delta);
    return std::nullopt;
  }
  TakenDelta taken{.choice = &choice, .reasoning = {}, .result = {}, .logprobs = delta_logprobs(choice, delta), .finish = {}};
  taken.result = apply(choice, delta, taken.reasoning);
  if (delta.finish_reason) taken.finish = choice.finish_reason = finish_reason(choice, delta);
  return taken;
}

std::vector<const GenerationResponse::Choice*> GenerationResponse::returned_choices(std::size_t prompt) const {
  std::vector<const Choice*> out;
  for (int32_t j = 0; j < candidates_; ++j) {
    out.push_back(&choices_[prompt * static_cast<std::size_t>(candidates_) + static_cast<std::size_t>(j)]);
  }
  if (candidates_ > parsed_.request.n) {
    std::ranges::stable_sort(out, std::greater<>(), &Choice::cumulative_logprob);
    out.resize(static_cast<std::size_t>(parsed_.request.n));
  }
  return out;
}

std::string GenerationResponse::body() const {
  json::array choices;
  for (std::size_t p = 0; p < prompts_.size(); ++p) {
    for (const Choice* returned : returned_choices(p)) {
      const Choice& choice = *returned;
      json::object c{{"index", static_cast<int64_t>(choices.size())}};
      if (parsed_.kind == ApiKind::chat) {
        json::object message{{"role", "assistant"}};
        const bool blank = choice.text.find_first_not_of(" \t\r\n") == std::string::npos;
        message["content"] = !choice.calls.empty() && blank ? json::value(nullptr) : json::value(choice.text);
        if (choice.reasoning) {
          message["reasoning_content"] =
              choice.reasoning->saw_reasoning() ? json::value(choice.reasoning_text) : json::value(nullptr);
        }
        if (!choice.calls.empty()) {
          json::array calls;
          for (const ToolCall& call : choice.calls) {
            calls.push_back(json::object{{"id", call.id},
                                         {"type", "function"},
                                         {"function", json::object{{"name", call.name}, {"arguments", call.arguments}}}});
          }
          message["tool_calls"] = std::move(calls);
        }
        c["message"] = std::move(message);
        c["logprobs"] = parsed_.logprobs ? json::value(json::object{{"content", choice.chat_logprobs}}) : json::value(nullptr);
      } else {
        c["text"] = parsed_.echo ? prompts_[p].text + choice.text : choice.text;
        c["logprobs"] = parsed_.logprobs ? json::value(json::object{{"tokens", choice.tokens},
                                                                    {"token_logprobs", choice.token_logprobs},
                                                                    {"top_logprobs", choice.top_logprobs},
                                                                    {"text_offset", choice.text_offsets}})
                                         : json::value(nullptr);
      }
      c["finish_reason"] = choice.finish_reason ? json::value(*choice.finish_reason) : json::value(nullptr);
      choices.push_back(std::move(c));
    }
  }
  json::object body{{"id", meta_.id},
                    {"object", parsed_.kind == ApiKind::chat ? "chat.completion" : "text_completion"},
                    {"created", meta_.created},
                    {"model", meta_.model},
                    {"choices", std::move(choices)},
                    {"usage", usage_json(usage(), reasoning_tokens())}};
  return json::serialize(body);
}

std::string GenerationResponse::finish_summary() const {
  std::string out;
  for (const Choice& c : choices_) {
    if (!out.empty()) out += ',';
    out += c.finish_reason.value_or(c.started ? "?" : "-");
  }
  if (error_) out += " error: " + error_->message;
  return out;
}

}  // namespace llaisys::server
