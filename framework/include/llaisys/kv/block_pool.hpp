#pragma once
// BlockPool: reference counts and the free list of the paged KV pool's blocks (ids only).
//
// Contract:
//  - Blocks are 0..num_blocks()-1. A block is free exactly when its reference count is 0; free
//    blocks sit in the free list, and allocate() hands them out with a count of 1.
//  - Holders are sequences (one reference per block-table entry) and the prefix cache (one reference
//    per cached block). add_ref / release adjust the count; release of the last reference returns
//    the block to the free list.
//  - allocate(n, out) is all or nothing. Allocation order is deterministic (lowest recently freed
//    id first), so runs are reproducible.
//  - Misuse (releasing a free block, referencing an unknown id) is a programming error: asserted in
//    debug builds, ignored with an error log otherwise (the pool never corrupts itself).

#include <cstdint>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_list_.size()); }

  // Appends n fresh blocks (count 1) to `out`; false (and nothing taken) when fewer are free.
  bool allocate(int32_t n, std::vector<BlockId>& out);
  void add_ref(BlockId block);
  // Drops one reference; true when that was the last one (the block is free again).
  bool release(BlockId block);
  int32_t ref_count(BlockId block) const;
  bool valid(BlockId block) const { return block >= 0 && block < num_blocks(); }
  // The free list holds exactly the blocks with count 0, each once.
  Status validate() const;

 private:
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::vector<BlockId> free_list_;   // a stack: back() is handed out next
};

}  // namespace llaisys
