#include "linear_bf16.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "cpu_isa.hpp"
#include "linear_store.hpp"
#include "simd.hpp"

namespace llaisys::cpu::bf16dot {
namespace {

constexpr int64_t kStep = 32;  // bf16 elements per vdpbf16ps

using linear_store::store_output;

LLAISYS_TARGET_AVX512_BF16 inline __m512 dot_step(__m512 acc, __m512i x, __m512i w) {
  return _mm512_dpbf16_ps(acc, __builtin_bit_cast(__m512bh, x), __builtin_bit_cast(__m512bh, w));
}

LLAISYS_TARGET_AVX512_BF16 inline __m512i load32(const uint16_t* p) { return _mm512_loadu_si512(p); }

LLAISYS_TARGET_AVX512_BF16 inline __m512i load32_masked(const uint16_t* p, __mmask32 mask) {
  return _mm512_maskz_loadu_epi16(mask, p);
}

inline __mmask32 tail_mask32(int64_t count) {
  return count >= 32 ? static_cast<__mmask32>(0xFFFFFFFFu) : static_cast<__mmask32>((1u << count) - 1u);
}

// ---- tiles of MR activation rows x NR weight rows (prefill, batched decode) ----------------------

struct TileArgs {
  const uint16_t* x;   // first converted row of the tile
  int64_t x_stride;    // padded_k(K)
  const uint16_t* w;   // first weight row of the tile
  int64_t K;
  const float* bias;
  int64_t n;           // first column of the tile
  float* y;            // row 0 of the tile's output
  int64_t y_stride;
  bool accumulate;
  const char* prefetch;      // weights of a later tile, fetched into L2 while this one computes:
  const char* prefetch_end;  // [prefetch, prefetch_end), null when there is none,
  int64_t prefetch_step;     // this many bytes (whole cache lines) per k step
};

template <int MR, int NR>
LLAISYS_TARGET_AVX512_BF16 void tile(const TileArgs& a) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  const int64_t full = a.K / kStep * kStep;
  const char* prefetch = a.prefetch;
  for (int64_t k = 0; k < full; k += kStep) {
    for (int64_t p = 0; p < a.prefetch_step && prefetch < a.prefetch_end; p += 64, prefetch += 64) {
      _mm_prefetch(prefetch, _MM_HINT_T1);
    }
    __m512i w[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = load32(a.w + j * a.K + k);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i xv = load32(a.x + i * a.x_stride + k);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = dot_step(acc[i][j], xv, w[j]);
    }
  }
  if (full < a.K) {
    const __mmask32 mask = tail_mask32(a.K - full);
    __m512i w[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = load32_masked(a.w + j * a.K + full, mask);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i xv = load32(a.x + i * a.x_stride + full);  // zero padded
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = dot_step(acc[i][j], xv, w[j]);
    }
  }
  if constexpr (MR == 4 && NR == 4) {
    linear_store::store_tile4x4(acc, a.bias, a.n, a.y, a.y_stride, a.accumulate);
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) linear_store::store_tile_row<NR>(acc[i], a.bias, a.n, a.y + i * a.y_stride, a.accumulate);
  }
}

// 4 x 4 measured best on Zen 4 (against 4x5, 4x6, 5x4, 6x4, 8x3, 2x8, 3x8; docs/BENCHMARKS.md).
constexpr int kMr = 4;
constexpr int kNr = 4;
constexpr int64_t kPanelBytes = 256 * 1024;  // converted activation rows kept in L2 per row block

using TileFn = void (*)(const TileArgs&);

template <int MR, int... Nr>
constexpr std::array<TileFn, kNr> tile_row(std::integer_sequence<int, Nr...>) {
  return {&tile<MR, Nr + 1>...};
}
template <int... Mr>
constexpr std::array<std::array<TileFn, kNr>, kMr> tile_table(std::integer_sequence<int, Mr...>) {
  return {tile_row<Mr + 1>(std::make_integer_sequence<int, kNr>{})...};
}
constexpr std::array<std::array<TileFn, kNr>, kMr> kTiles = tile_table(std::make_integer_sequence<int, kMr>{});

// ---- one activation row (decode): rows one after another, one sequential stream per thread -------
// (as linear.cpp's gemv_avx512, and measured the same way).

LLAISYS_TARGET_AVX512_BF16 void gemv_row(const uint16_t* x, const uint16_t* w, int64_t K, const float* bias, int64_t n,
                                         float* y, bool accumulate) {
  __m512 acc = _mm512_setzero_ps();
  const int64_t full = K / kStep * kStep;
  for (int64_t k = 0; k < full; k += kStep) acc = dot_step(acc, load32(x + k), load32(w + k));
  if (full < K) acc = dot_step(acc, load32(x + full), load32_masked(w + full, tail_mask32(K - full)));
  store_output(simd::reduce_lanes_avx512(acc), bias, n, y + n, accumulate);
}

void gemv(const uint16_t* x, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  const auto* weights = static_cast<const uint16_t*>(job.weight.data);
  for (int64_t n = n_begin; n < n_end; ++n) gemv_row(x, weights + n * K, K, job.bias, n, job.y, job.accumulate);
}

}  // namespace

bool supported() {
  // cpuid is slow (a VM exit under a hypervisor) and this is asked on every linear call.
  static const bool has = isa_supported(Isa::avx512) && cpu_has_avx512_bf16();
  return has;
}

int64_t padded_k(int64_t K) { return (K + kStep - 1) / kStep * kStep; }

LLAISYS_TARGET_AVX512_BF16 void convert_rows(const float* x, int64_t x_stride, int64_t K, int64_t row_begin,
                                             int64_t row_end, uint16_t* out) {
  const int64_t stride = padded_k(K);
  for (int64_t m = row_begin; m < row_end; ++m) {
    const float* src = x + m * x_stride;
    uint16_t* dst = out + m * stride;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), __builtin_bit_cast(__m256i, v));
    }
    if (k < K) {
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(simd::tail_mask(K - k), src + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), __builtin_bit_cast(__m256i, v));
      k += 16;
    }
    for (; k < stride; k += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), _mm256_setzero_si256());
  }
}

void columns(const uint16_t* xb, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  if (M == 1) return gemv(xb, K, job, n_begin, n_end);
  const auto* weights = static_cast<const uint16_t*>(job.weight.data);
  const int64_t x_stride = padded_k(K);
  // Rows of x per block: the block's converted panel stays in L2 while every column tile passes.
  const int64_t row_block = std::clamp<int64_t>(kPanelBytes / (2 * std::max(x_stride, kStep)) / kMr * kMr, kMr, 256);
  for (int64_t m0 = 0; m0 < M; m0 += row_block) {
    const int64_t m1 = std::min(m0 + row_block, M);
    const int64_t row_tiles = (m1 - m0 + kMr - 1) / kMr;
    for (int64_t n = n_begin; n < n_end; n += kNr) {
      const int64_t nr = std::min<int64_t>(kNr, n_end - n);
      const uint16_t* w = weights + n * K;
      // The weight rows of the tile after next (contiguous), fetched into L2 while the row tiles
      // of this one compute, a share per row tile spread over its k steps (bursts of prefetches
      // stall; into L2 measured faster than into L1, two tiles ahead faster than one or four).
      const int64_t ahead = n + 2 * kNr;
      const int64_t next_bytes = ahead < n_end ? std::min<int64_t>(kNr, n_end - ahead) * K * 2 : 0;
      const char* next = next_bytes > 0 ? reinterpret_cast<const char*>(weights + ahead * K) : nullptr;
      const int64_t share = (next_bytes / row_tiles + 63) / 64 * 64;
      const int64_t steps = std::max<int64_t>(1, K / kStep);
      const int64_t step_bytes = (share / 64 + steps - 1) / steps * 64;
      for (int64_t mt = m0; mt < m1; mt += kMr) {
        const int64_t mr = std::min<int64_t>(kMr, m1 - mt);
        // This row tile's share of the next weights, clipped to them.
        const int64_t first = std::min(next_bytes, (mt - m0) / kMr * share);
        const int64_t last = std::min(next_bytes, first + share);
        const TileArgs args{.x = xb + mt * x_stride,
                            .x_stride = x_stride,
                            .w = w,
                            .K = K,
                            .bias = job.bias,
                            .n = n,
                            .y = job.y + mt * job.y_stride,
                            .y_stride = job.y_stride,
                            .accumulate = job.accumulate,
                            .prefetch = next == nullptr ? nullptr : next + first,
                            .prefetch_end = next == nullptr ? nullptr : next + last,
                            .prefetch_step = step_bytes};
        kTiles[static_cast<std::size_t>(mr - 1)][static_cast<std::size_t>(nr - 1)](args);
      }
    }
  }
}

}  // namespace llaisys::cpu::bf16dot
