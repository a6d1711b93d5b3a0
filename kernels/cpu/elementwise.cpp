#include "elementwise.hpp"

#include <algorithm>

#include "simd.hpp"

namespace llaisys::cpu {
namespace {

void add_scalar(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] + x[i];
}

LLAISYS_TARGET_AVX2 void add_avx2(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  add_scalar(y + i, x + i, n - i);
}

LLAISYS_TARGET_AVX512 void add_avx512(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, mask,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(mask, y + i), _mm512_maskz_loadu_ps(mask, x + i)));
  }
}

void scale_scalar(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * s;
}

LLAISYS_TARGET_AVX2 void scale_avx2(float* x, int64_t n, float s) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
  scale_scalar(x + i, n - i, s);
}

LLAISYS_TARGET_AVX512 void scale_avx512(float* x, int64_t n, float s) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + i), sv));
  }
}

// Columns per work item, so that a few long rows still spread over the threads.
constexpr int64_t kChunk = 8192;

// Calls fn(row, first column, count) over [num_rows, width] in chunks of at most kChunk columns;
// bytes_per_element (moved) is the work estimate.
template <class F>
void for_each_chunk(const CpuContext& ctx, int64_t num_rows, int64_t width, int64_t bytes_per_element, F&& fn) {
  if (num_rows <= 0 || width <= 0) return;
  const int64_t chunks_per_row = (width + kChunk - 1) / kChunk;
  auto items = [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t row = item / chunks_per_row;
      const int64_t column = item % chunks_per_row * kChunk;
      fn(row, column, std::min(kChunk, width - column));
    }
  };
  ctx.pool->parallel_for(num_rows * chunks_per_row, 1, items, bytes_per_element * std::min(kChunk, width));
}

}  // namespace

void add_rows(const CpuContext& ctx, float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t num_rows,
              int64_t width) {
  const auto add = ctx.isa == Isa::avx512 ? &add_avx512 : ctx.isa == Isa::avx2 ? &add_avx2 : &add_scalar;
  for_each_chunk(ctx, num_rows, width, 12, [&](int64_t row, int64_t column, int64_t count) {
    add(y + row * y_stride + column, x + row * x_stride + column, count);
  });
}

void scale_rows(const CpuContext& ctx, float* x, int64_t stride, int64_t num_rows, int64_t width, float s) {
  const auto scale = ctx.isa == Isa::avx512 ? &scale_avx512 : ctx.isa == Isa::avx2 ? &scale_avx2 : &scale_scalar;
  for_each_chunk(ctx, num_rows, width, 8, [&](int64_t row, int64_t column, int64_t count) {
    scale(x + row * stride + column, count, s);
  });
}

}  // namespace llaisys::cpu
