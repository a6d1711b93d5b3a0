#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

// blockIdx.x: the row; the y-blocks stride over the width.
template <class OutT>
__global__ void swiglu_kernel(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                              int64_t width, OutT* out, int64_t out_stride) {
  const int64_t r = blockIdx.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const float g = gate[r * gate_stride + i];
    const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
    out[r * out_stride + i] = detail::from_f32<OutT>(__fmul_rn(silu, up[r * up_stride + i]));
  }
}

}  // namespace

cudaError_t launch::swiglu(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                           int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                           int64_t out_stride) {
  constexpr int kThreads = 256;
  unsigned y_blocks = detail::blocks_for(width, kThreads);
  if (y_blocks > 64) y_blocks = 64;
  const dim3 grid(static_cast<unsigned>(num_rows), y_blocks);
  if (out_bf16) {
    swiglu_kernel<<<grid, kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, width,
                                                 static_cast<__nv_bfloat16*>(out), out_stride);
  } else {
    swiglu_kernel<<<grid, kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, width, static_cast<float*>(out),
                                                 out_stride);
  }
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
