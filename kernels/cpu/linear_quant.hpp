#pragma once
// linear with quantized weights (quant.hpp's Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), used in place.
//
// Contract: the result is bit-identical to linear() on the f32 matrix that dequantize() makes of the
// weights (same x, bias, accumulate), for every M, thread count and ISA path; so batch invariance
// and the canonical order of linear.hpp carry over unchanged. Two ways to get there:
//  - few rows of x (decode, small batches; up to 16 for the 32-element types and Q4_K, 8 for Q5_K /
//    Q6_K with AVX-512, 4 otherwise): kRegisterRows rows at a time, each weight block is decoded
//    (AVX-512: in registers, quant_avx512.hpp; AVX2 and scalar: 256 elements at a time into a
//    buffer) and multiplied into every row's 16 accumulators in k order, several weight rows
//    interleaved. The weights are read at their packed size, once per kRegisterRows rows.
//  - more rows (prefill): a panel of weight rows is dequantized into a per-thread f32 buffer and the
//    f32 tiles of linear_float run on it; the decoding is shared by all the rows of x (the f32 tiles
//    run at about 0.8x the speed of the bf16 ones: twice the weight bytes per product from L2).
// The bf16 dot-product mode (MatmulPrecision::bf16, linear_bf16.hpp) has its own contract,
// bf16_columns: bit-identical to bf16dot::columns on the weights that dequantize() and then
// a round to nearest even to bf16 make (same bf16 x), for every M and thread count; the same two ways, the
// register path rounding each pair of decoded vectors to bf16 in registers and multiplying with
// vdpbf16ps, the panel path rounding a dequantized panel and running the bf16 tiles on it.
// Internal to kernels/cpu.

#include <cstdint>

#include "cpu_isa.hpp"
#include "linear.hpp"

namespace llaisys::cpu::quant_linear {

inline constexpr int64_t kRegisterRows = 4;

// Output columns [n_begin, n_end) of a job whose weight dtype is quantized (K a whole number of blocks).
void columns(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
             int64_t n_end);

// The same in the bf16 mode (bf16dot::supported()): xb is x [M, K] rounded by bf16dot::convert_rows
// (row stride bf16dot::padded_k(K), which is K: quantized rows are whole 32-element steps).
void bf16_columns(const uint16_t* xb, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end);

}  // namespace llaisys::cpu::quant_linear
