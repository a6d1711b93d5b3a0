#include "embedding.hpp"

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {

Status embedding(const CudaContext& ctx, const DeviceMatrix& table, const int32_t* ids, int64_t num_tokens,
                 float* out, int64_t out_stride) {
  if (num_tokens < 0 || num_tokens > 0x7fffffff || table.rows <= 0 || table.cols <= 0 || out_stride < table.cols ||
      table.data == nullptr || (num_tokens > 0 && (ids == nullptr || out == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "embedding: bad shape");
  }
  if (num_tokens == 0) return {};
  return cuda_status(launch::embedding(ctx.stream, table.data, table.rows, table.cols, ids, num_tokens, out, out_stride),
                     "embedding kernel");
}

Status gather_rows(const CudaContext& ctx, const float* src, int64_t src_stride, int64_t src_rows,
                   const int32_t* indices, int64_t num_rows, int64_t width, float* dst, int64_t dst_stride) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || src_rows < 0 || src_stride < width ||
      dst_stride < width || (num_rows > 0 && (src == nullptr || indices == nullptr || dst == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "gather_rows: bad shape");
  }
  if (num_rows == 0) return {};
  return cuda_status(launch::gather_rows(ctx.stream, src, src_stride, src_rows, indices, num_rows, width, dst, dst_stride),
                     "gather_rows kernel");
}

}  // namespace llaisys::cuda
