#pragma once
// Element types and the scalar conversions every backend agrees on.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace llaisys {

// Numeric values are part of the plugin ABI (llaisys_model_info::kv_dtype); append only.
//
// The quantized types store a row as blocks, each a fixed number of elements in a fixed number of
// bytes (llama.cpp's GGUF block layouts, kernels/cpu/quant.hpp): Q8_0 32 elements in 34 bytes, Q4_0
// 32 in 18, Q4_1 32 in 20, Q5_0 32 in 22, Q5_1 32 in 24, Q4_K 256 in 144, Q5_K 256 in 176, Q6_K 256
// in 210. A quantized tensor's last dimension is
// a whole number of blocks; it has no element size (dtype_size() is 0: use dtype_bytes()).
enum class DType : uint8_t {
  f32 = 0, bf16 = 1, f16 = 2, i32 = 3, i64 = 4, u8 = 5,
  q8_0 = 6, q4_0 = 7, q4_k = 8, q5_k = 9, q6_k = 10, q4_1 = 11, q5_0 = 12, q5_1 = 13,
};

// Bytes per element of an unquantized type; 0 for a quantized one.
constexpr std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
    default: return 0;
  }
}

constexpr bool is_quantized(DType dtype) noexcept { return dtype_size(dtype) == 0; }

// Elements per block (1 for an unquantized type) and bytes per block.
constexpr int64_t dtype_block_elements(DType dtype) noexcept {
  switch (dtype) {
    case DType::q8_0:
    case DType::q4_0:
    case DType::q4_1:
    case DType::q5_0:
    case DType::q5_1: return 32;
    case DType::q4_k:
    case DType::q5_k:
    case DType::q6_k: return 256;
    default: return 1;
  }
}
constexpr int64_t dtype_block_bytes(DType dtype) noexcept {
  switch (dtype) {
    case DType::q8_0: return 34;
    case DType::q4_0: return 18;
    case DType::q4_1: return 20;
    case DType::q5_0: return 22;
    case DType::q5_1: return 24;
    case DType::q4_k: return 144;
    case DType::q5_k: return 176;
    case DType::q6_k: return 210;
    default: return static_cast<int64_t>(dtype_size(dtype));
  }
}
// Bytes of `count` consecutive elements; `count` must be a whole number of blocks.
constexpr int64_t dtype_bytes(DType dtype, int64_t count) noexcept {
  return count / dtype_block_elements(dtype) * dtype_block_bytes(dtype);
}

std::string_view to_string(DType dtype) noexcept;
// Accepts llaisys names ("f32", "bf16", "q8_0", ...), safetensors names ("F32", "BF16", "F16", ...)
// and GGUF type names ("Q8_0", "Q4_K", ...).
std::optional<DType> parse_dtype(std::string_view name) noexcept;

using bf16_t = uint16_t;  // raw bits of a bfloat16
using f16_t = uint16_t;   // raw bits of an IEEE binary16

constexpr float bf16_to_f32(bf16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Round to nearest even; NaN stays NaN (quiet).
constexpr bf16_t f32_to_bf16(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) {
    return static_cast<bf16_t>((bits >> 16) | 0x0040u);
  }
  return static_cast<bf16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

constexpr float f16_to_f32(f16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    mantissa &= 0x3FFu;
    const uint32_t bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mantissa << 13);
    return std::bit_cast<float>(bits);
  }
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

// Round to nearest even, overflow to infinity, NaN stays NaN.
constexpr f16_t f32_to_f16(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan
    return static_cast<f16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<f16_t>(sign | 0x7C00u);  // rounds to >= 65520
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<f16_t>(sign);  // < 2^-25 rounds to zero
    const uint32_t shift = 126u - (abs >> 23);                // 14..24
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return static_cast<f16_t>(sign | half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<f16_t>(sign | half);
}

}  // namespace llaisys
