#include "geglu.hpp"

#include "gated_rows.hpp"
#include "simd.hpp"

namespace llaisys::cpu {
namespace {

constexpr float kSqrt2OverPi = 0.797884560802865355f;
constexpr float kCubeCoef = 0.044715f;

float geglu_scalar(float g, float u) {
  const float inner = kSqrt2OverPi * (g + kCubeCoef * ((g * g) * g));
  return ((0.5f * g) * (1.0f + simd::tanh_canonical(inner))) * u;
}

void row_scalar(const float* g, const float* u, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = geglu_scalar(g[i], u[i]);
}

LLAISYS_TARGET_AVX2 void row_avx2(const float* g, const float* u, int64_t n, float* out) {
  const __m256 root = _mm256_set1_ps(kSqrt2OverPi), coef = _mm256_set1_ps(kCubeCoef);
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(gv, gv), gv);
    const __m256 inner = _mm256_mul_ps(root, _mm256_add_ps(gv, _mm256_mul_ps(coef, cube)));
    const __m256 gelu = _mm256_mul_ps(_mm256_mul_ps(half, gv), _mm256_add_ps(one, simd::tanh_avx2(inner)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(gelu, _mm256_loadu_ps(u + i)));
  }
  row_scalar(g + i, u + i, n - i, out + i);
}

LLAISYS_TARGET_AVX512 void row_avx512(const float* g, const float* u, int64_t n, float* out) {
  const __m512 root = _mm512_set1_ps(kSqrt2OverPi), coef = _mm512_set1_ps(kCubeCoef);
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(mask, g + i);
    const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(gv, gv), gv);
    const __m512 inner = _mm512_mul_ps(root, _mm512_add_ps(gv, _mm512_mul_ps(coef, cube)));
    const __m512 gelu = _mm512_mul_ps(_mm512_mul_ps(half, gv), _mm512_add_ps(one, simd::tanh_avx512(inner)));
    _mm512_mask_storeu_ps(out + i, mask, _mm512_mul_ps(gelu, _mm512_maskz_loadu_ps(mask, u + i)));
  }
}

}  // namespace

void geglu_tanh(const CpuContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                int64_t num_rows, int64_t width, float* out, int64_t out_stride) {
  gated_rows(ctx, {.scalar = &row_scalar, .avx2 = &row_avx2, .avx512 = &row_avx512}, gate, gate_stride, up, up_stride,
             num_rows, width, out, out_stride, 32);  // tanh: ~25 operations
}

}  // namespace llaisys::cpu
