#pragma once
// Row-wise elementwise updates in place: one f32 rounding per element, so every ISA and every
// split of the work gives the same bits.

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// y += x. y, x: [num_rows, width] with row strides; x may alias y.
void add_rows(const CpuContext& ctx, float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t num_rows,
              int64_t width);

// x *= s. x: [num_rows, width] with row stride `stride`.
void scale_rows(const CpuContext& ctx, float* x, int64_t stride, int64_t num_rows, int64_t width, float s);

}  // namespace llaisys::cpu
