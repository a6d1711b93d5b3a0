#include "llaisys/core/dtype.hpp"

namespace llaisys {

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::q8_0: return "q8_0";
    case DType::q4_0: return "q4_0";
    case DType::q4_k: return "q4_k";
    case DType::q5_k: return "q5_k";
    case DType::q6_k: return "q6_k";
    case DType::q4_1: return "q4_1";
    case DType::q5_0: return "q5_0";
    case DType::q5_1: return "q5_1";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  if (name == "f32" || name == "F32" || name == "float32") return DType::f32;
  if (name == "bf16" || name == "BF16" || name == "bfloat16") return DType::bf16;
  if (name == "f16" || name == "F16" || name == "float16") return DType::f16;
  if (name == "i32" || name == "I32" || name == "int32") return DType::i32;
  if (name == "i64" || name == "I64" || name == "int64") return DType::i64;
  if (name == "u8" || name == "U8" || name == "uint8") return DType::u8;
  if (name == "q8_0" || name == "Q8_0") return DType::q8_0;
  if (name == "q4_0" || name == "Q4_0") return DType::q4_0;
  if (name == "q4_k" || name == "Q4_K") return DType::q4_k;
  if (name == "q5_k" || name == "Q5_K") return DType::q5_k;
  if (name == "q6_k" || name == "Q6_K") return DType::q6_k;
  if (name == "q4_1" || name == "Q4_1") return DType::q4_1;
  if (name == "q5_0" || name == "Q5_0") return DType::q5_0;
  if (name == "q5_1" || name == "Q5_1") return DType::q5_1;
  return std::nullopt;
}

}  // namespace llaisys
