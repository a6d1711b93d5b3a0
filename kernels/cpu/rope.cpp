#include "rope.hpp"

#include <cmath>

namespace llaisys::cpu {

void rope_tables(const int32_t* positions, int64_t num_tokens, int64_t head_dim, double theta,
                 double position_scale, float* cos_table, float* sin_table) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const double position = static_cast<double>(positions[t]) / position_scale;
    for (int64_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      const double angle = position * inv_freq;
      cos_table[t * half + i] = static_cast<float>(std::cos(angle));
      sin_table[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void rope_apply(const CpuContext& ctx, float* x, int64_t x_stride, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, const float* cos_table, const float* sin_table) {
  const int64_t half = head_dim / 2;
  auto tokens = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* c = cos_table + t * half;
      const float* s = sin_table + t * half;
      for (int64_t h = 0; h < num_heads; ++h) {
        float* v = x + t * x_stride + h * head_dim;
        // Elementwise, no reduction: two products and one add per element, never fused
        // (-ffp-contract=off), so any vectorisation gives the same bits.
        for (int64_t i = 0; i < half; ++i) {
          const float a = v[i];
          const float b = v[i + half];
          v[i] = a * c[i] - b * s[i];
          v[i + half] = b * c[i] + a * s[i];
        }
      }
    }
  };
  if (num_tokens < 16) {
    tokens(0, num_tokens);
  } else {
    ctx.pool->parallel_for(num_tokens, 1, tokens, 3 * num_heads * head_dim);
  }
}

}  // namespace llaisys::cpu
