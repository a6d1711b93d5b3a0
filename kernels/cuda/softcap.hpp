#pragma once
// softcap on the GPU (Gemma 2's final logit soft-capping): in place, x = cap * tanhf(x / cap), on
// [num_rows, width] f32 with a row stride. Unfused f32 division and product around tanhf (2 ulp):
// within a few u (|x| + |result|) of the exact value. (Attention logits are capped inside
// paged_attention, AttentionParams::softcap.)

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// x: [num_rows, width] f32, row stride x_stride, updated in place; cap > 0 and finite.
Status softcap(const CudaContext& ctx, float* x, int64_t x_stride, int64_t num_rows, int64_t width, float cap);

}  // namespace llaisys::cuda
