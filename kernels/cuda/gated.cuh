#pragma once
// The kernel and launcher the gated activations share (swiglu.cu: silu, geglu.cu: tanh GELU):
// out = Act::apply(gate) * up, f32 in, f32 or bf16 out. blockIdx.x is the row; the y-blocks stride
// over the width. Internal to kernels/cuda.

#include "common.cuh"

namespace llaisys::cuda::detail {

template <class Act, class OutT>
__global__ void gated_kernel(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, int64_t width,
                             OutT* out, int64_t out_stride) {
  const int64_t r = blockIdx.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const float a = Act::apply(gate[r * gate_stride + i]);
    out[r * out_stride + i] = from_f32<OutT>(__fmul_rn(a, up[r * up_stride + i]));
  }
}

template <class Act>
cudaError_t launch_gated(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                         int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                         int64_t out_stride) {
  constexpr int kThreads = 256;
  unsigned y_blocks = blocks_for(width, kThreads);
  if (y_blocks > 64) y_blocks = 64;
  const dim3 grid(static_cast<unsigned>(num_rows), y_blocks);
  if (out_bf16) {
    gated_kernel<Act><<<grid, kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, width,
                                                     static_cast<__nv_bfloat16*>(out), out_stride);
  } else {
    gated_kernel<Act><<<grid, kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, width,
                                                     static_cast<float*>(out), out_stride);
  }
  return cudaGetLastError();
}

}  // namespace llaisys::cuda::detail
