#pragma once
// Row-wise f32 elementwise ops on the GPU (the extra residual adds of Gemma 2's sandwich norms,
// embedding scaling): one f32 operation per element, so bit-identical to the same operation on
// the host.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// y += x; y, x: [num_rows, width] f32 with row strides (x may be y itself).
Status add_rows(const CudaContext& ctx, float* y, int64_t y_stride, const float* x, int64_t x_stride,
                int64_t num_rows, int64_t width);

// x *= s; x: [num_rows, width] f32 with a row stride.
Status scale_rows(const CudaContext& ctx, float* x, int64_t x_stride, int64_t num_rows, int64_t width, float s);

}  // namespace llaisys::cuda
