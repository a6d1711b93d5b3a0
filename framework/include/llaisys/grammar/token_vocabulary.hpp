#pragma once
// TokenVocabulary: what grammar masks need to know about a model's tokens — the bytes each one adds
// to the text (Tokenizer::piece_bytes), in a byte trie laid out in preorder so a walk can skip a
// whole subtree (every token sharing a dead prefix) with one jump. Built once per tokenizer and
// shared by every grammar compiled against it; it also holds the cache of per-position token
// classes (token_mask.hpp), which depend only on a rule's automaton and the vocabulary.
//
// Tokens with no bytes (special tokens, holes, ids past the tokenizer's vocabulary up to the model's
// vocab_size) are never allowed by a grammar; the end of a grammar is signalled with `eos_ids`.

#include <array>
#include <bitset>
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

// A trie of token byte strings in preorder: `nodes[i].tokens_begin..end` index `token_ids`.
struct TokenTrie {
  std::vector<TrieNode> nodes;    // the root itself is not stored (nodes[0] is a depth-1 node)
  std::vector<TokenId> token_ids;  // tokens in trie order
  uint16_t max_depth = 0;
  // Class tries only (TokenVocabulary::class_trie): node i stands for the byte-trie nodes
  // members[member_begin[i], member_begin[i + 1]) (the same depth, their class paths equal to its own).
  std::vector<uint32_t> members;
  std::vector<uint32_t> member_begin;
};

// A partition of the 256 byte values into classes (bytes some grammar rule never tells apart), and
// the "sticky" bytes whose next byte a class trie path keeps exact (each sticky byte is a class of its
// own): a JSON string tells few bytes apart except right after a backslash or a lead byte like E0.
struct ByteClasses {
  std::array<uint8_t, 256> of{};  // byte -> class, classes numbered by their smallest byte
  int32_t count = 1;
  std::bitset<256> sticky;
  bool operator==(const ByteClasses&) const = default;
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
  // Preorder trie of the non-empty pieces, in byte order.
  const TokenTrie& trie() const { return trie_; }
  // trie().token_ids is sorted by bytes; trie_rank(id) is an id's index there (-1: none).
  int32_t trie_rank(TokenId id) const { return trie_rank_[static_cast<std::size_t>(id)]; }
  uint16_t max_depth() const { return trie_.max_depth; }
  // The bitmask of the tokens in trie() (those with bytes).
  const std::vector<uint32_t>& trie_tokens_mask() const { return trie_tokens_mask_; }

  // The trie of the tokens' class sequences under `classes` (each node's `byte` is the smallest byte
  // of its class; right after a sticky byte, the byte itself): tokens whose bytes map alike share a path. A rule that tells few
  // bytes apart walks it instead of trie(): for the characters of a JSON string, 8,235 nodes
  // instead of 333,009 on Qwen2's vocabulary. Built on first use (a walk of trie()), then cached.
  std::shared_ptr<const TokenTrie> class_trie(const ByteClasses& classes) const;

  // The shared cache of per-position classes, keyed by (rule fingerprint, state). Bounded: when it
  // passes max_cached_bytes, the oldest half is dropped (entries in use stay alive: shared_ptr).
  std::shared_ptr<const PositionClasses> cached(uint64_t fingerprint, int32_t state) const;
  void store(uint64_t fingerprint, int32_t state, std::shared_ptr<const PositionClasses> classes) const;

 private:
  TokenVocabulary() = default;
  void build_trie();

  std::vector<std::string> pieces_;
  std::vector<TokenId> eos_ids_;
  TokenTrie trie_;
  std::vector<int32_t> trie_rank_;
  std::vector<uint32_t> trie_tokens_mask_;

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
  // Class tries, most recently used last; a handful per model (one per distinct character set).
  mutable std::mutex class_tries_mutex_;
  mutable std::vector<std::pair<ByteClasses, std::shared_ptr<const TokenTrie>>> class_tries_;
};

}  // namespace llaisys::grammar
