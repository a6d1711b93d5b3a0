#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr int kThreads = 256;

// blockIdx.x: the row; the y-blocks stride over the width (as swiglu).
__global__ void add_rows_kernel(float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t width) {
  const int64_t r = blockIdx.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    y[r * y_stride + i] = __fadd_rn(y[r * y_stride + i], x[r * x_stride + i]);
  }
}

__global__ void scale_rows_kernel(float* x, int64_t x_stride, int64_t width, float s) {
  const int64_t r = blockIdx.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    x[r * x_stride + i] = __fmul_rn(x[r * x_stride + i], s);
  }
}

dim3 grid_for(int64_t num_rows, int64_t width) {
  unsigned y_blocks = detail::blocks_for(width, kThreads);
  if (y_blocks > 64) y_blocks = 64;
  return dim3(static_cast<unsigned>(num_rows), y_blocks);
}

}  // namespace

cudaError_t launch::add_rows(cudaStream_t stream, float* y, int64_t y_stride, const float* x, int64_t x_stride,
                             int64_t num_rows, int64_t width) {
  add_rows_kernel<<<grid_for(num_rows, width), kThreads, 0, stream>>>(y, y_stride, x, x_stride, width);
  return cudaGetLastError();
}

cudaError_t launch::scale_rows(cudaStream_t stream, float* x, int64_t x_stride, int64_t num_rows, int64_t width,
                               float s) {
  scale_rows_kernel<<<grid_for(num_rows, width), kThreads, 0, stream>>>(x, x_stride, width, s);
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
