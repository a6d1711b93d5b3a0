#include "rms_norm.hpp"

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

Status run(const CudaContext& ctx, float* residual, int64_t residual_stride, const float* delta, int64_t delta_stride,
           int64_t num_rows, int64_t width, const float* weight, float eps, void* out, bool out_bf16,
           int64_t out_stride) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || residual_stride < width || out_stride < width ||
      (delta != nullptr && delta_stride < width) ||
      (num_rows > 0 && (residual == nullptr || weight == nullptr || out == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "add_rms_norm: bad shape");
  }
  if (num_rows == 0) return {};
  return cuda_status(launch::add_rms_norm(ctx.stream, residual, residual_stride, delta, delta_stride, num_rows, width,
                                          weight, eps, out, out_bf16, out_stride),
                     "add_rms_norm kernel");
}

}  // namespace

Status rms_norm_heads(const CudaContext& ctx, float* x, int64_t token_stride, int64_t num_tokens, int64_t num_heads,
                      int64_t head_dim, const float* weight, float eps) {
  if (num_tokens < 0 || num_heads <= 0 || head_dim <= 0 || num_heads > 0x7fffffff / head_dim ||
      token_stride < num_heads * head_dim || (num_tokens > 0 && num_tokens > 0x7fffffff / num_heads) ||
      (num_tokens > 0 && (x == nullptr || weight == nullptr))) {
    return make_error(ErrorCode::invalid_argument,
                      "rms_norm_heads: bad shape ({} tokens x {} heads of {}, token stride {})", num_tokens, num_heads,
                      head_dim, token_stride);
  }
  if (!(eps >= 0.0f)) return make_error(ErrorCode::invalid_argument, "rms_norm_heads: eps must be >= 0, got {}", eps);
  if (num_tokens == 0) return {};
  return cuda_status(
      launch::rms_norm_heads(ctx.stream, x, token_stride, num_tokens, num_heads, head_dim, weight, eps),
      "rms_norm_heads kernel");
}

Status add_rms_norm(const CudaContext& ctx, float* residual, int64_t residual_stride, const float* delta,
                    int64_t delta_stride, int64_t num_rows, int64_t width, const float* weight, float eps,
                    float* out, int64_t out_stride) {
  return run(ctx, residual, residual_stride, delta, delta_stride, num_rows, width, weight, eps, out, false, out_stride);
}

Status add_rms_norm(const CudaContext& ctx, float* residual, int64_t residual_stride, const float* delta,
                    int64_t delta_stride, int64_t num_rows, int64_t width, const float* weight, float eps,
                    bf16_t* out, int64_t out_stride) {
  return run(ctx, residual, residual_stride, delta, delta_stride, num_rows, width, weight, eps, out, true, out_stride);
}

}  // namespace llaisys::cuda
