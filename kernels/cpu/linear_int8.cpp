#include "linear_int8.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>

#include "linear_store.hpp"
#include "llaisys/core/memory.hpp"
#include "quant_blocks.hpp"
#include "simd.hpp"

#define LLAISYS_INLINE_AVX512_VNNI \
  inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define LLAISYS_INLINE_AVX512_VNNI_LAMBDA \
  __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace llaisys::cpu::int8dot {
namespace {

using linear_store::store_output;
using simd::kLanes;

// MR rounded rows of x against R weight rows row_step apart.
struct RowArgs {
  const XRecord* x;     // row 0 of x's record of pair 0 (row i's of pair p: x[p * pair_stride + i])
  int64_t pair_stride;  // M
  const float* d;       // row 0's block scales (row stride K / 32)
  int64_t K;
  const uint8_t* w;     // first weight row
  int64_t row_bytes;
  int64_t row_step;
  const float* bias;
  int64_t n;
  float* y;             // row 0 of the job's output
  int64_t y_stride;
  bool accumulate;
};

// Arranged position a (0..63) of a pair: its block (0: b, 1: b + 1) and element within the block.
constexpr int arranged_block(int a) { return (a / 16) % 2; }
constexpr int arranged_element(int a) { return (a / 32) * 16 + a % 16; }

// ---- the scalar form: the definition (linear_int8.hpp) written out -----------------------------

// Element e of a block as ggml's integer (its value without the block's scale).
template <DType D>
int weight_value(const uint8_t* block, int e) {
  if constexpr (D == DType::q8_0) {
    return static_cast<int8_t>(block[2 + e]);
  } else if constexpr (D == DType::q4_0) {
    const uint8_t byte = block[2 + e % 16];
    return static_cast<int>(e < 16 ? byte & 0xF : byte >> 4) - 8;
  } else {
    static_assert(D == DType::q5_0);
    const uint32_t qh = quant_blocks::load_high_bits(block + 2);
    const uint8_t byte = block[6 + e % 16];
    const int low = e < 16 ? byte & 0xF : byte >> 4;
    return (low | static_cast<int>((qh >> e) & 1u) << 4) - 16;
  }
}

template <DType D, int MR>
void rows_scalar(const RowArgs& a) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  const int64_t nb = a.K / kBlock;
  for (int i = 0; i < MR; ++i) {
    const float* d = a.d + i * nb;
    float lanes[kLanes] = {};
    for (int64_t p = 0; p < pairs(a.K); ++p) {
      const int8_t* q = a.x[p * a.pair_stride + i].q;
      for (int l = 0; l < kLanes; ++l) {
        const int64_t b = 2 * p + arranged_block(4 * l);
        if (b >= nb) continue;  // the odd last block's partner: its lanes untouched
        const uint8_t* block = a.w + b * kBytes;
        int32_t dot = 0;
        for (int at = 4 * l; at < 4 * l + 4; ++at) dot += q[at] * weight_value<D>(block, arranged_element(at));
        const float scale = quant_blocks::load_half(block) * d[b];
        lanes[l] = std::fma(scale, static_cast<float>(dot), lanes[l]);
      }
    }
    store_output(simd::reduce_lanes(lanes), a.bias, a.n, a.y + i * a.y_stride + a.n, a.accumulate);
  }
}

// ---- AVX-512 VNNI ------------------------------------------------------------------------------

// A Q4_0 / Q5_0 pair's 64 low nibbles in the arranged order: one 256-bit load of both blocks' 16
// bytes, low nibbles then high nibbles (second block's 16 bytes zero when it is missing).
template <int kQs, bool Pair>
LLAISYS_INLINE_AVX512_VNNI __m512i pair_nibbles(const uint8_t* block, int64_t block_bytes) {
  const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + kQs));
  const __m128i q1 = Pair ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + block_bytes + kQs))
                          : _mm_setzero_si128();
  const __m256i v = _mm256_set_m128i(q1, q0);
  const __m256i nibble = _mm256_set1_epi8(0xF);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, nibble)),
                            _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), 1);
}

LLAISYS_INLINE_AVX512_VNNI float half_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return _cvtsh_ss(bits);
}

// Lanes of block b (l / 4 even) a, lanes of block b + 1 b.
LLAISYS_INLINE_AVX512_VNNI __m512 per_block(float a, float b) {
  return _mm512_mask_blend_ps(0xF0F0, _mm512_set1_ps(a), _mm512_set1_ps(b));
}

template <DType D>
constexpr int64_t kPrefetchBytes = D == DType::q8_0 ? 2048 : 1024;  // as linear_quant.cpp's streams

// A pair of weight blocks ready for vpdpbusd: the 64 values arranged (Q8_0 signed, the others
// unsigned 0..15 / 0..31), the per-lane block scales, and for Q8_0 the lanes' -128 * (sum of w)
// that x's bias to unsigned adds (the others subtract their offset from x's lane sums instead).
struct WeightPair {
  __m512i w;
  __m512 scale;
  __m512i offset;
};

template <DType D, bool Pair>
LLAISYS_INLINE_AVX512_VNNI WeightPair decode_pair(const uint8_t* block) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  WeightPair out;
  out.scale = per_block(half_at(block), Pair ? half_at(block + kBytes) : 0.0f);
  if constexpr (D == DType::q8_0) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
    const __m256i w1 = Pair ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kBytes + 2))
                            : _mm256_setzero_si256();
    // [b 0..15][b 16..31][b+1 0..15][b+1 16..31] -> [b 0..15][b+1 0..15][b 16..31][b+1 16..31]
    out.w = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7),
                                     _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1));
    const __m512i zero = _mm512_setzero_si512();
    out.offset = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(-128), out.w));
  } else if constexpr (D == DType::q4_0) {
    out.w = pair_nibbles<2, Pair>(block, kBytes);
  } else {
    out.w = pair_nibbles<6, Pair>(block, kBytes);
    uint32_t h0, h1 = 0;
    std::memcpy(&h0, block + 2, sizeof(h0));
    if constexpr (Pair) std::memcpy(&h1, block + kBytes + 2, sizeof(h1));
    const uint64_t fifth = (h0 & 0xFFFFu) | static_cast<uint64_t>(h1 & 0xFFFFu) << 16 |
                           static_cast<uint64_t>(h0 >> 16) << 32 | static_cast<uint64_t>(h1 >> 16) << 48;
    out.w = _mm512_mask_add_epi8(out.w, _cvtu64_mask64(fifth), out.w, _mm512_set1_epi8(16));
  }
  return out;
}

// Row i of x's pair p: its values (Q8_0: biased to unsigned), lane scales and, for Q4_0 / Q5_0, the
// accumulator's start (-offset * lane sum of x).
struct XPair {
  __m512i x;
  __m512 scale;
  __m512i start;
};

template <DType D, bool Pair>
LLAISYS_INLINE_AVX512_VNNI XPair load_x(const RowArgs& a, int i, int64_t p) {
  const XRecord& record = a.x[p * a.pair_stride + i];
  XPair out;
  out.x = _mm512_loadu_si512(record.q);
  out.scale = _mm512_loadu_ps(record.scale);
  if constexpr (D == DType::q8_0) {
    out.x = _mm512_xor_si512(out.x, _mm512_set1_epi8(-128));  // x + 128: vpdpbusd's unsigned operand
    out.start = _mm512_setzero_si512();
  } else {
    out.start = _mm512_loadu_si512(record.start[D == DType::q4_0 ? 0 : 1]);
  }
  return out;
}

// acc += one pair of one weight row against one row of x, in the canonical order.
template <DType D, bool Pair>
LLAISYS_INLINE_AVX512_VNNI __m512 multiply(const WeightPair& w, const XPair& x, __m512 acc) {
  constexpr __mmask16 kLanesUsed = Pair ? 0xFFFF : 0x0F0F;
  const __m512i dot = D == DType::q8_0 ? _mm512_dpbusd_epi32(w.offset, x.x, w.w) : _mm512_dpbusd_epi32(x.start, w.w, x.x);
  return _mm512_mask3_fmadd_ps(_mm512_mul_ps(w.scale, x.scale), _mm512_cvtepi32_ps(dot), acc, kLanesUsed);
}

// Pair p (blocks 2 p, 2 p + 1; Pair false: the odd last block alone) into acc.
template <DType D, int MR, int R, bool Pair>
LLAISYS_INLINE_AVX512_VNNI void step(const RowArgs& a, int64_t p, __m512 (&acc)[R][MR]) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  XPair xs[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) xs[i] = load_x<D, Pair>(a, i, p);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const uint8_t* block = a.w + r * a.row_step * a.row_bytes + 2 * p * kBytes;
    for (int64_t offset = 0; offset < 2 * kBytes; offset += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(block) + kPrefetchBytes<D> + offset, _MM_HINT_T0);
    }
    const WeightPair w = decode_pair<D, Pair>(block);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[r][i] = multiply<D, Pair>(w, xs[i], acc[r][i]);
  }
}

// ---- many rows of x: a panel of weight rows decoded once ---------------------------------------

// kPanelColumns weight rows' pairs, decoded by decode_pair into an L1-sized buffer, then every
// group of rows of x multiplies them (the same operations per output as the streaming path).
constexpr int64_t kPanelColumns = 16;  // the scalar form's
// L2 budgets (2 MiB a core here) of a panel of decoded weight rows and a block of x's records: at
// K = 896, 64 rows of each (172 and 229 KiB); at K = 4864, 16 and 24.
constexpr int64_t kPanelBytes = 256 * 1024, kRowBlockBytes = 512 * 1024;
constexpr int kPanelRowsOfX = 4;
constexpr int kPanelWeightRows = 2;  // 8 accumulators beside the rows of x' 12 registers

// A WeightPair in memory (plain bytes: no alignment asked of the buffer).
struct PackedPair {
  int8_t w[64];
  float scale[16];
  int32_t offset[16];
};

LLAISYS_INLINE_AVX512_VNNI void pack(const WeightPair& v, PackedPair& out) {
  _mm512_storeu_si512(out.w, v.w);
  _mm512_storeu_ps(out.scale, v.scale);
  _mm512_storeu_si512(out.offset, v.offset);
}

LLAISYS_INLINE_AVX512_VNNI WeightPair unpack(const PackedPair& in) {
  return {_mm512_loadu_si512(in.w), _mm512_loadu_ps(in.scale), _mm512_loadu_si512(in.offset)};
}

template <DType D>
LLAISYS_TARGET_AVX512_VNNI void decode_panel(const uint8_t* row, int64_t nb, PackedPair* out) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  int64_t p = 0;
  for (; 2 * p + 1 < nb; ++p) pack(decode_pair<D, true>(row + 2 * p * kBytes), out[p]);
  if (2 * p < nb) pack(decode_pair<D, false>(row + 2 * p * kBytes), out[p]);
}

template <int MR, int R>
LLAISYS_INLINE_AVX512_VNNI void zero(__m512 (&acc)[R][MR]) {
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[r][i] = _mm512_setzero_ps();
  }
}

// Output (row i of x, weight row r) is column a.n + r * row_step.
template <int MR, int R>
LLAISYS_INLINE_AVX512_VNNI void store(const __m512 (&acc)[R][MR], const RowArgs& a, int64_t row_step) {
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const int64_t n = a.n + r * row_step;
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      store_output(simd::reduce_lanes_avx512(acc[r][i]), a.bias, n, a.y + i * a.y_stride + n, a.accumulate);
    }
  }
}

template <DType D, int MR, int R>
LLAISYS_TARGET_AVX512_VNNI void panel_rows(const RowArgs& a, const PackedPair* w, int64_t np) {
  __m512 acc[R][MR];
  zero(acc);
  const int64_t nb = a.K / kBlock;
  auto pair_at = [&]<bool Pair>(int64_t p) LLAISYS_INLINE_AVX512_VNNI_LAMBDA {
    XPair xs[MR];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) xs[i] = load_x<D, Pair>(a, i, p);
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
      const WeightPair wp = unpack(w[r * np + p]);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) acc[r][i] = multiply<D, Pair>(wp, xs[i], acc[r][i]);
    }
  };
  int64_t p = 0;
  for (; 2 * p + 1 < nb; ++p) pair_at.template operator()<true>(p);
  if (2 * p < nb) pair_at.template operator()<false>(p);
  store(acc, a, 1);
}

template <DType D, int MR, int R>
LLAISYS_TARGET_AVX512_VNNI void rows_vnni(const RowArgs& a) {
  __m512 acc[R][MR];
  zero(acc);
  const int64_t nb = a.K / kBlock;
  int64_t p = 0;
  for (; 2 * p + 1 < nb; ++p) step<D, MR, R, true>(a, p, acc);
  if (2 * p < nb) step<D, MR, R, false>(a, p, acc);
  store(acc, a, a.row_step);
}

// A per-thread scratch of at least `bytes`, 64-byte aligned (llaisys::AlignedBuffer), grown when short.
std::byte* scratch(AlignedBuffer& buffer, std::size_t bytes) {
  if (buffer.size() < bytes) buffer = AlignedBuffer(bytes);
  return buffer.data();
}

// ---- which rows together ------------------------------------------------------------------------

constexpr int64_t kRowsOfX = 4;     // MR at most
constexpr int kWeightRows = 4;      // R: interleaved weight rows (as linear_quant.cpp's AVX-512 path)

using RowsFn = void (*)(const RowArgs&);
using RowTable = std::array<std::array<RowsFn, 2>, kRowsOfX>;  // [MR - 1][R > 1]

template <DType D>
struct Kernels {
  template <int... Mr>
  static constexpr RowTable vnni_table(std::integer_sequence<int, Mr...>) {
    return {std::array<RowsFn, 2>{&rows_vnni<D, Mr + 1, 1>, &rows_vnni<D, Mr + 1, kWeightRows>}...};
  }
  template <int... Mr>
  static constexpr RowTable scalar_table(std::integer_sequence<int, Mr...>) {
    return {std::array<RowsFn, 2>{&rows_scalar<D, Mr + 1>, &rows_scalar<D, Mr + 1>}...};
  }
  static constexpr RowTable vnni = vnni_table(std::make_integer_sequence<int, kRowsOfX>{});
  static constexpr RowTable scalar = scalar_table(std::make_integer_sequence<int, kRowsOfX>{});
};

using PanelFn = void (*)(const RowArgs&, const PackedPair*, int64_t);

template <DType D>
struct PanelKernels {
  template <int... Mr>
  static constexpr std::array<std::array<PanelFn, 2>, kPanelRowsOfX> make(std::integer_sequence<int, Mr...>) {
    return {std::array<PanelFn, 2>{&panel_rows<D, Mr + 1, 1>, &panel_rows<D, Mr + 1, kPanelWeightRows>}...};
  }
  static constexpr std::array<std::array<PanelFn, 2>, kPanelRowsOfX> table =
      make(std::make_integer_sequence<int, kPanelRowsOfX>{});
};

// Columns [n_begin, n_end) for rows m0 .. m0 + mr - 1; R weight rows at a time where the table has them.
void run_columns(const RowTable& table, bool together, RowArgs args, int64_t mr, int64_t n_begin, int64_t n_end,
                 bool streaming, const WeightMatrix& weight) {
  const auto index = static_cast<std::size_t>(mr - 1);
  int64_t n = n_begin;
  if (together) {
    // Streaming (few rows of x, weights from DRAM): rows n, n + step, ... together, long sequential
    // streams. Otherwise adjacent rows, which stay in cache for the next rows of x.
    args.row_step = streaming ? (n_end - n_begin) / kWeightRows : 1;
    if (args.row_step > 0) {
      const int64_t stop = streaming ? n_begin + args.row_step : n_end - (n_end - n_begin) % kWeightRows;
      for (; n < stop; n += streaming ? 1 : kWeightRows) {
        args.w = weight_row(weight, n);
        args.n = n;
        table[index][1](args);
      }
      if (streaming) n = n_begin + kWeightRows * args.row_step;
    }
    args.row_step = 1;
  }
  for (; n < n_end; ++n) {
    args.w = weight_row(weight, n);
    args.n = n;
    table[index][0](args);
  }
}

template <DType D>
void columns_of(Isa isa, const RoundedRows& x, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
                int64_t n_end) {
  const bool vnni = isa == Isa::avx512 && supported();
  const RowTable& table = vnni ? Kernels<D>::vnni : Kernels<D>::scalar;
  const int64_t nb = K / kBlock, np = pairs(K);
  const RowArgs args{.x = x.records, .pair_stride = M, .d = x.d, .K = K, .w = nullptr, .row_bytes = dtype_bytes(D, K),
                     .row_step = 1, .bias = job.bias, .n = 0, .y = job.y, .y_stride = job.y_stride,
                     .accumulate = job.accumulate};
  auto rows_at = [&](int64_t m0) {
    RowArgs at = args;
    at.x = x.records + m0;
    at.d = x.d + m0 * nb;
    at.y = job.y + m0 * job.y_stride;
    return at;
  };
  if (M <= kRowsOfX) return run_columns(table, vnni, rows_at(0), M, n_begin, n_end, true, job.weight);
  if (vnni) {
    // More rows: blocks of rows of x (their records: 64 rows x 256 bytes a pair) against panels of
    // weight rows decoded once per block (PackedPair: 192 bytes a pair), both in L2; every output
    // is still one kernel call's whole sum. Decoding a panel again for each block of x costs about
    // a sixteenth of the block's products.
    const int64_t panel_rows = std::clamp<int64_t>(kPanelBytes / (np * static_cast<int64_t>(sizeof(PackedPair))) / 2 * 2, 8, 64);
    const int64_t row_block = std::clamp<int64_t>(kRowBlockBytes / (np * static_cast<int64_t>(sizeof(XRecord))) / 4 * 4, 8, 64);
    // On 64-byte boundaries: every vector load of a pair within one cache line.
    thread_local AlignedBuffer buffer;
    auto* const panel =
        reinterpret_cast<PackedPair*>(scratch(buffer, static_cast<std::size_t>(panel_rows * np) * sizeof(PackedPair)));
    for (int64_t block = 0; block < M; block += row_block) {
      const int64_t block_end = std::min(M, block + row_block);
      for (int64_t n0 = n_begin; n0 < n_end; n0 += panel_rows) {
        const int64_t count = std::min(panel_rows, n_end - n0);
        for (int64_t c = 0; c < count; ++c) decode_panel<D>(weight_row(job.weight, n0 + c), nb, panel + c * np);
        for (int64_t m0 = block; m0 < block_end; m0 += kPanelRowsOfX) {
          RowArgs at = rows_at(m0);
          const auto& kernels =
              PanelKernels<D>::table[static_cast<std::size_t>(std::min<int64_t>(kPanelRowsOfX, block_end - m0) - 1)];
          int64_t c = 0;
          for (; c + kPanelWeightRows <= count; c += kPanelWeightRows) {
            at.n = n0 + c;
            kernels[1](at, panel + c * np, np);
          }
          for (; c < count; ++c) {
            at.n = n0 + c;
            kernels[0](at, panel + c * np, np);
          }
        }
      }
    }
    return;
  }
  // The scalar form: a panel of weight rows stays in cache while every group of rows of x passes.
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanelColumns) {
    const int64_t n1 = std::min(n_end, n0 + kPanelColumns);
    for (int64_t m0 = 0; m0 < M; m0 += kRowsOfX) {
      run_columns(table, vnni, rows_at(m0), std::min(kRowsOfX, M - m0), n0, n1, false, job.weight);
    }
  }
}

}  // namespace

bool supported() {
  static const bool has = cpu_has_avx512_vnni();
  return has;
}

bool eligible(DType dtype) { return dtype == DType::q8_0 || dtype == DType::q4_0 || dtype == DType::q5_0; }

namespace {

// One pair of blocks of one row (b = 2 p, 2 p + 1; the second may be missing) into its record and d.
void quantize_pair_scalar(const float* row, int64_t p, int64_t nb, XRecord& record, float* d) {
  int8_t block_q[2][kBlock];
  float block_d[2];
  for (int half = 0; half < 2; ++half) {
    const int64_t b = 2 * p + half;
    std::memset(block_q[half], 0, kBlock);
    block_d[half] = 0.0f;
    if (b >= nb) continue;
    const float* v = row + b * kBlock;
    float amax = 0.0f;
    bool finite = true;
    for (int e = 0; e < kBlock; ++e) {
      finite = finite && std::isfinite(v[e]);
      amax = std::max(amax, std::fabs(v[e]));
    }
    if (!finite) {  // NaN or infinity in the block: its products are NaN
      block_d[half] = NAN;
    } else {
      const float dx = amax / 127.0f, inv = dx > 0.0f ? 1.0f / dx : 0.0f;
      for (int e = 0; e < kBlock; ++e) {
        block_q[half][e] = static_cast<int8_t>(std::nearbyint(std::clamp(v[e] * inv, -127.0f, 127.0f)));
      }
      block_d[half] = dx;
    }
    d[b] = block_d[half];
  }
  for (int at = 0; at < 64; ++at) record.q[at] = block_q[arranged_block(at)][arranged_element(at)];
  for (int l = 0; l < 16; ++l) {
    const int32_t sum = record.q[4 * l] + record.q[4 * l + 1] + record.q[4 * l + 2] + record.q[4 * l + 3];
    record.scale[l] = block_d[arranged_block(4 * l)];
    record.start[0][l] = -8 * sum;
    record.start[1][l] = -16 * sum;
  }
}

// The same with AVX-512 (the same operations on each value: max of |x|, one division, one
// reciprocal, a product, a clamp, round to nearest even), for pairs of two finite blocks; anything
// else goes to the scalar form. A prefill's rows are long: 2.5 M values per linear at K = 4864.
LLAISYS_TARGET_AVX512_VNNI bool quantize_pair_avx512(const float* row, int64_t p, int64_t nb, XRecord& record, float* d) {
  if (2 * p + 1 >= nb) return false;
  const float* v = row + 2 * p * kBlock;
  __m512 x[4];
  for (int j = 0; j < 4; ++j) x[j] = _mm512_loadu_ps(v + 16 * j);
  constexpr int kNotFinite = 0x01 | 0x08 | 0x10 | 0x80;  // QNaN, +inf, -inf, SNaN
  for (int j = 0; j < 4; ++j) {
    if (_mm512_fpclass_ps_mask(x[j], kNotFinite) != 0) return false;
  }
  const __m512 magnitude = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  float dx[2], inv[2];
  for (int half = 0; half < 2; ++half) {
    const __m512 m = _mm512_max_ps(_mm512_and_ps(x[2 * half], magnitude), _mm512_and_ps(x[2 * half + 1], magnitude));
    dx[half] = _mm512_reduce_max_ps(m) / 127.0f;
    inv[half] = dx[half] > 0.0f ? 1.0f / dx[half] : 0.0f;
    d[2 * p + half] = dx[half];
  }
  const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  __m128i bytes[4];
  for (int j = 0; j < 4; ++j) {
    const __m512 scaled = _mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(x[j], _mm512_set1_ps(inv[j / 2])), hi), lo);
    const __m512 rounded = _mm512_roundscale_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    bytes[j] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(rounded));
  }
  // x[0] = b 0..15, x[1] = b 16..31, x[2] = b+1 0..15, x[3] = b+1 16..31: arranged 0, 2, 1, 3.
  const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(bytes[2], bytes[0])),
                                       _mm256_set_m128i(bytes[3], bytes[1]), 1);
  _mm512_storeu_si512(record.q, q);
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), q);
  _mm512_storeu_si512(record.start[0], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 3)));
  _mm512_storeu_si512(record.start[1], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 4)));
  _mm512_storeu_ps(record.scale, _mm512_mask_blend_ps(0xF0F0, _mm512_set1_ps(dx[0]), _mm512_set1_ps(dx[1])));
  return true;
}

}  // namespace

void quantize_rows(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, int64_t begin, int64_t end,
                   XRecord* records, float* d) {
  const int64_t nb = K / kBlock, np = pairs(K);
  const bool vector = isa == Isa::avx512 && supported();
  for (int64_t m = begin; m < end; ++m) {
    const float* row = x + m * x_stride;
    for (int64_t p = 0; p < np; ++p) {
      XRecord& record = records[p * M + m];
      if (!(vector && quantize_pair_avx512(row, p, nb, record, d + m * nb))) {
        quantize_pair_scalar(row, p, nb, record, d + m * nb);
      }
    }
  }
}

RoundedRows round_rows(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t M, int64_t K) {
  const auto record_bytes = static_cast<std::size_t>(M * pairs(K)) * sizeof(XRecord);
  thread_local AlignedBuffer buffer;
  std::byte* base = scratch(buffer, record_bytes + static_cast<std::size_t>(M * (K / kBlock)) * sizeof(float));
  auto* records = reinterpret_cast<XRecord*>(base);
  auto* d = reinterpret_cast<float*>(base + record_bytes);
  ctx.pool->parallel_for(M, 1, [&](int64_t begin, int64_t end) {
    quantize_rows(ctx.isa, x, x_stride, M, K, begin, end, records, d);
  }, K);
  return {.records = records, .d = d};
}

void columns(Isa isa, const RoundedRows& x, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
             int64_t n_end) {
  switch (job.weight.dtype) {
    case DType::q8_0: return columns_of<DType::q8_0>(isa, x, M, K, job, n_begin, n_end);
    case DType::q4_0: return columns_of<DType::q4_0>(isa, x, M, K, job, n_begin, n_end);
    case DType::q5_0: return columns_of<DType::q5_0>(isa, x, M, K, job, n_begin, n_end);
    default: return;
  }
}

}  // namespace llaisys::cpu::int8dot
