#include "gguf_vocab.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "utf8.hpp"

namespace llaisys::text::gguf_vocab {

using gguf::Value;
using gguf::ValueType;

namespace {

Status wrong_type(std::string_view key, std::string_view wanted, const Value& v) {
  return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' must be {} (it is {})", key, wanted, gguf::to_string(v.type));
}

}  // namespace

// ---- Metadata ---------------------------------------------------------------------------------

const Value* Metadata::find(std::string_view key) const {
  for (const gguf::KeyValue& kv : entries_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

Result<std::optional<std::string_view>> Metadata::string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::optional<std::string_view>();
  if (v->type != ValueType::string) return wrong_type(key, "a string", *v);
  return std::optional<std::string_view>(v->s);
}

Result<std::optional<bool>> Metadata::boolean(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::optional<bool>();
  if (v->type != ValueType::boolean) return wrong_type(key, "a bool", *v);
  return std::optional<bool>(v->b);
}

Result<const gguf::Array*> Metadata::array(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return static_cast<const gguf::Array*>(nullptr);
  if (v->type != ValueType::array || v->array == nullptr) return wrong_type(key, "an array", *v);
  return v->array.get();
}

Result<std::optional<TokenId>> Metadata::token_id(std::string_view key, int32_t num_tokens) const {
  const Value* v = find(key);
  if (v == nullptr) return std::optional<TokenId>();
  const std::optional<int64_t> id = v->as_int();
  if (!id) return wrong_type(key, "an integer", *v);
  if (*id < 0 || *id >= num_tokens) {
    return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' is {}, not a token id (the vocabulary has {} tokens)",
                      key, *id, num_tokens);
  }
  return std::optional<TokenId>(static_cast<TokenId>(*id));
}

// ---- the vocabulary ---------------------------------------------------------------------------

Result<ModelKind> read_model_kind(const Metadata& metadata) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string_view> model, metadata.string(kModelKey));
  if (!model) return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' is missing", kModelKey);
  if (*model == "gpt2") return ModelKind::gpt2;
  if (*model == "llama") return ModelKind::llama;
  return make_error(ErrorCode::unsupported,
                    "GGUF tokenizer: tokenizer model '{}' is not supported (supported: gpt2, llama)", *model);
}

Result<const gguf::Array*> read_token_array(const Metadata& metadata) {
  LLAISYS_ASSIGN_OR_RETURN(const gguf::Array* tokens, metadata.array(kTokensKey));
  if (tokens == nullptr) return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' is missing", kTokensKey);
  constexpr std::size_t kMaxTokens = std::size_t{1} << 26;  // far beyond any real vocabulary
  if (tokens->items.empty() || tokens->items.size() > kMaxTokens) {
    return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' holds {} tokens (1 to {} allowed)", kTokensKey,
                      tokens->items.size(), kMaxTokens);
  }
  for (std::size_t i = 0; i < tokens->items.size(); ++i) {
    if (tokens->items[i].type != ValueType::string) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' must be a string (it is {})", kTokensKey, i,
                        gguf::to_string(tokens->items[i].type));
    }
  }
  return tokens;
}

Result<Vocabulary> read_vocabulary(const Metadata& metadata, ModelKind kind) {
  Vocabulary vocab;
  LLAISYS_ASSIGN_OR_RETURN(const gguf::Array* tokens, read_token_array(metadata));
  const std::size_t n = tokens->items.size();
  vocab.tokens.reserve(n);
  vocab.ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view token = tokens->items[i].s;
    if (token.empty()) token = vocab.renamed.emplace_back(fmt::format("[EMPTY_{}]", i));
    if (!utf8::is_valid(token)) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' is not valid UTF-8", kTokensKey, i);
    }
    auto [it, inserted] = vocab.ids.emplace(token, static_cast<int32_t>(i));
    if (!inserted) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' holds '{}' twice (ids {} and {})", kTokensKey, token,
                        it->second, i);
    }
    vocab.tokens.push_back(token);
  }

  // Absent token types: every token is normal, as llama.cpp reads such a file.
  vocab.types.assign(n, kNormal);
  LLAISYS_ASSIGN_OR_RETURN(const gguf::Array* types, metadata.array(kTypesKey));
  if (types != nullptr) {
    if (types->items.size() != n) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' has {} entries for {} tokens", kTypesKey,
                        types->items.size(), n);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::optional<int64_t> type = types->items[i].as_int();
      if (!type || *type < kNormal || *type > kByte) {
        return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' must be a token type 1..6", kTypesKey, i);
      }
      vocab.types[i] = static_cast<int32_t>(*type);
    }
  }

  if (kind == ModelKind::llama) {
    vocab.scores.assign(n, 0.0f);
    LLAISYS_ASSIGN_OR_RETURN(const gguf::Array* scores, metadata.array(kScoresKey));
    if (scores != nullptr) {
      if (scores->items.size() != n) {
        return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' has {} entries for {} tokens", kScoresKey,
                          scores->items.size(), n);
      }
      for (std::size_t i = 0; i < n; ++i) {
        const std::optional<double> score = scores->items[i].as_number();
        if (!score || std::isnan(*score)) {  // NaN would break the ordering of merges
          return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' must be a number", kScoresKey, i);
        }
        vocab.scores[i] = static_cast<float>(*score);
      }
    }
  }
  return vocab;
}

// ---- special tokens ---------------------------------------------------------------------------

Result<SpecialTokens> read_special_tokens(const Metadata& metadata, ModelKind kind, bool default_add_bos,
                                          int32_t num_tokens) {
  SpecialTokens special;
  auto id = [&](std::string_view name, std::optional<TokenId> fallback) -> Result<std::optional<TokenId>> {
    LLAISYS_ASSIGN_OR_RETURN(std::optional<TokenId> value,
                             metadata.token_id(fmt::format("tokenizer.ggml.{}", name), num_tokens));
    if (!value && fallback && *fallback < num_tokens) value = fallback;
    return value;
  };
  const bool llama = kind == ModelKind::llama;
  LLAISYS_ASSIGN_OR_RETURN(special.bos, id("bos_token_id", llama ? std::optional<TokenId>(1) : std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(special.eos, id("eos_token_id", llama ? std::optional<TokenId>(2) : std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(special.unk, id("unknown_token_id", llama ? std::optional<TokenId>(0) : std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(special.eot, id("eot_token_id", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(special.eom, id("eom_token_id", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(special.pad, id("padding_token_id", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> add_bos, metadata.boolean("tokenizer.ggml.add_bos_token"));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> add_eos, metadata.boolean("tokenizer.ggml.add_eos_token"));
  special.add_bos = add_bos.value_or(default_add_bos);
  special.add_eos = add_eos.value_or(false);
  if (special.add_bos && !special.bos) {
    return Status(ErrorCode::parse_error, "GGUF metadata: add_bos_token is true but tokenizer.ggml.bos_token_id is not set");
  }
  if (special.add_eos && !special.eos) {
    return Status(ErrorCode::parse_error, "GGUF metadata: add_eos_token is true but tokenizer.ggml.eos_token_id is not set");
  }
  return special;
}

}  // namespace llaisys::text::gguf_vocab
