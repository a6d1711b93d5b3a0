#pragma once
// IncrementalDetokenizer: token ids in, text deltas out, for streaming generation.
//
// Contract:
// - Every delta is complete, valid UTF-8: the bytes of a character split across tokens are held
//   back until it completes; finish() turns a trailing incomplete sequence into U+FFFD. The
//   concatenation of all deltas and finish() equals Tokenizer::decode of the same ids (for
//   per-token decoders such as ByteLevel exactly; SentencePiece-style decoders decode a window of
//   recent ids with the prompt as context).
// - Special tokens are skipped unless options.skip_special_tokens is false. Ids the tokenizer does
//   not know are skipped (add() cannot fail; the engine validates ids before they get here).
// - Stop strings: no delta ever contains any part of a stop string. Text that might be the start of
//   one is held back until it is clearly not; once one matches, the delta carries the text before it
//   and stop_index, and every later add() returns nothing but that stop_index.
// - Not thread-safe: one instance per sequence.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llaisys/model/types.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::text {

struct DetokenizerOptions {
  bool skip_special_tokens = true;
  std::vector<std::string> stop_strings;  // empty strings are ignored
};

class IncrementalDetokenizer {
 public:
  // prompt_ids give context where the decoder needs it (leading-space rules of SentencePiece decoders).
  IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, DetokenizerOptions options,
                         std::span<const TokenId> prompt_ids = {});

  struct Delta {
    std::string text;                       // complete UTF-8 only; never any part of a stop string
    std::optional<std::size_t> stop_index;  // set once a stop string matched (index into stop_strings):
                                            // generation must end; text before the stop string is in `text`
  };
  Delta add(TokenId id);
  // End of generation: releases held-back text (a trailing incomplete UTF-8 sequence becomes U+FFFD; a
  // partial stop-string prefix that never completed is released as text). Returns "" after a stop.
  std::string finish();
  const std::string& text() const { return emitted_; }  // everything emitted so far
  std::optional<std::size_t> stop_index() const { return stop_index_; }

 private:
  // New complete text from the decoder for one more id (or the flush at the end).
  std::string decode_next(TokenId id);
  std::string flush_decoder();
  // Runs stop-string detection over new text and returns what may be emitted now.
  std::string release(std::string_view fresh);

  std::shared_ptr<const Tokenizer> tokenizer_;
  DetokenizerOptions options_;
  std::size_t longest_stop_ = 0;
  // per-token decoders: bytes of an unfinished UTF-8 character
  std::string pending_bytes_;
  // windowed decoders: ids with context; text of ids_[prefix_offset_, read_offset_) was emitted
  std::vector<TokenId> ids_;
  std::size_t prefix_offset_ = 0;
  std::size_t read_offset_ = 0;
  // stop strings
  std::string held_;  // decoded, not yet emitted (could start a stop string)
  std::string emitted_;
  std::optional<std::size_t> stop_index_;
  bool finished_ = false;
};

}  // namespace llaisys::text
