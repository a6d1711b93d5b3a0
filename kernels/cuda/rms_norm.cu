#include <cub/block/block_reduce.cuh>

#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr int kThreads = 256;

// Values of a row each thread keeps in registers between the two passes: rows up to 4096 wide (every
// hidden size of the supported shapes up to 7B) are read once, with all of a thread's loads in flight
// together (a decode step normalises one row per block, so latency, not bandwidth, bounds it). Wider
// rows re-read the rest. The per-thread sum runs in the same order either way.
constexpr int kCachedPerThread = 16;

// One block per row: residual += delta (optional), then the row's sum of squares (CUB block
// reduction), then out = (x * inv_rms) * weight with unfused f32 multiplies.
template <class OutT>
__global__ void add_rms_norm_kernel(float* residual, int64_t residual_stride, const float* __restrict__ delta,
                                    int64_t delta_stride, int64_t width, const float* __restrict__ weight, float eps,
                                    OutT* out, int64_t out_stride) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float inv_rms_shared;
  const int64_t r = blockIdx.x;
  float* x = residual + r * residual_stride;
  const float* __restrict__ d = delta != nullptr ? delta + r * delta_stride : nullptr;
  // The weights are loaded with the row, before the reduction: their latency hides behind it
  // instead of following it.
  float cached[kCachedPerThread], gamma[kCachedPerThread];
  float partial = 0.0f;
#pragma unroll
  for (int j = 0; j < kCachedPerThread; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    if (i < width) {
      gamma[j] = __ldg(weight + i);
      float v = x[i];
      if (d != nullptr) {
        v = __fadd_rn(v, d[i]);
        x[i] = v;
      }
      cached[j] = v;
      partial = fmaf(v, v, partial);
    }
  }
  for (int64_t i = threadIdx.x + static_cast<int64_t>(kCachedPerThread) * kThreads; i < width; i += kThreads) {
    float v = x[i];
    if (d != nullptr) {
      v = __fadd_rn(v, d[i]);
      x[i] = v;  // read back below by this same thread: no barrier needed
    }
    partial = fmaf(v, v, partial);
  }
  const float sum = BlockReduce(temp).Sum(partial);
  if (threadIdx.x == 0) inv_rms_shared = 1.0f / sqrtf(sum / static_cast<float>(width) + eps);
  __syncthreads();
  const float inv_rms = inv_rms_shared;
  OutT* y = out + r * out_stride;
#pragma unroll
  for (int j = 0; j < kCachedPerThread; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    if (i < width) y[i] = detail::from_f32<OutT>(__fmul_rn(__fmul_rn(cached[j], inv_rms), gamma[j]));
  }
  for (int64_t i = threadIdx.x + static_cast<int64_t>(kCachedPerThread) * kThreads; i < width; i += kThreads) {
    y[i] = detail::from_f32<OutT>(__fmul_rn(__fmul_rn(x[i], inv_rms), weight[i]));
  }
}

constexpr int kHeadRowsPerBlock = kThreads / 32;

// One warp per (token, head) row: sum of squares over head_dim by the warp, then in place
// x = (x * inv_rms) * weight with unfused multiplies (as add_rms_norm).
__global__ void rms_norm_heads_kernel(float* x, int64_t token_stride, int64_t num_rows, int64_t num_heads,
                                      int64_t head_dim, const float* weight, float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kHeadRowsPerBlock + threadIdx.x / 32;
  if (row >= num_rows) return;  // warp-uniform
  const int lane = static_cast<int>(threadIdx.x % 32);
  float* v = x + (row / num_heads) * token_stride + (row % num_heads) * head_dim;
  float partial = 0.0f;
  for (int64_t i = lane; i < head_dim; i += 32) partial = fmaf(v[i], v[i], partial);
  const float sum = detail::warp_sum(partial);
  const float inv_rms = 1.0f / sqrtf(sum / static_cast<float>(head_dim) + eps);
  for (int64_t i = lane; i < head_dim; i += 32) v[i] = __fmul_rn(__fmul_rn(v[i], inv_rms), weight[i]);
}

}  // namespace

cudaError_t launch::rms_norm_heads(cudaStream_t stream, float* x, int64_t token_stride, int64_t num_tokens,
                                   int64_t num_heads, int64_t head_dim, const float* weight, float eps) {
  const int64_t rows = num_tokens * num_heads;
  rms_norm_heads_kernel<<<detail::blocks_for(rows, kHeadRowsPerBlock), kThreads, 0, stream>>>(
      x, token_stride, rows, num_heads, head_dim, weight, eps);
  return cudaGetLastError();
}

cudaError_t launch::add_rms_norm(cudaStream_t stream, float* residual, int64_t residual_stride, const float* delta,
                                 int64_t delta_stride, int64_t num_rows, int64_t width, const float* weight,
                                 float eps, void* out, bool out_bf16, int64_t out_stride) {
  const auto blocks = static_cast<unsigned>(num_rows);
  if (out_bf16) {
    add_rms_norm_kernel<<<blocks, kThreads, 0, stream>>>(residual, residual_stride, delta, delta_stride, width,
                                                         weight, eps, static_cast<__nv_bfloat16*>(out), out_stride);
  } else {
    add_rms_norm_kernel<<<blocks, kThreads, 0, stream>>>(residual, residual_stride, delta, delta_stride, width,
                                                         weight, eps, static_cast<float*>(out), out_stride);
  }
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
