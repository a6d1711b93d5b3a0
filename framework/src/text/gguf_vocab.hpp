#pragma once
// Reading a GGUF file's tokenizer keys (tokenizer.ggml.*), checked, for gguf_tokenizer.cpp to write
// as Hugging Face JSON. Every ill-typed key, count mismatch, or id out of range is a parse_error
// naming the key (and index). Reads the gguf::Value fields directly: Value::as_int() & co. live in
// the weights library, which the text library does not link.

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/gguf.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys::text::gguf_vocab {

inline constexpr std::string_view kModelKey = "tokenizer.ggml.model";
inline constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
inline constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
inline constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
inline constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
inline constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
inline constexpr std::string_view kTemplateKey = "tokenizer.chat_template";

// Typed lookups over the metadata (the first entry of a key counts).
class Metadata {
 public:
  explicit Metadata(std::span<const gguf::KeyValue> entries) : entries_(entries) {}

  const gguf::Value* find(std::string_view key) const;
  Result<std::optional<std::string_view>> string(std::string_view key) const;
  Result<std::optional<bool>> boolean(std::string_view key) const;
  // An array, or nullptr when absent; its items are checked by the caller.
  Result<const gguf::Array*> array(std::string_view key) const;
  // A token id in [0, num_tokens), or nullopt when absent.
  Result<std::optional<TokenId>> token_id(std::string_view key, int32_t num_tokens) const;

  std::span<const gguf::KeyValue> entries() const { return entries_; }

 private:
  std::span<const gguf::KeyValue> entries_;
};

// tokenizer.ggml.model: the two this library turns into tokenizer.json; others are unsupported.
enum class ModelKind { gpt2, llama };
Result<ModelKind> read_model_kind(const Metadata& metadata);

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Vocabulary {
  std::vector<std::string_view> tokens;  // by id: views into the metadata (or into `renamed`)
  std::deque<std::string> renamed;       // "[EMPTY_<id>]" for empty tokens, as llama.cpp names them
  std::vector<int32_t> types;            // TokenType by id (all normal when the file has none)
  std::vector<float> scores;             // by id, for "llama" (0 when the file has none)
  std::unordered_map<std::string_view, int32_t> ids;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  int32_t find(std::string_view token) const {
    auto it = ids.find(token);
    return it == ids.end() ? -1 : it->second;
  }
};

// tokenizer.ggml.tokens alone: an array of 1 to 2^26 strings.
Result<const gguf::Array*> read_token_array(const Metadata& metadata);
// Tokens (valid UTF-8, no duplicates), types and (for "llama") scores, one per token.
Result<Vocabulary> read_vocabulary(const Metadata& metadata, ModelKind kind);

struct SpecialTokens {
  std::optional<TokenId> bos, eos, eot, eom, unk, pad;
  bool add_bos = false;
  bool add_eos = false;
};

// The special token ids and add_bos/eos_token, with llama.cpp's defaults where the file is silent:
// for "llama" BOS 1, EOS 2, UNK 0; add_bos_token `default_add_bos`, add_eos_token false. Asking to
// add a token the file does not name is an error.
Result<SpecialTokens> read_special_tokens(const Metadata& metadata, ModelKind kind, bool default_add_bos,
                                          int32_t num_tokens);

}  // namespace llaisys::text::gguf_vocab
