#pragma once
// paged_attention: causal attention of each token over its own sequence's KV cache.
//
// For token t (sequence s, position p) and query head h (kv head g = h / (num_q_heads / num_kv_heads)):
//   score_j = (q_h . k_j) * scale for j = 0..p   (k_j from s's block table)
//   out_h   = sum_j exp(score_j - max) v_j / sum_j exp(score_j - max)
// Every quantity follows the canonical order (simd.hpp): dots over head_dim, the exp sum over j in
// 16 lanes, the weighted sum of V sequentially in j. A (token, head) is computed by one thread from
// its own sequence only, so the result never depends on the rest of the batch.
// The K/V of the batch's own tokens must already be in the cache (kv_cache_write).

#include <cstdint>

#include "context.hpp"
#include "paged_kv.hpp"

namespace llaisys::cpu {

// q: [num_tokens, num_q_heads, head_dim] (row stride q_stride); out: same shape (row stride out_stride).
void paged_attention(const CpuContext& ctx, const PagedKvLayer& layer, const BatchSlots& batch, const float* q,
                     int64_t q_stride, int64_t num_q_heads, float scale, float* out, int64_t out_stride);

}  // namespace llaisys::cpu
