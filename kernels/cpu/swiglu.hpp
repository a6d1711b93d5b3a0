#pragma once
// swiglu: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)) with the canonical exp (simd.hpp).

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// gate, up, out: [num_rows, width] with row strides; out may alias gate or up.
void swiglu(const CpuContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
            int64_t num_rows, int64_t width, float* out, int64_t out_stride);

}  // namespace llaisys::cpu
