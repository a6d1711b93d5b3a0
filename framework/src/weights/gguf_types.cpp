// The GGUF type tables (value types, ggml tensor types and their block sizes, the llaisys dtypes they
// map to), Value's accessors, and the checks the parser and the writer share (gguf_format.hpp).

#include <array>
#include <limits>

#include "gguf_format.hpp"

namespace llaisys::gguf {
namespace {

struct TypeTraits {
  std::string_view name;  // empty: not a known id
  int64_t block_elements = 0;
  int64_t block_bytes = 0;
};

// Indexed by ggml type id; block sizes are llama.cpp's (ggml-common.h block_* structs, gguf-py's
// GGML_QUANT_SIZES).
constexpr std::array<TypeTraits, 40> kTensorTypes = [] {
  std::array<TypeTraits, 40> t{};
  t[0] = {"F32", 1, 4};
  t[1] = {"F16", 1, 2};
  t[2] = {"Q4_0", 32, 18};
  t[3] = {"Q4_1", 32, 20};
  t[6] = {"Q5_0", 32, 22};
  t[7] = {"Q5_1", 32, 24};
  t[8] = {"Q8_0", 32, 34};
  t[9] = {"Q8_1", 32, 36};
  t[10] = {"Q2_K", 256, 84};
  t[11] = {"Q3_K", 256, 110};
  t[12] = {"Q4_K", 256, 144};
  t[13] = {"Q5_K", 256, 176};
  t[14] = {"Q6_K", 256, 210};
  t[15] = {"Q8_K", 256, 292};
  t[16] = {"IQ2_XXS", 256, 66};
  t[17] = {"IQ2_XS", 256, 74};
  t[18] = {"IQ3_XXS", 256, 98};
  t[19] = {"IQ1_S", 256, 50};
  t[20] = {"IQ4_NL", 32, 18};
  t[21] = {"IQ3_S", 256, 110};
  t[22] = {"IQ2_S", 256, 82};
  t[23] = {"IQ4_XS", 256, 136};
  t[24] = {"I8", 1, 1};
  t[25] = {"I16", 1, 2};
  t[26] = {"I32", 1, 4};
  t[27] = {"I64", 1, 8};
  t[28] = {"F64", 1, 8};
  t[29] = {"IQ1_M", 256, 56};
  t[30] = {"BF16", 1, 2};
  t[34] = {"TQ1_0", 256, 54};
  t[35] = {"TQ2_0", 256, 66};
  t[39] = {"MXFP4", 32, 17};
  return t;
}();

const TypeTraits* traits_of(uint32_t id) noexcept {
  if (id >= kTensorTypes.size() || kTensorTypes[id].name.empty()) return nullptr;
  return &kTensorTypes[id];
}

}  // namespace

std::optional<std::string_view> tensor_type_name(uint32_t id) noexcept {
  const TypeTraits* traits = traits_of(id);
  if (traits == nullptr) return std::nullopt;
  return traits->name;
}

std::optional<BlockSize> tensor_type_block(uint32_t id) noexcept {
  const TypeTraits* traits = traits_of(id);
  if (traits == nullptr) return std::nullopt;
  return BlockSize{.elements = traits->block_elements, .bytes = traits->block_bytes};
}

std::optional<DType> dtype_of(uint32_t id) noexcept {
  switch (static_cast<TensorType>(id)) {
    case TensorType::F32: return DType::f32;
    case TensorType::F16: return DType::f16;
    case TensorType::BF16: return DType::bf16;
    case TensorType::Q8_0: return DType::q8_0;
    case TensorType::Q4_0: return DType::q4_0;
    case TensorType::Q4_K: return DType::q4_k;
    case TensorType::Q5_K: return DType::q5_k;
    case TensorType::Q6_K: return DType::q6_k;
    case TensorType::Q4_1: return DType::q4_1;
    case TensorType::Q5_0: return DType::q5_0;
    case TensorType::Q5_1: return DType::q5_1;
    default: return std::nullopt;
  }
}

std::optional<TensorType> tensor_type_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return TensorType::F32;
    case DType::f16: return TensorType::F16;
    case DType::bf16: return TensorType::BF16;
    case DType::q8_0: return TensorType::Q8_0;
    case DType::q4_0: return TensorType::Q4_0;
    case DType::q4_k: return TensorType::Q4_K;
    case DType::q5_k: return TensorType::Q5_K;
    case DType::q6_k: return TensorType::Q6_K;
    case DType::q4_1: return TensorType::Q4_1;
    case DType::q5_0: return TensorType::Q5_0;
    case DType::q5_1: return TensorType::Q5_1;
    default: return std::nullopt;
  }
}

namespace detail {

bool is_valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII runs, eight bytes at a time where possible.
    while (i + 8 <= n) {
      uint64_t word = 0;
      __builtin_memcpy(&word, p + i, 8);
      if ((word & 0x8080808080808080ull) != 0) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char second_lo = 0x80, second_hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      length = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3;
      if (b == 0xE0) second_lo = 0xA0;  // no overlong forms
      if (b == 0xED) second_hi = 0x9F;  // no surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4;
      if (b == 0xF0) second_lo = 0x90;  // no overlong forms
      if (b == 0xF4) second_hi = 0x8F;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (n - i < length) return false;
    if (p[i + 1] < second_lo || p[i + 1] > second_hi) return false;
    for (std::size_t k = 2; k < length; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return false;
    }
    i += length;
  }
  return true;
}

bool is_value_type(uint32_t id) noexcept { return id <= static_cast<uint32_t>(ValueType::f64); }

uint64_t min_encoded_bytes(ValueType type) noexcept {
  switch (type) {
    case ValueType::u8:
    case ValueType::i8:
    case ValueType::boolean: return 1;
    case ValueType::u16:
    case ValueType::i16: return 2;
    case ValueType::u32:
    case ValueType::i32:
    case ValueType::f32: return 4;
    case ValueType::u64:
    case ValueType::i64:
    case ValueType::f64:
    case ValueType::string: return 8;
    case ValueType::array: return 12;
  }
  return 1;
}

ShapeCheck check_shape(std::span<const uint64_t> dims, uint32_t type, uint64_t& bytes) noexcept {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (dims.empty() || dims.size() > static_cast<std::size_t>(kMaxDims)) return ShapeCheck::dims;
  for (uint64_t dim : dims) {
    if (dim == 0 || dim > kMax) return ShapeCheck::dims;
  }
  uint64_t elements = 1;
  for (uint64_t dim : dims) {
    if (__builtin_mul_overflow(elements, dim, &elements) || elements > kMax) return ShapeCheck::element_overflow;
  }
  const TypeTraits* traits = traits_of(type);
  if (traits == nullptr) return ShapeCheck::unknown_type;
  const auto block_elements = static_cast<uint64_t>(traits->block_elements);
  if (dims[0] % block_elements != 0) return ShapeCheck::block;
  if (__builtin_mul_overflow(elements / block_elements, static_cast<uint64_t>(traits->block_bytes), &bytes) ||
      bytes > kMax) {
    return ShapeCheck::byte_overflow;
  }
  return ShapeCheck::ok;
}

}  // namespace detail
}  // namespace llaisys::gguf
