#include "llaisys/ops/attention.hpp"

#include "check.hpp"
#include "cpu/attention.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/attention.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {

Status attention(DeviceContext& ctx, const Pass& pass, const KvLayer& layer, const TensorView& q,
                 const AttentionParams& params, const TensorView& out) {
  const PassShape& shape = pass.shape();
  const int64_t t = pass.num_tokens();
  if (shape.num_kv_heads != layer.num_kv_heads || shape.head_dim != layer.head_dim || layer.k == nullptr ||
      shape.num_q_heads % layer.num_kv_heads != 0 || shape.block_size != layer.block_size) {
    return Status(ErrorCode::invalid_argument, "attention: the pass and the KV layer disagree");
  }
  if (!(params.scale > 0.0f) || !(params.softcap >= 0.0f) || params.window < 0) {
    return make_error(ErrorCode::invalid_argument, "attention: scale {}, softcap {}, window {}", params.scale,
                      params.softcap, params.window);
  }
  LLAISYS_RETURN_IF_ERROR(detail::check_heads(ctx, "attention", "q", q, t, shape.num_q_heads, layer.head_dim));
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "attention", "out", out, ctx.activation_dtype(), t,
                                             shape.num_q_heads * layer.head_dim));
  if (t == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu: {
      const cpu::PagedKvLayer kv{.k = layer.k,
                                 .v = layer.v,
                                 .block_size = layer.block_size,
                                 .num_kv_heads = layer.num_kv_heads,
                                 .head_dim = layer.head_dim,
                                 .dtype = layer.dtype};
      const cpu::AttentionParams cpu_params{.scale = params.scale, .softcap = params.softcap, .window = params.window};
      cpu::paged_attention(as_cpu(ctx).kernels(), kv, as_cpu(pass).slots(), q.data_as<const float>(), q.strides()[0],
                           shape.num_q_heads, cpu_params, out.data_as<float>(), detail::row_stride(out));
      return Status();
    }
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: {
      const CudaPass& p = as_cuda(pass);
      const cuda::AttentionParams cuda_params{.scale = params.scale, .softcap = params.softcap, .window = params.window};
      return cuda::paged_attention(as_cuda(ctx).kernels(), device_kv_layer(layer), p.device_batch, p.plan, p.workspace,
                                   q.data_as<const float>(), q.strides()[0], shape.num_q_heads, cuda_params,
                                   out.data_as<bf16_t>(), detail::row_stride(out));
    }
#endif
    default: return detail::unsupported_device(ctx, "attention");
  }
}

}  // namespace llaisys::ops
