#include "linear_quant.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "linear_bf16.hpp"
#include "linear_float.hpp"
#include "linear_store.hpp"
#include "quant.hpp"
#include "quant_avx512.hpp"
#include "quant_blocks.hpp"
#include "simd.hpp"

namespace llaisys::cpu::quant_linear {
namespace {

using linear_store::store_output;
using simd::kLanes;

// MR rows of x against R weight rows row_step apart, K whole blocks.
struct RowArgs {
  const float* x;       // first row of x (f32 mode)
  const uint16_t* xb;   // first row of x rounded to bf16 (bf16 mode: bf16dot::convert_rows)
  int64_t x_stride;
  int64_t K;
  const uint8_t* w;     // first weight row
  int64_t row_bytes;
  int64_t row_step;     // weight rows r = 0, 1, ... are n + r * row_step
  const float* bias;    // null or the job's bias
  int64_t n;            // first output column
  float* y;             // row 0 of the job's output
  int64_t y_stride;
  bool accumulate;
};

// ---- AVX-512: blocks decoded in registers ----------------------------------------------------------
//
// Each weight row keeps one chain of 16-lane FMAs per row of x, in k order: the f32 GEMV's chain on
// the dequantized values. R > 1 interleaves the chains of R rows for the out-of-order core (R read
// streams instead of one).

template <int MR>
struct DotSink {
  const float* x;  // this block's first element in row 0 of x
  int64_t x_stride;
  __m512* acc;     // MR accumulators
  LLAISYS_INLINE_AVX512 void operator()(int v, __m512 w) const {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(x + i * x_stride + kLanes * v), w, acc[i]);
  }
};

// One decoder step of one block into MR accumulators, per mode.
struct ExactStep {
  template <DType D, int MR, int S>
  LLAISYS_INLINE_AVX512 static void run(const uint8_t* block, const typename quant_avx512::Decoder<D>::State& state,
                                        const float* x, int64_t x_stride, __m512* acc) {
    DotSink<MR> sink{x, x_stride, acc};
    quant_avx512::Decoder<D>::template step<S>(block, state, sink);
  }
};

// A step's vectors, kept (in registers, once inlined) for the bf16 mode to pair them.
struct CollectSink {
  __m512 w[4];
  LLAISYS_INLINE_AVX512 void operator()(int v, __m512 vector) { w[v % 4] = vector; }
};

// The bf16 mode (linear_bf16.hpp's canonical order): vectors 2 j and 2 j + 1 of a step (32
// consecutive elements) are rounded to bf16 together (round to nearest even, as the panel path's
// bf16dot::convert_rows),
// and make one vdpbf16ps step with the same 32 elements of each bf16 row of x. (The decoder is
// compiled without AVX512-BF16, which it must run without, so the sink cannot multiply itself:
// GCC inlines an always_inline function only into one whose target options include its own.)
struct Bf16Step {
  template <DType D, int MR, int S>
  LLAISYS_INLINE_AVX512_BF16 static void run(const uint8_t* block,
                                             const typename quant_avx512::Decoder<D>::State& state,
                                             const uint16_t* x, int64_t x_stride, __m512* acc) {
    using Decoder = quant_avx512::Decoder<D>;
    constexpr int kVectors = static_cast<int>(dtype_block_elements(D) / kLanes) / Decoder::kSteps;
    static_assert(kVectors % 2 == 0 && kVectors <= 4);
    CollectSink sink;
    Decoder::template step<S>(block, state, sink);
#pragma GCC unroll 2
    for (int p = 0; p < kVectors; p += 2) {
      const int v = S * kVectors + p;  // the block's vector index of the pair's first half
      const __m512bh pair = _mm512_cvtne2ps_pbh(sink.w[(v + 1) % 4], sink.w[v % 4]);  // v in the low half
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m512i xv = _mm512_loadu_si512(x + i * x_stride + kLanes * v);
        acc[i] = _mm512_dpbf16_ps(acc[i], __builtin_bit_cast(__m512bh, xv), pair);
      }
    }
  }
};

// How far ahead each stream prefetches. The hardware prefetcher alone falls behind on these short,
// interleaved streams (Q6_K, whose loads within a block go back and forth, the most: 1.07x bf16
// against 2.05x with this, 2 threads); about 100 ns of a stream's reading, Q8_0 reading fastest.
// Measured 1, 2, 4 KiB (Zen 5, a decode step's matrices from DRAM).
template <DType D>
constexpr int64_t kPrefetchBytes = D == DType::q8_0 ? 2048 : 1024;

// The loop over blocks, once per mode (quant_rows.inc): the bf16 mode's chain must be compiled for
// AVX512-BF16 to inline Bf16Step, the exact mode's without it, as it runs on CPUs that lack it.
namespace exact_rows {
#define LLAISYS_QUANT_ROWS_INLINE LLAISYS_INLINE_AVX512
#define LLAISYS_QUANT_ROWS_STEP ExactStep
#define LLAISYS_QUANT_ROWS_X(args) (args).x
#include "quant_rows.inc"
}  // namespace exact_rows

namespace bf16_rows {
#define LLAISYS_QUANT_ROWS_INLINE LLAISYS_INLINE_AVX512_BF16
#define LLAISYS_QUANT_ROWS_STEP Bf16Step
#define LLAISYS_QUANT_ROWS_X(args) (args).xb
#include "quant_rows.inc"
}  // namespace bf16_rows

template <DType D, int MR, int R>
LLAISYS_TARGET_AVX512 void rows_avx512(const RowArgs& a) {
  exact_rows::rows<D, MR, R>(a);
}

template <DType D, int MR, int R>
LLAISYS_TARGET_AVX512_BF16 void rows_avx512_bf16(const RowArgs& a) {
  bf16_rows::rows<D, MR, R>(a);
}

// ---- AVX2 and scalar: a chunk of the row decoded into a buffer, then the f32 row code's FMAs ---
//
// Chunks of 256 elements (whole blocks): a 32-element block's values, stored by the vectorized
// decoding in 16-byte pieces and read back at once in 32-byte ones, stalled store forwarding.

constexpr int64_t kChunkElements = 256;

// The same loop twice: compiled for AVX2 (the compiler vectorizes the decoding) and portably.
template <DType D>
int64_t decode_chunk(const uint8_t* row, int64_t k0, int64_t K, float* out) {
  constexpr int64_t kElements = dtype_block_elements(D), kBytes = dtype_block_bytes(D);
  const int64_t count = std::min(kChunkElements, K - k0);
  for (int64_t e = 0; e < count; e += kElements) quant_blocks::decode<D>(row + (k0 + e) / kElements * kBytes, out + e);
  return count;
}

template <DType D>
LLAISYS_TARGET_AVX2 int64_t decode_chunk_avx2(const uint8_t* row, int64_t k0, int64_t K, float* out) {
  constexpr int64_t kElements = dtype_block_elements(D), kBytes = dtype_block_bytes(D);
  const int64_t count = std::min(kChunkElements, K - k0);
  for (int64_t e = 0; e < count; e += kElements) quant_blocks::decode<D>(row + (k0 + e) / kElements * kBytes, out + e);
  return count;
}

template <DType D, int MR, int R>
LLAISYS_TARGET_AVX2 void rows_avx2(const RowArgs& a) {
  alignas(32) float chunk[R][kChunkElements];
  __m256 lo[R][MR], hi[R][MR];
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < MR; ++i) lo[r][i] = hi[r][i] = _mm256_setzero_ps();
  }
  for (int64_t k0 = 0; k0 < a.K; k0 += kChunkElements) {
    int64_t count = 0;
    for (int r = 0; r < R; ++r) count = decode_chunk_avx2<D>(a.w + r * a.row_step * a.row_bytes, k0, a.K, chunk[r]);
    const float* x = a.x + k0;
    for (int64_t v = 0; v < count; v += kLanes) {
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        const __m256 wlo = _mm256_load_ps(chunk[r] + v), whi = _mm256_load_ps(chunk[r] + v + 8);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          lo[r][i] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i * a.x_stride + v), wlo, lo[r][i]);
          hi[r][i] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i * a.x_stride + v + 8), whi, hi[r][i]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const int64_t n = a.n + r * a.row_step;
    for (int i = 0; i < MR; ++i) {
      store_output(simd::reduce_lanes_avx2(lo[r][i], hi[r][i]), a.bias, n, a.y + i * a.y_stride + n, a.accumulate);
    }
  }
}

template <DType D, int MR>
void rows_scalar(const RowArgs& a) {
  float chunk[kChunkElements];
  float lanes[MR][kLanes] = {};
  for (int64_t k0 = 0; k0 < a.K; k0 += kChunkElements) {
    const int64_t count = decode_chunk<D>(a.w, k0, a.K, chunk);
    const float* x = a.x + k0;
    for (int64_t e = 0; e < count; ++e) {
      for (int i = 0; i < MR; ++i) lanes[i][e % kLanes] = std::fma(x[i * a.x_stride + e], chunk[e], lanes[i][e % kLanes]);
    }
  }
  // K is a multiple of 16: no padded lanes to finish.
  for (int i = 0; i < MR; ++i) {
    store_output(simd::reduce_lanes(lanes[i]), a.bias, a.n, a.y + i * a.y_stride + a.n, a.accumulate);
  }
}

// ---- the register path: kRegisterRows rows of x at a time ------------------------------------------

using RowsFn = void (*)(const RowArgs&);
// Weight rows interleaved (R), each a chain of FMAs of its own for the out-of-order core: AVX-512 4
// (measured best against 1, 2 and 3 on Zen 5, a decode step over DRAM-resident weights), AVX2 2
// (its decoding into the buffer, not the chains, bounds it).
constexpr int kRowsAvx512 = 4;
constexpr int kRowsAvx2 = 2;

// [M - 1][0]: one weight row, [M - 1][1]: R of them.
using RowTable = std::array<std::array<RowsFn, 2>, kRegisterRows>;

template <DType D>
struct RowKernels {
  template <int... Mr>
  static constexpr RowTable avx512_table(std::integer_sequence<int, Mr...>) {
    return {std::array<RowsFn, 2>{&rows_avx512<D, Mr + 1, 1>, &rows_avx512<D, Mr + 1, kRowsAvx512>}...};
  }
  template <int... Mr>
  static constexpr RowTable avx2_table(std::integer_sequence<int, Mr...>) {
    return {std::array<RowsFn, 2>{&rows_avx2<D, Mr + 1, 1>, &rows_avx2<D, Mr + 1, kRowsAvx2>}...};
  }
  template <int... Mr>
  static constexpr RowTable scalar_table(std::integer_sequence<int, Mr...>) {
    return {std::array<RowsFn, 2>{&rows_scalar<D, Mr + 1>, &rows_scalar<D, Mr + 1>}...};
  }
  template <int... Mr>
  static constexpr RowTable avx512_bf16_table(std::integer_sequence<int, Mr...>) {
    return {std::array<RowsFn, 2>{&rows_avx512_bf16<D, Mr + 1, 1>, &rows_avx512_bf16<D, Mr + 1, kRowsAvx512>}...};
  }
  static constexpr RowTable avx512 = avx512_table(std::make_integer_sequence<int, kRegisterRows>{});
  static constexpr RowTable avx512_bf16 = avx512_bf16_table(std::make_integer_sequence<int, kRegisterRows>{});
  static constexpr RowTable avx2 = avx2_table(std::make_integer_sequence<int, kRegisterRows>{});
  static constexpr RowTable scalar = scalar_table(std::make_integer_sequence<int, kRegisterRows>{});
};

// The rows of x a job multiplies: f32 (the exact mode), or rounded to bf16 (the bf16 mode: AVX-512 with
// AVX512-BF16 only, xb != null, x unused).
struct Input {
  Isa isa;
  const float* x;
  const uint16_t* xb;
  int64_t x_stride;
};

template <DType D>
void register_columns(const Input& in, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  const Isa isa = in.isa;
  const RowTable& table = in.xb != nullptr      ? RowKernels<D>::avx512_bf16
                          : isa == Isa::avx512 ? RowKernels<D>::avx512
                          : isa == Isa::avx2   ? RowKernels<D>::avx2
                                               : RowKernels<D>::scalar;
  const int64_t rows_together = isa == Isa::avx512 ? kRowsAvx512 : isa == Isa::avx2 ? kRowsAvx2 : 1;
  for (int64_t m0 = 0; m0 < M; m0 += kRegisterRows) {
    const auto mr = static_cast<std::size_t>(std::min(kRegisterRows, M - m0) - 1);
    RowArgs args{.x = in.x == nullptr ? nullptr : in.x + m0 * in.x_stride,
                 .xb = in.xb == nullptr ? nullptr : in.xb + m0 * in.x_stride,
                 .x_stride = in.x_stride, .K = K, .w = nullptr, .row_bytes = dtype_bytes(D, K),
                 .row_step = 1, .bias = job.bias, .n = 0, .y = job.y + m0 * job.y_stride, .y_stride = job.y_stride,
                 .accumulate = job.accumulate};
    int64_t n = n_begin;
    if (rows_together > 1) {
      // Rows n, n + step, n + 2 step, ... together: long sequential streams (rows side by side
      // would make every stream one row long, which the hardware prefetcher follows poorly).
      args.row_step = (n_end - n_begin) / rows_together;
      for (; n < n_begin + args.row_step; ++n) {
        args.w = weight_row(job.weight, n);
        args.n = n;
        table[mr][1](args);
      }
      n = n_begin + rows_together * args.row_step;
      args.row_step = 1;
    }
    for (; n < n_end; ++n) {
      args.w = weight_row(job.weight, n);
      args.n = n;
      table[mr][0](args);
    }
  }
}

// ---- the panel path: dequantized weight rows through the f32 tiles --------------------------------

// f32 panel size: its rows stay in L2 while every tile of x passes (linear.cpp blocks 64 columns).
constexpr int64_t kPanelBytes = 512 * 1024;  // 128 KiB and 1 MiB measured no different at M = 64
constexpr int64_t kMaxPanelRows = 64;

void panel_columns(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job,
                   int64_t n_begin, int64_t n_end) {
  thread_local std::vector<float> panel;
  const int64_t rows = std::clamp<int64_t>(kPanelBytes / (4 * K) / 4 * 4, 4, kMaxPanelRows);
  panel.resize(static_cast<std::size_t>(rows * K));
  for (int64_t n0 = n_begin; n0 < n_end; n0 += rows) {
    const int64_t count = std::min(rows, n_end - n0);
    dequantize(isa, job.weight.dtype, weight_row(job.weight, n0), count * K, panel.data());
    const LinearJob part{.weight = {.data = panel.data(), .dtype = DType::f32, .rows = count, .cols = K},
                         .bias = job.bias == nullptr ? nullptr : job.bias + n0,
                         .y = job.y + n0,
                         .y_stride = job.y_stride,
                         .accumulate = job.accumulate};
    linear_float::columns(isa, x, x_stride, M, K, part, 0, count);
  }
}

// The bf16 mode's panel: dequantized as above, rounded to bf16 as the activations are
// (bf16dot::convert_rows: round to nearest even, the register path's rounding), then the bf16 tiles.
void panel_columns_bf16(const uint16_t* xb, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
                        int64_t n_end) {
  thread_local std::vector<float> panel;
  thread_local std::vector<uint16_t> rounded;
  const int64_t rows = std::clamp<int64_t>(kPanelBytes / (2 * K) / 4 * 4, 4, kMaxPanelRows);
  panel.resize(static_cast<std::size_t>(rows * K));
  rounded.resize(static_cast<std::size_t>(rows * K));
  for (int64_t n0 = n_begin; n0 < n_end; n0 += rows) {
    const int64_t count = std::min(rows, n_end - n0);
    dequantize(Isa::avx512, job.weight.dtype, weight_row(job.weight, n0), count * K, panel.data());
    bf16dot::convert_rows(panel.data(), K, K, 0, count, rounded.data());  // padded_k(K) == K: whole blocks
    const LinearJob part{.weight = {.data = rounded.data(), .dtype = DType::bf16, .rows = count, .cols = K},
                         .bias = job.bias == nullptr ? nullptr : job.bias + n0,
                         .y = job.y + n0,
                         .y_stride = job.y_stride,
                         .accumulate = job.accumulate};
    bf16dot::columns(xb, M, K, part, 0, count);
  }
}

// Up to how many rows of x the register path beats the panel path: its decoding is repeated for
// every kRegisterRows rows, the panel's f32 tiles read twice the bytes of bf16 ones. Measured on
// Zen 5 (one thread, a decode step's shapes): AVX-512 with M = 8, 16, 32 against the panel path.
int64_t register_rows_limit(Isa isa, DType dtype) {
  if (isa != Isa::avx512) return kRegisterRows;
  return dtype == DType::q5_k || dtype == DType::q6_k ? 2 * kRegisterRows : 4 * kRegisterRows;
}

void register_columns(const Input& in, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  switch (job.weight.dtype) {
    case DType::q8_0: return register_columns<DType::q8_0>(in, M, K, job, n_begin, n_end);
    case DType::q4_0: return register_columns<DType::q4_0>(in, M, K, job, n_begin, n_end);
    case DType::q4_1: return register_columns<DType::q4_1>(in, M, K, job, n_begin, n_end);
    case DType::q5_0: return register_columns<DType::q5_0>(in, M, K, job, n_begin, n_end);
    case DType::q5_1: return register_columns<DType::q5_1>(in, M, K, job, n_begin, n_end);
    case DType::q4_k: return register_columns<DType::q4_k>(in, M, K, job, n_begin, n_end);
    case DType::q5_k: return register_columns<DType::q5_k>(in, M, K, job, n_begin, n_end);
    case DType::q6_k: return register_columns<DType::q6_k>(in, M, K, job, n_begin, n_end);
    default: return;
  }
}

}  // namespace

void columns(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
             int64_t n_end) {
  if (M > register_rows_limit(isa, job.weight.dtype)) return panel_columns(isa, x, x_stride, M, K, job, n_begin, n_end);
  register_columns(Input{.isa = isa, .x = x, .xb = nullptr, .x_stride = x_stride}, M, K, job, n_begin, n_end);
}

void bf16_columns(const uint16_t* xb, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  if (M > register_rows_limit(Isa::avx512, job.weight.dtype)) {
    return panel_columns_bf16(xb, M, K, job, n_begin, n_end);
  }
  register_columns(Input{.isa = Isa::avx512, .x = nullptr, .xb = xb, .x_stride = bf16dot::padded_k(K)}, M, K, job,
                   n_begin, n_end);
}

}  // namespace llaisys::cpu::quant_linear
