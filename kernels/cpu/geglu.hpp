#pragma once
// geglu_tanh: out = gelu_tanh(gate) * up, with PyTorch's tanh approximation of GELU (transformers'
// gelu_pytorch_tanh, Gemma's hidden_activation), in this order of f32 operations on every ISA:
//   inner = sqrt(2/pi) * (g + 0.044715 * ((g * g) * g))
//   out   = ((0.5 * g) * (1 + tanh(inner))) * u
// with the canonical tanh (simd.hpp), so every ISA gives the same bits. Large |g| gives g * u
// (g > 0) or a zero (g < 0): no NaN from finite inputs, even where g^3 overflows.

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// gate, up, out: [num_rows, width] with row strides; out may alias gate or up.
void geglu_tanh(const CpuContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                int64_t num_rows, int64_t width, float* out, int64_t out_stride);

}  // namespace llaisys::cpu
