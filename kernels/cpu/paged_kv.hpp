#pragma once
// The paged KV cache of one layer and the token -> slot mapping of a batch.
//
// Layout: K and V are each [num_blocks, num_kv_heads, block_size, head_dim] (f32 or bf16), so the keys of one
// head inside one block are contiguous (attention streams them). A token at position p of a
// sequence with block table B lives in slot p % block_size of block B[p / block_size].

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/dtype.hpp"

namespace llaisys::cpu {

struct PagedKvLayer {
  void* k = nullptr;  // elements of `dtype`
  void* v = nullptr;
  int64_t block_size = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  // f32, or bf16: rows rounded to nearest even when written, widened exactly when attention reads
  // them (half the memory and the bytes read; attention then computes as over f32 rows holding the
  // rounded values, with the same canonical order and bits on every ISA).
  DType dtype = DType::f32;

  // In elements.
  int64_t offset(int64_t block, int64_t head, int64_t slot) const {
    return ((block * num_kv_heads + head) * block_size + slot) * head_dim;
  }
  int64_t block_elements() const { return num_kv_heads * block_size * head_dim; }
};

// The tokens of a batch as attention sees them (arrays of the ForwardBatch, validated upstream).
struct BatchSlots {
  int64_t num_tokens = 0;
  const int32_t* positions = nullptr;           // [num_tokens]
  const int32_t* seq_indices = nullptr;         // [num_tokens]
  const int32_t* const* block_tables = nullptr; // [num_seqs] -> block ids
};

// Stores each token's K and V rows ([num_tokens, num_kv_heads * head_dim], row strides) in its slot.
void kv_cache_write(const CpuContext& ctx, const PagedKvLayer& layer, const BatchSlots& batch, const float* k,
                    int64_t k_stride, const float* v, int64_t v_stride);

}  // namespace llaisys::cpu
