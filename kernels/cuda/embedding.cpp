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

}  // namespace llaisys::cuda
