#pragma once
// TokenVocabulary: what grammar masks need to know about a model's tokens — the bytes each one adds
// to the text (Tokenizer::piece_bytes), in a byte trie laid out in preorder so a walk can skip a
// whole subtree (every token sharing a dead prefix) with one jump. Built once per tokenizer and
// shared by every grammar compiled against it; it also holds the cache of per-position token
// classes (token_mask.hpp), which depend only on a rule's automaton and the vocabulary.
//
// Tokens with no bytes (special tokens, holes, ids past the tokenizer's vocabulary up to the model's
// vocab_size) are never allowed by a grammar; the end of a grammar is signalled with `eos_ids`.

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "llaisys/model/types.hpp"

namespace llaisys::text {
class Tokenizer;
}

namespace llaisys::grammar {

struct TrieNode {
  uint8_t byte = 0;
  uint16_t depth = 0;          // bytes from the root (1 for the root's children)
  uint32_t subtree_end = 0;    // index one past this node's last descendant
  uint32_t tokens_begin = 0;   // the tokens whose bytes end here: token_ids()[begin, end)
  uint32_t tokens_end = 0;
};

struct PositionClasses;  // token_mask.hpp

class TokenVocabulary {
 public:
  // `vocab_size`: the model's (ids >= the tokenizer's vocabulary have no bytes); `eos_ids`: the ids
  // that end generation (allowed exactly when the grammar can end).
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const text::Tokenizer& tokenizer, int32_t vocab_size,
                                                               std::vector<TokenId> eos_ids);
  // From explicit pieces (tests): pieces[i] are token i's bytes.
  static std::shared_ptr<const TokenVocabulary> from_pieces(std::vector<std::string> pieces,
                                                            std::vector<TokenId> eos_ids);

  int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
  std::size_t mask_words() const { return (pieces_.size() + 31) / 32; }
  const std::string& piece(TokenId id) const { return pieces_[static_cast<std::size_t>(id)]; }
  const std::vector<TokenId>& eos_ids() const { return eos_ids_; }
  // Preorder trie of the non-empty pieces; the root itself is not stored (nodes()[0] is a depth-1 node).
  const std::vector<TrieNode>& nodes() const { return nodes_; }
  const std::vector<TokenId>& token_ids() const { return token_ids_; }
  // token_ids() is in trie order (sorted by bytes); trie_rank(id) is an id's index there (-1: none).
  int32_t trie_rank(TokenId id) const { return trie_rank_[static_cast<std::size_t>(id)]; }
  uint16_t max_depth() const { return max_depth_; }

  // The shared cache of per-position classes, keyed by (rule fingerprint, state). Bounded: when it
  // passes max_cached_bytes, the oldest half is dropped (entries in use stay alive: shared_ptr).
  std::shared_ptr<const PositionClasses> cached(uint64_t fingerprint, int32_t state) const;
  void store(uint64_t fingerprint, int32_t state, std::shared_ptr<const PositionClasses> classes) const;

 private:
  TokenVocabulary() = default;
  void build_trie();

  std::vector<std::string> pieces_;
  std::vector<TokenId> eos_ids_;
  std::vector<TrieNode> nodes_;
  std::vector<TokenId> token_ids_;
  std::vector<int32_t> trie_rank_;
  uint16_t max_depth_ = 0;

  struct KeyHash {
    std::size_t operator()(const std::pair<uint64_t, int32_t>& k) const {
      return static_cast<std::size_t>(k.first ^ (static_cast<uint64_t>(k.second) * 0x9E3779B97F4A7C15ull));
    }
  };
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::pair<uint64_t, int32_t>, std::pair<uint64_t, std::shared_ptr<const PositionClasses>>,
                             KeyHash>
      cache_;  // value: (insertion tick, classes)
  mutable uint64_t cache_tick_ = 0;
  mutable std::size_t cache_bytes_ = 0;
};

}  // namespace llaisys::grammar
