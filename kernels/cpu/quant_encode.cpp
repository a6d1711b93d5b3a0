// quantize(): ggml's reference quantizers for Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1, simple range-covering
// ones for the K types (quant.hpp states what each guarantees).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "quant.hpp"
#include "quant_blocks.hpp"

namespace llaisys::cpu {
namespace {

void store_half(uint8_t* p, float value) {
  const f16_t bits = f32_to_f16(value);
  std::memcpy(p, &bits, sizeof(bits));
}

// The smallest f16 >= value (value >= 0 and finite): a scale rounded this way still covers the range.
float half_at_least(float value) {
  f16_t bits = f32_to_f16(value);
  if (f16_to_f32(bits) < value) ++bits;
  return f16_to_f32(bits);
}

// The smallest integer n in [0, limit] with n * step >= need, as the decoder computes n * step;
// limit when none is.
int steps_at_least(float need, float step, int limit) {
  if (step <= 0.0f || need <= 0.0f) return 0;
  int n = static_cast<int>(std::min(std::ceil(need / step), static_cast<float>(limit)));
  while (n < limit && step * static_cast<float>(n) < need) ++n;
  return n;
}

// The level q in [lo, hi] whose decoded value(q) is nearest to x, starting from a rounded guess.
template <class Value>
int nearest_level(float x, float guess, int lo, int hi, Value value) {
  int q = std::isfinite(guess) ? static_cast<int>(std::clamp(std::nearbyint(guess), static_cast<float>(lo), static_cast<float>(hi))) : lo;
  for (int candidate : {q - 1, q + 1}) {
    if (candidate >= lo && candidate <= hi && std::fabs(value(candidate) - x) < std::fabs(value(q) - x)) q = candidate;
  }
  return q;
}

// ---- ggml's reference quantizers ----------------------------------------------------------------

void quantize_q8_0(const float* x, uint8_t* block) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_half(block, d);
  auto* qs = reinterpret_cast<int8_t*>(block + 2);
  for (int j = 0; j < 32; ++j) qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

// The block's value of largest magnitude, with its sign (the first one on ties, as ggml).
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quantize_q4_0(const float* x, uint8_t* block) {
  const float max = signed_absmax(x);
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_half(block, d);
  for (int j = 0; j < 16; ++j) {
    // x * id is in [-8, 8]; + 8.5 and truncation round it to 0..16, and 16 becomes 15.
    const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
    block[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// ggml's (int8_t) / (uint8_t) casts of a float, as x86 compiles them: truncation to int32
// (cvttss2si, which gives INT32_MIN for NaN and out-of-range values: only reached with a subnormal or
// overflowing scale), then the low byte. In range it is plain truncation on every target.
int8_t truncate_to_int8(float value) {
  const int32_t i = value >= -0x1p31f && value < 0x1p31f ? static_cast<int32_t>(value) : INT32_MIN;
  return static_cast<int8_t>(i);
}
uint8_t truncate_to_uint8(float value) { return static_cast<uint8_t>(truncate_to_int8(value)); }

// The block's min and max (ggml's loop: FLT_MAX / -FLT_MAX at first).
void min_max(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

void quantize_q4_1(const float* x, uint8_t* block) {
  float min = 0.0f, max = 0.0f;
  min_max(x, min, max);
  const float d = (max - min) / 15.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_half(block, d);
  store_half(block + 2, min);
  auto level = [&](float v) {
    return static_cast<uint8_t>(std::min(15, static_cast<int>(truncate_to_int8((v - min) * id + 0.5f))));
  };
  for (int j = 0; j < 16; ++j) block[4 + j] = static_cast<uint8_t>(level(x[j]) | (level(x[j + 16]) << 4));
}

// Q5_0 / Q5_1: the 5-bit levels q[32] into the nibbles qs[16] and the 32-bit mask qh (little-endian).
void pack_5bit(const uint8_t q[32], uint8_t* qh, uint8_t* qs) {
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    high |= static_cast<uint32_t>((q[j] & 0x10u) >> 4) << j;
    high |= static_cast<uint32_t>((q[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(high >> (8 * b));
}

void quantize_q5_0(const float* x, uint8_t* block) {
  const float max = signed_absmax(x);
  const float d = max / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_half(block, d);
  uint8_t q[32];
  // x * id is in [-16, 16]; + 16.5 and truncation round it to 0..32, and 32 becomes 31.
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(truncate_to_int8(x[j] * id + 16.5f))));
  }
  pack_5bit(q, block + 2, block + 6);
}

void quantize_q5_1(const float* x, uint8_t* block) {
  float min = 0.0f, max = 0.0f;
  min_max(x, min, max);
  const float d = (max - min) / 31.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_half(block, d);
  store_half(block + 2, min);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = truncate_to_uint8((x[j] - min) * id + 0.5f);  // no clamp, as ggml
  pack_5bit(q, block + 4, block + 8);
}

// ---- Q4_K, Q5_K: sub-blocks of 32 with a 6-bit scale and min ------------------------------------

void pack_scales_k4(const int scale[8], const int min[8], uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0xF) | ((min[j + 4] & 0xF) << 4));
  }
}

// levels = 15 (Q4_K) or 31 (Q5_K). q[256]: the chosen levels. Writes d, dmin and the scales.
void quantize_k4_levels(const float* x, int levels, uint8_t* block, uint8_t q[256]) {
  float need_min[8], high[8], max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = x[32 * j];
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * j + l]);
      hi = std::max(hi, x[32 * j + l]);
    }
    need_min[j] = -lo;
    high[j] = hi;
    max_min = std::max(max_min, need_min[j]);
  }
  const float dmin = half_at_least(max_min / 63.0f);
  int sc[8], m[8];
  float need_scale[8], max_scale = 0.0f;
  for (int j = 0; j < 8; ++j) {
    m[j] = steps_at_least(need_min[j], dmin, 63);
    need_scale[j] = std::max(0.0f, (high[j] + dmin * static_cast<float>(m[j])) / static_cast<float>(levels));
    max_scale = std::max(max_scale, need_scale[j]);
  }
  const float d = half_at_least(max_scale / 63.0f);
  for (int j = 0; j < 8; ++j) sc[j] = steps_at_least(need_scale[j], d, 63);
  store_half(block, d);
  store_half(block + 2, dmin);
  pack_scales_k4(sc, m, block + 4);
  for (int j = 0; j < 8; ++j) {
    // The decoder's values: d1 * q - m1.
    const float d1 = d * static_cast<float>(sc[j]), m1 = dmin * static_cast<float>(m[j]);
    for (int l = 0; l < 32; ++l) {
      const float v = x[32 * j + l];
      q[32 * j + l] = static_cast<uint8_t>(
          nearest_level(v, (v + m1) / d1, 0, levels, [&](int level) { return d1 * static_cast<float>(level) - m1; }));
    }
  }
}

void quantize_q4_k(const float* x, uint8_t* block) {
  uint8_t q[256];
  quantize_k4_levels(x, 15, block, q);
  uint8_t* qs = block + 16;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_q5_k(const float* x, uint8_t* block) {
  uint8_t q[256];
  quantize_k4_levels(x, 31, block, q);
  uint8_t* qh = block + 16;
  uint8_t* qs = block + 48;
  std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int a = q[64 * c + l], b = q[64 * c + 32 + l];
      qs[32 * c + l] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
      qh[l] = static_cast<uint8_t>(qh[l] | ((a >> 4) << (2 * c)) | ((b >> 4) << (2 * c + 1)));
    }
  }
}

// ---- Q6_K: sub-blocks of 16 with a signed 8-bit scale --------------------------------------------

void quantize_q6_k(const float* x, uint8_t* block) {
  float need[16], max_need = 0.0f;
  for (int g = 0; g < 16; ++g) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * g + l]));
    need[g] = amax / 31.0f;
    max_need = std::max(max_need, need[g]);
  }
  const float d = half_at_least(max_need / 127.0f);
  uint8_t q[256];  // level + 32
  auto* scales = reinterpret_cast<int8_t*>(block + 192);
  for (int g = 0; g < 16; ++g) {
    const int sc = steps_at_least(need[g], d, 127);
    scales[g] = static_cast<int8_t>(sc);
    const float ds = d * static_cast<float>(sc);  // the decoder's (d * scale) * (q - 32)
    for (int l = 0; l < 16; ++l) {
      const float v = x[16 * g + l];
      const int level = ds == 0.0f ? 0 : nearest_level(v, v / ds, -32, 31, [&](int lv) { return ds * static_cast<float>(lv); });
      q[16 * g + l] = static_cast<uint8_t>(level + 32);
    }
  }
  store_half(block + 208, d);
  uint8_t* ql = block;
  uint8_t* qh = block + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int q0 = q[128 * h + l], q1 = q[128 * h + 32 + l], q2 = q[128 * h + 64 + l], q3 = q[128 * h + 96 + l];
      ql[64 * h + l] = static_cast<uint8_t>((q0 & 0xF) | ((q2 & 0xF) << 4));
      ql[64 * h + 32 + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      qh[32 * h + l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
    }
  }
}

using QuantizeBlock = void (*)(const float*, uint8_t*);

QuantizeBlock block_quantizer(DType dtype) {
  switch (dtype) {
    case DType::q8_0: return &quantize_q8_0;
    case DType::q4_0: return &quantize_q4_0;
    case DType::q4_1: return &quantize_q4_1;
    case DType::q5_0: return &quantize_q5_0;
    case DType::q5_1: return &quantize_q5_1;
    case DType::q4_k: return &quantize_q4_k;
    case DType::q5_k: return &quantize_q5_k;
    case DType::q6_k: return &quantize_q6_k;
    default: return nullptr;
  }
}

}  // namespace

void quantize(DType dtype, const float* src, int64_t count, void* dst) {
  if (!is_dequantizable(dtype) || count < 0 || count % dtype_block_elements(dtype) != 0) {
    throw std::invalid_argument("quantize: " + std::string(to_string(dtype)) + " x " + std::to_string(count));
  }
  switch (dtype) {
    case DType::f32: std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(float)); return;
    case DType::bf16: {
      auto* out = static_cast<bf16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::f16: {
      auto* out = static_cast<f16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = f32_to_f16(src[i]);
      return;
    }
    default: {
      const QuantizeBlock encode = block_quantizer(dtype);
      const int64_t elements = dtype_block_elements(dtype), bytes = dtype_block_bytes(dtype);
      auto* out = static_cast<uint8_t*>(dst);
      for (int64_t b = 0; b < count / elements; ++b) encode(src + b * elements, out + b * bytes);
    }
  }
}

}  // namespace llaisys::cpu
