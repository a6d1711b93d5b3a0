#pragma once
// What every CPU kernel call receives: the threads to run on, the ISA to run with and the precision
// of the matrix products.

#include "cpu_isa.hpp"
#include "thread_pool.hpp"

namespace llaisys::cpu {

// How linear multiplies: f32 (default) keeps the activations f32 and follows the canonical order of
// simd.hpp, bit-identical on every ISA; bf16 rounds the activations to bf16 for bf16 weights and
// uses the AVX512-BF16 dot product (linear_bf16.hpp), about twice the arithmetic rate, where the CPU
// has it (elsewhere linear falls back to f32).
enum class MatmulPrecision { f32, bf16 };

struct CpuContext {
  ThreadPool* pool = nullptr;  // never null
  Isa isa = Isa::scalar;
  MatmulPrecision matmul = MatmulPrecision::f32;
  // Q8_0, Q4_0 and Q5_0 weights multiply activations rounded to 8-bit blocks with integer dot
  // products (linear_int8.hpp), whatever `matmul` says for the other weights.
  bool int8_quant = false;
};

}  // namespace llaisys::cpu
