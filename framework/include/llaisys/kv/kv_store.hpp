#pragma once
// The KVStore concept: CPU bookkeeping of the paged KV cache (no device memory, no tensors).
//
// Contract:
//  - The pool holds num_blocks() blocks of block_size() token slots; the model owns the memory, the
//    store only decides which sequence uses which block.
//  - match_prefix(seq, tokens) attaches the longest run of cached whole blocks that prefixes
//    `tokens` to the new sequence `seq`, locks them, and returns how many tokens they cover.
//  - can_append(seq, n) / append(seq, n): whether, and then make, room for n more tokens of seq
//    (allocating or evicting unlocked cached blocks). append leaves everything unchanged on failure.
//  - release(seq, tokens): the sequence is done; its full blocks are inserted into the prefix cache
//    keyed by `tokens` (unlocked, evictable), the rest return to the free list.
//  - block_table(seq) is the sequence's blocks in position order.
// Later: sharing a prefix between choices of one request, dropping ranges (engine issue).

#include <concepts>
#include <span>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

template <class K>
concept KVStore = requires(K& kv, const K& const_kv, SeqId seq, std::span<const TokenId> tokens,
                           int32_t num_tokens) {
  { const_kv.block_size() } -> std::convertible_to<int32_t>;
  { const_kv.num_blocks() } -> std::convertible_to<int32_t>;
  { const_kv.num_free_blocks() } -> std::convertible_to<int32_t>;
  { kv.match_prefix(seq, tokens) } -> std::convertible_to<int32_t>;
  { const_kv.can_append(seq, num_tokens) } -> std::same_as<bool>;
  { kv.append(seq, num_tokens) } -> std::same_as<Status>;
  { kv.release(seq, tokens) };
  { const_kv.block_table(seq) } -> std::convertible_to<std::span<const BlockId>>;
};

}  // namespace llaisys
