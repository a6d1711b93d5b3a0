#pragma once
// AVX-512 decoding of quantized blocks into vectors of 16 floats, with the bits of quant_blocks.hpp.
//
// Decoder<D> decodes a block in steps: prepare(block, state) once (the scales), then step<S>(block,
// state, sink) for S = 0 .. kSteps - 1, each calling sink(v, w) for the next vectors v in order, w
// holding the block's elements 16 v .. 16 v + 15 (so a sink that multiply-adds them keeps the
// canonical order over k; a caller may interleave the steps of several blocks). The 4-bit and 5-bit
// types go through small tables: per (sub-)block, the 16 or 32 values a quant can decode to are
// computed once with the scalar formula's operations (d1 * q - m1, (q - 8) * d, q * d + m, ...), and
// each element is a table lookup (vpermps / vpermt2ps), which leaves every value's bits as they are.
// Internal to kernels/cpu (linear_quant.cpp, quant.cpp).

#include <cstdint>
#include <cstring>
#include <utility>

#include "llaisys/core/dtype.hpp"
#include "simd.hpp"

#define LLAISYS_INLINE_AVX512 \
  inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define LLAISYS_INLINE_AVX512_BF16 \
  inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")))

namespace llaisys::cpu::quant_avx512 {

LLAISYS_INLINE_AVX512 __m512 broadcast_half(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(bits)));
}

LLAISYS_INLINE_AVX512 __m512 iota(float first) {
  return _mm512_add_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps(first));
}

// Stores v to out[16] so that later set1(out[j]) load from memory (vbroadcastss m32, a load) instead
// of being shuffled out of the register (vpermd, competing with the decoding's own shuffles).
LLAISYS_INLINE_AVX512 void store_for_broadcast(float* out, __m512 v) {
  _mm512_store_ps(out, v);
  asm volatile("" : "+m"(*reinterpret_cast<float(*)[16]>(out)));
}

LLAISYS_INLINE_AVX512 __m512i widen16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// ---- Q8_0, Q4_0, Q4_1: one step of two vectors ----------------------------------------------------

struct NoState {};

template <DType D>
struct Decoder;

template <>
struct Decoder<DType::q8_0> {
  using State = NoState;
  static constexpr int kSteps = 1;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t*, State&) {}
  template <int S, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State&, Sink& sink) {
    const __m512 d = broadcast_half(block);
    const auto* qs = reinterpret_cast<const __m128i*>(block + 2);
    sink(0, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(qs))), d));
    sink(1, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(qs + 1))), d));
  }
};

template <>
struct Decoder<DType::q4_0> {
  using State = NoState;
  static constexpr int kSteps = 1;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t*, State&) {}
  template <int S, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State&, Sink& sink) {
    const __m512 table = _mm512_mul_ps(iota(-8.0f), broadcast_half(block));  // (q - 8) * d, q = 0..15
    const __m512i q = widen16(block + 2);
    sink(0, _mm512_permutexvar_ps(q, table));  // vpermps reads the index's low 4 bits: the low nibble
    sink(1, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
  }
};

template <>
struct Decoder<DType::q4_1> {
  using State = NoState;
  static constexpr int kSteps = 1;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t*, State&) {}
  template <int S, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State&, Sink& sink) {
    const __m512 d = broadcast_half(block), m = broadcast_half(block + 2);
    const __m512 table = _mm512_add_ps(_mm512_mul_ps(iota(0.0f), d), m);  // q * d + m, q = 0..15
    const __m512i q = widen16(block + 4);
    sink(0, _mm512_permutexvar_ps(q, table));
    sink(1, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
  }
};

// ---- Q5_0, Q5_1: one step of two vectors, 32-entry tables ----------------------------------------

// The 5-bit index of vpermt2ps: bits 0-3 from `nibble`, bit 4 from `high` (0xCA: select by mask).
LLAISYS_INLINE_AVX512 __m512i index5(__m512i nibble, __m512i high) {
  return _mm512_ternarylogic_epi32(_mm512_set1_epi32(0x10), high, nibble, 0xCA);
}

// Elements 0..15 and 16..31 of a Q5_0 / Q5_1 block (qs: its 16 nibble bytes, qh: its 32-bit mask)
// as indices 0..31 into the two 16-entry tables of its values (lo: q = 0..15, hi: q = 16..31).
template <class Sink>
LLAISYS_INLINE_AVX512 void q5_decode(const uint8_t* qs, const uint8_t* qh, __m512 lo, __m512 hi, Sink& sink) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  const __m512i mask = _mm512_set1_epi32(static_cast<int>(bits));
  // Rotating lane j right by j - 4 (mod 32) brings bit j to bit 4, by j + 12 bit j + 16.
  const __m512i low_bits =
      _mm512_rorv_epi32(mask, _mm512_setr_epi32(28, 29, 30, 31, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m512i high_bits =
      _mm512_rorv_epi32(mask, _mm512_setr_epi32(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27));
  const __m512i q = widen16(qs);
  sink(0, _mm512_permutex2var_ps(lo, index5(q, low_bits), hi));
  sink(1, _mm512_permutex2var_ps(lo, index5(_mm512_srli_epi32(q, 4), high_bits), hi));
}

template <>
struct Decoder<DType::q5_0> {
  using State = NoState;
  static constexpr int kSteps = 1;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t*, State&) {}
  template <int S, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State&, Sink& sink) {
    const __m512 d = broadcast_half(block);  // (q - 16) * d
    q5_decode(block + 6, block + 2, _mm512_mul_ps(iota(-16.0f), d), _mm512_mul_ps(iota(0.0f), d), sink);
  }
};

template <>
struct Decoder<DType::q5_1> {
  using State = NoState;
  static constexpr int kSteps = 1;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t*, State&) {}
  template <int S, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State&, Sink& sink) {
    const __m512 d = broadcast_half(block), m = broadcast_half(block + 2);  // q * d + m
    q5_decode(block + 8, block + 4, _mm512_add_ps(_mm512_mul_ps(iota(0.0f), d), m),
              _mm512_add_ps(_mm512_mul_ps(iota(16.0f), d), m), sink);
  }
};

// ---- Q4_K, Q5_K: eight sub-blocks of 32, a step per 64 elements ---------------------------------

// scale[j] = d * sc[j], scale[8 + j] = dmin * m[j] for the eight sub-blocks.
struct KScales {
  alignas(64) float scale[16];
};

// quant.hpp's unpacking of the 6-bit scales and mins, done on four sub-blocks at once in 32-bit words.
LLAISYS_INLINE_AVX512 void k_scales(const uint8_t* block, KScales& out) {
  uint32_t a, b, c;
  std::memcpy(&a, block + 4, 4);
  std::memcpy(&b, block + 8, 4);
  std::memcpy(&c, block + 12, 4);
  const uint32_t scale_lo = a & 0x3F3F3F3Fu;
  const uint32_t min_lo = b & 0x3F3F3F3Fu;
  const uint32_t scale_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);  // bits 6, 7 of a's bytes -> 4, 5
  const uint32_t min_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
  const __m128i bytes = _mm_setr_epi32(static_cast<int>(scale_lo), static_cast<int>(scale_hi),
                                       static_cast<int>(min_lo), static_cast<int>(min_hi));
  uint16_t d, dmin;
  std::memcpy(&d, block, 2);
  std::memcpy(&dmin, block + 2, 2);
  const __m512 factors = _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16(static_cast<short>(dmin)),
                                                          _mm_set1_epi16(static_cast<short>(d))));
  store_for_broadcast(out.scale, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)), factors));
}

// Sub-block j's table of `first` + q for q = 0..15: d1 * level - m1, as the scalar formula rounds it.
LLAISYS_INLINE_AVX512 __m512 k_table(const KScales& s, int j, float first) {
  return _mm512_sub_ps(_mm512_mul_ps(iota(first), _mm512_set1_ps(s.scale[j])), _mm512_set1_ps(s.scale[8 + j]));
}

template <>
struct Decoder<DType::q4_k> {
  using State = KScales;
  static constexpr int kSteps = 4;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t* block, State& state) { k_scales(block, state); }
  template <int C, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State& s, Sink& sink) {
    const __m512 t1 = k_table(s, 2 * C, 0.0f), t2 = k_table(s, 2 * C + 1, 0.0f);
    const uint8_t* qs = block + 16 + 32 * C;
    const __m512i q0 = widen16(qs), q1 = widen16(qs + 16);
    sink(4 * C, _mm512_permutexvar_ps(q0, t1));  // low nibbles: sub-block 2 C
    sink(4 * C + 1, _mm512_permutexvar_ps(q1, t1));
    sink(4 * C + 2, _mm512_permutexvar_ps(_mm512_srli_epi32(q0, 4), t2));  // high nibbles: 2 C + 1
    sink(4 * C + 3, _mm512_permutexvar_ps(_mm512_srli_epi32(q1, 4), t2));
  }
};

// Bit U of each 32-bit lane moved to bit 4 (other bits: don't care).
template <int U>
LLAISYS_INLINE_AVX512 __m512i bit_to_4(__m512i v) {
  if constexpr (U < 4) return _mm512_slli_epi32(v, 4 - U);
  else if constexpr (U == 4) return v;
  else return _mm512_srli_epi32(v, U - 4);
}

template <>
struct Decoder<DType::q5_k> {
  using State = KScales;
  static constexpr int kSteps = 4;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t* block, State& state) { k_scales(block, state); }
  template <int C, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State& s, Sink& sink) {
    // Two 16-entry tables per sub-block: levels 0..15 and 16..31 (vpermt2ps picks by index bit 4).
    const __m512 t1lo = k_table(s, 2 * C, 0.0f), t1hi = k_table(s, 2 * C, 16.0f);
    const __m512 t2lo = k_table(s, 2 * C + 1, 0.0f), t2hi = k_table(s, 2 * C + 1, 16.0f);
    const __m512i h0 = widen16(block + 16), h1 = widen16(block + 32);
    const uint8_t* qs = block + 48 + 32 * C;
    const __m512i q0 = widen16(qs), q1 = widen16(qs + 16);
    sink(4 * C, _mm512_permutex2var_ps(t1lo, index5(q0, bit_to_4<2 * C>(h0)), t1hi));
    sink(4 * C + 1, _mm512_permutex2var_ps(t1lo, index5(q1, bit_to_4<2 * C>(h1)), t1hi));
    sink(4 * C + 2, _mm512_permutex2var_ps(t2lo, index5(_mm512_srli_epi32(q0, 4), bit_to_4<2 * C + 1>(h0)), t2hi));
    sink(4 * C + 3, _mm512_permutex2var_ps(t2lo, index5(_mm512_srli_epi32(q1, 4), bit_to_4<2 * C + 1>(h1)), t2hi));
  }
};

// ---- Q6_K: sixteen sub-blocks of 16, a step per 64 elements ------------------------------------

struct Q6Scales {
  alignas(64) float scale[16];  // d * scales[g]
};

template <>
struct Decoder<DType::q6_k> {
  using State = Q6Scales;
  static constexpr int kSteps = 4;
  LLAISYS_INLINE_AVX512 static void prepare(const uint8_t* block, State& state) {
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192));
    store_for_broadcast(state.scale, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(scales)),
                                                   broadcast_half(block + 208)));
  }
  // Step C: elements 64 C .. 64 C + 63, i.e. half H = C / 2 (ql + 64 H, qh + 32 H), quants i = 0, 1
  // (C even: the low nibbles of ql[0..63]) or i = 2, 3 (C odd: the high nibbles).
  template <int C, class Sink>
  LLAISYS_INLINE_AVX512 static void step(const uint8_t* block, const State& s, Sink& sink) {
    constexpr int kHalf = C / 2;
    const __m512i ql = _mm512_loadu_si512(block + 64 * kHalf);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * kHalf));
    // The nibbles in element order, and bits 2 i, 2 i + 1 of qh[l] moved to bits 4, 5 of element 32 i + l.
    __m512i nibbles, high;
    if constexpr (C % 2 == 0) {
      nibbles = ql;
      high = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_slli_epi16(qh, 4)), _mm256_slli_epi16(qh, 2), 1);
    } else {
      nibbles = _mm512_srli_epi16(ql, 4);
      high = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
    }
    // (nibbles & 0x0F) | (high & 0x30) (0xF8: a | (b & c)), then - 32: the signed quants as bytes.
    const __m512i q = _mm512_sub_epi8(_mm512_ternarylogic_epi32(_mm512_and_si512(nibbles, _mm512_set1_epi8(0x0F)), high,
                                                                _mm512_set1_epi8(0x30), 0xF8),
                                      _mm512_set1_epi8(32));
    const float* sc = s.scale + 4 * C;
    sink(4 * C + 0, scaled(sc[0], _mm512_castsi512_si128(q)));
    sink(4 * C + 1, scaled(sc[1], _mm512_extracti32x4_epi32(q, 1)));
    sink(4 * C + 2, scaled(sc[2], _mm512_extracti32x4_epi32(q, 2)));
    sink(4 * C + 3, scaled(sc[3], _mm512_extracti32x4_epi32(q, 3)));
  }
  // (d * scale) * (q - 32) for 16 signed bytes.
  LLAISYS_INLINE_AVX512 static __m512 scaled(float ds, __m128i q) {
    return _mm512_mul_ps(_mm512_set1_ps(ds), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
};

// ---- whole blocks ---------------------------------------------------------------------------------

template <DType D, class Sink, int... S>
LLAISYS_INLINE_AVX512 void decode_steps(const uint8_t* block, const typename Decoder<D>::State& state, Sink& sink,
                                        std::integer_sequence<int, S...>) {
  (Decoder<D>::template step<S>(block, state, sink), ...);
}

// All of a block's vectors, in order.
template <DType D, class Sink>
LLAISYS_INLINE_AVX512 void decode(const uint8_t* block, Sink& sink) {
  typename Decoder<D>::State state;
  Decoder<D>::prepare(block, state);
  decode_steps<D>(block, state, sink, std::make_integer_sequence<int, Decoder<D>::kSteps>{});
}

// A sink that stores the block's values: out[16 v + l].
struct StoreSink {
  float* out;
  LLAISYS_INLINE_AVX512 void operator()(int v, __m512 w) const { _mm512_storeu_ps(out + 16 * v, w); }
};

}  // namespace llaisys::cpu::quant_avx512
