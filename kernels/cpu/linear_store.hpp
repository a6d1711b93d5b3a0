#pragma once
// How linear's kernels (linear.cpp: f32 products, linear_bf16.cpp: bf16 dot products) write their
// finished outputs: every path reduces its 16-lane accumulators in the canonical pairing of
// simd.hpp and stores y[m, n] = sum + bias[n] (if any), then + y[m, n] when accumulating, so that
// every tile shape and the one-row GEMV give the same bits. Internal to kernels/cpu.

#include <cstdint>

#include "simd.hpp"

namespace llaisys::cpu::linear_store {

// One output element from its canonical sum.
inline void store_output(float sum, const float* bias, int64_t n, float* out, bool accumulate) {
  if (bias != nullptr) sum = sum + bias[n];
  *out = accumulate ? *out + sum : sum;
}

// One tile row: acc[j] is column n + j of the row y points to; four columns at a time where NR allows.
template <int NR>
LLAISYS_TARGET_AVX512 inline void store_tile_row(const __m512* acc, const float* bias, int64_t n, float* y,
                                                 bool accumulate) {
  if constexpr (NR % 4 == 0) {
#pragma GCC unroll 4
    for (int j = 0; j < NR; j += 4) {
      float sums[4];
      simd::reduce4_lanes_avx512(acc[j], acc[j + 1], acc[j + 2], acc[j + 3], sums);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) store_output(sums[c], bias, n + j + c, y + n + j + c, accumulate);
    }
  } else {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) store_output(simd::reduce_lanes_avx512(acc[j]), bias, n + j, y + n + j, accumulate);
  }
}

// A 4 x 4 GEMM tile's 16 accumulators (acc[row][column]) reduced together, each in the canonical
// pairing (l + 8, + 4, + 2, + 1), then stored as linear's outputs: y[row][n + column] = sum + bias
// (if any), added to y when accumulating, with 4-wide stores. Far fewer shuffles and scalar moves per
// output than four store_tile_row calls.
LLAISYS_TARGET_AVX512 inline void store_tile4x4(const __m512 (&acc)[4][4], const float* bias, int64_t n, float* y,
                                                       int64_t y_stride, bool accumulate) {
  // Step 1 (l + 8): t[p] holds v[2p] in lanes 0-7 and v[2p + 1] in lanes 8-15, v[4 i + j] = acc[i][j].
  __m512 t[8];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    const __m512 a = acc[p / 2][(p % 2) * 2], b = acc[p / 2][(p % 2) * 2 + 1];
    t[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
  // Step 2 (l + 4): quarter q of u[r] holds the 4 partial sums of v[4 r + q], i.e. row r, column q.
  __m512 u[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    u[r] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * r], t[2 * r + 1], 0x88),
                         _mm512_shuffle_f32x4(t[2 * r], t[2 * r + 1], 0xDD));
  }
  // Step 3 (l + 2): quarter q of w0 = [row 0 col q: 2 sums, row 1 col q: 2 sums]; w1 rows 2, 3.
  const __m512 w0 = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x44), _mm512_shuffle_ps(u[0], u[1], 0xEE));
  const __m512 w1 = _mm512_add_ps(_mm512_shuffle_ps(u[2], u[3], 0x44), _mm512_shuffle_ps(u[2], u[3], 0xEE));
  // Step 4 (l + 1): quarter q of z = rows 0, 1, 2, 3 of column q; then row-major (lane 4 i + q).
  const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(w0, w1, 0x88), _mm512_shuffle_ps(w0, w1, 0xDD));
  const __m512 rows = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), z);
  alignas(64) float sums[16];
  _mm512_store_ps(sums, rows);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m128 v = _mm_load_ps(sums + 4 * i);
    float* out = y + i * y_stride + n;
    if (bias != nullptr) v = _mm_add_ps(v, _mm_loadu_ps(bias + n));
    if (accumulate) v = _mm_add_ps(_mm_loadu_ps(out), v);
    _mm_storeu_ps(out, v);
  }
}

}  // namespace llaisys::cpu::linear_store
