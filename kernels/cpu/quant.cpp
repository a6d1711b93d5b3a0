#include "quant.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "quant_avx512.hpp"
#include "quant_blocks.hpp"
#include "simd.hpp"

namespace llaisys::cpu {
namespace {

template <DType D>
LLAISYS_ALWAYS_INLINE void blocks_generic(const uint8_t* src, int64_t num_blocks, float* out) {
  constexpr int64_t kElements = dtype_block_elements(D), kBytes = dtype_block_bytes(D);
  for (int64_t i = 0; i < num_blocks; ++i) quant_blocks::decode<D>(src + i * kBytes, out + i * kElements);
}

template <DType D>
void blocks_scalar(const uint8_t* src, int64_t num_blocks, float* out) {
  blocks_generic<D>(src, num_blocks, out);
}

// The scalar formulas compiled for AVX2: the compiler vectorizes the per-element loops, each
// element keeping its product and difference (no contraction), so the bits are the scalar ones.
template <DType D>
LLAISYS_TARGET_AVX2 void blocks_avx2(const uint8_t* src, int64_t num_blocks, float* out) {
  blocks_generic<D>(src, num_blocks, out);
}

template <DType D>
LLAISYS_TARGET_AVX512 void blocks_avx512(const uint8_t* src, int64_t num_blocks, float* out) {
  constexpr int64_t kElements = dtype_block_elements(D), kBytes = dtype_block_bytes(D);
  for (int64_t i = 0; i < num_blocks; ++i) {
    quant_avx512::StoreSink sink{out + i * kElements};
    quant_avx512::decode<D>(src + i * kBytes, sink);
  }
}

using BlocksFn = void (*)(const uint8_t*, int64_t, float*);

template <DType D>
BlocksFn blocks_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return &blocks_avx512<D>;
    case Isa::avx2: return &blocks_avx2<D>;
    default: return &blocks_scalar<D>;
  }
}

BlocksFn blocks_fn(Isa isa, DType dtype) {
  switch (dtype) {
    case DType::q8_0: return blocks_for<DType::q8_0>(isa);
    case DType::q4_0: return blocks_for<DType::q4_0>(isa);
    case DType::q4_1: return blocks_for<DType::q4_1>(isa);
    case DType::q5_0: return blocks_for<DType::q5_0>(isa);
    case DType::q5_1: return blocks_for<DType::q5_1>(isa);
    case DType::q4_k: return blocks_for<DType::q4_k>(isa);
    case DType::q5_k: return blocks_for<DType::q5_k>(isa);
    case DType::q6_k: return blocks_for<DType::q6_k>(isa);
    default: return nullptr;
  }
}

Isa best_isa() {
  static const Isa isa = detect_isa();  // cpuid is slow under a hypervisor
  return isa;
}

}  // namespace

bool is_dequantizable(DType dtype) {
  return is_quantized(dtype) || dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

void dequantize(Isa isa, DType dtype, const void* src, int64_t count, float* out) {
  if (!is_dequantizable(dtype) || count < 0 || count % dtype_block_elements(dtype) != 0) {
    throw std::invalid_argument("dequantize: " + std::string(to_string(dtype)) + " x " + std::to_string(count));
  }
  switch (dtype) {
    case DType::f32: std::memcpy(out, src, static_cast<std::size_t>(count) * sizeof(float)); return;
    case DType::bf16: {
      const auto* in = static_cast<const bf16_t*>(src);
      for (int64_t i = 0; i < count; ++i) out[i] = bf16_to_f32(in[i]);
      return;
    }
    case DType::f16: {
      const auto* in = static_cast<const f16_t*>(src);
      for (int64_t i = 0; i < count; ++i) out[i] = f16_to_f32(in[i]);
      return;
    }
    default:
      blocks_fn(isa, dtype)(static_cast<const uint8_t*>(src), count / dtype_block_elements(dtype), out);
  }
}

void dequantize(DType dtype, const void* src, int64_t count, float* out) {
  dequantize(best_isa(), dtype, src, count, out);
}

}  // namespace llaisys::cpu
