#pragma once
// The KVStore concept: CPU bookkeeping of the paged KV cache (no device memory, no tensors).
//
// Contract:
//  - The pool holds num_blocks() blocks of block_size() token slots; the model owns the memory, the
//    store only decides which sequence uses which block. A sequence's block table covers its
//    num_tokens(seq) slots in position order: slot p lives in block_table(seq)[p / block_size()].
//  - match_prefix(seq, tokens, ns) registers the new sequence `seq` and attaches the longest run of
//    cached whole blocks (namespace `ns`) that prefixes `tokens`, but never all of `tokens` (the last
//    token must be computed to get its logits). The run is locked (not evictable) while seq holds it;
//    returns the tokens covered, a multiple of block_size(). peek_prefix() is the same question
//    without side effects (for admission decisions).
//  - can_append(seq, n) / append(seq, n, copies): whether, and then make, room for n more slots,
//    allocating free blocks or evicting unlocked cached ones. When the partially filled last block is
//    shared with another sequence (after fork()), append first gives seq a private copy and adds
//    {src, dst} to `copies`, which the caller must apply (Model::copy_blocks) before writing. append
//    is all or nothing: out_of_memory leaves every table and the cache as they were.
//  - fork(parent, child): child starts with parent's slots, sharing all its blocks (copy-on-write);
//    entries given back by the window stay kNoBlock in the child.
//  - commit(seq, tokens): tokens (a prefix of the sequence's tokens) now have their K/V computed; the
//    full blocks among them join the prefix cache (still locked by seq). Only computed blocks are
//    ever cached, so a failed forward pass never reaches the cache.
//  - truncate(seq, n): drops slots from n on; returns how many slots remain (less than n when n falls
//    inside a block shared with the cache: that whole block is dropped; 0, every block dropped, when
//    the window of position n would reach blocks already given back: the caller recomputes from 0).
//  - release(seq, tokens) = commit then free; free(seq) unregisters seq and drops its references.
//  - Sliding window W (every layer reads only positions p - W < j <= p): release_outside_window(seq,
//    computed) gives back the leading blocks wholly before the window of the next token (position
//    `computed`): their table entries become kNoBlock. The prefix cache holds whole paths from the
//    root and a sequence locks its cached prefix up to the root, so a windowed store caches at most
//    the first ceil(W / block_size) blocks of a sequence, lets go of the cached prefix (unlock + its
//    references) only once all of it is outside the window, and a sequence that gave back a block
//    never commits again. Without a window it does nothing.
//  - Steps (llama.cpp's memory context): `auto step = kv.begin_step();` opens one (one at a time);
//    step.commit() keeps every change made since, and destroying the step uncommitted rolls back.
//    Inside a step the store changes through match_prefix, append, fork, release and free only;
//    truncate, commit and release_outside_window belong between steps. A copy-on-write inside a step
//    keeps its reference to the original block until the step ends. A rollback restores the exact
//    prior state of every sequence that existed when the step began and still exists: its block
//    table (appended blocks returned, each copy-on-write entry back on its original block, the copy
//    released), num_tokens, its cached prefix and the radix locks it holds; sequences registered in
//    the step (match_prefix, fork) are freed. Pool reference counts and lock counts are therefore
//    what they were, except for two things a rollback deliberately leaves done: blocks evicted from
//    the prefix cache to make room stay evicted (the failed pass may have written over them), and
//    sequences released during the step (preempted: the caller has already requeued them) stay
//    released. Radix last-use times and node splits are not restored either; neither changes what is
//    cached or who holds it.
//  - Every operation is all or nothing; validate() checks all invariants (ref counts, locks, tree
//    shape, tables, an open step's records) and is what tests call after a run.

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

struct KVStats {
  int32_t block_size = 0;
  int32_t num_blocks = 0;
  int32_t num_free_blocks = 0;       // in the free list
  int32_t num_cached_blocks = 0;     // held by the prefix cache (locked or not)
  int32_t num_evictable_blocks = 0;  // cached and unlocked: reclaimable on demand
  int32_t num_sequences = 0;
  int64_t num_evicted_blocks = 0;
  int64_t num_window_released_blocks = 0;  // table entries given back by the sliding window

  // Blocks neither free nor reclaimable, i.e. pinned by running sequences.
  int32_t num_used_blocks() const { return num_blocks - num_free_blocks - num_evictable_blocks; }
  double usage() const {
    return num_blocks > 0 ? static_cast<double>(num_used_blocks()) / num_blocks : 0.0;
  }
};

template <class K>
concept KVStore = requires(K& kv, const K& const_kv, SeqId seq, std::span<const TokenId> tokens,
                           std::string_view cache_namespace, int32_t num_tokens,
                           std::vector<BlockCopy>& copies) {
  { const_kv.block_size() } -> std::convertible_to<int32_t>;
  { const_kv.num_blocks() } -> std::convertible_to<int32_t>;
  { const_kv.num_free_blocks() } -> std::convertible_to<int32_t>;
  { const_kv.num_available_blocks() } -> std::convertible_to<int32_t>;
  { const_kv.contains(seq) } -> std::same_as<bool>;
  { kv.match_prefix(seq, tokens, cache_namespace) } -> std::convertible_to<int32_t>;
  { const_kv.peek_prefix(tokens, cache_namespace) } -> std::convertible_to<int32_t>;
  { const_kv.can_append(seq, num_tokens) } -> std::same_as<bool>;
  { kv.append(seq, num_tokens, copies) } -> std::same_as<Status>;
  { kv.fork(seq, seq) } -> std::same_as<Status>;
  { kv.commit(seq, tokens) };
  { kv.truncate(seq, num_tokens) } -> std::convertible_to<int32_t>;
  { kv.release(seq, tokens) };
  { kv.release_outside_window(seq, num_tokens) } -> std::convertible_to<int32_t>;
  { kv.free(seq) };
  { kv.begin_step().commit() };
  { const_kv.block_table(seq) } -> std::convertible_to<std::span<const BlockId>>;
  { const_kv.num_tokens(seq) } -> std::convertible_to<int32_t>;
  { const_kv.stats() } -> std::same_as<KVStats>;
  { const_kv.validate() } -> std::same_as<Status>;
};

// How many blocks of `block_size` tokens fit in `budget_bytes` when one token's K and V (all layers)
// take `kv_bytes_per_token` bytes. 0 when not even one fits.
int32_t kv_blocks_for_budget(uint64_t budget_bytes, uint64_t kv_bytes_per_token, int32_t block_size);

}  // namespace llaisys
