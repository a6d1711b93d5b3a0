#pragma once
// The paged KV cache of one layer in device memory and a batch's token -> slot mapping.
//
// Same layout as cpu/paged_kv.hpp: K and V are each [num_blocks, num_kv_heads, block_size, head_dim],
// so one head's keys inside one block are contiguous; a token at position p of a sequence with block
// table B lives in slot p % block_size of block B[p / block_size]. The element type is f32 (what
// the CPU cache holds, bit-comparable with it) or bf16 (half the bytes, what decode wants).
// Block tables are one dense device array [num_seqs, max_blocks_per_seq] (the CPU batch holds a
// pointer per sequence); unused entries are never read.

#include <cstdint>

#include "llaisys/core/dtype.hpp"

namespace llaisys::cuda {

struct DeviceKvLayer {
  void* k = nullptr;
  void* v = nullptr;
  DType dtype = DType::bf16;  // f32 or bf16
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;

  int64_t offset(int64_t block, int64_t head, int64_t slot) const {
    return ((block * num_kv_heads + head) * block_size + slot) * head_dim;
  }
};

// Device arrays describing the tokens of a batch (validated upstream: block ids < num_blocks,
// positions < max_blocks_per_seq * block_size).
struct DeviceBatch {
  int64_t num_tokens = 0;
  const int32_t* positions = nullptr;     // [num_tokens]
  const int32_t* seq_indices = nullptr;   // [num_tokens]
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int64_t max_blocks_per_seq = 0;
};

// One unit of attention work (attention.hpp): consecutive batch tokens of one sequence.
struct AttentionTile {
  int32_t first_token = 0;     // index in the batch
  int32_t num_tokens = 0;      // consecutive batch tokens of one sequence
  int32_t seq = 0;
  int32_t num_keys = 0;        // 1 + the largest position in the tile
  int32_t num_splits = 1;
  int32_t partial_offset = 0;  // first partial row (token-major, then q head, then split)
};

}  // namespace llaisys::cuda
