#include "llaisys/kv/block_pool.hpp"

#include <cassert>

#include "llaisys/core/log.hpp"

namespace llaisys {

BlockPool::BlockPool(int32_t num_blocks)
    : ref_counts_(static_cast<std::size_t>(num_blocks > 0 ? num_blocks : 0), 0) {
  free_list_.reserve(ref_counts_.size());
  // Highest id at the bottom of the stack, so block 0 is handed out first.
  for (int32_t b = this->num_blocks() - 1; b >= 0; --b) free_list_.push_back(b);
}

bool BlockPool::allocate(int32_t n, std::vector<BlockId>& out) {
  if (n < 0 || n > num_free()) return false;
  for (int32_t i = 0; i < n; ++i) {
    const BlockId block = free_list_.back();
    free_list_.pop_back();
    ref_counts_[static_cast<std::size_t>(block)] = 1;
    out.push_back(block);
  }
  return true;
}

void BlockPool::add_ref(BlockId block) {
  if (!valid(block) || ref_counts_[static_cast<std::size_t>(block)] <= 0) {
    assert(false && "add_ref on a free or unknown block");
    log::error("kv: add_ref on free or unknown block {}", block);
    return;
  }
  ++ref_counts_[static_cast<std::size_t>(block)];
}

bool BlockPool::release(BlockId block) {
  if (!valid(block) || ref_counts_[static_cast<std::size_t>(block)] <= 0) {
    assert(false && "release of a free or unknown block");
    log::error("kv: release of free or unknown block {}", block);
    return false;
  }
  if (--ref_counts_[static_cast<std::size_t>(block)] > 0) return false;
  free_list_.push_back(block);
  return true;
}

int32_t BlockPool::ref_count(BlockId block) const {
  return valid(block) ? ref_counts_[static_cast<std::size_t>(block)] : 0;
}

Status BlockPool::validate() const {
  std::vector<bool> in_free_list(ref_counts_.size(), false);
  for (BlockId block : free_list_) {
    if (!valid(block)) return make_error(ErrorCode::internal, "pool: free list holds bad id {}", block);
    if (in_free_list[static_cast<std::size_t>(block)]) {
      return make_error(ErrorCode::internal, "pool: block {} is in the free list twice", block);
    }
    in_free_list[static_cast<std::size_t>(block)] = true;
  }
  for (std::size_t b = 0; b < ref_counts_.size(); ++b) {
    if (ref_counts_[b] < 0) return make_error(ErrorCode::internal, "pool: block {} has a negative count", b);
    if ((ref_counts_[b] == 0) != in_free_list[b]) {
      return make_error(ErrorCode::internal, "pool: block {} has count {} but is {}in the free list", b,
                        ref_counts_[b], in_free_list[b] ? "" : "not ");
    }
  }
  return Status();
}

}  // namespace llaisys
