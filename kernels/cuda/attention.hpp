#pragma once
// paged_attention on the GPU: causal attention of each token over its own sequence's paged KV
// cache, for prefill (several sequences of different lengths, many tokens each, in one launch) and
// decode (one token per sequence), GQA-aware and split-K over the key range.
//
// Semantics are those of cpu::paged_attention: for token t (sequence s, position p) and query head
// h (kv head g = h / (num_q_heads / num_kv_heads)),
//   score_j = (q_h . k_j) * scale for j = 0..p,   out_h = softmax(score) . V
// computed with an online softmax in f32 (expf); results agree with the CPU within f32 rounding
// (and the KV dtype's rounding for a bf16 cache).
//
// Work decomposition (plan_attention, on the host, from the host copies of the batch arrays):
//  - a tile is a run of consecutive batch tokens of one sequence, at most 16 / group of them, so a
//    CTA holds tile_tokens x group query rows (<= 16): every K/V block it streams through shared
//    memory serves all the query heads of its kv head (GQA) and all the tile's tokens (prefill);
//  - the grid is tiles x kv heads x splits: each split covers keys_per_split keys (a multiple of
//    the block size) and, when a tile has several, writes partial (max, sum, acc) rows that a
//    second kernel combines. Decode (few tiles, long contexts) gets enough splits to fill the GPU.

#include <cstdint>
#include <span>
#include <vector>

#include "context.hpp"
#include "device_memory.hpp"
#include "llaisys/core/status.hpp"
#include "paged_kv.hpp"

namespace llaisys::cuda {

struct AttentionPlan {
  std::vector<AttentionTile> tiles;
  int32_t keys_per_split = 0;
  int32_t max_splits = 1;
  int64_t partial_rows = 0;  // rows of head_dim floats the split tiles need
  int64_t num_tokens = 0;
};

// positions / seq_indices: the batch's host arrays. num_sms: the GPU's multiprocessor count (what
// decode splits aim to fill); keys_per_split > 0 forces the split size (rounded up to block_size).
Result<AttentionPlan> plan_attention(std::span<const int32_t> positions, std::span<const int32_t> seq_indices,
                                     int64_t num_q_heads, int64_t num_kv_heads, int64_t block_size, int num_sms,
                                     int64_t keys_per_split = 0);

// The device side of a plan: its tiles and the partial-result scratch, grown as needed.
class AttentionWorkspace {
 public:
  // Uploads the plan's tiles (asynchronously on `stream`; the plan must outlive the copy, i.e.
  // until the stream reaches it) and sizes the scratch for head_dim.
  Status prepare(const AttentionPlan& plan, int64_t num_q_heads, int64_t head_dim, cudaStream_t stream);

  const AttentionTile* tiles() const { return tiles_.data(); }
  float* partial_acc() const { return partial_acc_.data(); }
  float* partial_ml() const { return partial_ml_.data(); }

 private:
  DeviceBuffer<AttentionTile> tiles_;
  DeviceBuffer<float> partial_acc_;
  DeviceBuffer<float> partial_ml_;
};

// q: [num_tokens, num_q_heads, head_dim] f32 (row stride q_stride); out: same shape, f32 or bf16
// (row stride out_stride). The batch's own K/V must already be in the cache (rope_kv_write), and
// `workspace` prepared with this plan. head_dim must be a multiple of 32, at most 256.
Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                       const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                       int64_t q_stride, int64_t num_q_heads, float scale, float* out, int64_t out_stride);
Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                       const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                       int64_t q_stride, int64_t num_q_heads, float scale, bf16_t* out, int64_t out_stride);

}  // namespace llaisys::cuda
