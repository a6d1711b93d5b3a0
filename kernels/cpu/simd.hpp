#pragma once
// Vector helpers shared by the CPU kernels, and the canonical order of operations they all follow.
//
// Canonical order (what makes every ISA path, and every batch shape, give the same bits):
//  - A dot product or sum over k accumulates in 16 lanes: lane l takes the elements k = 16 j + l
//    for j = 0, 1, ... in that order, each step acc = fma(a, b, acc) (sums: acc = acc + a). Missing
//    elements of the last, partial step count as zero products: those lanes still take their
//    fma(0, 0, acc), which leaves every value unchanged except -0, which becomes +0 (finish_lanes
//    does this for the scalar form; the vector forms load zeros).
//  - The 16 lanes are then reduced pairwise: l += l + 8, then l += l + 4, l += l + 2, l += l + 1.
//  - exp() is exp_canonical below, evaluated with the same fma steps in every path; tanh() is
//    tanh_canonical, the same sequence of operations on top of it in every path.
// AVX-512 holds the 16 lanes in one register, AVX2 in two (lanes 0-7 and 8-15), the scalar path in
// an array. Kernels are compiled with -ffp-contract=off so the compiler adds no fusion of its own.

#include <bit>
#include <cmath>
#include <cstdint>
#include <immintrin.h>

#define LLAISYS_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LLAISYS_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
// AVX-512 with VNNI (vpdpbusd), VBMI (vpermb) and BITALG (vpshufbitqmb): the int8 dot-product mode
// (linear_int8.hpp).
#define LLAISYS_TARGET_AVX512_INT8 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx512bitalg,avx2,fma,f16c")))
// AVX-512 with AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16): the bf16 dot-product mode (linear_bf16.hpp).
#define LLAISYS_TARGET_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")))

namespace llaisys::cpu::simd {

inline constexpr int kLanes = 16;

// ---- scalar reference forms -----------------------------------------------------------------------

// The scalar form's end of a pass over n elements: the lanes the vector forms pad in the last,
// partial step (l >= n % kLanes) take their + 0 as those do.
inline void finish_lanes(float lanes[kLanes], int64_t n) {
  if (n % kLanes == 0) return;
  for (int64_t l = n % kLanes; l < kLanes; ++l) lanes[l] = lanes[l] + 0.0f;
}

inline float reduce_lanes(const float lanes[kLanes]) {
  float t8[8], t4[4];
  for (int l = 0; l < 8; ++l) t8[l] = lanes[l] + lanes[l + 8];
  for (int l = 0; l < 4; ++l) t4[l] = t8[l] + t8[l + 4];
  const float t2a = t4[0] + t4[2];
  const float t2b = t4[1] + t4[3];
  return t2a + t2b;
}

// exp constants: x = n ln2 + r with ln2 split in a short head (exact products n * hi) and a tail;
// exp(r) by its Taylor series to degree 7 (|r| <= ln2 / 2: truncation error below 1e-8 relative).
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693145751953125f;
inline constexpr float kLn2Lo = 1.42860682030941723212e-6f;
inline constexpr float kExpUnderflow = -87.0f;            // below: 0
inline constexpr float kExpOverflow = 88.0f;   // above: +inf (keeps 2^n finite; exp(88) = 1.65e38)
inline constexpr float kExpCoef[8] = {1.0f,         1.0f,           0.5f,           1.0f / 6.0f,
                                      1.0f / 24.0f, 1.0f / 120.0f,  1.0f / 720.0f,  1.0f / 5040.0f};

inline float exp_canonical(float x) {
  if (std::isnan(x)) return x;
  if (x < kExpUnderflow) return 0.0f;
  if (x > kExpOverflow) return INFINITY;
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kExpCoef[7];
  for (int c = 6; c >= 0; --c) p = std::fma(p, r, kExpCoef[c]);
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
  return p * scale;
}

inline float silu_canonical(float x) { return x / (1.0f + exp_canonical(-x)); }

// tanh in one sequence of operations: a = |x|; e = exp(a + a); t = 1 - 2 / (e + 1); tanh = t with
// the sign of x. Absolute error below 1.5e-7 (about 2 ulp of 1: t is a difference from 1), so the
// relative error is poor for small |x| (below 0.55 every result is a multiple of 2^-24 = 6e-8, and
// tanh(1e-9) is 0): fine where the result is scaled back up or added to 1 (soft-capping, GELU), not
// as a general-purpose tanh.
// +-0 stays +-0, NaN stays NaN, |x| > 9.02 (and +-inf) gives exactly +-1.
inline float tanh_canonical(float x) {
  const float a = std::fabs(x);
  const float e = exp_canonical(a + a);
  const float t = 1.0f - 2.0f / (e + 1.0f);
  return std::copysign(t, x);
}

// ---- AVX2 (16 lanes as two 8-lane halves) ---------------------------------------------------------

LLAISYS_TARGET_AVX2 inline float reduce_lanes_avx2(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

LLAISYS_TARGET_AVX2 inline __m256 exp_avx2(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpCoef[7]);
  for (int c = 6; c >= 0; --c) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpCoef[c]));
  // Lanes that go to 0 or inf are fixed below; clamp n so the exponent arithmetic stays in range.
  const __m256 n_clamped = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n_clamped), _mm256_set1_epi32(127)), 23);
  __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kExpUnderflow), _CMP_LT_OQ));
  result = _mm256_blendv_ps(result, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(kExpOverflow), _CMP_GT_OQ));
  return _mm256_blendv_ps(result, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

// tanh_canonical on 8 lanes (same operations, same bits).
LLAISYS_TARGET_AVX2 inline __m256 tanh_avx2(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 e = exp_avx2(_mm256_add_ps(a, a));
  const __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  return _mm256_or_ps(_mm256_andnot_ps(sign, t), _mm256_and_ps(sign, x));  // copysign(t, x)
}

// ---- AVX-512 --------------------------------------------------------------------------------------

LLAISYS_TARGET_AVX512 inline float reduce_lanes_avx512(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm512_extractf32x8_ps(v, 1);
  return reduce_lanes_avx2(lo, hi);
}

// Four reductions at once, each in the canonical pairing (l + 8, then + 4, + 2, + 1; IEEE addition
// is commutative, so only the pairing matters): out[i] is reduce_lanes of v[i].
LLAISYS_TARGET_AVX512 inline void reduce4_lanes_avx512(__m512 a, __m512 b, __m512 c, __m512 d, float out[4]) {
  // Lanes 0-7: a[l] + a[l + 8]; lanes 8-15: the same for b. Likewise c and d.
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  // 128-bit quarter i: the 4 partial sums (l + 4) of v[i].
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, 0xEE));  // t4[0] + t4[2], t4[1] + t4[3]
  const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, 0x55));  // lane 0 of each quarter
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s1);
  out[0] = lanes[0];
  out[1] = lanes[4];
  out[2] = lanes[8];
  out[3] = lanes[12];
}

LLAISYS_TARGET_AVX512 inline __m512 exp_avx512(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpCoef[7]);
  for (int c = 6; c >= 0; --c) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpCoef[c]));
  const __m512 n_clamped = _mm512_min_ps(_mm512_max_ps(n, _mm512_set1_ps(-126.0f)), _mm512_set1_ps(127.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n_clamped), _mm512_set1_epi32(127)), 23);
  __m512 result = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
  result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpUnderflow), _CMP_LT_OQ), result,
                                _mm512_setzero_ps());
  result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpOverflow), _CMP_GT_OQ), result,
                                _mm512_set1_ps(INFINITY));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), result, x);
}

// tanh_canonical on 16 lanes (same operations, same bits).
LLAISYS_TARGET_AVX512 inline __m512 tanh_avx512(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 a = _mm512_andnot_ps(sign, x);
  const __m512 e = exp_avx512(_mm512_add_ps(a, a));
  const __m512 t = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  return _mm512_or_ps(_mm512_andnot_ps(sign, t), _mm512_and_ps(sign, x));  // copysign(t, x)
}

LLAISYS_TARGET_AVX512 inline __mmask16 tail_mask(int64_t count) {
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
}

}  // namespace llaisys::cpu::simd
