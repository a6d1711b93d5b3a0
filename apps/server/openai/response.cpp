#include "openai/response.hpp"

#include <cmath>
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

json::object usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.total_tokens()},
          {"prompt_tokens_details", json::object{{"cached_tokens", usage.cached_tokens}}}};
}

GenerationResponse::GenerationResponse(const ParsedGenerate& parsed, ResponseMeta meta,
                                       std::shared_ptr<const text::Tokenizer> tokenizer)
    : meta_(std::move(meta)), tokenizer_(std::move(tokenizer)) {
  parsed_.kind = parsed.kind;
  parsed_.stream = parsed.stream;
  parsed_.include_usage = parsed.include_usage;
  parsed_.logprobs = parsed.logprobs;
  parsed_.top_logprobs = parsed.top_logprobs;
  parsed_.parse_tools = parsed.parse_tools;
  parsed_.echo = parsed.echo;
  parsed_.prompt_text = parsed.prompt_text;
  choices_.resize(static_cast<std::size_t>(std::max(parsed.request.n, 1)));
}

namespace {
json::array byte_list(std::string_view bytes) {
  json::array out;
  for (char c : bytes) out.push_back(static_cast<unsigned char>(c));
  return out;
}
}  // namespace

json::value logprob_json(float logprob) {
  if (std::isfinite(logprob)) return static_cast<double>(logprob);
  if (std::isnan(logprob)) return nullptr;
  return logprob < 0 ? -9999.0 : 0.0;
}

json::value GenerationResponse::delta_logprobs(Choice& choice, const ChoiceDelta& delta) {
  if (!parsed_.logprobs || delta.logprobs.empty()) return nullptr;
  auto token_bytes = [&](TokenId id) {
    return tokenizer_ ? tokenizer_->decode_bytes(id, /*skip_special_tokens=*/false) : fmt::format("<{}>", id);
  };
  if (parsed_.kind == ApiKind::chat) {
    json::array content;
    for (const TokenLogprob& lp : delta.logprobs) {
      const std::string bytes = token_bytes(lp.token);
      json::array top;
      for (const auto& [id, logprob] : lp.top) {
        if (static_cast<int32_t>(top.size()) >= parsed_.top_logprobs) break;
        const std::string b = token_bytes(id);
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
  json::array tokens, token_logprobs, tops, offsets;
  // The delta's text was already appended to the choice's text.
  std::size_t offset = (parsed_.echo ? parsed_.prompt_text.size() : 0) +
                       (choice.text.size() >= delta.text.size() ? choice.text.size() - delta.text.size() : 0);
  for (const TokenLogprob& lp : delta.logprobs) {
    const std::string text = sanitize_utf8(token_bytes(lp.token));
    json::object top;
    for (const auto& [id, logprob] : lp.top) {
      if (static_cast<int32_t>(top.size()) >= parsed_.top_logprobs) break;
      top[sanitize_utf8(token_bytes(id))] = logprob_json(logprob);
    }
    tokens.push_back(json::string(text));
    token_logprobs.push_back(logprob_json(lp.logprob));
    tops.push_back(std::move(top));
    offsets.push_back(static_cast<int64_t>(offset));
    offset += token_bytes(lp.token).size();
  }
  for (auto& t : tokens) choice.tokens.push_back(t);
  for (auto& t : token_logprobs) choice.token_logprobs.push_back(t);
  for (auto& t : tops) choice.top_logprobs.push_back(t);
  for (auto& t : offsets) choice.text_offsets.push_back(t);
  return json::object{{"tokens", std::move(tokens)},
                      {"token_logprobs", std::move(token_logprobs)},
                      {"top_logprobs", std::move(tops)},
                      {"text_offset", std::move(offsets)}};
}

ToolParseResult GenerationResponse::apply(Choice& choice, const ChoiceDelta& delta) {
  ToolParseResult result;
  if (parsed_.parse_tools) {
    result = choice.parser.feed(delta.text);
    if (delta.finish_reason) result.append(choice.parser.finish());
  } else {
    result.content = delta.text;
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

std::string GenerationResponse::stream_events(const RequestOutput& output) {
  std::string events;
  usage_ = output.usage;
  for (const ChoiceDelta& delta : output.choices) {
    std::optional<TakenDelta> taken = take(delta);
    if (!taken) continue;
    Choice& choice = *taken->choice;
    const ToolParseResult& result = taken->result;
    json::value& logprobs = taken->logprobs;
    const std::optional<std::string>& finish = taken->finish;
    const bool first = !choice.started;
    if (!first && result.content.empty() && result.calls.empty() && !finish && logprobs.is_null()) continue;
    choice.started = true;
    json::object c{{"index", delta.index}};
    if (parsed_.kind == ApiKind::chat) {
      json::object d;
      if (first) d["role"] = "assistant";
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
      c["text"] = first && parsed_.echo ? parsed_.prompt_text + result.content : result.content;
    }
    c["logprobs"] = std::move(logprobs);
    c["finish_reason"] = finish ? json::value(*finish) : json::value(nullptr);
    json::object chunk = chunk_base();
    chunk["choices"] = json::array{std::move(c)};
    events += sse_data(json::serialize(chunk));
  }
  if (output.finished) {
    if (error_) {
      events += sse_data(error_body(*error_));
    } else if (parsed_.include_usage) {
      json::object chunk = chunk_base();
      chunk["choices"] = json::array();
      chunk["usage"] = usage_json(usage_);
      events += sse_data(json::serialize(chunk));
    }
    events += kSseDone;
  }
  return events;
}

void GenerationResponse::accumulate(const RequestOutput& output) {
  usage_ = output.usage;
  for (const ChoiceDelta& delta : output.choices) (void)take(delta);
}

std::optional<GenerationResponse::TakenDelta> GenerationResponse::take(const ChoiceDelta& delta) {
  if (delta.index < 0 || delta.index >= static_cast<int32_t>(choices_.size())) return std::nullopt;
  Choice& choice = choices_[static_cast<std::size_t>(delta.index)];
  if (delta.finish_reason == FinishReason::error) {
    record_error(delta);
    return std::nullopt;
  }
  TakenDelta taken{.choice = &choice, .result = apply(choice, delta), .logprobs = delta_logprobs(choice, delta), .finish = {}};
  if (delta.finish_reason) taken.finish = choice.finish_reason = finish_reason(choice, delta);
  return taken;
}

std::string GenerationResponse::body() const {
  json::array choices;
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    const Choice& choice = choices_[i];
    json::object c{{"index", static_cast<int64_t>(i)}};
    if (parsed_.kind == ApiKind::chat) {
      json::object message{{"role", "assistant"}};
      const bool blank = choice.text.find_first_not_of(" \t\r\n") == std::string::npos;
      message["content"] = !choice.calls.empty() && blank ? json::value(nullptr) : json::value(choice.text);
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
      c["text"] = parsed_.echo ? parsed_.prompt_text + choice.text : choice.text;
      c["logprobs"] = parsed_.logprobs ? json::value(json::object{{"tokens", choice.tokens},
                                                                  {"token_logprobs", choice.token_logprobs},
                                                                  {"top_logprobs", choice.top_logprobs},
                                                                  {"text_offset", choice.text_offsets}})
                                       : json::value(nullptr);
    }
    c["finish_reason"] = choice.finish_reason ? json::value(*choice.finish_reason) : json::value(nullptr);
    choices.push_back(std::move(c));
  }
  json::object body{{"id", meta_.id},
                    {"object", parsed_.kind == ApiKind::chat ? "chat.completion" : "text_completion"},
                    {"created", meta_.created},
                    {"model", meta_.model},
                    {"choices", std::move(choices)},
                    {"usage", usage_json(usage_)}};
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
