#pragma once
// The int8 dot-product path of linear for the 32-element quantized types with one scale per block
// (Q8_0, Q4_0, Q5_0: CpuContext::int8_quant, the decoder's "matmul": "int8"): llama.cpp's way. Each
// row of x is rounded once to 8-bit blocks of 32 (dx = max|x| / 127, q = round(x / dx), as
// llama.cpp's Q8_0 activations but with an f32 scale), the weights stay in their blocks as 8-bit
// integers, and `vpdpbusd` makes 64 multiply-adds per instruction; no weight is converted to float.
//
// Canonical order (what makes every M, thread count and ISA path give the same bits): for output
// (m, n), block by block b = 0, 1, ...,
//   i = sum over the block's 32 elements of q_x * q_w          (an exact integer)
//   acc = fma(dw[n, b] * dx[m, b], float(i), acc)             (acc starting at 0; float(i) exact)
// then + bias, (accumulate) + y as every linear path. The integers are exact whichever way they are
// summed, so this is one fixed sequence of f32 operations per output: batch invariance holds within
// the mode (its results differ from the exact path's, by the rounding of x to 8 bits).
//
// How the AVX-512 form gets there: 16 weight rows are decoded together into a panel whose vector j
// holds 4 bytes of each row (the rows in the lanes), and x's 4 bytes are broadcast, so one
// vpdpbusd advances 16 outputs' sums; a block's integers need 8 of them, then one convert, one
// multiply and one fma per 16 outputs (the per-element work is the dot product alone).
// Internal to kernels/cpu.

#include <cstdint>

#include "context.hpp"
#include "cpu_isa.hpp"
#include "linear.hpp"

namespace llaisys::cpu::int8dot {

inline constexpr int64_t kBlock = 32;

// AVX-512 with VNNI (vpdpbusd), VBMI (vpermb) and BITALG (vpshufbitqmb), as Ice Lake, Zen 4 and
// later have: the mode's fast form. Without them the mode runs the scalar form (same bits, much
// slower), and "auto" does not choose it.
bool supported();

// The weight types the mode multiplies this way; every other weight type keeps its path.
bool eligible(DType dtype);

// x [M, K] rounded (K a multiple of 32). Blocks are taken in pairs (b, b + 1) whose 64 values are
// arranged [b: 0..15][b + 1: 0..15][b: 16..31][b + 1: 16..31] (how a Q4_0 / Q5_0 pair's nibbles fall
// out of one 256-bit load; a missing last block's half 0): one record per (pair, row of x), record
// p * M + m, so that the rows a kernel multiplies together sit side by side.
struct XRecord {
  int8_t q[64];  // round(x / dx) in [-127, 127], arranged as above
};
static_assert(sizeof(XRecord) == 64);
inline int64_t pairs(int64_t K) { return (K + 63) / 64; }
// The weights go into vpdpbusd unsigned (Q4_0: q, Q5_0: q, Q8_0: q + 128, each offset by 8, 16,
// 128), so each block's integer starts at -offset * (sum of its q_x): start[kind][m * nb + b].
inline constexpr int kOffsetKinds = 3;
struct RoundedRows {
  const XRecord* records;  // [pairs(K)][M]
  const float* d;          // [M][K / 32]: dx of each block; NaN for a block holding a NaN or an
                           // infinity (its products are NaN, as the exact path's would be; its q 0)
  const int32_t* start;    // [kOffsetKinds][M][K / 32]
};
// isa: which form rounds (every one gives the same bits). start: [kOffsetKinds][M][K / 32].
void quantize_rows(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, int64_t begin, int64_t end,
                   XRecord* records, float* d, int32_t* start);

// All M rows rounded by ctx's threads, into the calling thread's scratch (64-byte aligned: split
// loads made the prefill 2x slower); valid until its next call.
RoundedRows round_rows(const CpuContext& ctx, const float* x, int64_t x_stride, int64_t M, int64_t K);

// Output columns [n_begin, n_end) of a job whose weights are eligible, from the rounded rows.
void columns(Isa isa, const RoundedRows& x, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin, int64_t n_end);

}  // namespace llaisys::cpu::int8dot
