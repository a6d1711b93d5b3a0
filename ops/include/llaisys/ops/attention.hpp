#pragma once
// attention: causal attention of each token of a pass over its own sequence's paged KV (prefill
// chunks and decode tokens mixed), grouped-query aware. For token t at position p, query head h
// (kv head g = h / (num_q_heads / num_kv_heads)):
//   s_j = (q_h . k_j) * scale;  s_j = softcap * tanh(s_j / softcap) when softcap > 0
//   over keys j with first <= j <= p, first = window > 0 ? max(0, p - window + 1) : 0
//   out_h = sum_j softmax(s)_j v_j
// The batch's own K/V must already be in the cache (rope_write_kv). Blocks wholly before a token's
// window are never read (the engine may have given them back: their table entries are -1).

#include <cstdint>

#include "llaisys/ops/kv_cache.hpp"
#include "llaisys/ops/pass.hpp"

namespace llaisys::ops {

struct AttentionParams {
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: Gemma 2's attn_logit_softcapping
  int32_t window = 0;    // > 0: sliding window of this many positions (the token's own included)
};

// q: [T, num_q_heads, head_dim] f32; out: [T, num_q_heads * head_dim] of ctx.activation_dtype().
Status attention(DeviceContext& ctx, const Pass& pass, const KvLayer& layer, const TensorView& q,
                 const AttentionParams& params, const TensorView& out);

}  // namespace llaisys::ops
