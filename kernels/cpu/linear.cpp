#include "linear.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "linear_bf16.hpp"
#include "linear_float.hpp"
#include "linear_int8.hpp"
#include "linear_quant.hpp"
#include "linear_store.hpp"
#include "simd.hpp"

namespace llaisys::cpu {
namespace {

using simd::kLanes;

using linear_store::store_output;

const std::byte* row_of(const WeightMatrix& w, int64_t n) {
  return static_cast<const std::byte*>(w.data) + n * dtype_bytes(w.dtype, w.cols);
}

// ---- scalar -------------------------------------------------------------------------------------

float weight_scalar(const std::byte* row, DType dtype, int64_t k) {
  switch (dtype) {
    case DType::bf16: return bf16_to_f32(reinterpret_cast<const bf16_t*>(row)[k]);
    case DType::f16: return f16_to_f32(reinterpret_cast<const f16_t*>(row)[k]);
    default: return reinterpret_cast<const float*>(row)[k];
  }
}

void columns_scalar(const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job,
                    int64_t n_begin, int64_t n_end) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xm = x + m * x_stride;
    for (int64_t n = n_begin; n < n_end; ++n) {
      const std::byte* row = row_of(job.weight, n);
      float lanes[kLanes] = {};
      for (int64_t k = 0; k < K; ++k) {
        lanes[k % kLanes] = std::fma(xm[k], weight_scalar(row, job.weight.dtype, k), lanes[k % kLanes]);
      }
      simd::finish_lanes(lanes, K);
      store_output(simd::reduce_lanes(lanes), job.bias, n, job.y + m * job.y_stride + n, job.accumulate);
    }
  }
}

// ---- AVX-512: tiles of MR rows x NR columns, 16 lanes per accumulator -----------------------------

template <DType D>
LLAISYS_TARGET_AVX512 inline __m512 weights16_avx512(const std::byte* row, int64_t k) {
  if constexpr (D == DType::bf16) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  } else if constexpr (D == DType::f16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row + 4 * k));
  }
}

template <DType D>
LLAISYS_TARGET_AVX512 inline __m512 weights16_masked_avx512(const std::byte* row, int64_t k, __mmask16 mask) {
  if constexpr (D == DType::bf16) {
    const __m256i raw = _mm256_maskz_loadu_epi16(mask, row + 2 * k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  } else if constexpr (D == DType::f16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + 2 * k));
  } else {
    return _mm512_maskz_loadu_ps(mask, row + 4 * k);
  }
}

struct TileArgs {
  const float* x;        // first row of the tile
  int64_t x_stride;
  const std::byte* w;    // first weight row of the tile
  int64_t w_row_bytes;
  int64_t K;
  const float* bias;     // null or the job's bias
  int64_t n;             // first column of the tile
  float* y;              // row 0 of the job's output
  int64_t y_stride;
  bool accumulate;
};

template <DType D, int MR, int NR>
LLAISYS_TARGET_AVX512 void tile_avx512(const TileArgs& a) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  int64_t k = 0;
  for (; k + kLanes <= a.K; k += kLanes) {
    __m512 w[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = weights16_avx512<D>(a.w + j * a.w_row_bytes, k);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_loadu_ps(a.x + i * a.x_stride + k);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, w[j], acc[i][j]);
    }
  }
  if (k < a.K) {
    const __mmask16 mask = simd::tail_mask(a.K - k);
    __m512 w[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = weights16_masked_avx512<D>(a.w + j * a.w_row_bytes, k, mask);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, a.x + i * a.x_stride + k);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, w[j], acc[i][j]);
    }
  }
  if constexpr (MR == 4 && NR == 4) {
    linear_store::store_tile4x4(acc, a.bias, a.n, a.y, a.y_stride, a.accumulate);
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) linear_store::store_tile_row<NR>(acc[i], a.bias, a.n, a.y + i * a.y_stride, a.accumulate);
  }
}

constexpr int kMrAvx512 = 4;
constexpr int kNrAvx512 = 4;
// Columns per block: the block's weight rows (64 x K) stay in L2 while every row tile of x passes.
constexpr int64_t kColumnBlock = 64;

using TileFn = void (*)(const TileArgs&);

template <DType D>
struct TileTableAvx512 {
  template <int MR, int... Nr>
  static constexpr std::array<TileFn, kNrAvx512> row(std::integer_sequence<int, Nr...>) {
    return {&tile_avx512<D, MR, Nr + 1>...};
  }
  static constexpr std::array<std::array<TileFn, kNrAvx512>, kMrAvx512> table = {
      row<1>(std::make_integer_sequence<int, kNrAvx512>{}), row<2>(std::make_integer_sequence<int, kNrAvx512>{}),
      row<3>(std::make_integer_sequence<int, kNrAvx512>{}), row<4>(std::make_integer_sequence<int, kNrAvx512>{})};
};

template <DType D>
void columns_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job,
                    int64_t n_begin, int64_t n_end) {
  const int64_t w_row_bytes = K * static_cast<int64_t>(dtype_size(D));
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kColumnBlock) {
    const int64_t n1 = std::min(n0 + kColumnBlock, n_end);
    for (int64_t m0 = 0; m0 < M; m0 += kMrAvx512) {
      const int64_t mr = std::min<int64_t>(kMrAvx512, M - m0);
      for (int64_t n = n0; n < n1; n += kNrAvx512) {
        const int64_t nr = std::min<int64_t>(kNrAvx512, n1 - n);
        const TileArgs args{.x = x + m0 * x_stride,
                            .x_stride = x_stride,
                            .w = row_of(job.weight, n),
                            .w_row_bytes = w_row_bytes,
                            .K = K,
                            .bias = job.bias,
                            .n = n,
                            .y = job.y + m0 * job.y_stride,
                            .y_stride = job.y_stride,
                            .accumulate = job.accumulate};
        TileTableAvx512<D>::table[static_cast<std::size_t>(mr - 1)][static_cast<std::size_t>(nr - 1)](args);
      }
    }
  }
}

// ---- AVX-512, one row of x (decode): stream the weights once, in address order -------------------
//
// Each output column is the same chain of operations as in tile_avx512 (so M = 1 gives the same bits
// as any other M). Rows are taken one after another, so a thread reads its weights as one
// sequential stream, which the hardware prefetcher follows best; the out-of-order core overlaps
// the next row's FMA chain with this one's. Measured against 8 rows in lockstep with software
// prefetch (docs/BENCHMARKS.md): a decode step's GEMVs 29.5 vs 44-47 ms on 2 threads.

template <DType D>
LLAISYS_TARGET_AVX512 void gemv_row_avx512(const float* x, const std::byte* w, int64_t K, const float* bias, int64_t n,
                                           float* y, bool accumulate) {
  __m512 acc = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), weights16_avx512<D>(w, k), acc);
  if (k < K) {
    const __mmask16 mask = simd::tail_mask(K - k);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, x + k), weights16_masked_avx512<D>(w, k, mask), acc);
  }
  store_output(simd::reduce_lanes_avx512(acc), bias, n, y + n, accumulate);
}

template <DType D>
void gemv_avx512(const float* x, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  for (int64_t n = n_begin; n < n_end; ++n) {
    gemv_row_avx512<D>(x, row_of(job.weight, n), K, job.bias, n, job.y, job.accumulate);
  }
}

// ---- AVX2: the same 16 lanes as two 8-lane halves -------------------------------------------------

template <DType D>
LLAISYS_TARGET_AVX2 inline __m256 weights8_avx2(const std::byte* row, int64_t k) {
  if constexpr (D == DType::bf16) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  } else if constexpr (D == DType::f16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row + 4 * k));
  }
}

template <DType D, int MR, int NR>
LLAISYS_TARGET_AVX2 void tile_avx2(const TileArgs& a) {
  __m256 lo[MR][NR], hi[MR][NR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) lo[i][j] = hi[i][j] = _mm256_setzero_ps();
  }
  int64_t k = 0;
  for (; k + kLanes <= a.K; k += kLanes) {
    __m256 wlo[NR], whi[NR];
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      wlo[j] = weights8_avx2<D>(a.w + j * a.w_row_bytes, k);
      whi[j] = weights8_avx2<D>(a.w + j * a.w_row_bytes, k + 8);
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 xlo = _mm256_loadu_ps(a.x + i * a.x_stride + k);
      const __m256 xhi = _mm256_loadu_ps(a.x + i * a.x_stride + k + 8);
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        lo[i][j] = _mm256_fmadd_ps(xlo, wlo[j], lo[i][j]);
        hi[i][j] = _mm256_fmadd_ps(xhi, whi[j], hi[i][j]);
      }
    }
  }
  if (k < a.K) {
    // The tail, zero-padded to 16 lanes: padding adds fma(0, 0, acc) = acc, as the masked path does.
    alignas(32) float xt[MR][kLanes] = {};
    alignas(32) float wt[NR][kLanes] = {};
    for (int i = 0; i < MR; ++i) {
      for (int64_t kk = k; kk < a.K; ++kk) xt[i][kk - k] = a.x[i * a.x_stride + kk];
    }
    for (int j = 0; j < NR; ++j) {
      for (int64_t kk = k; kk < a.K; ++kk) wt[j][kk - k] = weight_scalar(a.w + j * a.w_row_bytes, D, kk);
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        lo[i][j] = _mm256_fmadd_ps(_mm256_load_ps(xt[i]), _mm256_load_ps(wt[j]), lo[i][j]);
        hi[i][j] = _mm256_fmadd_ps(_mm256_load_ps(xt[i] + 8), _mm256_load_ps(wt[j] + 8), hi[i][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      store_output(simd::reduce_lanes_avx2(lo[i][j], hi[i][j]), a.bias, a.n + j,
                   a.y + i * a.y_stride + a.n + j, a.accumulate);
    }
  }
}

template <DType D>
void columns_avx2(const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job,
                  int64_t n_begin, int64_t n_end) {
  static constexpr TileFn table[2][2] = {{&tile_avx2<D, 1, 1>, &tile_avx2<D, 1, 2>},
                                         {&tile_avx2<D, 2, 1>, &tile_avx2<D, 2, 2>}};
  const int64_t w_row_bytes = K * static_cast<int64_t>(dtype_size(D));
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kColumnBlock) {
    const int64_t n1 = std::min(n0 + kColumnBlock, n_end);
    for (int64_t m0 = 0; m0 < M; m0 += 2) {
      const int64_t mr = std::min<int64_t>(2, M - m0);
      for (int64_t n = n0; n < n1; n += 2) {
        const int64_t nr = std::min<int64_t>(2, n1 - n);
        const TileArgs args{.x = x + m0 * x_stride,
                            .x_stride = x_stride,
                            .w = row_of(job.weight, n),
                            .w_row_bytes = w_row_bytes,
                            .K = K,
                            .bias = job.bias,
                            .n = n,
                            .y = job.y + m0 * job.y_stride,
                            .y_stride = job.y_stride,
                            .accumulate = job.accumulate};
        table[mr - 1][nr - 1](args);
      }
    }
  }
}

// Threads take contiguous runs of 16-column tiles across all jobs.
constexpr int64_t kTileColumns = 16;
constexpr std::size_t kMaxJobsPerRegion = 8;
// One activation row: the threads stream weights and reuse nothing, so finer chunks only shorten
// the wait for the last one (time spinning in the pool 2.7-3.0% vs 5.4% of the GEMV's with 4 per
// thread, perf over a bf16 decode; docs/BENCHMARKS.md). More rows reuse a chunk's weights: 16 per
// thread measured neutral to 2% slower there (32- and 128-row steps).
constexpr int64_t kStreamingChunksPerThread = 16;

}  // namespace

namespace linear_float {

void columns(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
             int64_t n_end) {
  const DType dtype = job.weight.dtype;
  if (isa == Isa::avx512 && M == 1) {
    if (dtype == DType::bf16) return gemv_avx512<DType::bf16>(x, K, job, n_begin, n_end);
    if (dtype == DType::f16) return gemv_avx512<DType::f16>(x, K, job, n_begin, n_end);
    return gemv_avx512<DType::f32>(x, K, job, n_begin, n_end);
  }
  if (isa == Isa::avx512) {
    if (dtype == DType::bf16) return columns_avx512<DType::bf16>(x, x_stride, M, K, job, n_begin, n_end);
    if (dtype == DType::f16) return columns_avx512<DType::f16>(x, x_stride, M, K, job, n_begin, n_end);
    return columns_avx512<DType::f32>(x, x_stride, M, K, job, n_begin, n_end);
  }
  if (isa == Isa::avx2) {
    if (dtype == DType::bf16) return columns_avx2<DType::bf16>(x, x_stride, M, K, job, n_begin, n_end);
    if (dtype == DType::f16) return columns_avx2<DType::f16>(x, x_stride, M, K, job, n_begin, n_end);
    return columns_avx2<DType::f32>(x, x_stride, M, K, job, n_begin, n_end);
  }
  columns_scalar(x, x_stride, M, K, job, n_begin, n_end);
}

}  // namespace linear_float

void linear(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t M, int64_t K,
            std::span<const LinearJob> jobs) {
  if (M <= 0 || jobs.empty()) return;
  if (jobs.size() > kMaxJobsPerRegion) {
    linear(ctx, x, x_stride, M, K, jobs.first(kMaxJobsPerRegion));
    linear(ctx, x, x_stride, M, K, jobs.subspan(kMaxJobsPerRegion));
    return;
  }
  std::array<int64_t, kMaxJobsPerRegion + 1> first_tile{};
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    first_tile[j + 1] = first_tile[j] + (jobs[j].weight.rows + kTileColumns - 1) / kTileColumns;
  }
  const int64_t num_tiles = first_tile[jobs.size()];
  const int64_t work_per_tile = kTileColumns * K * M;

  // The bf16 dot-product path: the activations are rounded to bf16 once, then every job reads them.
  // Only when every job's weights are bf16 or quantized: a region with f16 or f32 weights stays exact.
  const bool bf16dot = ctx.matmul == MatmulPrecision::bf16 && ctx.isa == Isa::avx512 && bf16dot::supported() &&
                       std::all_of(jobs.begin(), jobs.end(), [](const LinearJob& j) {
                         return j.weight.dtype == DType::bf16 || is_quantized(j.weight.dtype);
                       });
  const uint16_t* xb = nullptr;
  if (bf16dot) {
    thread_local std::vector<uint16_t> panel;
    const int64_t stride = bf16dot::padded_k(K);
    panel.resize(static_cast<std::size_t>(M * stride));
    // The caller's buffer (a worker's thread_local would be its own): the workers write into it.
    uint16_t* out = panel.data();
    // Rows in chunks: cheap next to the products, but a 2,048-token prefill chunk is worth splitting.
    ctx.pool->parallel_for(M, 1, [&](int64_t begin, int64_t end) {
      bf16dot::convert_rows(x, x_stride, K, begin, end, out);
    }, K);
    xb = out;
  }

  // The int8 path: the activations are rounded to 8-bit blocks once, for every job with eligible weights.
  const auto int8_job = [&](const LinearJob& j) { return ctx.int8_quant && int8dot::eligible(j.weight.dtype); };
  const int8dot::RoundedRows xq =
      std::any_of(jobs.begin(), jobs.end(), int8_job) ? int8dot::round_rows(ctx, x, x_stride, M, K) : int8dot::RoundedRows{};

  ctx.pool->parallel_for(num_tiles, 1, [&](int64_t tile_begin, int64_t tile_end) {
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const int64_t begin = std::max(tile_begin, first_tile[j]) - first_tile[j];
      const int64_t end = std::min(tile_end, first_tile[j + 1]) - first_tile[j];
      if (begin >= end) continue;
      const int64_t n_begin = begin * kTileColumns, n_end = std::min(end * kTileColumns, jobs[j].weight.rows);
      if (int8_job(jobs[j])) {
        int8dot::columns(ctx.isa, xq, M, K, jobs[j], n_begin, n_end);
      } else if (bf16dot && is_quantized(jobs[j].weight.dtype)) {
        quant_linear::bf16_columns(xb, M, K, jobs[j], n_begin, n_end);
      } else if (bf16dot) {
        bf16dot::columns(xb, M, K, jobs[j], n_begin, n_end);
      } else if (is_quantized(jobs[j].weight.dtype)) {
        quant_linear::columns(ctx.isa, x, x_stride, M, K, jobs[j], n_begin, n_end);
      } else {
        linear_float::columns(ctx.isa, x, x_stride, M, K, jobs[j], n_begin, n_end);
      }
    }
  }, work_per_tile, M == 1 ? kStreamingChunksPerThread : ThreadPool::kChunksPerThread);
}

}  // namespace llaisys::cpu
