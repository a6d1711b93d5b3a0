#pragma once
// linear: y = x W^T + bias, the projection every transformer layer is made of.
//
// Weights are used in place (bf16, f16 or f32, e.g. straight from a mapped safetensors file, or
// quantized GGUF blocks: quant.hpp) and converted exactly to f32 in registers; activations and
// accumulation are f32. A quantized matrix gives the bits of the f32 matrix dequantize() makes of it
// (linear_quant.hpp). (The MatmulPrecision::bf16 of the context instead rounds activations to
// bf16 for bf16 and quantized weights on AVX512-BF16 CPUs, quantized weights dequantized and rounded
// to bf16 too: linear_bf16.hpp, with its own canonical order; a region with any f16 or f32 weights
// takes the f32 path, which is what follows.)
//
// Batch invariance: y[m, n] is computed by the same sequence of operations whatever M is and
// whichever thread computes it — the canonical 16-lane order of simd.hpp over k, then + bias[n],
// then (accumulate) + y[m, n]. Threads split the output columns, never k. So a token's row is
// bit-identical whether it is alone (M = 1, decode) or one of many (prefill, mixed batches), and
// identical across ISA paths.

#include <cstdint>
#include <span>

#include "context.hpp"
#include "llaisys/core/dtype.hpp"

namespace llaisys::cpu {

// A row-major weight matrix [rows, cols] = [N, K]; rows are output features. A quantized matrix's
// rows are whole blocks (cols a multiple of dtype_block_elements), dtype_bytes(dtype, cols) each.
struct WeightMatrix {
  const void* data = nullptr;
  DType dtype = DType::bf16;  // bf16, f16, f32 or a quantized type (quant.hpp)
  int64_t rows = 0;
  int64_t cols = 0;
};

// Row n of a matrix (its first byte): quantized rows are dtype_bytes(dtype, cols) apart.
inline const uint8_t* weight_row(const WeightMatrix& w, int64_t n) {
  return static_cast<const uint8_t*>(w.data) + n * dtype_bytes(w.dtype, w.cols);
}

// One matrix applied to the shared input.
struct LinearJob {
  WeightMatrix weight;          // [N, K]
  const float* bias = nullptr;  // [N] or null
  float* y = nullptr;           // [M, y_stride], columns [0, N) written
  int64_t y_stride = 0;
  bool accumulate = false;      // y[m, n] += result (a residual connection) instead of y = result
};

// Runs every job over x [M, K] (row stride x_stride); the jobs' columns are split across the
// threads together, so fusing projections that read the same input (q, k, v; gate, up) costs one
// parallel region. All jobs need weight.cols == K.
void linear(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t M, int64_t K,
            std::span<const LinearJob> jobs);

}  // namespace llaisys::cpu
