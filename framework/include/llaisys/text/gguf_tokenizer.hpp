#pragma once
// The tokenizer and chat template a GGUF file carries (llama.cpp's `tokenizer.ggml.*` and
// `tokenizer.chat_template*` keys), rewritten as the Hugging Face tokenizer.json and
// tokenizer_config.json they stand for, so that a GGUF model and a Hugging Face directory go through
// the one Tokenizer and ChatTemplate implementation.
//
// Only the metadata is read (the caller parses the file): this library never depends on the
// weights library.
//
// Supported `tokenizer.ggml.model` values:
// - "gpt2": byte-level BPE (`tokens` in byte-level form, `merges` "left right", `token_type`), its
//   pre-tokenizer chosen by `tokenizer.ggml.pre` (gguf_pre_tokenizer_names()); each one is written
//   exactly as the Hugging Face tokenizer.json of the model it names has it (regex and normalizer:
//   "qwen2" normalizes to NFC, which llama.cpp skips), except "default", llama.cpp's own fallback
//   regexes. An unknown `pre` is `unsupported`, a missing one a parse_error.
// - "llama": SentencePiece BPE (`tokens`, `scores`, `token_type`, no merges), built as transformers'
//   LlamaConverter builds the legacy Llama tokenizer: BPE with byte fallback and fused unk, merges
//   derived from the vocabulary (every split of a token into two tokens, ranked by the merged
//   token's score, highest first), normalizer Prepend "▁" + Replace " " -> "▁", decoders Replace,
//   ByteFallback, Fuse, Strip.
// Anything else is refused with `unsupported`, naming the value.
//
// Token types (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte): unknown and
// control tokens become special added tokens, user-defined ones non-special added tokens (all
// matched in raw text, as llama.cpp does); the others stay plain vocabulary entries. Unused
// padding rows ("[PAD151665]") thus keep their ids valid up to the embedding size, and no encoding
// ever produces them (no merge leads to them).
//
// add_bos_token / add_eos_token, when the file does not say: llama.cpp's defaults (true/false for
// "llama", true/false for the llama-bpe pre-tokenizer, false/false for other "gpt2" ones).
//
// Errors: a missing or ill-typed key, an id out of range, a merge that does not parse or names a
// token the vocabulary lacks, a count that does not match the token count, a duplicate token: all
// `parse_error` with a message naming the key (and index). Nothing aborts.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/gguf.hpp"
#include "llaisys/model/types.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::text {

struct GgufTokenizerFiles {
  std::string tokenizer_json;         // a Hugging Face tokenizer.json (serialised Boost.JSON)
  std::string tokenizer_config_json;  // bos/eos/unk/pad tokens, add_bos/eos_token, chat_template
  int32_t num_tokens = 0;             // entries of tokenizer.ggml.tokens (ids 0 .. num_tokens-1)
  std::optional<TokenId> bos_id;
  std::optional<TokenId> eos_id;
  std::optional<TokenId> eot_id;  // tokenizer.ggml.eot_token_id (end of turn), when the file names one
  std::optional<TokenId> eom_id;  // tokenizer.ggml.eom_token_id (end of message), likewise
  std::optional<TokenId> unk_id;
  std::optional<TokenId> pad_id;
  bool add_bos = false;
  bool add_eos = false;
  // The ids that end generation: eos, eot, eom (those present, each once, in that order).
  std::vector<TokenId> stop_ids;
};

// The tokenizer.json and tokenizer_config.json texts of a GGUF file's metadata (see above).
Result<GgufTokenizerFiles> gguf_tokenizer_files(std::span<const gguf::KeyValue> metadata);

// The same, loaded: Tokenizer::from_json_text(files.tokenizer_json, files.tokenizer_config_json).
Result<std::shared_ptr<const Tokenizer>> tokenizer_from_gguf(std::span<const gguf::KeyValue> metadata);

// The chat template of a GGUF file (`tokenizer.chat_template`, and `tokenizer.chat_template.<name>`
// as named templates), with its bos/eos token strings, as ChatTemplate::from_config_json reads it
// (`name` empty: the default one). not_found when the file has none.
Result<ChatTemplate> chat_template_from_gguf(std::span<const gguf::KeyValue> metadata, std::string_view name = "");

// The `tokenizer.ggml.pre` values a "gpt2" vocabulary may name.
std::span<const std::string_view> gguf_pre_tokenizer_names();
// The name above whose pre-tokenizer splits as tokenizer.json's `pre_tokenizer` (JSON text) does
// (the same Split regexes, ByteLevel and Digits steps), for writing GGUF files; nullopt when none.
std::optional<std::string_view> gguf_pre_tokenizer_name_of(std::string_view pre_tokenizer_json);

}  // namespace llaisys::text
