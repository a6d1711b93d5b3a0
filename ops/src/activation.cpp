#include "llaisys/ops/activation.hpp"

#include "check.hpp"
#include "cpu/geglu.hpp"
#include "cpu/swiglu.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/geglu.hpp"
#include "cuda/swiglu.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {

std::optional<Activation> parse_activation(std::string_view name) {
  if (name == "silu" || name == "swish") return Activation::silu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_tanh") return Activation::gelu_tanh;
  return std::nullopt;
}

std::string_view to_string(Activation activation) {
  return activation == Activation::silu ? "silu" : "gelu_tanh";
}

Status gated_activation(DeviceContext& ctx, Activation activation, const TensorView& gate, const TensorView& up,
                        const TensorView& out) {
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "gated_activation", "gate", gate, DType::f32));
  const int64_t rows = gate.dim(0), width = gate.dim(1);
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "gated_activation", "up", up, DType::f32, rows, width));
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "gated_activation", "out", out, ctx.activation_dtype(), rows, width));
  if (rows == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu: {
      const auto kernel = activation == Activation::silu ? &cpu::swiglu : &cpu::geglu_tanh;
      kernel(as_cpu(ctx).kernels(), gate.data_as<const float>(), detail::row_stride(gate), up.data_as<const float>(),
             detail::row_stride(up), rows, width, out.data_as<float>(), detail::row_stride(out));
      return Status();
    }
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: {
      const cuda::CudaContext& kernels = as_cuda(ctx).kernels();
      if (activation == Activation::silu) {
        return cuda::swiglu(kernels, gate.data_as<const float>(), detail::row_stride(gate), up.data_as<const float>(),
                            detail::row_stride(up), rows, width, out.data_as<bf16_t>(), detail::row_stride(out));
      }
      return cuda::geglu_tanh(kernels, gate.data_as<const float>(), detail::row_stride(gate), up.data_as<const float>(),
                              detail::row_stride(up), rows, width, out.data_as<bf16_t>(), detail::row_stride(out));
    }
#endif
    default: return detail::unsupported_device(ctx, "gated_activation");
  }
}

}  // namespace llaisys::ops
