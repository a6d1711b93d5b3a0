#pragma once
// Tokenizer: a Hugging Face tokenizer.json (byte-level BPE first: Qwen2, GPT-2 style) turned into
// ids and back, agreeing with Hugging Face's `tokenizers` on every input.
//
// Pipeline for encode: added tokens are cut out of the raw text (special and non-special, as
// Hugging Face does after apply_chat_template), each remaining segment is normalized (e.g. NFC),
// pre-tokenized (e.g. Split regex + ByteLevel) and run through the model (BPE merges); with
// add_special_tokens the post-processor adds its tokens (e.g. BOS). tokenizer_config.json's
// add_bos_token / add_eos_token, when present, replace that post-processor with [BOS] text [EOS] as
// transformers does. Invalid UTF-8 in the input is replaced by U+FFFD first.
//
// Contract: immutable after load; every const method is thread-safe. Malformed or unsupported
// tokenizer.json files are rejected at load with a message naming the field; nothing aborts.

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys::text {

class Tokenizer {
 public:
  // tokenizer.json (+ tokenizer_config.json beside it when present) from a model directory.
  static Result<std::shared_ptr<const Tokenizer>> from_model_dir(const std::filesystem::path& dir);
  // tokenizer_config: empty path for none.
  static Result<std::shared_ptr<const Tokenizer>> from_files(const std::filesystem::path& tokenizer_json,
                                                            const std::filesystem::path& tokenizer_config);
  // The same from in-memory JSON text (tokenizer_config_json empty: none). Used by tests and fuzzers.
  static Result<std::shared_ptr<const Tokenizer>> from_json_text(std::string_view tokenizer_json,
                                                                std::string_view tokenizer_config_json = {});

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Special/added tokens written in the text are recognised. add_special_tokens applies the
  // post-processor (e.g. BOS).
  Result<std::vector<TokenId>> encode(std::string_view text, bool add_special_tokens = false) const;
  // Invalid UTF-8 in the result is replaced by U+FFFD. Out-of-range ids are an error.
  Result<std::string> decode(std::span<const TokenId> ids, bool skip_special_tokens = true) const;

  // One past the largest id (vocabulary and added tokens); every valid id is below it.
  int32_t vocab_size() const;
  bool is_special(TokenId id) const;
  // Whether `id` names a token at all (the vocabulary may have holes).
  bool is_valid_id(TokenId id) const;
  std::optional<TokenId> token_id(std::string_view token) const;  // exact token string -> id
  std::optional<std::string> token_text(TokenId id) const;        // the vocab string (e.g. "Ġthe")
  std::optional<TokenId> bos_token_id() const;  // from tokenizer_config.json when present
  std::optional<TokenId> eos_token_id() const;  // from tokenizer_config.json when present

  // ---- for the streaming detokenizer ----
  // True when a token's text never depends on its neighbours (ByteLevel decoding): decode_bytes of
  // each token, concatenated, equals the decode of the whole sequence before UTF-8 repair.
  bool decodes_per_token() const;
  // The raw bytes `id` decodes to on its own (may be an incomplete UTF-8 sequence); empty for a
  // skipped special token or an unknown id. Meaningful when decodes_per_token().
  std::string decode_bytes(TokenId id, bool skip_special_tokens) const;
  // True when `id` is a byte token ("<0xNN>") that the decoder merges with the byte tokens next to
  // it (ByteFallback): a run of them decodes as a whole, as its text when the bytes are valid UTF-8
  // and as one U+FFFD per byte otherwise, so a later byte token can change the text of earlier ones.
  bool is_byte_fallback_token(TokenId id) const;

  // ---- for structured output ----
  // The bytes `id` adds to a text after other tokens, whatever the decoder: decode_bytes for
  // byte-level ones; for SentencePiece-style chains its piece with "▁" as a space and a byte token
  // ("<0x0A>") as its raw byte (the leading-space strip applies only at a text's start). Empty for
  // special tokens and ids that name no token. Concatenated over a generated sequence, these are the
  // bytes of its text before UTF-8 repair.
  std::string piece_bytes(TokenId id) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace llaisys::text
