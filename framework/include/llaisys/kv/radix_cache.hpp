#pragma once
// RadixCache: the prefix cache, a radix tree over token ids at block granularity (SGLang's
// RadixCache, with whole KV blocks as the unit).
//
// Contract:
//  - One tree per namespace (a model, plus an adapter or salt): keys never match across namespaces.
//  - A node holds a run of full blocks and the block_size x blocks token ids they were computed from;
//    its children are keyed by the token ids of their first block. The root of a namespace holds
//    nothing and is never evicted.
//  - The tree holds one pool reference on each cached block. A node's lock count is the number of
//    sequences whose cached prefix runs through it (lock/unlock walk to the root), so
//    lock(node) >= lock(child), and for every cached block ref_count == 1 + lock(node).
//  - Only unlocked leaves are evicted, least recently used first (ties: lowest first block id);
//    evicting a node frees its blocks. The evictable leaves are kept in an ordered set, updated by
//    every change to a node's lock, children, blocks or last use, so evicting costs O(log n) per
//    node whatever the size of the tree.
//  - match() splits a node when the match ends inside it, so a match always ends on a node boundary.
//  - insert() never caches a block another sequence still shares privately (ref_count > 1): that
//    would break the count above; the block gets cached later, when it is no longer shared.
//  - Last-use times come from a logical clock, so eviction order is reproducible.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/kv/block_pool.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

struct RadixNode;

class RadixCache {
 public:
  RadixCache(int32_t block_size, BlockPool& pool);
  ~RadixCache();
  RadixCache(const RadixCache&) = delete;
  RadixCache& operator=(const RadixCache&) = delete;

  struct Match {
    RadixNode* node = nullptr;    // deepest matched node (the namespace root when nothing matched)
    std::vector<BlockId> blocks;  // the matched blocks, in position order
  };

  // The root of `cache_namespace`, created on first use.
  RadixNode* root(std::string_view cache_namespace);
  // Longest run of cached whole blocks prefixing `tokens`, at most `max_blocks` of them. Refreshes
  // the last-use time of the path. Does not lock.
  Match match(std::string_view cache_namespace, std::span<const TokenId> tokens, int32_t max_blocks);
  // Number of blocks match() would return; changes nothing.
  int32_t peek(std::string_view cache_namespace, std::span<const TokenId> tokens,
               int32_t max_blocks) const;

  void lock(RadixNode* node);
  void unlock(RadixNode* node);

  // `from` covers the first depth(from) blocks of a sequence whose token ids are `tokens` (a whole
  // number of blocks) and whose block table starts with `blocks`. Caches blocks depth(from) ..
  // tokens.size() / block_size - 1. Where the tree already holds a block for the same tokens, the
  // table entry is replaced by the cached block (the sequence's reference moves to it and its own
  // duplicate is released). Returns the deepest node now covering the sequence's cached prefix
  // (locks are the caller's business).
  RadixNode* insert(RadixNode* from, std::span<const TokenId> tokens, std::span<BlockId> blocks);

  // The ancestor of `node` (or node itself) covering exactly `num_blocks` blocks, splitting a node if
  // needed. num_blocks <= depth(node).
  RadixNode* ancestor_at(RadixNode* node, int32_t num_blocks);
  // Blocks from the namespace root to the end of `node`.
  static int32_t depth(const RadixNode* node);

  // Evicts unlocked leaves, least recently used first, until `num_blocks` blocks were freed or none
  // is left; returns how many were freed.
  int32_t evict(int32_t num_blocks);

  int32_t num_cached_blocks() const { return num_cached_blocks_; }
  int32_t num_evictable_blocks() const { return num_evictable_blocks_; }
  int32_t num_nodes() const;
  // Blocks on the longest path from a namespace root (0 for an empty cache).
  int32_t max_depth() const;
  // The blocks from the namespace root to the end of `node`, in position order.
  static std::vector<BlockId> path_blocks(const RadixNode* node);
  // Every cached block, in no particular order.
  std::vector<BlockId> cached_blocks() const;

  // Checks every invariant above (the evictable set against a recount included). `holders` maps
  // each node to the number of sequences whose cached prefix ends exactly there (the KV store knows
  // them); pass it to check lock counts and references.
  Status validate(const std::unordered_map<const RadixNode*, int32_t>& holders) const;

 private:
  // An evictable leaf's place in eviction order. (last use, first block id) is unique, since a block
  // is cached once, so it alone orders the set; `node` is carried along.
  struct EvictionKey {
    uint64_t last_use;
    BlockId first_block;
    RadixNode* node;
  };
  struct EvictionOrder {
    bool operator()(const EvictionKey& a, const EvictionKey& b) const;
  };

  RadixNode* split(RadixNode* node, int32_t num_head_blocks);
  void remove_leaf(RadixNode* node);
  uint64_t tick() { return ++clock_; }
  // Take `node` out of the evictable set before changing its key (last use, first block), and put it
  // back (if it is an unlocked, childless non-root) after any change to its key, lock or children.
  void unlist(RadixNode* node);
  void relist(RadixNode* node);

  int32_t block_size_;
  BlockPool& pool_;
  std::map<std::string, std::unique_ptr<RadixNode>, std::less<>> roots_;
  int32_t num_cached_blocks_ = 0;
  int32_t num_evictable_blocks_ = 0;
  std::set<EvictionKey, EvictionOrder> evictable_leaves_;
  uint64_t clock_ = 0;
};

}  // namespace llaisys
