#pragma once
// paged_attention: causal attention of each token over its own sequence's KV cache, optionally
// windowed (Mistral, Gemma 2) and soft-capped (Gemma 2).
//
// For token t (sequence s, position p) and query head h (kv head g = h / (num_q_heads / num_kv_heads)),
// over the attended keys j = first..p, first = max(0, p - window + 1) with a window, else 0:
//   score_j = (q_h . k_j) * scale                         (k_j from s's block table)
//   score_j = softcap * tanh(score_j / softcap)           (only with softcap > 0; canonical tanh)
//   out_h   = sum_j exp(score_j - max) v_j / sum_j exp(score_j - max)
// Every quantity follows the canonical order (simd.hpp) over the attended keys: dots over head_dim,
// the exp sum with lane l taking keys first + 16 m + l, the weighted sum of V sequentially in j. A
// (token, head) is computed by one thread from its own sequence only, so the result depends only on
// the token's sequence, position and the parameters, never on the rest of the batch.
// The K/V of the batch's own tokens must already be in the cache (kv_cache_write). Block-table
// entries of blocks wholly before a token's window (every slot < first) are never read for it: they
// may be -1 (a block given back to the pool).

#include <cstdint>

#include "context.hpp"
#include "paged_kv.hpp"

namespace llaisys::cpu {

struct AttentionParams {
  float scale = 1.0f;    // scores are (q . k) * scale
  float softcap = 0.0f;  // > 0: score = softcap * tanh(score / softcap) after scaling, before the softmax (Gemma 2's attn_logit_softcapping)
  int32_t window = 0;    // > 0: the token at position p attends only keys j with p - window < j <= p (transformers' sliding window, Mistral / Gemma 2); 0: every j <= p
};

// q: [num_tokens, num_q_heads, head_dim] (row stride q_stride); out: same shape (row stride out_stride).
void paged_attention(const CpuContext& ctx, const PagedKvLayer& layer, const BatchSlots& batch, const float* q,
                     int64_t q_stride, int64_t num_q_heads, const AttentionParams& params, float* out,
                     int64_t out_stride);

// Plain causal attention with a scale (the form older callers use).
inline void paged_attention(const CpuContext& ctx, const PagedKvLayer& layer, const BatchSlots& batch, const float* q,
                            int64_t q_stride, int64_t num_q_heads, float scale, float* out, int64_t out_stride) {
  paged_attention(ctx, layer, batch, q, q_stride, num_q_heads, AttentionParams{.scale = scale}, out, out_stride);
}

}  // namespace llaisys::cpu
