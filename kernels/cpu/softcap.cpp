#include "softcap.hpp"

#include <algorithm>

#include "simd.hpp"

namespace llaisys::cpu {
namespace {

void row_scalar(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * simd::tanh_canonical(x[i] / cap);
}

LLAISYS_TARGET_AVX2 void row_avx2(float* x, int64_t n, float cap) {
  const __m256 c = _mm256_set1_ps(cap);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_mul_ps(c, simd::tanh_avx2(_mm256_div_ps(_mm256_loadu_ps(x + i), c))));
  }
  row_scalar(x + i, n - i, cap);
}

LLAISYS_TARGET_AVX512 void row_avx512(float* x, int64_t n, float cap) {
  const __m512 c = _mm512_set1_ps(cap);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
    _mm512_mask_storeu_ps(x + i, mask, _mm512_mul_ps(c, simd::tanh_avx512(_mm512_div_ps(v, c))));
  }
}

// Columns per work item: a long logits row (256k entries) splits into 64 items.
constexpr int64_t kChunk = 4096;
// Operations per element (exp ~20, two divisions, the rest).
constexpr int64_t kWorkPerElement = 32;

}  // namespace

void softcap_row(Isa isa, float* x, int64_t n, float cap) {
  switch (isa) {
    case Isa::avx512: row_avx512(x, n, cap); break;
    case Isa::avx2: row_avx2(x, n, cap); break;
    case Isa::scalar: row_scalar(x, n, cap); break;
  }
}

void softcap(const CpuContext& ctx, float* x, int64_t stride, int64_t num_rows, int64_t width, float cap) {
  if (num_rows <= 0 || width <= 0) return;
  const int64_t chunks_per_row = (width + kChunk - 1) / kChunk;
  auto items = [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t row = item / chunks_per_row;
      const int64_t column = item % chunks_per_row * kChunk;
      softcap_row(ctx.isa, x + row * stride + column, std::min(kChunk, width - column), cap);
    }
  };
  ctx.pool->parallel_for(num_rows * chunks_per_row, 1, items, kWorkPerElement * std::min(kChunk, width));
}

}  // namespace llaisys::cpu
