#include "llaisys/kv/paged_kv_store.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <unordered_set>

#include "llaisys/core/log.hpp"

namespace llaisys {

int32_t kv_blocks_for_budget(uint64_t budget_bytes, uint64_t kv_bytes_per_token, int32_t block_size) {
  if (block_size <= 0) return 0;
  const uint64_t per_block = std::max<uint64_t>(kv_bytes_per_token, 1) * static_cast<uint64_t>(block_size);
  const uint64_t blocks = budget_bytes / per_block;
  return static_cast<int32_t>(std::min<uint64_t>(blocks, 1u << 30));
}

Result<std::unique_ptr<PagedKVStore>> PagedKVStore::create(const KVStoreConfig& config) {
  if (config.num_blocks <= 0 || config.block_size <= 0) {
    return make_error(ErrorCode::invalid_argument,
                      "the KV store needs at least one block of at least one token (got {} x {})",
                      config.num_blocks, config.block_size);
  }
  if (config.sliding_window < 0) {
    return make_error(ErrorCode::invalid_argument, "the sliding window must be >= 0, got {}",
                      config.sliding_window);
  }
  return std::make_unique<PagedKVStore>(config);
}

PagedKVStore::PagedKVStore(const KVStoreConfig& config)
    : config_(config), pool_(std::make_unique<BlockPool>(config.num_blocks)) {
  if (config.enable_prefix_cache) cache_ = std::make_unique<RadixCache>(config.block_size, *pool_);
}

int32_t PagedKVStore::num_available_blocks() const {
  return pool_->num_free() + (cache_ ? cache_->num_evictable_blocks() : 0);
}

int32_t PagedKVStore::blocks_for(int32_t num_tokens) const {
  return (std::max(num_tokens, 0) + config_.block_size - 1) / config_.block_size;
}

int32_t PagedKVStore::max_cached_blocks() const {
  return config_.sliding_window > 0 ? blocks_for(config_.sliding_window) : std::numeric_limits<int32_t>::max();
}

PagedKVStore::SeqBlocks* PagedKVStore::find(SeqId seq) {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? nullptr : &it->second;
}

const PagedKVStore::SeqBlocks* PagedKVStore::find(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? nullptr : &it->second;
}

int32_t PagedKVStore::match_prefix(SeqId seq, std::span<const TokenId> tokens,
                                   std::string_view cache_namespace) {
  if (seqs_.contains(seq)) {
    assert(false && "match_prefix for a sequence that exists");
    log::error("kv: match_prefix for existing sequence {}", seq);
    return num_cached_tokens(seq);
  }
  SeqBlocks& s = seqs_[seq];
  if (step_) step_->registered.push_back(seq);
  if (!cache_) return 0;
  const int32_t max_blocks = std::min(
      std::max<int32_t>(static_cast<int32_t>(tokens.size()) - 1, 0) / block_size(), max_cached_blocks());
  RadixCache::Match match = cache_->match(cache_namespace, tokens, max_blocks);
  cache_->lock(match.node);
  for (BlockId block : match.blocks) pool_->add_ref(block);
  s.node = match.node;
  s.blocks = std::move(match.blocks);
  s.num_cached_blocks = static_cast<int32_t>(s.blocks.size());
  s.num_tokens = s.num_cached_blocks * block_size();
  return s.num_tokens;
}

int32_t PagedKVStore::peek_prefix(std::span<const TokenId> tokens, std::string_view cache_namespace) const {
  if (!cache_) return 0;
  const int32_t max_blocks = std::min(
      std::max<int32_t>(static_cast<int32_t>(tokens.size()) - 1, 0) / block_size(), max_cached_blocks());
  return cache_->peek(cache_namespace, tokens, max_blocks) * block_size();
}

int32_t PagedKVStore::blocks_needed(SeqId seq, int32_t num_tokens) const {
  const SeqBlocks* s = find(seq);
  if (s == nullptr || num_tokens <= 0) return 0;
  const int32_t grow = blocks_for(s->num_tokens + num_tokens) - static_cast<int32_t>(s->blocks.size());
  const bool copy_on_write = s->num_tokens % block_size() != 0 &&
                             shared(s->blocks[static_cast<std::size_t>(s->num_tokens / block_size())]);
  return std::max(grow, 0) + (copy_on_write ? 1 : 0);
}

bool PagedKVStore::can_append(SeqId seq, int32_t num_tokens) const {
  return contains(seq) && blocks_needed(seq, num_tokens) <= num_available_blocks();
}

bool PagedKVStore::take_blocks(int32_t n, std::vector<BlockId>& out) {
  if (n > num_available_blocks()) return false;
  if (n > pool_->num_free() && cache_) {
    num_evicted_blocks_ += cache_->evict(n - pool_->num_free());
  }
  return pool_->allocate(n, out);
}

Status PagedKVStore::append(SeqId seq, int32_t num_tokens, std::vector<BlockCopy>& copies) {
  SeqBlocks* s = find(seq);
  if (s == nullptr) return make_error(ErrorCode::internal, "kv: append to unknown sequence {}", seq);
  if (num_tokens < 0) return make_error(ErrorCode::internal, "kv: append of {} tokens", num_tokens);
  if (num_tokens == 0) return Status();
  const int32_t needed = blocks_needed(seq, num_tokens);
  std::vector<BlockId> fresh;
  if (!take_blocks(needed, fresh)) {
    return make_error(ErrorCode::out_of_memory, "kv: {} more blocks needed, {} available", needed,
                      num_available_blocks());
  }
  if (step_ && std::ranges::find(step_->appended, seq, &AppendMark::seq) == step_->appended.end()) {
    step_->appended.push_back({.seq = seq, .num_tokens_before = s->num_tokens});
  }
  auto next = fresh.begin();
  if (s->num_tokens % block_size() != 0) {
    const auto index = static_cast<std::size_t>(s->num_tokens / block_size());
    BlockId& last = s->blocks[index];
    if (shared(last)) {  // shared with a sibling: copy before writing
      copies.push_back({.src = last, .dst = *next});
      if (step_) {
        step_->copies.push_back({.seq = seq, .index = index, .original = last});  // keeps the reference
      } else {
        pool_->release(last);
      }
      last = *next++;
    }
  }
  s->blocks.insert(s->blocks.end(), next, fresh.end());
  s->num_tokens += num_tokens;
  return Status();
}

bool PagedKVStore::shared(BlockId block) const {
  int32_t refs = pool_->ref_count(block);
  if (step_) {
    for (const PendingCopy& p : step_->copies) refs -= p.original == block ? 1 : 0;
  }
  return refs > 1;
}

PagedKVStore::Step PagedKVStore::begin_step() {
  if (step_) {
    assert(false && "a KV step is already open");
    log::error("kv: begin_step while a step is open; the new step belongs to the open one");
    return Step(nullptr);
  }
  step_.emplace();
  return Step(this);
}

PagedKVStore::Step::~Step() {
  if (kv_ != nullptr) kv_->roll_back_step();
}

PagedKVStore::Step& PagedKVStore::Step::operator=(Step&& other) noexcept {
  if (this != &other) {
    if (kv_ != nullptr) kv_->roll_back_step();
    kv_ = std::exchange(other.kv_, nullptr);
  }
  return *this;
}

void PagedKVStore::Step::commit() {
  if (kv_ != nullptr) std::exchange(kv_, nullptr)->commit_step();
}

void PagedKVStore::commit_step() {
  for (const PendingCopy& p : step_->copies) pool_->release(p.original);
  step_.reset();
}

void PagedKVStore::roll_back_step() {
  StepLog undo = std::move(*step_);
  step_.reset();  // what follows are plain operations, recorded by no step
  // Copies first: each sits inside the table as it was at the start (or as a registered sequence
  // left it), so the entries exist until the truncation below.
  for (auto p = undo.copies.rbegin(); p != undo.copies.rend(); ++p) {
    SeqBlocks* s = find(p->seq);
    if (s != nullptr && p->index < s->blocks.size()) {
      pool_->release(s->blocks[p->index]);
      s->blocks[p->index] = p->original;
    } else {
      pool_->release(p->original);  // cannot happen: settle() resolves a sequence's copies first
    }
  }
  for (const AppendMark& mark : undo.appended) {
    SeqBlocks* s = find(mark.seq);
    if (s == nullptr) continue;
    const auto keep_blocks = static_cast<std::size_t>(blocks_for(mark.num_tokens_before));
    for (std::size_t b = keep_blocks; b < s->blocks.size(); ++b) pool_->release(s->blocks[b]);
    s->blocks.resize(keep_blocks);
    s->num_tokens = mark.num_tokens_before;
  }
  for (auto seq = undo.registered.rbegin(); seq != undo.registered.rend(); ++seq) free(*seq);
}

void PagedKVStore::settle(SeqId seq) {
  if (!step_) return;
  std::erase_if(step_->copies, [&](const PendingCopy& p) {
    if (p.seq != seq) return false;
    pool_->release(p.original);
    return true;
  });
  std::erase_if(step_->appended, [&](const AppendMark& mark) { return mark.seq == seq; });
  std::erase(step_->registered, seq);
}

void PagedKVStore::refuse_in_step(const char* operation, SeqId seq) {
  if (!step_) return;
  assert(false && "truncate, commit or release_outside_window inside a KV step");
  log::error("kv: {} of sequence {} inside a step; the step will not roll that sequence back", operation, seq);
  settle(seq);
}

Status PagedKVStore::fork(SeqId parent, SeqId child) {
  const SeqBlocks* p = find(parent);
  if (p == nullptr) return make_error(ErrorCode::internal, "kv: fork of unknown sequence {}", parent);
  if (contains(child)) return make_error(ErrorCode::internal, "kv: fork into existing sequence {}", child);
  SeqBlocks copy = *p;
  for (BlockId block : copy.blocks) {
    if (block != kNoBlock) pool_->add_ref(block);
  }
  if (cache_) cache_->lock(copy.node);
  seqs_.emplace(child, std::move(copy));
  if (step_) step_->registered.push_back(child);
  return Status();
}

void PagedKVStore::commit(SeqId seq, std::span<const TokenId> computed_tokens) {
  refuse_in_step("commit", seq);
  if (SeqBlocks* s = find(seq)) commit_computed(*s, computed_tokens);
}

void PagedKVStore::commit_computed(SeqBlocks& s, std::span<const TokenId> computed_tokens) {
  // A sequence with released blocks has holes: the tree holds whole paths only.
  if (!cache_ || s.num_released_blocks > 0) return;
  const auto computed = std::min<int32_t>(static_cast<int32_t>(computed_tokens.size()), s.num_tokens);
  const int32_t full_blocks = std::min(computed / block_size(), max_cached_blocks());
  if (full_blocks <= s.num_cached_blocks) return;
  RadixNode* node = cache_->insert(
      s.node, computed_tokens.first(static_cast<std::size_t>(full_blocks * block_size())),
      std::span<BlockId>(s.blocks).first(static_cast<std::size_t>(full_blocks)));
  cache_->lock(node);
  cache_->unlock(s.node);
  s.node = node;
  s.num_cached_blocks = RadixCache::depth(node);
}

int32_t PagedKVStore::truncate(SeqId seq, int32_t num_tokens) {
  refuse_in_step("truncate", seq);
  SeqBlocks* s = find(seq);
  if (s == nullptr) return 0;
  int32_t keep = std::clamp(num_tokens, 0, s->num_tokens);
  if (s->num_released_blocks > 0 &&
      keep < s->num_released_blocks * block_size() + config_.sliding_window - 1) {
    keep = 0;  // the next token's window would reach given-back blocks: only a restart is sound
  }
  if (cache_ && keep < s->num_cached_blocks * block_size()) {
    // The cut falls inside the shared prefix: keep only the whole cached blocks before it.
    const int32_t keep_blocks = keep / block_size();
    RadixNode* node = cache_->ancestor_at(s->node, keep_blocks);
    cache_->lock(node);
    cache_->unlock(s->node);
    s->node = node;
    s->num_cached_blocks = keep_blocks;
    keep = keep_blocks * block_size();
  }
  const auto keep_blocks = static_cast<std::size_t>(blocks_for(keep));
  for (std::size_t b = keep_blocks; b < s->blocks.size(); ++b) {
    if (s->blocks[b] != kNoBlock) pool_->release(s->blocks[b]);
  }
  s->blocks.resize(keep_blocks);
  s->num_released_blocks = std::min(s->num_released_blocks, static_cast<int32_t>(keep_blocks));
  s->num_tokens = keep;
  return keep;
}

void PagedKVStore::release(SeqId seq, std::span<const TokenId> computed_tokens) {
  settle(seq);  // released sequences stay released: a rollback does not bring them back
  if (SeqBlocks* s = find(seq)) commit_computed(*s, computed_tokens);
  free(seq);
}

void PagedKVStore::free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  settle(seq);
  if (cache_) cache_->unlock(it->second.node);
  for (BlockId block : it->second.blocks) {
    if (block != kNoBlock) pool_->release(block);
  }
  seqs_.erase(it);
}

int32_t PagedKVStore::release_outside_window(SeqId seq, int32_t num_computed_tokens) {
  SeqBlocks* s = find(seq);
  if (s != nullptr && config_.sliding_window > 0) refuse_in_step("release_outside_window", seq);
  if (s == nullptr || config_.sliding_window <= 0) return 0;
  const int32_t computed = std::clamp(num_computed_tokens, 0, s->num_tokens);
  // Blocks ending before computed - W + 1, the first key the next token reads.
  const int32_t outside = std::min(std::max(computed - config_.sliding_window + 1, 0) / block_size(),
                                   static_cast<int32_t>(s->blocks.size()));
  if (outside <= s->num_released_blocks || outside < s->num_cached_blocks) return 0;
  if (s->num_cached_blocks > 0) {  // the whole cached prefix is outside: let go of it
    cache_->unlock(s->node);
    s->node = cache_->ancestor_at(s->node, 0);  // the namespace root: locks nothing
    s->num_cached_blocks = 0;
  }
  int32_t released = 0;
  for (auto b = static_cast<std::size_t>(s->num_released_blocks); b < static_cast<std::size_t>(outside); ++b) {
    pool_->release(s->blocks[b]);
    s->blocks[b] = kNoBlock;
    ++released;
  }
  s->num_released_blocks = outside;
  num_window_released_blocks_ += released;
  return released;
}

std::span<const BlockId> PagedKVStore::block_table(SeqId seq) const {
  const SeqBlocks* s = find(seq);
  return s == nullptr ? std::span<const BlockId>() : std::span<const BlockId>(s->blocks);
}

int32_t PagedKVStore::num_tokens(SeqId seq) const {
  const SeqBlocks* s = find(seq);
  return s == nullptr ? 0 : s->num_tokens;
}

int32_t PagedKVStore::num_cached_tokens(SeqId seq) const {
  const SeqBlocks* s = find(seq);
  return s == nullptr ? 0 : s->num_cached_blocks * block_size();
}

int32_t PagedKVStore::num_released_blocks(SeqId seq) const {
  const SeqBlocks* s = find(seq);
  return s == nullptr ? 0 : s->num_released_blocks;
}

KVStats PagedKVStore::stats() const {
  return {.block_size = block_size(),
          .num_blocks = num_blocks(),
          .num_free_blocks = num_free_blocks(),
          .num_cached_blocks = cache_ ? cache_->num_cached_blocks() : 0,
          .num_evictable_blocks = cache_ ? cache_->num_evictable_blocks() : 0,
          .num_sequences = static_cast<int32_t>(seqs_.size()),
          .num_evicted_blocks = num_evicted_blocks_,
          .num_window_released_blocks = num_window_released_blocks_};
}

Status PagedKVStore::validate() const {
  LLAISYS_RETURN_IF_ERROR(pool_->validate());
  std::vector<int32_t> expected_refs(static_cast<std::size_t>(num_blocks()), 0);
  std::unordered_map<const RadixNode*, int32_t> holders;
  for (const auto& [seq, s] : seqs_) {
    if (static_cast<int32_t>(s.blocks.size()) != blocks_for(s.num_tokens)) {
      return make_error(ErrorCode::internal, "kv: sequence {} has {} blocks for {} tokens", seq,
                        s.blocks.size(), s.num_tokens);
    }
    const int32_t released = s.num_released_blocks;
    if (released < 0 || released > static_cast<int32_t>(s.blocks.size())) {
      return make_error(ErrorCode::internal, "kv: sequence {} has {} released blocks of {}", seq, released,
                        s.blocks.size());
    }
    if (released > 0) {
      if (config_.sliding_window <= 0) {
        return make_error(ErrorCode::internal, "kv: sequence {} gave back blocks without a sliding window", seq);
      }
      // Given back only when wholly before the window of the next position to compute (<= num_tokens).
      if (int64_t{released} * block_size() + config_.sliding_window - 1 > s.num_tokens) {
        return make_error(ErrorCode::internal, "kv: sequence {} gave back {} blocks, inside the window of its {} tokens",
                          seq, released, s.num_tokens);
      }
      if (s.num_cached_blocks != 0) {
        return make_error(ErrorCode::internal, "kv: sequence {} gave back blocks but still holds a cached prefix", seq);
      }
    }
    if (s.num_cached_blocks > max_cached_blocks()) {
      return make_error(ErrorCode::internal, "kv: sequence {}'s cached prefix of {} blocks passes the window's {}", seq,
                        s.num_cached_blocks, max_cached_blocks());
    }
    std::unordered_set<BlockId> own;
    for (std::size_t b = 0; b < s.blocks.size(); ++b) {
      const BlockId block = s.blocks[b];
      if (static_cast<int32_t>(b) < released) {
        if (block != kNoBlock) {
          return make_error(ErrorCode::internal, "kv: sequence {}'s given-back entry {} holds block {}", seq, b, block);
        }
        continue;
      }
      if (!pool_->valid(block)) return make_error(ErrorCode::internal, "kv: sequence {} holds bad block {}", seq, block);
      if (!own.insert(block).second) {
        return make_error(ErrorCode::internal, "kv: sequence {} holds block {} twice", seq, block);
      }
      ++expected_refs[static_cast<std::size_t>(block)];
    }
    if (!cache_) {
      if (s.num_cached_blocks != 0 || s.node != nullptr) {
        return make_error(ErrorCode::internal, "kv: sequence {} has a cached prefix without a cache", seq);
      }
      continue;
    }
    const std::vector<BlockId> path = RadixCache::path_blocks(s.node);
    if (static_cast<int32_t>(path.size()) != s.num_cached_blocks || s.num_cached_blocks > s.num_tokens / block_size() ||
        !std::equal(path.begin(), path.end(), s.blocks.begin())) {
      return make_error(ErrorCode::internal, "kv: sequence {}'s cached prefix differs from its radix path", seq);
    }
    ++holders[s.node];
  }
  if (step_) LLAISYS_RETURN_IF_ERROR(validate_step(expected_refs));
  if (cache_) {
    for (BlockId block : cache_->cached_blocks()) ++expected_refs[static_cast<std::size_t>(block)];
    LLAISYS_RETURN_IF_ERROR(cache_->validate(holders));
    if (cache_->max_depth() > max_cached_blocks()) {
      return make_error(ErrorCode::internal, "kv: the prefix cache holds a path of {} blocks, the window allows {}",
                        cache_->max_depth(), max_cached_blocks());
    }
  }
  for (BlockId b = 0; b < num_blocks(); ++b) {
    if (pool_->ref_count(b) != expected_refs[static_cast<std::size_t>(b)]) {
      return make_error(ErrorCode::internal, "kv: block {} has {} references, its holders count {}", b,
                        pool_->ref_count(b), expected_refs[static_cast<std::size_t>(b)]);
    }
  }
  return Status();
}

Status PagedKVStore::validate_step(std::vector<int32_t>& expected_refs) const {
  for (const PendingCopy& p : step_->copies) {
    const SeqBlocks* s = find(p.seq);
    if (s == nullptr || p.index >= s->blocks.size() || !pool_->valid(p.original)) {
      return make_error(ErrorCode::internal, "kv: the step's copy-on-write of sequence {} entry {} is dangling",
                        p.seq, p.index);
    }
    ++expected_refs[static_cast<std::size_t>(p.original)];
  }
  for (const AppendMark& mark : step_->appended) {
    if (num_tokens(mark.seq) < mark.num_tokens_before) {
      return make_error(ErrorCode::internal, "kv: sequence {} holds {} slots, fewer than its {} when the step began",
                        mark.seq, num_tokens(mark.seq), mark.num_tokens_before);
    }
  }
  for (SeqId seq : step_->registered) {
    if (!contains(seq)) return make_error(ErrorCode::internal, "kv: sequence {} registered in the step is gone", seq);
  }
  return Status();
}

}  // namespace llaisys
