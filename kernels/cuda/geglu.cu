#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// blockIdx.x: the row; the y-blocks stride over the width (as swiglu).
template <class OutT>
__global__ void geglu_tanh_kernel(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                                  int64_t width, OutT* out, int64_t out_stride) {
  const int64_t r = blockIdx.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const float g = gate[r * gate_stride + i];
    const float cube = __fmul_rn(__fmul_rn(g, g), g);
    const float inner = __fmul_rn(kSqrt2OverPi, __fadd_rn(g, __fmul_rn(kCubic, cube)));
    const float gelu = __fmul_rn(__fmul_rn(0.5f, g), __fadd_rn(1.0f, tanhf(inner)));
    out[r * out_stride + i] = detail::from_f32<OutT>(__fmul_rn(gelu, up[r * up_stride + i]));
  }
}

}  // namespace

cudaError_t launch::geglu_tanh(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                               int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                               int64_t out_stride) {
  constexpr int kThreads = 256;
  unsigned y_blocks = detail::blocks_for(width, kThreads);
  if (y_blocks > 64) y_blocks = 64;
  const dim3 grid(static_cast<unsigned>(num_rows), y_blocks);
  if (out_bf16) {
    geglu_tanh_kernel<<<grid, kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, width,
                                                     static_cast<__nv_bfloat16*>(out), out_stride);
  } else {
    geglu_tanh_kernel<<<grid, kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, width,
                                                     static_cast<float*>(out), out_stride);
  }
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
