#pragma once
// linear's exact f32 path for one job with bf16, f16 or f32 weights (linear.cpp), which the
// quantized path (linear_quant.cpp) runs on weight rows it has dequantized. Internal to kernels/cpu.

#include <cstdint>

#include "cpu_isa.hpp"
#include "linear.hpp"

namespace llaisys::cpu::linear_float {

// Output columns [n_begin, n_end) of `job` for all M rows of x, in the canonical order of linear.hpp.
void columns(Isa isa, const float* x, int64_t x_stride, int64_t M, int64_t K, const LinearJob& job, int64_t n_begin,
             int64_t n_end);

}  // namespace llaisys::cpu::linear_float
