#pragma once
// add_rms_norm: the residual add fused with the RMSNorm that follows it.
//
//   residual[r] += delta[r]                      (skipped when delta is null)
//   out[r]       = (residual[r] * inv_rms) * weight,  inv_rms = 1 / sqrt(mean(residual[r]^2) + eps)
//
// in the Hugging Face LlamaRMSNorm order, all in f32, as cpu::rms_norm. The output is f32 or bf16
// (bf16 feeds the next GEMM directly). One block per row; the sum of squares is a CUB block
// reduction, so its order differs from the CPU's 16-lane order: results agree within f32 rounding.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// residual: [num_rows, width] f32 (row stride residual_stride), updated in place when delta is given;
// delta: [num_rows, width] f32 or null; weight: [width] f32; out: [num_rows, width], row stride out_stride.
Status add_rms_norm(const CudaContext& ctx, float* residual, int64_t residual_stride, const float* delta,
                    int64_t delta_stride, int64_t num_rows, int64_t width, const float* weight, float eps,
                    float* out, int64_t out_stride);
Status add_rms_norm(const CudaContext& ctx, float* residual, int64_t residual_stride, const float* delta,
                    int64_t delta_stride, int64_t num_rows, int64_t width, const float* weight, float eps,
                    bf16_t* out, int64_t out_stride);

// rms_norm_heads: in place, f32, RMSNorm over head_dim of every (token t, head h) row at
// x + t * token_stride + h * head_dim with one weight [head_dim] f32, HF order as above (Qwen3's
// per-head q_norm / k_norm, applied to the f32 q and k before RoPE). One warp per row, the sum of
// squares by a warp reduction: within (head_dim + 8) u of the exact value.
Status rms_norm_heads(const CudaContext& ctx, float* x, int64_t token_stride, int64_t num_tokens, int64_t num_heads,
                      int64_t head_dim, const float* weight, float eps);

}  // namespace llaisys::cuda
