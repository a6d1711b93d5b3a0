#pragma once
// Small value types shared by the model, KV, scheduler and engine layers.

#include <cstdint>

namespace llaisys {

using TokenId = int32_t;   // index into a vocabulary
using BlockId = int32_t;   // index of a KV block in the pool
using SeqId = int64_t;     // engine-wide sequence identity (one per choice of a request)
using RequestId = int64_t;

// The paged KV pool a model allocates: num_blocks blocks of block_size token slots.
struct KvCacheConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
};

struct BlockCopy {
  BlockId src = 0;
  BlockId dst = 0;
};

enum class OutputKind : int32_t { logits = 0, hidden = 1 };

}  // namespace llaisys
