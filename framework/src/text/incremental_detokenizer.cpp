#include "llaisys/text/incremental_detokenizer.hpp"

#include <algorithm>

#include "utf8.hpp"

namespace llaisys::text {
namespace {

// How many prompt ids before the first generated one the windowed decoder looks at.
constexpr std::size_t kContextIds = 5;

bool ends_with_replacement(std::string_view s) { return s.ends_with(utf8::kReplacement); }

bool is_char_boundary(std::string_view s, std::size_t pos) {
  return pos >= s.size() || (static_cast<uint8_t>(s[pos]) & 0xC0) != 0x80;
}

// The text `full` (the decode of a window) adds to `prefix` (the decode of the window's emitted
// start). For the decoders we support `full` always extends `prefix` once byte-fallback runs are
// closed; should a decoder ever rewrite earlier text, what follows the longest common start is
// emitted, cut at a character boundary so that the delta stays valid UTF-8 (a raw byte offset into
// `full` could fall inside a character).
std::string text_after(std::string_view full, std::string_view prefix) {
  if (full.starts_with(prefix)) return std::string(full.substr(prefix.size()));
  std::size_t common = static_cast<std::size_t>(
      std::mismatch(full.begin(), full.end(), prefix.begin(), prefix.end()).first - full.begin());
  while (common > 0 && !is_char_boundary(full, common)) --common;
  return std::string(full.substr(common));
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, DetokenizerOptions options,
                                               std::span<const TokenId> prompt_ids)
    : tokenizer_(std::move(tokenizer)), options_(std::move(options)) {
  for (const std::string& stop : options_.stop_strings) longest_stop_ = std::max(longest_stop_, stop.size());
  if (tokenizer_->decodes_per_token()) return;
  ids_ = context_of(prompt_ids, prompt_ids.size());
  read_offset_ = ids_.size();
  prefix_text_ = decode_window(0, read_offset_);
  // Does the prompt end in an open byte-fallback run? Then keep the context that ends before it, for
  // a first generated token that is a byte token as well.
  std::size_t end = prompt_ids.size();
  while (end > 0 && !in_chain(prompt_ids[end - 1])) --end;
  if (end > 0 && tokenizer_->is_byte_fallback_token(prompt_ids[end - 1])) {
    while (end > 0 && (!in_chain(prompt_ids[end - 1]) || tokenizer_->is_byte_fallback_token(prompt_ids[end - 1]))) {
      --end;
    }
    context_run_open_ = true;
    closed_context_ = context_of(prompt_ids, end);
  }
}

bool IncrementalDetokenizer::in_chain(TokenId id) const {
  return tokenizer_->is_valid_id(id) && !(options_.skip_special_tokens && tokenizer_->is_special(id));
}

std::string IncrementalDetokenizer::decode_window(std::size_t begin, std::size_t end) const {
  const std::span<const TokenId> window = std::span<const TokenId>(ids_).subspan(begin, end - begin);
  auto text = tokenizer_->decode(window, options_.skip_special_tokens);
  return text.ok() ? std::move(text).value() : std::string();
}

void IncrementalDetokenizer::advance_window() {
  // The ids just emitted are the next window's start (its context); older ones are not needed.
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(read_offset_));
  read_offset_ = ids_.size();
  prefix_text_ = decode_window(0, read_offset_);
}

std::vector<TokenId> IncrementalDetokenizer::context_of(std::span<const TokenId> prompt_ids, std::size_t end) const {
  std::vector<TokenId> context;
  for (std::size_t i = end; i > 0 && context.size() < kContextIds; --i) {
    if (in_chain(prompt_ids[i - 1])) context.push_back(prompt_ids[i - 1]);
  }
  std::reverse(context.begin(), context.end());
  return context;
}

std::string IncrementalDetokenizer::decode_next(TokenId id) {
  if (!tokenizer_->is_valid_id(id)) return {};
  if (tokenizer_->decodes_per_token()) {
    pending_bytes_ += tokenizer_->decode_bytes(id, options_.skip_special_tokens);
    const std::size_t tail = utf8::incomplete_tail_length(pending_bytes_);
    const std::string_view complete = std::string_view(pending_bytes_).substr(0, pending_bytes_.size() - tail);
    std::string out = utf8::repair(complete);
    pending_bytes_.erase(0, complete.size());
    return out;
  }
  // Windowed: decode the recent ids and emit what they add to the text already emitted for
  // ids_[0, read_offset_).
  if (!in_chain(id)) return {};  // a skipped special token: the decoder never sees it
  const bool byte = tokenizer_->is_byte_fallback_token(id);
  if (context_run_open_) {
    context_run_open_ = false;
    if (byte) {  // it would join the prompt's run: drop that run from the context (nothing was emitted yet)
      ids_ = std::move(closed_context_);
      read_offset_ = ids_.size();
      prefix_text_ = decode_window(0, read_offset_);
    }
    closed_context_ = {};
  }
  ids_.push_back(id);
  // A byte token leaves its run open: the next byte token may turn all of it into U+FFFDs (an invalid
  // run is one U+FFFD per byte, even its ASCII and complete characters), so none of it is final yet.
  if (byte) return {};
  std::string full = decode_window(0, ids_.size());
  // Text that ends in U+FFFD may be an unfinished character of a decoder that repairs bytes (a
  // ByteLevel step in a Sequence): wait for more.
  if (full.size() <= prefix_text_.size() || ends_with_replacement(full)) return {};
  std::string out = text_after(full, prefix_text_);
  advance_window();
  return out;
}

std::string IncrementalDetokenizer::flush_decoder() {
  if (tokenizer_->decodes_per_token()) {
    std::string out = utf8::repair(pending_bytes_);
    pending_bytes_.clear();
    return out;
  }
  context_run_open_ = false;
  if (read_offset_ == ids_.size()) return {};
  std::string out = text_after(decode_window(0, ids_.size()), prefix_text_);
  advance_window();
  return out;
}

std::string IncrementalDetokenizer::release(std::string_view fresh) {
  held_.append(fresh);
  if (longest_stop_ == 0) return std::exchange(held_, {});
  // The earliest stop string in the held text (lowest index among equal positions).
  std::size_t best_position = std::string::npos;
  for (std::size_t i = 0; i < options_.stop_strings.size(); ++i) {
    const std::string& stop = options_.stop_strings[i];
    if (stop.empty()) continue;
    const std::size_t position = held_.find(stop);
    if (position < best_position) {
      best_position = position;
      stop_index_ = i;
    }
  }
  if (best_position != std::string::npos) {
    std::string out = held_.substr(0, best_position);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  std::size_t hold = 0;
  for (const std::string& stop : options_.stop_strings) {
    for (std::size_t k = std::min(stop.size() - (stop.empty() ? 0 : 1), held_.size()); k > hold; --k) {
      if (held_.ends_with(std::string_view(stop).substr(0, k)) && is_char_boundary(held_, held_.size() - k)) {
        hold = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, out.size());
  return out;
}

IncrementalDetokenizer::Delta IncrementalDetokenizer::add(TokenId id) {
  if (stop_index_ || finished_) return {.stop_index = stop_index_};
  Delta delta;
  delta.text = release(decode_next(id));
  delta.stop_index = stop_index_;
  emitted_ += delta.text;
  return delta;
}

std::string IncrementalDetokenizer::finish() {
  if (stop_index_ || finished_) return {};
  finished_ = true;
  std::string out = release(flush_decoder());
  if (!stop_index_) out += std::exchange(held_, {});  // a stop-string prefix that never completed
  emitted_ += out;
  return out;
}

}  // namespace llaisys::text
