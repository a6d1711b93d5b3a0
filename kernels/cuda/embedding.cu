#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

// One block per token; threads stride over the row. Out-of-range ids give zeros.
__global__ void embedding_kernel(const __nv_bfloat16* table, int64_t rows, int64_t width, const int32_t* ids,
                                 float* out, int64_t out_stride) {
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  float* dst = out + t * out_stride;
  if (id < 0 || id >= rows) {
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) dst[i] = 0.0f;
    return;
  }
  const __nv_bfloat16* src = table + static_cast<int64_t>(id) * width;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
}

// One block per output row.
__global__ void gather_rows_kernel(const float* src, int64_t src_stride, int64_t src_rows, const int32_t* indices,
                                   int64_t width, float* dst, int64_t dst_stride) {
  const int64_t r = blockIdx.x;
  const int32_t index = indices[r];
  float* out = dst + r * dst_stride;
  if (index < 0 || index >= src_rows) {
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) out[i] = 0.0f;
    return;
  }
  const float* in = src + static_cast<int64_t>(index) * src_stride;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) out[i] = in[i];
}

}  // namespace

cudaError_t launch::gather_rows(cudaStream_t stream, const float* src, int64_t src_stride, int64_t src_rows,
                                const int32_t* indices, int64_t num_rows, int64_t width, float* dst,
                                int64_t dst_stride) {
  gather_rows_kernel<<<static_cast<unsigned>(num_rows), 256, 0, stream>>>(src, src_stride, src_rows, indices, width,
                                                                          dst, dst_stride);
  return cudaGetLastError();
}

cudaError_t launch::embedding(cudaStream_t stream, const uint16_t* table, int64_t rows, int64_t width,
                              const int32_t* ids, int64_t num_tokens, float* out, int64_t out_stride) {
  embedding_kernel<<<static_cast<unsigned>(num_tokens), 256, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(table), rows, width, ids, out, out_stride);
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
