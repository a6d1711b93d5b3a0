#include "llaisys/kv/radix_cache.hpp"

#include <algorithm>
#include <set>

namespace llaisys {

namespace {

// Orders children by the token ids of their first block; lookups take a span (no copy).
struct BlockKeyLess {
  using is_transparent = void;
  bool operator()(std::span<const TokenId> a, std::span<const TokenId> b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

}  // namespace

struct RadixNode {
  RadixNode* parent = nullptr;               // nullptr for a namespace root
  std::vector<TokenId> tokens;               // [blocks.size() * block_size]
  std::vector<BlockId> blocks;               // the cached blocks, in position order
  std::map<std::vector<TokenId>, std::unique_ptr<RadixNode>, BlockKeyLess> children;
  int32_t lock_count = 0;                    // sequences whose cached prefix runs through here
  int32_t end_block = 0;                     // blocks from the root to the end of this node
  uint64_t last_use = 0;
  bool listed = false;                       // in the cache's evictable set

  bool is_root() const { return parent == nullptr; }
  std::span<const TokenId> block_tokens(int32_t block, int32_t block_size) const {
    return std::span<const TokenId>(tokens).subspan(static_cast<std::size_t>(block * block_size),
                                                    static_cast<std::size_t>(block_size));
  }
};

namespace {

std::span<const TokenId> block_of(std::span<const TokenId> tokens, int32_t block, int32_t block_size) {
  return tokens.subspan(static_cast<std::size_t>(block * block_size), static_cast<std::size_t>(block_size));
}

bool same_tokens(std::span<const TokenId> a, std::span<const TokenId> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// How many leading blocks of `child` equal tokens' blocks from `first_block` on (at most
// `limit_blocks` blocks in total). The child is found by its first block, so this is >= 1.
int32_t count_matching_blocks(const RadixNode& child, std::span<const TokenId> tokens,
                              int32_t first_block, int32_t limit_blocks, int32_t block_size) {
  int32_t matched = 1;
  const auto child_blocks = static_cast<int32_t>(child.blocks.size());
  while (matched < child_blocks && first_block + matched < limit_blocks &&
         same_tokens(child.block_tokens(matched, block_size),
                     block_of(tokens, first_block + matched, block_size))) {
    ++matched;
  }
  return matched;
}

}  // namespace

RadixCache::RadixCache(int32_t block_size, BlockPool& pool) : block_size_(block_size), pool_(pool) {}

RadixCache::~RadixCache() = default;

RadixNode* RadixCache::root(std::string_view cache_namespace) {
  auto it = roots_.find(cache_namespace);
  if (it == roots_.end()) {
    it = roots_.emplace(std::string(cache_namespace), std::make_unique<RadixNode>()).first;
  }
  return it->second.get();
}

int32_t RadixCache::depth(const RadixNode* node) { return node == nullptr ? 0 : node->end_block; }

RadixCache::Match RadixCache::match(std::string_view cache_namespace, std::span<const TokenId> tokens,
                                    int32_t max_blocks) {
  Match result;
  RadixNode* node = root(cache_namespace);
  const uint64_t now = tick();
  const int32_t limit = std::min(max_blocks, static_cast<int32_t>(tokens.size()) / block_size_);
  int32_t matched = 0;
  while (matched < limit) {
    auto it = node->children.find(block_of(tokens, matched, block_size_));
    if (it == node->children.end()) break;
    RadixNode* child = it->second.get();
    const int32_t n = count_matching_blocks(*child, tokens, matched, limit, block_size_);
    const bool partial = n < static_cast<int32_t>(child->blocks.size());
    if (partial) child = split(child, n);
    result.blocks.insert(result.blocks.end(), child->blocks.begin(), child->blocks.end());
    unlist(child);
    child->last_use = now;
    relist(child);
    node = child;
    matched += n;
    if (partial) break;
  }
  result.node = node;
  return result;
}

int32_t RadixCache::peek(std::string_view cache_namespace, std::span<const TokenId> tokens,
                         int32_t max_blocks) const {
  auto root_it = roots_.find(cache_namespace);
  if (root_it == roots_.end()) return 0;
  const RadixNode* node = root_it->second.get();
  const int32_t limit = std::min(max_blocks, static_cast<int32_t>(tokens.size()) / block_size_);
  int32_t matched = 0;
  while (matched < limit) {
    auto it = node->children.find(block_of(tokens, matched, block_size_));
    if (it == node->children.end()) break;
    const int32_t n = count_matching_blocks(*it->second, tokens, matched, limit, block_size_);
    matched += n;
    if (n < static_cast<int32_t>(it->second->blocks.size())) break;
    node = it->second.get();
  }
  return matched;
}

void RadixCache::lock(RadixNode* node) {
  for (RadixNode* x = node; x != nullptr && !x->is_root(); x = x->parent) {
    if (x->lock_count++ == 0) {
      num_evictable_blocks_ -= static_cast<int32_t>(x->blocks.size());
      unlist(x);
    }
  }
}

void RadixCache::unlock(RadixNode* node) {
  for (RadixNode* x = node; x != nullptr && !x->is_root(); x = x->parent) {
    if (--x->lock_count == 0) {
      num_evictable_blocks_ += static_cast<int32_t>(x->blocks.size());
      relist(x);
    }
  }
}

bool RadixCache::EvictionOrder::operator()(const EvictionKey& a, const EvictionKey& b) const {
  return a.last_use != b.last_use ? a.last_use < b.last_use : a.first_block < b.first_block;
}

void RadixCache::unlist(RadixNode* node) {
  if (!node->listed) return;
  evictable_leaves_.erase({node->last_use, node->blocks.front(), node});
  node->listed = false;
}

void RadixCache::relist(RadixNode* node) {
  const bool evictable = !node->is_root() && node->children.empty() && node->lock_count == 0;
  if (evictable && !node->listed) {
    evictable_leaves_.insert({node->last_use, node->blocks.front(), node});
    node->listed = true;
  } else if (!evictable) {
    unlist(node);
  }
}

RadixNode* RadixCache::split(RadixNode* node, int32_t num_head_blocks) {
  unlist(node);  // its first block changes
  RadixNode* parent = node->parent;
  auto it = parent->children.find(node->block_tokens(0, block_size_));
  auto head = std::make_unique<RadixNode>();
  const auto head_tokens = static_cast<std::ptrdiff_t>(num_head_blocks * block_size_);
  head->parent = parent;
  head->tokens.assign(node->tokens.begin(), node->tokens.begin() + head_tokens);
  head->blocks.assign(node->blocks.begin(), node->blocks.begin() + num_head_blocks);
  head->lock_count = node->lock_count;
  head->end_block = node->end_block - static_cast<int32_t>(node->blocks.size()) + num_head_blocks;
  head->last_use = node->last_use;
  node->tokens.erase(node->tokens.begin(), node->tokens.begin() + head_tokens);
  node->blocks.erase(node->blocks.begin(), node->blocks.begin() + num_head_blocks);

  std::unique_ptr<RadixNode> tail = std::move(it->second);
  RadixNode* head_ptr = head.get();
  it->second = std::move(head);  // same key: the head starts with the same block
  tail->parent = head_ptr;
  std::vector<TokenId> tail_key(tail->tokens.begin(), tail->tokens.begin() + block_size_);
  head_ptr->children.emplace(std::move(tail_key), std::move(tail));
  relist(node);
  return head_ptr;
}

RadixNode* RadixCache::insert(RadixNode* from, std::span<const TokenId> tokens,
                              std::span<BlockId> blocks) {
  const int32_t total = std::min(static_cast<int32_t>(tokens.size()) / block_size_,
                                 static_cast<int32_t>(blocks.size()));
  const uint64_t now = tick();
  RadixNode* node = from;
  int32_t pos = depth(from);
  while (pos < total) {
    auto it = node->children.find(block_of(tokens, pos, block_size_));
    if (it == node->children.end()) {
      int32_t end = pos;  // cache only blocks this sequence alone holds
      while (end < total && pool_.ref_count(blocks[static_cast<std::size_t>(end)]) == 1) ++end;
      if (end == pos) break;
      auto child = std::make_unique<RadixNode>();
      child->parent = node;
      child->tokens.assign(tokens.begin() + pos * block_size_, tokens.begin() + end * block_size_);
      child->blocks.assign(blocks.begin() + pos, blocks.begin() + end);
      child->end_block = end;
      child->last_use = now;
      for (BlockId block : child->blocks) pool_.add_ref(block);
      const auto n = static_cast<int32_t>(child->blocks.size());
      num_cached_blocks_ += n;
      num_evictable_blocks_ += n;  // unlocked until the caller locks it
      RadixNode* child_ptr = child.get();
      std::vector<TokenId> key(child->tokens.begin(), child->tokens.begin() + block_size_);
      node->children.emplace(std::move(key), std::move(child));
      relist(node);  // no longer a leaf
      relist(child_ptr);
      node = child_ptr;
      pos = end;
      if (end < total) break;
      continue;
    }
    RadixNode* child = it->second.get();
    const int32_t n = count_matching_blocks(*child, tokens, pos, total, block_size_);
    if (n < static_cast<int32_t>(child->blocks.size())) child = split(child, n);
    for (int32_t k = 0; k < n; ++k) {
      BlockId& mine = blocks[static_cast<std::size_t>(pos + k)];
      const BlockId cached = child->blocks[static_cast<std::size_t>(k)];
      if (mine == cached) continue;
      pool_.add_ref(cached);
      pool_.release(mine);
      mine = cached;
    }
    unlist(child);
    child->last_use = now;
    relist(child);
    node = child;
    pos += n;
  }
  return node;
}

RadixNode* RadixCache::ancestor_at(RadixNode* node, int32_t num_blocks) {
  RadixNode* x = node;
  while (!x->is_root() && depth(x->parent) >= num_blocks) x = x->parent;
  if (x->is_root() || depth(x) == num_blocks) return x;
  return split(x, num_blocks - depth(x->parent));
}

void RadixCache::remove_leaf(RadixNode* node) {
  unlist(node);
  const auto n = static_cast<int32_t>(node->blocks.size());
  for (BlockId block : node->blocks) pool_.release(block);
  num_cached_blocks_ -= n;
  num_evictable_blocks_ -= n;
  RadixNode* parent = node->parent;
  parent->children.erase(parent->children.find(node->block_tokens(0, block_size_)));
  relist(parent);  // may be a leaf now
}

int32_t RadixCache::evict(int32_t num_blocks) {
  int32_t freed = 0;
  while (freed < num_blocks && !evictable_leaves_.empty()) {
    RadixNode* victim = evictable_leaves_.begin()->node;
    freed += static_cast<int32_t>(victim->blocks.size());
    remove_leaf(victim);  // lists its parent if that became an unlocked leaf
  }
  return freed;
}

int32_t RadixCache::num_nodes() const {
  int32_t count = 0;
  std::vector<const RadixNode*> stack;
  for (const auto& [name, root_node] : roots_) stack.push_back(root_node.get());
  while (!stack.empty()) {
    const RadixNode* x = stack.back();
    stack.pop_back();
    ++count;
    for (const auto& [key, child] : x->children) stack.push_back(child.get());
  }
  return count;
}

int32_t RadixCache::max_depth() const {
  int32_t deepest = 0;
  std::vector<const RadixNode*> stack;
  for (const auto& [name, root_node] : roots_) stack.push_back(root_node.get());
  while (!stack.empty()) {
    const RadixNode* x = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, x->end_block);
    for (const auto& [key, child] : x->children) stack.push_back(child.get());
  }
  return deepest;
}

std::vector<BlockId> RadixCache::path_blocks(const RadixNode* node) {
  std::vector<BlockId> blocks;
  for (const RadixNode* x = node; x != nullptr && !x->is_root(); x = x->parent) {
    blocks.insert(blocks.begin(), x->blocks.begin(), x->blocks.end());
  }
  return blocks;
}

std::vector<BlockId> RadixCache::cached_blocks() const {
  std::vector<BlockId> blocks;
  std::vector<const RadixNode*> stack;
  for (const auto& [name, root_node] : roots_) stack.push_back(root_node.get());
  while (!stack.empty()) {
    const RadixNode* x = stack.back();
    stack.pop_back();
    blocks.insert(blocks.end(), x->blocks.begin(), x->blocks.end());
    for (const auto& [key, child] : x->children) stack.push_back(child.get());
  }
  return blocks;
}

Status RadixCache::validate(const std::unordered_map<const RadixNode*, int32_t>& holders) const {
  std::set<BlockId> seen;
  int32_t cached = 0;
  int32_t evictable = 0;
  // Post-order lock sums: returns the lock count the node should have.
  struct Frame {
    const RadixNode* node;
    bool expanded;
  };
  std::unordered_map<const RadixNode*, int32_t> expected_locks;
  std::size_t num_leaves = 0;
  for (const auto& [name, root_node] : roots_) {
    if (root_node->listed) return make_error(ErrorCode::internal, "radix: root of '{}' is listed as evictable", name);
    if (root_node->parent != nullptr || !root_node->blocks.empty() || !root_node->tokens.empty() ||
        root_node->end_block != 0) {
      return make_error(ErrorCode::internal, "radix: root of namespace '{}' is not empty", name);
    }
    std::vector<Frame> stack{{root_node.get(), false}};
    while (!stack.empty()) {
      Frame frame = stack.back();
      stack.pop_back();
      const RadixNode* x = frame.node;
      if (!frame.expanded) {
        stack.push_back({x, true});
        for (const auto& [key, child] : x->children) {
          if (child->parent != x) return Status(ErrorCode::internal, "radix: wrong parent pointer");
          if (child->blocks.empty()) return Status(ErrorCode::internal, "radix: node without blocks");
          if (child->tokens.size() != child->blocks.size() * static_cast<std::size_t>(block_size_)) {
            return make_error(ErrorCode::internal, "radix: node has {} tokens for {} blocks",
                              child->tokens.size(), child->blocks.size());
          }
          if (!same_tokens(key, child->block_tokens(0, block_size_))) {
            return Status(ErrorCode::internal, "radix: child key differs from its first block");
          }
          if (child->end_block != x->end_block + static_cast<int32_t>(child->blocks.size())) {
            return Status(ErrorCode::internal, "radix: node depth is inconsistent");
          }
          stack.push_back({child.get(), false});
        }
        continue;
      }
      int32_t expected = 0;
      if (auto h = holders.find(x); h != holders.end()) expected += h->second;
      for (const auto& [key, child] : x->children) expected += expected_locks[child.get()];
      expected_locks[x] = expected;
      if (x->is_root()) continue;
      if (x->lock_count != expected) {
        return make_error(ErrorCode::internal, "radix: node at depth {} has lock {} but {} holders",
                          x->end_block, x->lock_count, expected);
      }
      for (BlockId block : x->blocks) {
        if (!pool_.valid(block)) return make_error(ErrorCode::internal, "radix: bad block id {}", block);
        if (!seen.insert(block).second) {
          return make_error(ErrorCode::internal, "radix: block {} is cached twice", block);
        }
        if (pool_.ref_count(block) != 1 + x->lock_count) {
          return make_error(ErrorCode::internal, "radix: block {} has {} references, expected {}",
                            block, pool_.ref_count(block), 1 + x->lock_count);
        }
      }
      cached += static_cast<int32_t>(x->blocks.size());
      if (x->lock_count == 0) evictable += static_cast<int32_t>(x->blocks.size());
      const bool leaf = x->children.empty() && x->lock_count == 0;
      if (leaf != x->listed) {
        return make_error(ErrorCode::internal, "radix: node at depth {} is {}listed as an evictable leaf",
                          x->end_block, x->listed ? "" : "not ");
      }
      if (leaf) {
        ++num_leaves;
        // Found only under its current key: a key changed without re-listing is caught here.
        auto it = evictable_leaves_.find({x->last_use, x->blocks.front(), nullptr});
        if (it == evictable_leaves_.end() || it->node != x) {
          return make_error(ErrorCode::internal, "radix: evictable leaf at depth {} is listed under a stale key",
                            x->end_block);
        }
      }
    }
  }
  if (num_leaves != evictable_leaves_.size()) {
    return make_error(ErrorCode::internal, "radix: {} evictable leaves, the set holds {}", num_leaves,
                      evictable_leaves_.size());
  }
  if (cached != num_cached_blocks_ || evictable != num_evictable_blocks_) {
    return make_error(ErrorCode::internal,
                      "radix: counted {} cached / {} evictable blocks, bookkeeping says {} / {}", cached,
                      evictable, num_cached_blocks_, num_evictable_blocks_);
  }
  return Status();
}

}  // namespace llaisys
