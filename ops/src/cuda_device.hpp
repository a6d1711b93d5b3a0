#pragma once
// The CUDA device context (internal to ops/src, compiled only with the CUDA backend): one stream and
// cuBLASLt handle per model, the pinned staging buffer and device arrays of the pass, the attention
// plan and workspace (kernels/cuda).

#include <vector>

#include "cuda/attention.hpp"
#include "cuda/context.hpp"
#include "cuda/cublaslt.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/paged_kv.hpp"
#include "llaisys/ops/device_context.hpp"
#include "llaisys/ops/kv_cache.hpp"
#include "llaisys/ops/pass.hpp"

namespace llaisys::ops {

// cos/sin of every position of the context, [max_positions, head_dim / 2] each, on the device.
class CudaRope final : public Rope {
 public:
  CudaRope(RopeFrequencies frequencies, int32_t max_positions) : Rope(std::move(frequencies), max_positions) {}
  // Tables for positions [0, filled), grown by CudaDevice::ensure_rope_positions as passes need them
  // (mutable: the model's Rope is shared as const through PassShape).
  mutable cuda::DeviceBuffer<float> cos, sin;
  mutable int32_t filled = 0;
};

class CudaPass final : public Pass {
 public:
  // The batch's integer arrays on the device: ids, positions, seq indices, output indices, then the
  // block tables as one dense [num_seqs, max_blocks] array (-1 entries stay -1: never read).
  const int32_t* token_ids = nullptr;
  const int32_t* output_indices = nullptr;
  cuda::DeviceBatch device_batch;
  cuda::AttentionPlan plan;
  cuda::AttentionWorkspace workspace;

  void set(const ForwardBatch& batch, const PassShape& shape) {
    batch_ = batch;
    shape_ = shape;
  }
};

class CudaDevice final : public DeviceContext {
 public:
  static Result<std::unique_ptr<CudaDevice>> open(int device);
  ~CudaDevice() override;

  const cuda::CudaContext& kernels() const { return ctx_; }
  int device_index() const { return device_; }

  Device device() const override { return Device::cuda(device_); }
  DType activation_dtype() const override { return DType::bf16; }
  DType default_kv_dtype() const override { return DType::bf16; }
  std::string describe() const override;
  Result<Buffer> allocate(std::size_t bytes) override;
  Status copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  Status copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  Status copy_on_device(void* dst, const void* src, std::size_t bytes) override;
  Status synchronize() override;
  uint64_t free_memory() const override;
  Result<std::unique_ptr<Rope>> make_rope(const RopeFrequencies& frequencies, int32_t max_positions) override;
  // Grows `rope`'s tables to cover positions [0, needed) (at most its max_positions).
  Status ensure_rope_positions(const CudaRope& rope, int32_t needed);
  Result<const Pass*> begin_pass(const ForwardBatch& batch, const PassShape& shape) override;

 private:
  CudaDevice() = default;

  int device_ = 0;
  int num_sms_ = 1;
  std::string name_;
  cuda::Stream stream_;
  cuda::CublasLt blas_;
  cuda::CudaContext ctx_;
  cuda::PinnedBuffer<int32_t> staging_;
  cuda::DeviceBuffer<int32_t> batch_ints_;
  CudaPass pass_;
};

inline CudaDevice& as_cuda(DeviceContext& ctx) { return static_cast<CudaDevice&>(ctx); }
inline const CudaPass& as_cuda(const Pass& pass) { return static_cast<const CudaPass&>(pass); }

inline cuda::DeviceKvLayer device_kv_layer(const KvLayer& layer) {
  return {.k = layer.k,
          .v = layer.v,
          .dtype = layer.dtype,
          .num_blocks = layer.num_blocks,
          .block_size = layer.block_size,
          .num_kv_heads = layer.num_kv_heads,
          .head_dim = layer.head_dim};
}

}  // namespace llaisys::ops
