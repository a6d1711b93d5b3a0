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

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, DetokenizerOptions options,
                                               std::span<const TokenId> prompt_ids)
    : tokenizer_(std::move(tokenizer)), options_(std::move(options)) {
  for (const std::string& stop : options_.stop_strings) longest_stop_ = std::max(longest_stop_, stop.size());
  if (!tokenizer_->decodes_per_token()) {
    const std::size_t context = std::min(prompt_ids.size(), kContextIds);
    for (TokenId id : prompt_ids.subspan(prompt_ids.size() - context)) {
      if (tokenizer_->is_valid_id(id)) ids_.push_back(id);
    }
    prefix_offset_ = 0;
    read_offset_ = ids_.size();
  }
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
  // Windowed: decode the recent ids with and without the unread ones; emit the difference once it
  // no longer ends in U+FFFD (an unfinished byte-fallback character).
  ids_.push_back(id);
  const std::span<const TokenId> ids(ids_);
  auto prefix = tokenizer_->decode(ids.subspan(prefix_offset_, read_offset_ - prefix_offset_), options_.skip_special_tokens);
  auto full = tokenizer_->decode(ids.subspan(prefix_offset_), options_.skip_special_tokens);
  if (!prefix.ok() || !full.ok()) return {};
  if (full->size() <= prefix->size() || ends_with_replacement(*full)) return {};
  std::string out = full->substr(prefix->size());
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return out;
}

std::string IncrementalDetokenizer::flush_decoder() {
  if (tokenizer_->decodes_per_token()) {
    std::string out = utf8::repair(pending_bytes_);
    pending_bytes_.clear();
    return out;
  }
  const std::span<const TokenId> ids(ids_);
  auto prefix = tokenizer_->decode(ids.subspan(prefix_offset_, read_offset_ - prefix_offset_), options_.skip_special_tokens);
  auto full = tokenizer_->decode(ids.subspan(prefix_offset_), options_.skip_special_tokens);
  read_offset_ = prefix_offset_ = ids_.size();
  if (!prefix.ok() || !full.ok() || full->size() <= prefix->size()) return {};
  return full->substr(prefix->size());
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
