#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

// blockIdx.x: the row; the y-blocks stride over the width (as swiglu).
__global__ void softcap_kernel(float* x, int64_t x_stride, int64_t width, float cap) {
  float* row = x + static_cast<int64_t>(blockIdx.x) * x_stride;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    row[i] = __fmul_rn(cap, tanhf(__fdiv_rn(row[i], cap)));
  }
}

}  // namespace

cudaError_t launch::softcap(cudaStream_t stream, float* x, int64_t x_stride, int64_t num_rows, int64_t width,
                            float cap) {
  constexpr int kThreads = 256;
  unsigned y_blocks = detail::blocks_for(width, kThreads);
  if (y_blocks > 64) y_blocks = 64;
  softcap_kernel<<<dim3(static_cast<unsigned>(num_rows), y_blocks), kThreads, 0, stream>>>(x, x_stride, width, cap);
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
