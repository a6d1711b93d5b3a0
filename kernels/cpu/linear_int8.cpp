#include "linear_int8.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "linear_store.hpp"
#include "llaisys/core/memory.hpp"
#include "quant_blocks.hpp"
#include "simd.hpp"

#define LLAISYS_INLINE_AVX512_INT8 \
  inline __attribute__((always_inline,                                                                   \
                        target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx512bitalg,avx2,fma,f16c")))

namespace llaisys::cpu::int8dot {
namespace {

using linear_store::store_output;

// Arranged position a (0..63) of a pair: its block (0: b, 1: b + 1) and element within the block.
constexpr int arranged_block(int a) { return (a / 16) % 2; }
constexpr int arranged_element(int a) { return (a / 32) * 16 + a % 16; }
// The inverse: element e of the pair's block `half`.
constexpr int arranged_at(int half, int e) { return (e / 16) * 32 + half * 16 + e % 16; }

// Which start (linear_int8.hpp) a weight type's unsigned values need.
template <DType D>
constexpr int kOffsetKind = D == DType::q4_0 ? 0 : D == DType::q5_0 ? 1 : 2;
constexpr int32_t kOffsets[kOffsetKinds] = {8, 16, 128};

// A per-thread scratch of at least `bytes`, 64-byte aligned (llaisys::AlignedBuffer), grown when short.
std::byte* scratch(AlignedBuffer& buffer, std::size_t bytes) {
  if (buffer.size() < bytes) buffer = AlignedBuffer(bytes);
  return buffer.data();
}

// Where a kernel finds its rows of x: row i's record of pair p is records[p * M + i], its block
// scales d[i * nb ...], its starts start[i * nb ...] (of the weight type's kind).
struct XRows {
  const XRecord* records;
  int64_t M;
  const float* d;
  const int32_t* start;
  int64_t nb;
};

XRows rows_of(const RoundedRows& x, int64_t M, int64_t nb, int kind, int64_t m0) {
  return {.records = x.records + m0, .M = M, .d = x.d + m0 * nb, .start = x.start + (kind * M + m0) * nb, .nb = nb};
}

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

template <DType D>
void columns_scalar(const XRows& x, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  const int64_t nb = K / kBlock;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = n_begin; n < n_end; ++n) {
      const uint8_t* row = weight_row(job.weight, n);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const int8_t* q = x.records[(b / 2) * x.M + m].q;
        int32_t dot = 0;
        for (int e = 0; e < kBlock; ++e) {
          dot += q[arranged_at(static_cast<int>(b % 2), e)] * weight_value<D>(row + b * kBytes, e);
        }
        const float scale = quant_blocks::load_half(row + b * kBytes) * x.d[m * nb + b];
        acc = std::fma(scale, static_cast<float>(dot), acc);
      }
      store_output(acc, job.bias, n, job.y + m * job.y_stride + n, job.accumulate);
    }
  }
}

// ---- AVX-512 (VNNI, VBMI, BITALG) ----------------------------------------------------------------

// 16 weight rows' pair p: vector j holds dword j (arranged bytes 4 j .. 4 j + 3, all of block
// b + (j / 4) % 2) of each row in lane r, the weights unsigned; scale[h][r] is row r's dw of block
// b + h (0 for a missing block).
constexpr int kGroupRows = 16;
struct alignas(64) GroupPair {
  int32_t w[16][kGroupRows];
  float scale[2][kGroupRows];
};

// Byte indices for vpermb / vpshufbitqmb, made at compile time.
struct ByteIndex {
  alignas(64) int8_t v[64];
};
// The bytes a Q4_0 / Q5_0 pair's nibbles come from, in the arranged order: its two blocks' 16 quant
// bytes (at kQs in each block), twice (low nibbles, then high nibbles).
template <int kQs, int kBytes>
constexpr ByteIndex make_nibble_sources() {
  ByteIndex index{};
  for (int a = 0; a < 64; ++a) index.v[a] = static_cast<int8_t>(arranged_block(a) * kBytes + kQs + a % 16);
  return index;
}
template <int kQs, int kBytes>
inline constexpr ByteIndex kNibbleSources = make_nibble_sources<kQs, kBytes>();
// A Q5_0 pair's fifth bits: with qh of block b in bits 0-31 and qh of b + 1 in bits 32-63 of every
// qword, arranged position a takes bit 32 * (its block) + (its element).
constexpr ByteIndex make_fifth_bits() {
  ByteIndex index{};
  for (int a = 0; a < 64; ++a) index.v[a] = static_cast<int8_t>(32 * arranged_block(a) + arranged_element(a));
  return index;
}
inline constexpr ByteIndex kFifthBits = make_fifth_bits();

// One row's pair of blocks as 64 unsigned bytes in the arranged order (Q8_0: q + 128, Q4_0: q,
// Q5_0: q; the offsets go into x's starts). Q4_0 / Q5_0: one masked load of the pair (36 / 44
// bytes, nothing read past them), vpermb into place, the high nibbles shifted down, and Q5_0's
// fifth bits added by mask.
template <DType D, bool Pair>
LLAISYS_INLINE_AVX512_INT8 __m512i pair_bytes(const uint8_t* block) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  if constexpr (D == DType::q8_0) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
    const __m256i w1 = Pair ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kBytes + 2))
                            : _mm256_setzero_si256();
    // [b 0..15][b 16..31][b+1 0..15][b+1 16..31] -> [b 0..15][b+1 0..15][b 16..31][b+1 16..31]
    const __m512i w = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7),
                                               _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1));
    return _mm512_xor_si512(w, _mm512_set1_epi8(-128));  // q + 128 as an unsigned byte
  } else {
    constexpr int kQs = D == DType::q4_0 ? 2 : 6;
    const __m512i v = _mm512_maskz_loadu_epi8(_cvtu64_mask64((uint64_t{1} << ((Pair ? 2 : 1) * kBytes)) - 1), block);
    const __m512i bytes = _mm512_permutexvar_epi8(_mm512_load_si512(kNibbleSources<kQs, static_cast<int>(kBytes)>.v), v);
    // Bytes 32..63 (words 16..31) hold the high nibbles.
    const __m512i low = _mm512_and_si512(_mm512_mask_srli_epi16(bytes, 0xFFFF0000u, bytes, 4), _mm512_set1_epi8(0x0F));
    if constexpr (D == DType::q4_0) {
      return low;
    } else {
      // Every qword: qh of block b (bytes 2..5), qh of b + 1 (bytes 24..27; 0 when missing).
      const __m512i qh = _mm512_permutexvar_epi8(_mm512_set1_epi64(0x1B1A191805040302ll), v);
      const __mmask64 fifth = _mm512_bitshuffle_epi64_mask(qh, _mm512_load_si512(kFifthBits.v));
      return _mm512_mask_add_epi8(low, fifth, low, _mm512_set1_epi8(16));
    }
  }
}

// v[r] (row r's 16 dwords) -> out[j] (dword j of rows 0..15): a 16 x 16 transpose of 32-bit words.
LLAISYS_INLINE_AVX512_INT8 void transpose16(const __m512i (&v)[16], int32_t (*out)[kGroupRows]) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // t[2 i], t[2 i + 1]: rows 2 i, 2 i + 1 interleaved by dword
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  // u[4 g + c]: rows 4 g .. 4 g + 3, dwords c, c + 4, c + 8, c + 12 in its four 128-bit lanes.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i a = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), b = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xDD);
    const __m512i e = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88), f = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xDD);
    _mm512_store_si512(out[c], _mm512_shuffle_i32x4(a, e, 0x88));
    _mm512_store_si512(out[c + 8], _mm512_shuffle_i32x4(a, e, 0xDD));
    _mm512_store_si512(out[c + 4], _mm512_shuffle_i32x4(b, f, 0x88));
    _mm512_store_si512(out[c + 12], _mm512_shuffle_i32x4(b, f, 0xDD));
  }
}

template <DType D>
constexpr int64_t kPrefetchBytes = D == DType::q8_0 ? 1024 : 512;

// Pair p of 16 rows (rows[r]: each row's first byte) into `out`.
template <DType D, bool Pair>
LLAISYS_INLINE_AVX512_INT8 void decode_group_pair(const uint8_t* const (&rows)[kGroupRows], int64_t p, GroupPair& out) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  __m512i v[kGroupRows];
  alignas(32) uint16_t half[2][kGroupRows];
#pragma GCC unroll 16
  for (int r = 0; r < kGroupRows; ++r) {
    const uint8_t* block = rows[r] + 2 * p * kBytes;
    _mm_prefetch(reinterpret_cast<const char*>(block) + kPrefetchBytes<D>, _MM_HINT_T0);
    v[r] = pair_bytes<D, Pair>(block);
    std::memcpy(&half[0][r], block, sizeof(uint16_t));
    if constexpr (Pair) {
      std::memcpy(&half[1][r], block + kBytes, sizeof(uint16_t));
    } else {
      half[1][r] = 0;
    }
  }
  transpose16(v, out.w);
  _mm512_store_ps(out.scale[0], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(half[0]))));
  _mm512_store_ps(out.scale[1], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(half[1]))));
}

// Rows n0 .. n0 + valid - 1 of the weights (a short group repeats its last row) into np GroupPairs.
template <DType D>
LLAISYS_TARGET_AVX512_INT8 void decode_group(const WeightMatrix& w, int64_t n0, int64_t valid, int64_t nb,
                                             GroupPair* out) {
  const uint8_t* rows[kGroupRows];
  for (int r = 0; r < kGroupRows; ++r) rows[r] = weight_row(w, n0 + std::min<int64_t>(r, valid - 1));
  int64_t p = 0;
  for (; 2 * p + 1 < nb; ++p) decode_group_pair<D, true>(rows, p, out[p]);
  if (2 * p < nb) decode_group_pair<D, false>(rows, p, out[p]);
}

// acc[i] (row i of x, the group's 16 outputs in the lanes) += pair p, in the canonical order.
template <int MR, bool Pair>
LLAISYS_INLINE_AVX512_INT8 void multiply_pair(const GroupPair& g, const XRows& x, int64_t p, __m512 (&acc)[MR]) {
  const int64_t b = 2 * p;
  __m512i sum[2][MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    sum[0][i] = _mm512_set1_epi32(x.start[i * x.nb + b]);
    if constexpr (Pair) sum[1][i] = _mm512_set1_epi32(x.start[i * x.nb + b + 1]);
  }
  const XRecord* records = x.records + p * x.M;
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    const int half = (j / 4) % 2;
    if (!Pair && half == 1) continue;
    const __m512i w = _mm512_load_si512(g.w[j]);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      int32_t q;
      std::memcpy(&q, records[i].q + 4 * j, sizeof(q));
      sum[half][i] = _mm512_dpbusd_epi32(sum[half][i], w, _mm512_set1_epi32(q));
    }
  }
#pragma GCC unroll 2
  for (int half = 0; half < (Pair ? 2 : 1); ++half) {
    const __m512 dw = _mm512_load_ps(g.scale[half]);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[i * x.nb + b + half]));
      acc[i] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(sum[half][i]), acc[i]);
    }
  }
}

// store_output's operations, 16 columns at a time: sum + bias, then y + that (acc[i]: row i of y).
template <int MR>
LLAISYS_INLINE_AVX512_INT8 void store_group(const __m512 (&acc)[MR], int64_t n0, int64_t valid, const LinearJob& job,
                                            float* y) {
  const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
  const __m512 bias = job.bias != nullptr ? _mm512_maskz_loadu_ps(mask, job.bias + n0) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    float* out = y + i * job.y_stride + n0;
    __m512 v = job.bias != nullptr ? _mm512_add_ps(acc[i], bias) : acc[i];
    if (job.accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, out), v);
    _mm512_mask_storeu_ps(out, mask, v);
  }
}

// MR rows of x against one decoded group: outputs n0 .. n0 + valid - 1 of those rows.
template <int MR>
LLAISYS_TARGET_AVX512_INT8 void group_rows(const GroupPair* g, const XRows& x, int64_t n0, int64_t valid,
                                           const LinearJob& job, float* y) {
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; 2 * p + 1 < x.nb; ++p) multiply_pair<MR, true>(g[p], x, p, acc);
  if (2 * p < x.nb) multiply_pair<MR, false>(g[p], x, p, acc);
  store_group(acc, n0, valid, job, y);
}

// ---- few rows of x (decode): weight rows streamed, integer sums reduced into the lanes ---------

// With one to four rows of x a decoded panel is used once, and transposing it costs more than the
// products; instead each weight row's pair goes into vpdpbusd against x's arranged record (lane l:
// 4 products of block b + (l / 4) % 2), and a tree of shuffles sums 16 rows' lanes into each
// block's integers with the rows in the lanes, row r in lane lane_of_row(r) (then + start, the same
// integers as the panel's; the f32 operations that follow are the canonical ones).
constexpr int lane_of_row(int r) { return (r & 8) | ((r & 1) << 2) | ((r >> 1) & 3); }

// [a: block b | a: block b + 1 | c: block b | c: block b + 1], 4 partial sums each.
LLAISYS_INLINE_AVX512_INT8 __m512i fold_halves(__m512i a, __m512i c) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(a, c, 0x44), _mm512_shuffle_i32x4(a, c, 0xEE));
}
// Two folds (rows r0, r1 and r2, r3) -> 128-bit lanes [r0 b, r2 b][r0 b+1, r2 b+1][r1 b, r3 b][r1 b+1, r3 b+1], 2 sums each.
LLAISYS_INLINE_AVX512_INT8 __m512i fold_quarters(__m512i f1, __m512i f2) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(f1, f2), _mm512_unpackhi_epi64(f1, f2));
}
// Rows 0-3 and 4-7 -> lanes [0 2 4 6 | b][0 2 4 6 | b+1][1 3 5 7 | b][1 3 5 7 | b+1], whole sums.
LLAISYS_INLINE_AVX512_INT8 __m512i fold_pairs(__m512i g1, __m512i g2) {
  const __m512 a = _mm512_castsi512_ps(g1), c = _mm512_castsi512_ps(g2);
  return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(a, c, 0x88)),
                          _mm512_castps_si512(_mm512_shuffle_ps(a, c, 0xDD)));
}

template <DType D, int MR, bool Pair>
LLAISYS_INLINE_AVX512_INT8 void stream_pair(const uint8_t* const (&rows)[kGroupRows], const XRows& x, int64_t p,
                                            __m512 (&acc)[MR]) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  const XRecord* records = x.records + p * x.M;
  __m512i xq[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) xq[i] = _mm512_load_si512(records[i].q);
  alignas(32) uint16_t half[2][kGroupRows];
  __m512i h[2][MR], g[2][MR];
#pragma GCC unroll 8
  for (int quarter = 0; quarter < 4; ++quarter) {
    __m512i f[2][MR];
#pragma GCC unroll 2
    for (int two = 0; two < 2; ++two) {
      __m512i w[2];
#pragma GCC unroll 2
      for (int k = 0; k < 2; ++k) {
        const int r = 4 * quarter + 2 * two + k;
        const uint8_t* block = rows[r] + 2 * p * kBytes;
        w[k] = pair_bytes<D, Pair>(block);
        std::memcpy(&half[0][lane_of_row(r)], block, sizeof(uint16_t));
        if constexpr (Pair) {
          std::memcpy(&half[1][lane_of_row(r)], block + kBytes, sizeof(uint16_t));
        } else {
          half[1][lane_of_row(r)] = 0;
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m512i zero = _mm512_setzero_si512();
        f[two][i] = fold_halves(_mm512_dpbusd_epi32(zero, w[0], xq[i]), _mm512_dpbusd_epi32(zero, w[1], xq[i]));
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m512i quarter_sums = fold_quarters(f[0][i], f[1][i]);
      if (quarter % 2 == 0) {
        g[quarter / 2][i] = quarter_sums;
      } else {
        h[quarter / 2][i] = fold_pairs(g[quarter / 2][i], quarter_sums);
      }
    }
  }
  const int64_t b = 2 * p;
#pragma GCC unroll 2
  for (int k = 0; k < (Pair ? 2 : 1); ++k) {
    const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(half[k])));
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      // Lanes [0 2 4 6 | 1 3 5 7] of h[0] and of h[1]: block b (0x88) or b + 1 (0xDD), an immediate either way.
      const __m512i block_sums =
          k == 0 ? _mm512_shuffle_i32x4(h[0][i], h[1][i], 0x88) : _mm512_shuffle_i32x4(h[0][i], h[1][i], 0xDD);
      const __m512i sums = _mm512_add_epi32(block_sums, _mm512_set1_epi32(x.start[i * x.nb + b + k]));
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[i * x.nb + b + k]));
      acc[i] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(sums), acc[i]);
    }
  }
}

// Groups of adjacent rows up to this size have the next group fetched into L1 (48 KiB here) while
// they are read: their rows are too short for the hardware prefetchers to follow 16 of them. Longer
// rows (K = 4864: 82 KB a Q8_0 group) they do follow, and fetching ahead only got in the way (the
// qwen2-0.5b decode's ffn_down in Q8_0, one-row GEMV, 2 threads: 4.7-4.8 ms a token without,
// 7.2-7.8 with the next group fetched into L1 or L2, 4.9-5.3 on the exact path).
constexpr int64_t kFetchedGroupBytes = 16 * 1024;
// Far-apart rows (row_step > 1): each row is a stream of its own, fetched this far ahead.
template <DType D>
constexpr int64_t kStreamAhead = D == DType::q8_0 ? 2048 : 1024;

// Outputs n0 + r * row_step (r < valid) of rows 0 .. MR - 1 of x, the weight rows streamed: 16
// adjacent rows (row_step 1) or 16 rows row_step apart, each the start of a long run of rows read
// in turn (columns_vnni; what Q8_0 needs to read at the memory's rate).
template <DType D, int MR>
LLAISYS_TARGET_AVX512_INT8 void stream_group(const WeightMatrix& weight, int64_t n0, int64_t row_step, int64_t valid,
                                             const XRows& x, const LinearJob& job, float* y) {
  constexpr int64_t kBytes = dtype_block_bytes(D);
  const uint8_t* rows[kGroupRows];
  for (int r = 0; r < kGroupRows; ++r) rows[r] = weight_row(weight, n0 + std::min<int64_t>(r, valid - 1) * row_step);
  __m512 acc[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  // Adjacent rows are one run of bytes, and so are the next group's: fetched ahead in sequence
  // (one stream for the memory system, rather than 16 strided ones). Measured, model decode:
  // Q4_K_M 29 tokens/s without it against 35; Q4_0 37 with each row fetched 512 bytes ahead
  // instead, against 43-47; two groups ahead, or into L2, no better; each row read whole in turn,
  // its lane vectors kept for the reduction, slower still.
  const int64_t group_bytes = kGroupRows * dtype_bytes(D, x.nb * kBlock);
  const char* ahead = reinterpret_cast<const char*>(rows[0]) + group_bytes;
  const int64_t np = pairs(x.nb * kBlock);
  const int64_t lines_per_pair = (group_bytes / 64 + np - 1) / np;
  const bool fetch_group = row_step == 1 && group_bytes <= kFetchedGroupBytes;
  int64_t p = 0;
  for (; 2 * p + 1 < x.nb; ++p) {
    if (row_step > 1) {
      for (const uint8_t* row : rows) {
        _mm_prefetch(reinterpret_cast<const char*>(row) + 2 * p * kBytes + kStreamAhead<D>, _MM_HINT_T0);
      }
    } else if (fetch_group) {
      for (int64_t l = 0; l < lines_per_pair; ++l) _mm_prefetch(ahead + (p * lines_per_pair + l) * 64, _MM_HINT_T0);
    }
    stream_pair<D, MR, true>(rows, x, p, acc);
  }
  if (2 * p < x.nb) stream_pair<D, MR, false>(rows, x, p, acc);
  if (row_step == 1) {
    const __m512i back = _mm512_setr_epi32(lane_of_row(0), lane_of_row(1), lane_of_row(2), lane_of_row(3),
                                           lane_of_row(4), lane_of_row(5), lane_of_row(6), lane_of_row(7),
                                           lane_of_row(8), lane_of_row(9), lane_of_row(10), lane_of_row(11),
                                           lane_of_row(12), lane_of_row(13), lane_of_row(14), lane_of_row(15));
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_permutexvar_ps(back, acc[i]);
    store_group(acc, n0, valid, job, y);
    return;
  }
  // store_output per column, the same operations as store_group's.
  alignas(64) float sums[MR][kGroupRows];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) _mm512_store_ps(sums[i], acc[i]);
  for (int i = 0; i < MR; ++i) {
    for (int r = 0; r < valid; ++r) {
      const int64_t n = n0 + r * row_step;
      store_output(sums[i][lane_of_row(r)], job.bias, n, y + i * job.y_stride + n, job.accumulate);
    }
  }
}

constexpr int kTileRows = 4;  // rows of x per kernel call: 2 x 4 integer sums, 4 accumulators
using GroupFn = void (*)(const GroupPair*, const XRows&, int64_t, int64_t, const LinearJob&, float*);
constexpr GroupFn kGroupKernels[kTileRows] = {&group_rows<1>, &group_rows<2>, &group_rows<3>, &group_rows<4>};

// L2 budgets (2 MiB a core here) of the decoded panel and of a block of x's records: at K = 896
// (14 pairs) 14 groups and all 512 rows of a prefill; at K = 4864 (76 pairs) 2 groups and 104 rows.
constexpr int64_t kPanelBytes = 256 * 1024, kRowBlockBytes = 512 * 1024;

template <DType D>
struct StreamKernels {
  using Fn = void (*)(const WeightMatrix&, int64_t, int64_t, int64_t, const XRows&, const LinearJob&, float*);
  static constexpr Fn table[kTileRows] = {&stream_group<D, 1>, &stream_group<D, 2>, &stream_group<D, 3>,
                                          &stream_group<D, 4>};
};

template <DType D>
void columns_vnni(const RoundedRows& rounded, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
                  int64_t n_end) {
  const int64_t nb = K / kBlock, np = pairs(K);
  if (M <= kTileRows) {
    const XRows x = rows_of(rounded, M, nb, kOffsetKind<D>, 0);
    // Q8_0: rows n, n + step, ..., n + 15 step together, n running over the first step rows (16
    // long runs, as the exact path's four: 1.2x its decode; adjacent rows ran at 0.85-0.9x). The
    // 4- and 5-bit types measured 10-15% better with adjacent rows (their pairs are 36-44 bytes).
    const int64_t step = D == DType::q8_0 ? (n_end - n_begin) / kGroupRows : 0;
    int64_t n = n_begin;
    if (step >= 2) {
      for (; n < n_begin + step; ++n) StreamKernels<D>::table[M - 1](job.weight, n, step, kGroupRows, x, job, job.y);
      n = n_begin + kGroupRows * step;
    }
    for (int64_t n0 = n; n0 < n_end; n0 += kGroupRows) {
      StreamKernels<D>::table[M - 1](job.weight, n0, 1, std::min<int64_t>(kGroupRows, n_end - n0), x, job, job.y);
    }
    return;
  }
  const int64_t group_bytes = np * static_cast<int64_t>(sizeof(GroupPair));
  const int64_t panel_groups = std::max<int64_t>(1, kPanelBytes / group_bytes);
  const int64_t row_block = std::max<int64_t>(kTileRows, kRowBlockBytes / (np * 64) / kTileRows * kTileRows);
  thread_local AlignedBuffer buffer;
  const int64_t groups = (n_end - n_begin + kGroupRows - 1) / kGroupRows;
  const int64_t panel_size = std::min(panel_groups, groups);
  auto* const panel = reinterpret_cast<GroupPair*>(scratch(buffer, static_cast<std::size_t>(panel_size * group_bytes)));
  for (int64_t block = 0; block < M; block += row_block) {
    const int64_t block_end = std::min(M, block + row_block);
    for (int64_t g0 = 0; g0 < groups; g0 += panel_size) {
      const int64_t count = std::min(panel_size, groups - g0);
      for (int64_t g = 0; g < count; ++g) {
        const int64_t n0 = n_begin + (g0 + g) * kGroupRows;
        decode_group<D>(job.weight, n0, std::min<int64_t>(kGroupRows, n_end - n0), nb, panel + g * np);
      }
      for (int64_t m0 = block; m0 < block_end; m0 += kTileRows) {
        const int64_t mr = std::min<int64_t>(kTileRows, block_end - m0);
        const XRows x = rows_of(rounded, M, nb, kOffsetKind<D>, m0);
        for (int64_t g = 0; g < count; ++g) {
          const int64_t n0 = n_begin + (g0 + g) * kGroupRows;
          kGroupKernels[mr - 1](panel + g * np, x, n0, std::min<int64_t>(kGroupRows, n_end - n0), job,
                                job.y + m0 * job.y_stride);
        }
      }
    }
  }
}

template <DType D>
void columns_of(Isa isa, const RoundedRows& x, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
                int64_t n_end) {
  if (isa == Isa::avx512 && supported()) return columns_vnni<D>(x, M, K, job, n_begin, n_end);
  columns_scalar<D>(rows_of(x, M, K / kBlock, kOffsetKind<D>, 0), M, K, job, n_begin, n_end);
}

}  // namespace

bool supported() {
  static const bool has = cpu_has_avx512_int8();
  return has;
}

bool eligible(DType dtype) { return dtype == DType::q8_0 || dtype == DType::q4_0 || dtype == DType::q5_0; }

namespace {

// Block b's starts (linear_int8.hpp) from the sum of its q.
void store_starts(int32_t sum, int64_t at, int64_t plane, int32_t* start) {
  for (int kind = 0; kind < kOffsetKinds; ++kind) start[kind * plane + at] = -kOffsets[kind] * sum;
}

// One pair of blocks of one row (b = 2 p, 2 p + 1; the second may be missing) into its record, d
// and starts (row m's: at m * nb + b, planes of `plane` values).
void quantize_pair_scalar(const float* row, int64_t p, int64_t nb, XRecord& record, float* d, int32_t* start,
                          int64_t row_at, int64_t plane) {
  int8_t block_q[2][kBlock];
  for (int half = 0; half < 2; ++half) {
    const int64_t b = 2 * p + half;
    std::memset(block_q[half], 0, kBlock);
    if (b >= nb) continue;
    const float* v = row + b * kBlock;
    float amax = 0.0f;
    bool finite = true;
    for (int e = 0; e < kBlock; ++e) {
      finite = finite && std::isfinite(v[e]);
      amax = std::max(amax, std::fabs(v[e]));
    }
    int32_t sum = 0;
    if (!finite) {  // NaN or infinity in the block: its products are NaN
      d[row_at + b] = NAN;
    } else {
      const float dx = amax / 127.0f, inv = dx > 0.0f ? 1.0f / dx : 0.0f;
      for (int e = 0; e < kBlock; ++e) {
        block_q[half][e] = static_cast<int8_t>(std::nearbyint(std::clamp(v[e] * inv, -127.0f, 127.0f)));
        sum += block_q[half][e];
      }
      d[row_at + b] = dx;
    }
    store_starts(sum, row_at + b, plane, start);
  }
  for (int at = 0; at < 64; ++at) record.q[at] = block_q[arranged_block(at)][arranged_element(at)];
}

// The same with AVX-512 (the same operations on each value: max of |x|, one division, one
// reciprocal, a product, a clamp, round to nearest even), for pairs of two finite blocks; anything
// else goes to the scalar form. A prefill's rows are long: 2.5 M values per linear at K = 4864.
LLAISYS_TARGET_AVX512_INT8 bool quantize_pair_avx512(const float* row, int64_t p, int64_t nb, XRecord& record,
                                                     float* d, int32_t* start, int64_t row_at, int64_t plane) {
  if (2 * p + 1 >= nb) return false;
  const float* v = row + 2 * p * kBlock;
  __m512 x[4];
  for (int j = 0; j < 4; ++j) x[j] = _mm512_loadu_ps(v + 16 * j);
  constexpr int kNotFinite = 0x01 | 0x08 | 0x10 | 0x80;  // QNaN, +inf, -inf, SNaN
  for (int j = 0; j < 4; ++j) {
    if (_mm512_fpclass_ps_mask(x[j], kNotFinite) != 0) return false;
  }
  const __m512 magnitude = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  float inv[2];
  for (int half = 0; half < 2; ++half) {
    const __m512 m = _mm512_max_ps(_mm512_and_ps(x[2 * half], magnitude), _mm512_and_ps(x[2 * half + 1], magnitude));
    const float dx = _mm512_reduce_max_ps(m) / 127.0f;
    inv[half] = dx > 0.0f ? 1.0f / dx : 0.0f;
    d[row_at + 2 * p + half] = dx;
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
  // Lane l: the sum of arranged q 4 l .. 4 l + 3, of block b (l / 4 even) or b + 1.
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), q);
  store_starts(_mm512_mask_reduce_add_epi32(0x0F0F, sums), row_at + 2 * p, plane, start);
  store_starts(_mm512_mask_reduce_add_epi32(0xF0F0, sums), row_at + 2 * p + 1, plane, start);
  return true;
}

}  // namespace

void quantize_rows(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, int64_t begin, int64_t end,
                   XRecord* records, float* d, int32_t* start) {
  const int64_t nb = K / kBlock, np = pairs(K), plane = M * nb;
  const bool vector = isa == Isa::avx512 && supported();
  for (int64_t m = begin; m < end; ++m) {
    const float* row = x + m * x_stride;
    for (int64_t p = 0; p < np; ++p) {
      XRecord& record = records[p * M + m];
      if (!(vector && quantize_pair_avx512(row, p, nb, record, d, start, m * nb, plane))) {
        quantize_pair_scalar(row, p, nb, record, d, start, m * nb, plane);
      }
    }
  }
}

RoundedRows round_rows(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t M, int64_t K) {
  const auto record_bytes = static_cast<std::size_t>(M * pairs(K)) * sizeof(XRecord);
  const auto plane = static_cast<std::size_t>(M * (K / kBlock));
  thread_local AlignedBuffer buffer;
  std::byte* base = scratch(buffer, record_bytes + plane * (sizeof(float) + kOffsetKinds * sizeof(int32_t)));
  auto* records = reinterpret_cast<XRecord*>(base);
  auto* d = reinterpret_cast<float*>(base + record_bytes);
  auto* start = reinterpret_cast<int32_t*>(base + record_bytes + plane * sizeof(float));
  ctx.pool->parallel_for(M, 1, [&](int64_t begin, int64_t end) {
    quantize_rows(ctx.isa, x, x_stride, M, K, begin, end, records, d, start);
  }, K);
  return {.records = records, .d = d, .start = start};
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
