#pragma once
// rope_write_kv: rotary position embedding on the pass's q and k (by each token's position), then
// the rotated k and v stored into their paged slots of one cache layer. One op because CUDA fuses it
// (the rotated k goes straight into the cache); the CPU rotates q and k in place, then copies.
//
// q: [T, num_q_heads, head_dim] f32, rotated in place; k, v: [T, num_kv_heads, head_dim] f32 (row
// strides free: typically column ranges of one qkv buffer). On CUDA k keeps its unrotated values.

#include "llaisys/ops/kv_cache.hpp"
#include "llaisys/ops/pass.hpp"

namespace llaisys::ops {

Status rope_write_kv(DeviceContext& ctx, const Pass& pass, const KvLayer& layer, const TensorView& q,
                     const TensorView& k, const TensorView& v);

}  // namespace llaisys::ops
