#pragma once
// The bf16 dot-product path of linear (CpuContext::matmul == MatmulPrecision::bf16, the decoder's
// default on AMD CPUs that have it): the activations are rounded to bf16 (round to nearest even) and
// multiplied with the bf16 weights by AVX512-BF16 `vdpbf16ps`, 32 multiply-adds per instruction
// instead of 16, accumulating in f32. Quantized weights join the mode dequantized and rounded to
// bf16 (linear_quant.hpp's bf16_columns: convert_rows on a dequantized panel, or in registers).
// It trades the exact f32 products of the canonical path for about twice the arithmetic rate, which
// is what a compute-bound batch (prefill, many sequences decoding) is limited by.
//
// Its own canonical order, the same for every batch shape and thread count (so batch invariance
// holds within this precision): 16 f32 lanes; lane l takes the pairs k = 32 j + 2 l, 32 j + 2 l + 1
// for j = 0, 1, ... as one vdpbf16ps step (products of bf16 values are exact in f32; the
// instruction adds them to the lane in its own order, with denormals flushed); elements past K
// count as zero; the lanes are then folded as in simd.hpp. linear() dispatches here; others include
// this header only to ask supported(). The rounding (vcvtneps2bf16) is to nearest even, with
// denormal inputs taken as zero.

#include <cstdint>

#include "linear.hpp"

namespace llaisys::cpu::bf16dot {

// Whether this CPU runs the path (AVX-512 F/BW/VL/DQ and AVX512-BF16, with the OS saving zmm state).
bool supported();

// K rounded up to whole 32-element steps: the row length of a converted activation panel.
int64_t padded_k(int64_t K);

// Rounds rows [row_begin, row_end) of x [M, K] (row stride x_stride) to bf16 into out [M, padded_k],
// zero-filling each row's padding.
void convert_rows(const float* x, int64_t x_stride, int64_t K, int64_t row_begin, int64_t row_end, uint16_t* out);

// Output columns [n_begin, n_end) of one bf16-weight job for all M rows of the converted panel xb.
void columns(const uint16_t* xb, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end);

}  // namespace llaisys::cpu::bf16dot
