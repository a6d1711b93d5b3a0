#pragma once
// rms_norm: y = x / sqrt(mean(x^2) + eps) * weight, row by row (Hugging Face LlamaRMSNorm order:
// (x * inv_rms) * weight, all in f32). The sum of squares follows the canonical 16-lane order.

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// x, y: [num_rows, width] with row strides; weight: [width] f32. y may alias x.
void rms_norm(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t num_rows, int64_t width,
              const float* weight, float eps, float* y, int64_t y_stride);

// rms_norm of every head of every token, in place (Qwen3's q_norm / k_norm): the row of token t,
// head h at x + t * token_stride + h * head_dim is normalised with weight [head_dim] exactly as
// rms_norm normalises a row (the same bits).
void rms_norm_heads(const CpuContext& ctx, float* x, int64_t token_stride, int64_t num_tokens, int64_t num_heads,
                    int64_t head_dim, const float* weight, float eps);

}  // namespace llaisys::cpu
