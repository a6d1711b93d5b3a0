#pragma once
// One quantized block decoded to floats with ggml's formulas (quant.hpp), element by element: the
// reference for every vector path. Written so that a compiler vectorizing them (quant.cpp compiles
// them again for AVX2) keeps each element's operations: a product and a difference, never fused
// (kernels are built with -ffp-contract=off). Internal to kernels/cpu.

#include <cstdint>
#include <cstring>

#include "llaisys/core/dtype.hpp"

#define LLAISYS_ALWAYS_INLINE inline __attribute__((always_inline))

namespace llaisys::cpu::quant_blocks {

LLAISYS_ALWAYS_INLINE float load_half(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return f16_to_f32(bits);
}

// Sub-block j's 6-bit scale and min of a Q4_K / Q5_K block (scales: the 12 packed bytes).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};
LLAISYS_ALWAYS_INLINE ScaleMin scale_min_k4(int j, const uint8_t* scales) {
  if (j < 4) return {static_cast<uint8_t>(scales[j] & 63), static_cast<uint8_t>(scales[j + 4] & 63)};
  return {static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))};
}

// Q8_0: 34 bytes -> 32 floats.
LLAISYS_ALWAYS_INLINE void decode_q8_0(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const auto* qs = reinterpret_cast<const int8_t*>(block + 2);
  for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(qs[j]) * d;
}

// Q4_0: 18 bytes -> 32 floats.
LLAISYS_ALWAYS_INLINE void decode_q4_0(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const uint8_t* qs = block + 2;
  for (int j = 0; j < 16; ++j) out[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
  for (int j = 0; j < 16; ++j) out[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
}

// Q4_1: 20 bytes -> 32 floats, q * d + m (the product rounded, then the sum).
LLAISYS_ALWAYS_INLINE void decode_q4_1(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const float m = load_half(block + 2);
  const uint8_t* qs = block + 4;
  for (int j = 0; j < 16; ++j) out[j] = static_cast<float>(qs[j] & 0xF) * d + m;
  for (int j = 0; j < 16; ++j) out[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
}

// The 32-bit little-endian mask of a Q5_0 / Q5_1 block: bit j is bit 4 of element j.
LLAISYS_ALWAYS_INLINE uint32_t load_high_bits(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// Q5_0: 22 bytes -> 32 floats, (q - 16) * d.
LLAISYS_ALWAYS_INLINE void decode_q5_0(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const uint32_t qh = load_high_bits(block + 2);
  const uint8_t* qs = block + 6;
  for (int j = 0; j < 16; ++j) {
    const int q = static_cast<int>((qs[j] & 0xFu) | ((qh >> j) & 1u) << 4);
    out[j] = static_cast<float>(q - 16) * d;
  }
  for (int j = 0; j < 16; ++j) {
    const int q = static_cast<int>((qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
    out[j + 16] = static_cast<float>(q - 16) * d;
  }
}

// Q5_1: 24 bytes -> 32 floats, q * d + m.
LLAISYS_ALWAYS_INLINE void decode_q5_1(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const float m = load_half(block + 2);
  const uint32_t qh = load_high_bits(block + 4);
  const uint8_t* qs = block + 8;
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<float>((qs[j] & 0xFu) | ((qh >> j) & 1u) << 4) * d + m;
  }
  for (int j = 0; j < 16; ++j) {
    out[j + 16] = static_cast<float>((qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4) * d + m;
  }
}

// Q4_K: 144 bytes -> 256 floats.
LLAISYS_ALWAYS_INLINE void decode_q4_k(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const float dmin = load_half(block + 2);
  const uint8_t* scales = block + 4;
  const uint8_t* qs = block + 16;
  for (int c = 0; c < 4; ++c) {
    const ScaleMin a = scale_min_k4(2 * c, scales), b = scale_min_k4(2 * c + 1, scales);
    const float d1 = d * static_cast<float>(a.scale), m1 = dmin * static_cast<float>(a.min);
    const float d2 = d * static_cast<float>(b.scale), m2 = dmin * static_cast<float>(b.min);
    const uint8_t* q = qs + 32 * c;
    float* y = out + 64 * c;
    for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) y[l + 32] = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// Q5_K: 176 bytes -> 256 floats.
LLAISYS_ALWAYS_INLINE void decode_q5_k(const uint8_t* __restrict block, float* __restrict out) {
  const float d = load_half(block);
  const float dmin = load_half(block + 2);
  const uint8_t* scales = block + 4;
  const uint8_t* qh = block + 16;
  const uint8_t* qs = block + 48;
  for (int c = 0; c < 4; ++c) {
    const ScaleMin a = scale_min_k4(2 * c, scales), b = scale_min_k4(2 * c + 1, scales);
    const float d1 = d * static_cast<float>(a.scale), m1 = dmin * static_cast<float>(a.min);
    const float d2 = d * static_cast<float>(b.scale), m2 = dmin * static_cast<float>(b.min);
    const uint8_t* q = qs + 32 * c;
    float* y = out + 64 * c;
    for (int l = 0; l < 32; ++l) {
      const int high = (qh[l] >> (2 * c)) & 1;
      y[l] = d1 * static_cast<float>((q[l] & 0xF) + 16 * high) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      const int high = (qh[l] >> (2 * c + 1)) & 1;
      y[l + 32] = d2 * static_cast<float>((q[l] >> 4) + 16 * high) - m2;
    }
  }
}

// Q6_K: 210 bytes -> 256 floats. Element e uses scales[e / 16].
LLAISYS_ALWAYS_INLINE void decode_q6_k(const uint8_t* __restrict block, float* __restrict out) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
  const float d = load_half(block + 208);
  float ds[16];
  for (int g = 0; g < 16; ++g) ds[g] = d * static_cast<float>(scales[g]);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* l0 = ql + 64 * h;
    const uint8_t* h0 = qh + 32 * h;
    float* y = out + 128 * h;
    const float* s = ds + 8 * h;
    for (int l = 0; l < 32; ++l) {
      const int q0 = ((l0[l] & 0xF) | ((h0[l] & 3) << 4)) - 32;
      const int q1 = ((l0[l + 32] & 0xF) | (((h0[l] >> 2) & 3) << 4)) - 32;
      const int q2 = ((l0[l] >> 4) | (((h0[l] >> 4) & 3) << 4)) - 32;
      const int q3 = ((l0[l + 32] >> 4) | (((h0[l] >> 6) & 3) << 4)) - 32;
      y[l] = s[l / 16] * static_cast<float>(q0);
      y[l + 32] = s[l / 16 + 2] * static_cast<float>(q1);
      y[l + 64] = s[l / 16 + 4] * static_cast<float>(q2);
      y[l + 96] = s[l / 16 + 6] * static_cast<float>(q3);
    }
  }
}

// By dtype: one block of D into out[0, dtype_block_elements(D)).
template <DType D>
LLAISYS_ALWAYS_INLINE void decode(const uint8_t* __restrict block, float* __restrict out) {
  if constexpr (D == DType::q8_0) decode_q8_0(block, out);
  else if constexpr (D == DType::q4_0) decode_q4_0(block, out);
  else if constexpr (D == DType::q4_1) decode_q4_1(block, out);
  else if constexpr (D == DType::q5_0) decode_q5_0(block, out);
  else if constexpr (D == DType::q5_1) decode_q5_1(block, out);
  else if constexpr (D == DType::q4_k) decode_q4_k(block, out);
  else if constexpr (D == DType::q5_k) decode_q5_k(block, out);
  else decode_q6_k(block, out);
}

}  // namespace llaisys::cpu::quant_blocks
