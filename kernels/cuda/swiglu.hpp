#pragma once
// swiglu on the GPU: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)), as cpu::swiglu; f32 in,
// f32 or bf16 out (bf16 feeds the down projection's GEMM). expf is within 2 ulp of exp, where the
// CPU uses its canonical polynomial: results agree within a few f32 ulp.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// gate, up: [num_rows, width] f32 with row strides; out: [num_rows, width] with row stride out_stride.
Status swiglu(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
              int64_t num_rows, int64_t width, float* out, int64_t out_stride);
Status swiglu(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
              int64_t num_rows, int64_t width, bf16_t* out, int64_t out_stride);

}  // namespace llaisys::cuda
