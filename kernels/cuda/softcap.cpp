#include "softcap.hpp"

#include <cmath>

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {

Status softcap(const CudaContext& ctx, float* x, int64_t x_stride, int64_t num_rows, int64_t width, float cap) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || x_stride < width || (num_rows > 0 && x == nullptr)) {
    return make_error(ErrorCode::invalid_argument, "softcap: bad shape ({} rows of {}, stride {})", num_rows, width,
                      x_stride);
  }
  if (!(cap > 0.0f) || !std::isfinite(cap)) {
    return make_error(ErrorCode::invalid_argument, "softcap: cap must be positive and finite, got {}", cap);
  }
  if (num_rows == 0) return {};
  return cuda_status(launch::softcap(ctx.stream, x, x_stride, num_rows, width, cap), "softcap kernel");
}

}  // namespace llaisys::cuda
