#pragma once
// Rotary position embedding in the "neox" layout Hugging Face Qwen2/Llama use (rotate_half): for
// head dim D, element i < D/2 pairs with i + D/2, rotated by angle position * theta^(-2i/D).
//
// Angles and their cos/sin are computed in double and rounded once to f32 (the mathematically exact
// value: reference implementations differ from each other in how they round it).

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// cos, sin: [num_tokens, head_dim / 2]. positions are divided by position_scale (linear rope scaling).
void rope_tables(const int32_t* positions, int64_t num_tokens, int64_t head_dim, double theta,
                 double position_scale, float* cos_table, float* sin_table);

// x: [num_tokens, num_heads, head_dim] (row stride x_stride between tokens), rotated in place:
//   x[i]       = x[i] * cos - x[i + D/2] * sin
//   x[i + D/2] = x[i + D/2] * cos + x[i] * sin
void rope_apply(const CpuContext& ctx, float* x, int64_t x_stride, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, const float* cos_table, const float* sin_table);

}  // namespace llaisys::cpu
