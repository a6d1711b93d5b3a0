#pragma once
// Quantized weights: llama.cpp's GGUF block formats, decoded exactly as ggml decodes them.
//
// Block layouts (little-endian, packed; "d" fields are IEEE binary16):
//   Q8_0  32 elements,  34 bytes: d; int8 qs[32].                  y[j] = qs[j] * d
//   Q4_0  32 elements,  18 bytes: d; uint8 qs[16].                 y[j] = ((qs[j] & 15) - 8) * d,
//                                                                  y[j + 16] = ((qs[j] >> 4) - 8) * d
//   Q4_1  32 elements,  20 bytes: d; m; uint8 qs[16].              y[j] = (qs[j] & 15) * d + m,
//                                                                  y[j + 16] = (qs[j] >> 4) * d + m
//   Q5_0  32 elements,  22 bytes: d; uint8 qh[4]; uint8 qs[16].    y[j] = (q[j] - 16) * d
//   Q5_1  32 elements,  24 bytes: d; m; uint8 qh[4]; uint8 qs[16]. y[j] = q[j] * d + m
//   Q4_K 256 elements, 144 bytes: d; dmin; uint8 scales[12]; uint8 qs[128]
//   Q5_K 256 elements, 176 bytes: d; dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]
//   Q6_K 256 elements, 210 bytes: uint8 ql[128]; uint8 qh[64]; int8 scales[16]; d
// Q5_0 / Q5_1: qh is a 32-bit little-endian mask, q[j] = (qs[j] & 15) + 16 * bit j of qh and
// q[j + 16] = (qs[j] >> 4) + 16 * bit j + 16 of qh. Q4_1 / Q5_1 round the product to f32, then the sum.
// Q4_K / Q5_K: eight sub-blocks of 32 with a 6-bit scale sc[j] and min m[j] each, packed in
// scales[12]: for j < 4, sc = scales[j] & 63, m = scales[j + 4] & 63; for j >= 4,
// sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4, m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
// Elements 64 c .. 64 c + 31 are the low nibbles of qs[32 c .. 32 c + 31] with sub-block 2 c, the next
// 32 their high nibbles with sub-block 2 c + 1; Q5_K adds 16 where bit 2 c (low half) or 2 c + 1 (high
// half) of qh[l] is set. y = (d * sc) * q - (dmin * m), each product and the difference rounded to f32.
// Q6_K: 16 sub-blocks of 16 with a signed 8-bit scale; in each half h (128 elements, ql + 64 h,
// qh + 32 h, scales + 8 h), for l < 32: q0 = ql[l] & 15, q1 = ql[l + 32] & 15, q2 = ql[l] >> 4,
// q3 = ql[l + 32] >> 4, each with bits 2 i, 2 i + 1 of qh[l] as its bits 4, 5; element 32 i + l is
// (d * scales[l / 16 + 2 i]) * (q_i - 32), rounded to f32 after each product.
//
// These formulas are ggml's dequantize_row_* (its to_float), in its order of float operations, so
// dequantize() gives the same bits as ggml and gguf-py. Every path (scalar, AVX2, AVX-512) of
// dequantize() and of linear()'s in-register decoding gives those bits.

#include <cstdint>

#include "cpu_isa.hpp"
#include "llaisys/core/dtype.hpp"

namespace llaisys::cpu {

// out[0, count) = the values of `count` elements at src; dtype is a quantized type above, f16, bf16
// or f32, and count a whole number of blocks. Uses the best ISA of this CPU (same bits on all).
void dequantize(DType dtype, const void* src, int64_t count, float* out);
// The same on a given ISA path (supported by this CPU): linear's panels, embedding rows, tests.
void dequantize(Isa isa, DType dtype, const void* src, int64_t count, float* out);

// Encodes `count` values (a whole number of blocks) into dst (dtype_bytes(dtype, count) bytes).
//  - q8_0, q4_0, q4_1, q5_0, q5_1: ggml's reference quantizers (quantize_row_q8_0_ref, ..._q4_0_ref,
//    ..._q4_1_ref, ..._q5_0_ref, ..._q5_1_ref): the bytes llama-quantize writes without an importance
//    matrix (Q8_0 / Q4_0 checked against tiny-llama-gguf; the others against hand-computed blocks).
//    |error| <= d / 2 per element (plus the f16 rounding of d and m), except the one-sided ranges of
//    Q4_0 / Q5_0: a value of the sign opposite the largest magnitude's, within 1/16 (1/32) of it,
//    is off by up to d. Q4_1 / Q5_1 span [min, max] of the block: d = (max - min) / 15 (31), m = min.
//  - q4_k, q5_k: min/max, not ggml's search (make_qkx2_quants). Per sub-block of 32 the range
//    [min(0, lo), hi] of its values; the f16 d / dmin and the 6-bit scales and mins are rounded up
//    (the levels cover the range), then each value takes the nearest level of the decoded scale and
//    min: |error| <= (d * sc) / 2 (+ f32 rounding), d * sc <= (hi - min(0, lo) + dmin) / levels + d,
//    levels = 15 (q4_k) or 31 (q5_k).
//  - q6_k: per sub-block of 16, scale >= max |x| / 31 (rounded up to the 8-bit grid), values rounded
//    to nearest in [-31, 31] (-32 unused): |error| <= (d * |sc|) / 2 (+ f32 rounding).
// Relative RMS error on Gaussian weights: q4_k 0.075, q5_k 0.032, q6_k 0.021 (test_quant.cpp).
// Enough for quantizing on load and generating test models, not for matching llama.cpp's files.
// NaN inputs are not supported. f16, bf16 and f32 round to nearest even (f32: a copy).
void quantize(DType dtype, const float* src, int64_t count, void* dst);

// Whether quantize / dequantize accept the dtype.
bool is_dequantizable(DType dtype);

}  // namespace llaisys::cpu
