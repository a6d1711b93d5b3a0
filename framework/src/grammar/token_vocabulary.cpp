#include "llaisys/grammar/token_vocabulary.hpp"

#include <algorithm>
#include <numeric>

#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::grammar {
namespace {

constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;
constexpr std::size_t kMaxClassTries = 32;

// Builds the class trie of `bytes` under `classes`: a class node stands for the byte nodes at its depth
// whose paths map to its own ("members"); its children are their children grouped by key (the class
// of their byte, or right after a sticky byte the byte itself), in key order. One pass over the byte
// trie.
class ClassTrieBuilder {
 public:
  ClassTrieBuilder(const TokenTrie& bytes, const ByteClasses& classes) : bytes_(bytes), classes_(classes) {
    for (int b = 255; b >= 0; --b) smallest_[classes.of[static_cast<std::size_t>(b)]] = static_cast<uint8_t>(b);
    levels_.resize(static_cast<std::size_t>(bytes.max_depth) + 1);
  }

  TokenTrie build() {
    std::vector<Child>& top = levels_[0];
    for (uint32_t j = 0; j < bytes_.nodes.size(); j = bytes_.nodes[j].subtree_end) top.push_back(child(j, false));
    emit_children(0);
    out_.member_begin.push_back(static_cast<uint32_t>(out_.members.size()));
    out_.max_depth = bytes_.max_depth;
    return std::move(out_);
  }

 private:
  struct Child {
    uint16_t key;  // a class, or 256 + the byte past a sticky byte
    uint32_t node;
    bool operator<(const Child& o) const { return key != o.key ? key < o.key : node < o.node; }
  };
  Child child(uint32_t j, bool exact) const {
    const uint8_t b = bytes_.nodes[j].byte;
    return Child{static_cast<uint16_t>(exact ? 256u + b : classes_.of[b]), j};
  }

  // levels_[d] holds the children (at depth d + 1) of the members of the node being emitted at depth d.
  void emit_children(std::size_t d) {
    std::vector<Child>& kids = levels_[d];
    std::sort(kids.begin(), kids.end());  // by key, members in trie order (as a stable sort would)
    for (std::size_t i = 0; i < kids.size();) {
      std::size_t end = i;
      while (end < kids.size() && kids[end].key == kids[i].key) ++end;
      const uint16_t key = kids[i].key;
      const auto byte = static_cast<uint8_t>(key >= 256 ? key - 256 : smallest_[key]);
      const bool exact_below = classes_.sticky.test(byte);
      const auto at = static_cast<uint32_t>(out_.nodes.size());
      out_.nodes.push_back(TrieNode{.byte = byte, .depth = static_cast<uint16_t>(d + 1)});
      out_.nodes[at].tokens_begin = static_cast<uint32_t>(out_.token_ids.size());
      out_.member_begin.push_back(static_cast<uint32_t>(out_.members.size()));
      for (std::size_t k = i; k < end; ++k) out_.members.push_back(kids[k].node);
      std::vector<Child>& next = levels_[d + 1];
      next.clear();
      for (std::size_t k = i; k < end; ++k) {
        const TrieNode& member = bytes_.nodes[kids[k].node];
        for (uint32_t t = member.tokens_begin; t < member.tokens_end; ++t) out_.token_ids.push_back(bytes_.token_ids[t]);
        for (uint32_t j = kids[k].node + 1; j < member.subtree_end; j = bytes_.nodes[j].subtree_end) {
          next.push_back(child(j, exact_below));
        }
      }
      out_.nodes[at].tokens_end = static_cast<uint32_t>(out_.token_ids.size());
      if (!next.empty()) emit_children(d + 1);
      out_.nodes[at].subtree_end = static_cast<uint32_t>(out_.nodes.size());
      i = end;
    }
  }

  const TokenTrie& bytes_;
  const ByteClasses& classes_;
  std::array<uint8_t, 256> smallest_{};
  std::vector<std::vector<Child>> levels_;
  TokenTrie out_;
};

}  // namespace

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(const text::Tokenizer& tokenizer,
                                                                       int32_t vocab_size, std::vector<TokenId> eos_ids) {
  std::vector<std::string> pieces(static_cast<std::size_t>(std::max(vocab_size, 0)));
  const int32_t known = std::min(vocab_size, tokenizer.vocab_size());
  for (TokenId id = 0; id < known; ++id) pieces[static_cast<std::size_t>(id)] = tokenizer.piece_bytes(id);
  return from_pieces(std::move(pieces), std::move(eos_ids));
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_pieces(std::vector<std::string> pieces,
                                                                    std::vector<TokenId> eos_ids) {
  std::shared_ptr<TokenVocabulary> v(new TokenVocabulary());
  v->pieces_ = std::move(pieces);
  std::erase_if(eos_ids, [&](TokenId id) { return id < 0 || id >= v->vocab_size(); });
  std::sort(eos_ids.begin(), eos_ids.end());
  eos_ids.erase(std::unique(eos_ids.begin(), eos_ids.end()), eos_ids.end());
  v->eos_ids_ = std::move(eos_ids);
  for (const TokenId id : v->eos_ids_) v->pieces_[static_cast<std::size_t>(id)].clear();  // never text
  v->build_trie();
  return v;
}

void TokenVocabulary::build_trie() {
  std::vector<TokenId> order;
  for (TokenId id = 0; id < vocab_size(); ++id) {
    const std::string& p = pieces_[static_cast<std::size_t>(id)];
    if (!p.empty() && p.size() <= UINT16_MAX) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    const std::string& pa = pieces_[static_cast<std::size_t>(a)];
    const std::string& pb = pieces_[static_cast<std::size_t>(b)];
    return pa != pb ? pa < pb : a < b;
  });
  std::vector<TrieNode>& nodes = trie_.nodes;
  trie_.token_ids = order;
  trie_rank_.assign(pieces_.size(), -1);
  trie_tokens_mask_.assign(mask_words(), 0u);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto id = static_cast<std::size_t>(order[i]);
    trie_rank_[id] = static_cast<int32_t>(i);
    trie_tokens_mask_[id / 32] |= 1u << (id % 32);
  }
  // Preorder: in byte order, each token adds the nodes of its bytes past the common prefix with the
  // previous token. `path[d]` is the node at depth d + 1 on the current path.
  std::vector<uint32_t> path;
  const std::string* previous = nullptr;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::string& p = pieces_[static_cast<std::size_t>(order[i])];
    std::size_t common = 0;
    if (previous != nullptr) {
      const std::size_t limit = std::min(previous->size(), p.size());
      while (common < limit && (*previous)[common] == p[common]) ++common;
    }
    path.resize(common);
    for (std::size_t d = common; d < p.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes.size()));
      nodes.push_back(TrieNode{.byte = static_cast<uint8_t>(p[d]), .depth = static_cast<uint16_t>(d + 1)});
      trie_.max_depth = std::max(trie_.max_depth, static_cast<uint16_t>(d + 1));
    }
    TrieNode& end = nodes[path.back()];
    if (end.tokens_end == 0 && end.tokens_begin == 0) end.tokens_begin = static_cast<uint32_t>(i);
    end.tokens_end = static_cast<uint32_t>(i + 1);
    previous = &p;
  }
  // Subtree ends: a node's subtree stops at the next node whose depth is not greater.
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    while (!open.empty() && nodes[open.back()].depth >= nodes[i].depth) {
      nodes[open.back()].subtree_end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (const uint32_t i : open) nodes[i].subtree_end = static_cast<uint32_t>(nodes.size());
}

std::shared_ptr<const PositionClasses> TokenVocabulary::cached(uint64_t fingerprint, int32_t state) const {
  std::lock_guard lock(cache_mutex_);
  auto it = cache_.find({fingerprint, state});
  return it == cache_.end() ? nullptr : it->second.second;
}

void TokenVocabulary::store(uint64_t fingerprint, int32_t state, std::shared_ptr<const PositionClasses> classes) const {
  std::lock_guard lock(cache_mutex_);
  const std::size_t size = classes->bytes() + 64;
  auto [it, inserted] = cache_.try_emplace({fingerprint, state}, cache_tick_++, std::move(classes));
  if (!inserted) return;
  cache_bytes_ += size;
  if (cache_bytes_ <= kMaxCachedBytes) return;
  // Drop the older half.
  std::vector<uint64_t> ticks;
  ticks.reserve(cache_.size());
  for (const auto& [key, value] : cache_) ticks.push_back(value.first);
  std::nth_element(ticks.begin(), ticks.begin() + static_cast<std::ptrdiff_t>(ticks.size() / 2), ticks.end());
  const uint64_t cut = ticks[ticks.size() / 2];
  cache_bytes_ = 0;
  for (auto i = cache_.begin(); i != cache_.end();) {
    if (i->second.first < cut) {
      i = cache_.erase(i);
    } else {
      cache_bytes_ += i->second.second->bytes() + 64;
      ++i;
    }
  }
}

std::shared_ptr<const TokenTrie> TokenVocabulary::class_trie(const ByteClasses& classes) const {
  // Held while building (a few ms): a second caller wanting the same trie waits instead of repeating it.
  std::lock_guard lock(class_tries_mutex_);
  for (auto it = class_tries_.begin(); it != class_tries_.end(); ++it) {
    if (it->first == classes) {
      std::rotate(it, it + 1, class_tries_.end());
      return class_tries_.back().second;
    }
  }
  auto trie = std::make_shared<const TokenTrie>(ClassTrieBuilder(trie_, classes).build());
  if (class_tries_.size() >= kMaxClassTries) class_tries_.erase(class_tries_.begin());
  class_tries_.emplace_back(classes, trie);
  return trie;
}

}  // namespace llaisys::grammar
