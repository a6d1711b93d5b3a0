#include "llaisys/ops/rms_norm.hpp"

#include "check.hpp"
#include "cpu/rms_norm.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/rms_norm.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {
namespace {

Status check_weight(const DeviceContext& ctx, const Tensor& weight, int64_t width) {
  if (weight.view.rank() != 1 || weight.dtype() != DType::f32 || weight.dim(0) != width ||
      weight.view.device() != ctx.device()) {
    return make_error(ErrorCode::invalid_argument, "rms_norm: weight must be f32 [{}] on {}, got {}", width,
                      ctx.device().to_string(), weight.view.to_string());
  }
  return Status();
}

// Each head of each token in place: [tokens, heads, head_dim].
Status rms_norm_heads(DeviceContext& ctx, const TensorView& x, const Tensor& weight, float eps) {
  const int64_t t = x.dim(0), heads = x.dim(1), d = x.dim(2);
  LLAISYS_RETURN_IF_ERROR(detail::check_heads(ctx, "rms_norm", "x", x, t, heads, d));
  LLAISYS_RETURN_IF_ERROR(check_weight(ctx, weight, d));
  if (t == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu:
      cpu::rms_norm_heads(as_cpu(ctx).kernels(), x.data_as<float>(), x.strides()[0], t, heads, d,
                          weight.view.data_as<const float>(), eps);
      return Status();
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda:
      return cuda::rms_norm_heads(as_cuda(ctx).kernels(), x.data_as<float>(), x.strides()[0], t, heads, d,
                                  weight.view.data_as<const float>(), eps);
#endif
    default: return detail::unsupported_device(ctx, "rms_norm");
  }
}

}  // namespace

Status rms_norm(DeviceContext& ctx, const TensorView& x, const Tensor& weight, float eps, const TensorView& y) {
  if (x.rank() == 3) {
    if (y.data() != x.data() || y.shape() != x.shape() || y.strides() != x.strides()) {
      return Status(ErrorCode::invalid_argument, "rms_norm: per-head norms are in place (y must be x)");
    }
    return rms_norm_heads(ctx, x, weight, eps);
  }
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "rms_norm", "x", x, DType::f32));
  const int64_t rows = x.dim(0), width = x.dim(1);
  const DType out_dtype = y.dtype() == DType::f32 ? DType::f32 : ctx.activation_dtype();
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "rms_norm", "y", y, out_dtype, rows, width));
  LLAISYS_RETURN_IF_ERROR(check_weight(ctx, weight, width));
  if (rows == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu:
      cpu::rms_norm(as_cpu(ctx).kernels(), x.data_as<const float>(), detail::row_stride(x), rows, width,
                    weight.view.data_as<const float>(), eps, y.data_as<float>(), detail::row_stride(y));
      return Status();
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: {
      // No residual delta: add_rms_norm leaves x as it is.
      float* residual = const_cast<float*>(x.data_as<const float>());
      if (out_dtype == DType::bf16) {
        return cuda::add_rms_norm(as_cuda(ctx).kernels(), residual, detail::row_stride(x), nullptr, 0, rows, width,
                                  weight.view.data_as<const float>(), eps, y.data_as<bf16_t>(), detail::row_stride(y));
      }
      return cuda::add_rms_norm(as_cuda(ctx).kernels(), residual, detail::row_stride(x), nullptr, 0, rows, width,
                                weight.view.data_as<const float>(), eps, y.data_as<float>(), detail::row_stride(y));
    }
#endif
    default: return detail::unsupported_device(ctx, "rms_norm");
  }
}

}  // namespace llaisys::ops
