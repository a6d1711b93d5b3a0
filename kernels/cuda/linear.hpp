#pragma once
// linear: y = x W^T + bias on the GPU, through cuBLASLt: bf16 x and W, f32 accumulation and f32 y.
//
// The CPU linear (cpu/linear.hpp) takes f32 activations; here the activations arrive already in
// bf16 (the fused RMSNorm, SwiGLU and attention kernels write them so), which halves the bytes the
// GEMM reads and lets it run on tensor cores. y stays f32: it is the residual stream, the q/k/v that
// RoPE rotates, the gate/up that SwiGLU reads, or the logits.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// A row-major [rows, cols] = [N, K] weight matrix in device memory (bf16 only).
struct DeviceMatrix {
  const bf16_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

// y[m, n] (=, or += when accumulate) sum_k x[m, k] W[n, k] + bias[n], for m < M, n < N = W.rows.
// x: [M, K] bf16 with row stride x_stride; bias: [N] f32 or null; y: [M, N] f32, row stride y_stride.
// Needs ctx.blas. invalid_argument for inconsistent shapes; unsupported when cuBLASLt has no
// algorithm for the shape (e.g. strides that break its alignment rules).
Status linear(const CudaContext& ctx, const bf16_t* x, int64_t x_stride, int64_t M, int64_t K,
              const DeviceMatrix& weight, const float* bias, float* y, int64_t y_stride, bool accumulate);

}  // namespace llaisys::cuda
