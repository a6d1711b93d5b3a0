#pragma once
// paged_attention on the GPU: causal attention of each token over its own sequence's paged KV
// cache, for prefill (several sequences of different lengths, many tokens each, in one launch) and
// decode (one token per sequence), GQA-aware and split-K over the key range.
//
// Semantics are those of cpu::paged_attention: for token t (sequence s, position p) and query head
// h (kv head g = h / (num_q_heads / num_kv_heads)),
//   score_j = (q_h . k_j) * scale                       for visible j
//   score_j = softcap * tanhf(score_j / softcap)        when softcap > 0 (Gemma 2)
//   out_h   = softmax(score) . V
// where the visible keys are j = 0..p, or p - window < j <= p when window > 0 (sliding window:
// Mistral, Gemma 2's local layers). Computed with an online softmax in f32 (expf); results agree
// with the CPU within f32 rounding (and the KV dtype's rounding for a bf16 cache).
//
// Sliding window: block-table entries of blocks wholly before the window of every token of the
// sequence in the batch may be -1 (freed); they are never read. A tile streams the blocks from its
// earliest token's window start on (rounded down to a block), and a plan made for the window cuts
// its splits from there (plan_attention takes the window, see attention.cpp).
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

// scale: multiplies q . k. softcap > 0: score = softcap * tanh(score / softcap) (0: none).
// window > 0: token at position p sees keys p - window < j <= p (0: all of 0..p).
struct AttentionParams {
  float scale = 1.0f;
  float softcap = 0.0f;
  int32_t window = 0;
};

struct AttentionPlan {
  std::vector<AttentionTile> tiles;
  int32_t keys_per_split = 0;
  int32_t max_splits = 1;
  int64_t partial_rows = 0;  // rows of head_dim floats the split tiles need
  // What the workspace reserves: partial_rows, or for a plan with a key capacity the most that any
  // batch of its shape can need, so that the workspace never moves between such passes.
  int64_t partial_capacity = 0;
  int64_t num_tokens = 0;
  int32_t window = 0;        // the window the plan's splits were cut for (paged_attention checks it)
};

// positions / seq_indices: the batch's host arrays. params.window: the sliding window (only it is
// used here: splits start at each tile's window start). num_sms: the GPU's multiprocessor count
// (what decode splits aim to fill); keys_per_split > 0 forces the split size (rounded up to
// block_size).
// capacity_keys > 0 (a captured decode pass, CUDA graphs): the launch shape depends on the batch's
// size and this capacity only, not on its positions: splits are sized for capacity_keys keys,
// max_splits is ceil(capacity_keys / keys_per_split) whatever the tiles need (the kernel's extra
// split CTAs return at once), and partial_capacity covers every tile at max_splits. Every tile must
// then have at most capacity_keys keys (invalid_argument otherwise).
Result<AttentionPlan> plan_attention(std::span<const int32_t> positions, std::span<const int32_t> seq_indices,
                                     int64_t num_q_heads, int64_t num_kv_heads, int64_t block_size,
                                     const AttentionParams& params, int num_sms, int64_t keys_per_split = 0,
                                     int64_t capacity_keys = 0);
// No window (full causal attention).
inline Result<AttentionPlan> plan_attention(std::span<const int32_t> positions, std::span<const int32_t> seq_indices,
                                            int64_t num_q_heads, int64_t num_kv_heads, int64_t block_size,
                                            int num_sms, int64_t keys_per_split = 0) {
  return plan_attention(positions, seq_indices, num_q_heads, num_kv_heads, block_size, AttentionParams{}, num_sms,
                        keys_per_split);
}

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
// `workspace` prepared with this plan. The plan must be made without a window or for a window at
// least params.window (best: the same; a plan without a window works for every call, launching
// split CTAs that find nothing to read before the window). head_dim must be a multiple of 32, at
// most 256. invalid_argument: bad shape, non-finite scale, softcap < 0 or NaN, window < 0, or a
// plan window smaller than params.window (or set while params.window is 0).
Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                       const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                       int64_t q_stride, int64_t num_q_heads, const AttentionParams& params, float* out,
                       int64_t out_stride);
Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                       const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                       int64_t q_stride, int64_t num_q_heads, const AttentionParams& params, bf16_t* out,
                       int64_t out_stride);

// Full causal attention, no softcap (the pre-AttentionParams API).
inline Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                              const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                              int64_t q_stride, int64_t num_q_heads, float scale, float* out, int64_t out_stride) {
  return paged_attention(ctx, layer, batch, plan, workspace, q, q_stride, num_q_heads, AttentionParams{.scale = scale},
                         out, out_stride);
}
inline Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                              const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                              int64_t q_stride, int64_t num_q_heads, float scale, bf16_t* out, int64_t out_stride) {
  return paged_attention(ctx, layer, batch, plan, workspace, q, q_stride, num_q_heads, AttentionParams{.scale = scale},
                         out, out_stride);
}

}  // namespace llaisys::cuda
