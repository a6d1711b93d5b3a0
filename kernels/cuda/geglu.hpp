#pragma once
// geglu_tanh on the GPU (Gemma 2's MLP activation, gelu_pytorch_tanh): out = gelu_tanh(gate) * up,
//   gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
// in PyTorch's order (g * g * g, then the inner sum and product, tanhf, then 0.5 g (1 + t)), unfused
// f32 operations; f32 in, f32 or bf16 out (bf16 feeds the down projection's GEMM). tanhf is within
// 2 ulp: for g < 0, 1 + t cancels, so the error is absolute, a few u * 0.5 |g| |up|.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// gate, up: [num_rows, width] f32 with row strides; out: [num_rows, width] with row stride out_stride
// (may alias gate or up when f32 with the same stride).
Status geglu_tanh(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  int64_t num_rows, int64_t width, float* out, int64_t out_stride);
Status geglu_tanh(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  int64_t num_rows, int64_t width, bf16_t* out, int64_t out_stride);

}  // namespace llaisys::cuda
