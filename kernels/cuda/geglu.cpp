#include "geglu.hpp"

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

Status run(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
           int64_t num_rows, int64_t width, void* out, bool out_bf16, int64_t out_stride) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || gate_stride < width || up_stride < width ||
      out_stride < width || (num_rows > 0 && (gate == nullptr || up == nullptr || out == nullptr))) {
    return make_error(ErrorCode::invalid_argument,
                      "geglu_tanh: bad shape ({} rows of {}, strides gate {} up {} out {})", num_rows, width,
                      gate_stride, up_stride, out_stride);
  }
  if (num_rows == 0) return {};
  return cuda_status(
      launch::geglu_tanh(ctx.stream, gate, gate_stride, up, up_stride, num_rows, width, out, out_bf16, out_stride),
      "geglu_tanh kernel");
}

}  // namespace

Status geglu_tanh(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  int64_t num_rows, int64_t width, float* out, int64_t out_stride) {
  return run(ctx, gate, gate_stride, up, up_stride, num_rows, width, out, false, out_stride);
}

Status geglu_tanh(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  int64_t num_rows, int64_t width, bf16_t* out, int64_t out_stride) {
  return run(ctx, gate, gate_stride, up, up_stride, num_rows, width, out, true, out_stride);
}

}  // namespace llaisys::cuda
