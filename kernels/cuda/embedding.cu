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

}  // namespace

cudaError_t launch::embedding(cudaStream_t stream, const uint16_t* table, int64_t rows, int64_t width,
                              const int32_t* ids, int64_t num_tokens, float* out, int64_t out_stride) {
  embedding_kernel<<<static_cast<unsigned>(num_tokens), 256, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(table), rows, width, ids, out, out_stride);
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
