#pragma once
// embedding: rows of a (bf16, f16, f32 or quantized) table, converted exactly to f32 (a quantized
// row gives the bits dequantize() gives: quant.hpp).

#include <cstdint>

#include "context.hpp"
#include "linear.hpp"

namespace llaisys::cpu {

// out[t, :] = table[ids[t], :]; ids must be in [0, table.rows).
void embedding(const CpuContext& ctx, const WeightMatrix& table, const int32_t* ids, int64_t num_tokens,
               float* out, int64_t out_stride);

}  // namespace llaisys::cpu
