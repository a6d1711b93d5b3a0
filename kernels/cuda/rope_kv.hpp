#pragma once
// rope_kv_write: rotary position embedding ("neox" layout, rotate_half) on q and k, fused with the
// write of the rotated k and of v into the paged KV cache.
//
// cos/sin come from a table indexed by position ([table_positions, head_dim / 2], built once on the
// host with cpu::rope_tables for positions 0..table_positions-1, so every rope variant (linear,
// llama3) is whatever the plugin put in the table). The rotation is
//   x[i]       = x[i] * cos - x[i + D/2] * sin
//   x[i + D/2] = x[i + D/2] * cos + x[i] * sin
// with explicitly unfused f32 operations, exactly as cpu::rope_apply (built with -ffp-contract=off):
// an f32 cache holds bit-identical values, a bf16 cache their round-to-nearest-even.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/status.hpp"
#include "paged_kv.hpp"

namespace llaisys::cuda {

// q: [num_tokens, num_q_heads, head_dim] f32 (row stride q_stride), rotated in place.
// k, v: [num_tokens, num_kv_heads * head_dim] f32 (row strides); k is rotated on its way into the
// cache and left unchanged. A token whose position is outside [0, table_positions) is left alone
// (validated upstream; it must not read out of bounds).
Status rope_kv_write(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch, float* q,
                     int64_t q_stride, int64_t num_q_heads, const float* k, int64_t k_stride, const float* v,
                     int64_t v_stride, const float* cos_table, const float* sin_table, int64_t table_positions);

}  // namespace llaisys::cuda
