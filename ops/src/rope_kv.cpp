#include "llaisys/ops/rope_kv.hpp"

#include "check.hpp"
#include "cpu/paged_kv.hpp"
#include "cpu/rope.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/rope_kv.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {

Status rope_write_kv(DeviceContext& ctx, const Pass& pass, const KvLayer& layer, const TensorView& q,
                     const TensorView& k, const TensorView& v) {
  const PassShape& shape = pass.shape();
  const int64_t t = pass.num_tokens();
  if (shape.rope == nullptr || shape.rope->head_dim() != layer.head_dim || shape.head_dim != layer.head_dim ||
      shape.num_kv_heads != layer.num_kv_heads || layer.k == nullptr) {
    return Status(ErrorCode::invalid_argument, "rope_write_kv: the pass, its rope and the KV layer disagree");
  }
  LLAISYS_RETURN_IF_ERROR(detail::check_heads(ctx, "rope_write_kv", "q", q, t, shape.num_q_heads, layer.head_dim));
  LLAISYS_RETURN_IF_ERROR(detail::check_heads(ctx, "rope_write_kv", "k", k, t, layer.num_kv_heads, layer.head_dim));
  LLAISYS_RETURN_IF_ERROR(detail::check_heads(ctx, "rope_write_kv", "v", v, t, layer.num_kv_heads, layer.head_dim));
  if (t == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu: {
      const cpu::CpuContext& kernels = as_cpu(ctx).kernels();
      const CpuPass& p = as_cpu(pass);
      cpu::rope_apply(kernels, q.data_as<float>(), q.strides()[0], t, shape.num_q_heads, layer.head_dim, p.cos(), p.sin());
      cpu::rope_apply(kernels, k.data_as<float>(), k.strides()[0], t, layer.num_kv_heads, layer.head_dim, p.cos(), p.sin());
      const cpu::PagedKvLayer kv{.k = layer.k,
                                 .v = layer.v,
                                 .block_size = layer.block_size,
                                 .num_kv_heads = layer.num_kv_heads,
                                 .head_dim = layer.head_dim,
                                 .dtype = layer.dtype};
      cpu::kv_cache_write(kernels, kv, p.slots(), k.data_as<const float>(), k.strides()[0], v.data_as<const float>(),
                          v.strides()[0]);
      return Status();
    }
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: {
      const auto& rope = static_cast<const CudaRope&>(*shape.rope);
      return cuda::rope_kv_write(as_cuda(ctx).kernels(), device_kv_layer(layer), as_cuda(pass).device_batch,
                                 q.data_as<float>(), q.strides()[0], shape.num_q_heads, k.data_as<const float>(),
                                 k.strides()[0], v.data_as<const float>(), v.strides()[0], rope.cos.data(),
                                 rope.sin.data(), rope.filled);
    }
#endif
    default: return detail::unsupported_device(ctx, "rope_write_kv");
  }
}

}  // namespace llaisys::ops
