#include "llaisys/ops/linear.hpp"

#include <vector>

#include "check.hpp"
#include "cpu/linear.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/linear.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {
namespace {

Status linear_cpu(CpuDevice& ctx, const TensorView& x, const LinearWeight& w, const TensorView& y, bool accumulate) {
  // One job per part, all in one parallel region (q, k, v or gate, up share the input).
  thread_local std::vector<cpu::LinearJob> jobs;
  jobs.clear();
  int64_t column = 0;
  const float* bias = w.bias.empty() ? nullptr : w.bias.view.data_as<const float>();
  for (const Tensor& part : w.parts) {
    jobs.push_back(cpu::LinearJob{.weight = {.data = part.view.data(),
                                             .dtype = part.dtype(),
                                             .rows = part.dim(0),
                                             .cols = part.dim(1)},
                                  .bias = bias == nullptr ? nullptr : bias + column,
                                  .y = y.data_as<float>() + column,
                                  .y_stride = detail::row_stride(y),
                                  .accumulate = accumulate});
    column += part.dim(0);
  }
  cpu::linear(ctx.kernels(), x.data_as<const float>(), detail::row_stride(x), x.dim(0), x.dim(1), jobs);
  return Status();
}

#ifdef LLAISYS_HAVE_CUDA
Status linear_cuda(CudaDevice& ctx, const TensorView& x, const LinearWeight& w, const TensorView& y,
                   bool accumulate) {
  const float* bias = w.bias.empty() ? nullptr : w.bias.view.data_as<const float>();
  int64_t column = 0;
  for (const Tensor& part : w.parts) {  // one stacked part from prepare_linear
    const cuda::DeviceMatrix matrix{.data = part.view.data_as<const bf16_t>(), .rows = part.dim(0), .cols = part.dim(1)};
    LLAISYS_RETURN_IF_ERROR(cuda::linear(ctx.kernels(), x.data_as<const bf16_t>(), detail::row_stride(x), x.dim(0),
                                         x.dim(1), matrix, bias == nullptr ? nullptr : bias + column,
                                         y.data_as<float>() + column, detail::row_stride(y), accumulate));
    column += part.dim(0);
  }
  return Status();
}
#endif

}  // namespace

Status linear(DeviceContext& ctx, const TensorView& x, const LinearWeight& weight, const TensorView& y,
              bool accumulate) {
  if (weight.parts.empty()) return Status(ErrorCode::invalid_argument, "linear: empty weight");
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "linear", "x", x, ctx.activation_dtype(), -1, weight.in_features));
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "linear", "y", y, DType::f32, x.dim(0), weight.out_features));
  if (x.dim(0) == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu: return linear_cpu(as_cpu(ctx), x, weight, y, accumulate);
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: return linear_cuda(as_cuda(ctx), x, weight, y, accumulate);
#endif
    default: return detail::unsupported_device(ctx, "linear");
  }
}

}  // namespace llaisys::ops
