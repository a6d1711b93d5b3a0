#include "rms_norm.hpp"

#include <cmath>

#include "simd.hpp"

namespace llaisys::cpu {
namespace {

float sum_squares_scalar(const float* x, int64_t n) {
  float lanes[simd::kLanes] = {};
  for (int64_t i = 0; i < n; ++i) lanes[i % simd::kLanes] = std::fma(x[i], x[i], lanes[i % simd::kLanes]);
  simd::finish_lanes(lanes, n);
  return simd::reduce_lanes(lanes);
}

LLAISYS_TARGET_AVX2 float sum_squares_avx2(const float* x, int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    lo = _mm256_fmadd_ps(a, a, lo);
    hi = _mm256_fmadd_ps(b, b, hi);
  }
  if (i < n) {
    alignas(32) float tail[16] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = x[j];
    const __m256 a = _mm256_load_ps(tail), b = _mm256_load_ps(tail + 8);
    lo = _mm256_fmadd_ps(a, a, lo);
    hi = _mm256_fmadd_ps(b, b, hi);
  }
  return simd::reduce_lanes_avx2(lo, hi);
}

LLAISYS_TARGET_AVX512 float sum_squares_avx512(const float* x, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(simd::tail_mask(n - i), x + i);
    acc = _mm512_fmadd_ps(a, a, acc);
  }
  return simd::reduce_lanes_avx512(acc);
}

void normalize_row(Isa isa, const float* x, int64_t width, const float* weight, float eps, float* y) {
  const float sum = isa == Isa::avx512 ? sum_squares_avx512(x, width)
                    : isa == Isa::avx2 ? sum_squares_avx2(x, width)
                                       : sum_squares_scalar(x, width);
  const float inv_rms = 1.0f / std::sqrt(sum / static_cast<float>(width) + eps);
  // Elementwise: the compiler may vectorise this freely, each element is one rounding per step.
  for (int64_t i = 0; i < width; ++i) y[i] = (x[i] * inv_rms) * weight[i];
}

}  // namespace

void rms_norm(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t num_rows, int64_t width,
              const float* weight, float eps, float* y, int64_t y_stride) {
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) normalize_row(ctx.isa, x + r * x_stride, width, weight, eps, y + r * y_stride);
  };
  if (num_rows < 8) {
    rows(0, num_rows);
  } else {
    ctx.pool->parallel_for(num_rows, 1, rows, 4 * width);
  }
}

void rms_norm_heads(const CpuContext& ctx, float* x, int64_t token_stride, int64_t num_tokens, int64_t num_heads,
                    int64_t head_dim, const float* weight, float eps) {
  if (num_heads <= 0) return;
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = x + r / num_heads * token_stride + r % num_heads * head_dim;
      normalize_row(ctx.isa, row, head_dim, weight, eps, row);
    }
  };
  ctx.pool->parallel_for(num_tokens * num_heads, 1, rows, 4 * head_dim);
}

}  // namespace llaisys::cpu
