#include "llaisys/grammar/token_vocabulary.hpp"

#include <algorithm>
#include <numeric>

#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::grammar {
namespace {

constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;

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
  token_ids_ = order;
  trie_rank_.assign(pieces_.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) trie_rank_[static_cast<std::size_t>(order[i])] = static_cast<int32_t>(i);
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
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(TrieNode{.byte = static_cast<uint8_t>(p[d]), .depth = static_cast<uint16_t>(d + 1)});
      max_depth_ = std::max(max_depth_, static_cast<uint16_t>(d + 1));
    }
    TrieNode& end = nodes_[path.back()];
    if (end.tokens_end == 0 && end.tokens_begin == 0) end.tokens_begin = static_cast<uint32_t>(i);
    end.tokens_end = static_cast<uint32_t>(i + 1);
    previous = &p;
  }
  // Subtree ends: a node's subtree stops at the next node whose depth is not greater.
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    while (!open.empty() && nodes_[open.back()].depth >= nodes_[i].depth) {
      nodes_[open.back()].subtree_end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (const uint32_t i : open) nodes_[i].subtree_end = static_cast<uint32_t>(nodes_.size());
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

}  // namespace llaisys::grammar
