#pragma once
// The BPE model of a tokenizer.json: vocabulary, merge ranks, and the merge loop that turns one
// pre-token into ids (lowest rank first, leftmost first among equals, as Hugging Face does), with a
// per-tokenizer word cache.

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/json/object.hpp>

#include "hash_tables.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys::text {

// Thread-safe cache of pre-token -> ids. Sharded so concurrent encoders rarely meet on a lock; a
// full shard is cleared (the cache only ever saves work, it never changes results).
class WordCache {
 public:
  bool get(std::string_view word, std::vector<TokenId>& out) const;
  void put(std::string_view word, const TokenId* ids, std::size_t count) const;

  static constexpr std::size_t kMaxWordBytes = 256;

 private:
  static constexpr std::size_t kShards = 16;
  static constexpr std::size_t kShardCapacity = 4096;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<TokenId>, Hash, std::equal_to<>> words;
  };
  mutable std::array<Shard, kShards> shards_;
};

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" object (type BPE).
  static Result<std::unique_ptr<BpeModel>> from_json(const boost::json::object& model);

  // Appends the ids of one pre-token. With `byte_level`, each byte of `piece` stands for its
  // byte-level alphabet character.
  void encode_piece(std::string_view piece, bool byte_level, std::vector<TokenId>& out) const;

  // Vocabulary lookups; -1 / nullptr when absent.
  int32_t find(std::string_view token) const { return vocab_.find(token); }
  const std::string* token_text(TokenId id) const {
    return id >= 0 && static_cast<std::size_t>(id) < id_to_token_.size() && has_token_[static_cast<std::size_t>(id)]
               ? &id_to_token_[static_cast<std::size_t>(id)]
               : nullptr;
  }
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  BpeModel() = default;
  // Initial symbols of a word (one per character, or byte), with unknown/byte-fallback handling.
  void initial_symbols(std::string_view piece, bool byte_level, std::vector<TokenId>& symbols) const;
  void merge_small(std::vector<TokenId>& symbols) const;
  void merge_large(std::vector<TokenId>& symbols) const;

  StringIdMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_token_;
  PairMap merges_;
  std::array<TokenId, 256> byte_symbol_{};  // id of each byte's alphabet character, -1 when absent
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  std::optional<TokenId> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  WordCache cache_;
};

}  // namespace llaisys::text
