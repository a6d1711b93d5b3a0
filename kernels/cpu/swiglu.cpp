#include "swiglu.hpp"

#include "gated_rows.hpp"
#include "simd.hpp"

namespace llaisys::cpu {
namespace {

void row_scalar(const float* g, const float* u, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = simd::silu_canonical(g[i]) * u[i];
}

LLAISYS_TARGET_AVX2 void row_avx2(const float* g, const float* u, int64_t n, float* out) {
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = simd::exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), gv));
    const __m256 silu = _mm256_div_ps(gv, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
  }
  row_scalar(g + i, u + i, n - i, out + i);
}

LLAISYS_TARGET_AVX512 void row_avx512(const float* g, const float* u, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(mask, g + i);
    const __m512 e = simd::exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), gv));
    const __m512 silu = _mm512_div_ps(gv, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, mask, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(mask, u + i)));
  }
}

}  // namespace

void swiglu(const CpuContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
            int64_t num_rows, int64_t width, float* out, int64_t out_stride) {
  gated_rows(ctx, {.scalar = &row_scalar, .avx2 = &row_avx2, .avx512 = &row_avx512}, gate, gate_stride, up, up_stride,
             num_rows, width, out, out_stride, 24);  // exp: ~20 operations
}

}  // namespace llaisys::cpu
