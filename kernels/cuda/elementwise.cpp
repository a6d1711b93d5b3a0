#include "elementwise.hpp"

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {

Status add_rows(const CudaContext& ctx, float* y, int64_t y_stride, const float* x, int64_t x_stride,
                int64_t num_rows, int64_t width) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || y_stride < width || x_stride < width ||
      (num_rows > 0 && (y == nullptr || x == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "add_rows: bad shape ({} rows of {}, strides y {} x {})",
                      num_rows, width, y_stride, x_stride);
  }
  if (num_rows == 0) return {};
  return cuda_status(launch::add_rows(ctx.stream, y, y_stride, x, x_stride, num_rows, width), "add_rows kernel");
}

Status scale_rows(const CudaContext& ctx, float* x, int64_t x_stride, int64_t num_rows, int64_t width, float s) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || x_stride < width || (num_rows > 0 && x == nullptr)) {
    return make_error(ErrorCode::invalid_argument, "scale_rows: bad shape ({} rows of {}, stride {})", num_rows,
                      width, x_stride);
  }
  if (num_rows == 0) return {};
  return cuda_status(launch::scale_rows(ctx.stream, x, x_stride, num_rows, width, s), "scale_rows kernel");
}

}  // namespace llaisys::cuda
