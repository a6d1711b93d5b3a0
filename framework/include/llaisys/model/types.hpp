#pragma once
// Small value types shared by the model, KV, scheduler and engine layers.

#include <cstdint>

namespace llaisys {

using TokenId = int32_t;   // index into a vocabulary
using BlockId = int32_t;   // index of a KV block in the pool
using SeqId = int64_t;     // engine-wide sequence identity (one per choice of a request)
using RequestId = int64_t;

// A block-table entry whose block was given back: with a sliding window (ModelInfo::sliding_window),
// the leading blocks of a sequence that lie wholly before the window of its next token are released
// and their entries hold kNoBlock. A model never reads them (validate_forward_batch checks it).
inline constexpr BlockId kNoBlock = -1;

// What a model allocates before its first step: the paged KV pool (num_blocks blocks of block_size
// token slots) and num_seq_slots sequence slots (the sampling state of SampleRow::seq_slot).
struct KvCacheConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t num_seq_slots = 0;
};

struct BlockCopy {
  BlockId src = 0;
  BlockId dst = 0;
};

enum class OutputKind : int32_t { logits = 0, hidden = 1 };

}  // namespace llaisys
