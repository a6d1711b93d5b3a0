#pragma once
// The CUDA device context (internal to ops/src, compiled only with the CUDA backend): one stream and
// cuBLASLt handle per model, the pinned staging buffer and device arrays of the pass, the attention
// plan and workspace (kernels/cuda).

#include <functional>
#include <memory>
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

// The launch shape of a decode pass that CUDA graphs record: its sequences (one token each) and the
// block-table width every sequence is padded to (a power of two), which fixes the attention plan's
// key capacity. Zero tokens: the pass is not recorded.
struct GraphShape {
  int64_t num_tokens = 0;
  int64_t table_blocks = 0;
  bool operator==(const GraphShape&) const = default;
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
  GraphShape graph;

  void set(const ForwardBatch& batch, const PassShape& shape) {
    batch_ = batch;
    shape_ = shape;
  }
};

enum class GraphMode { off, on, plans };

class CudaDevice final : public DeviceContext {
 public:
  static Result<std::unique_ptr<CudaDevice>> open(int device, GraphMode graphs = GraphMode::off);
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
  // GraphMode::on and a pass with a GraphShape: replays the recording made for this shape, key and
  // device buffers, recording it first (the capture runs nothing: the recording is then launched).
  // Any failure to record turns graphs off for this context (logged) and runs the forward as is.
  Status run_forward(const ForwardKey& key, const std::function<Status()>& forward) override;

  struct GraphStats {
    int64_t recorded = 0;
    int64_t replayed = 0;
  };
  GraphStats graph_stats() const { return stats_; }

 private:
  CudaDevice() = default;

  // A recorded decode forward and everything its kernels' arguments baked in.
  struct Recording;
  Status record(const ForwardKey& key, const std::function<Status()>& forward);
  std::vector<const void*> baked_pointers() const;

  int device_ = 0;
  int num_sms_ = 1;
  std::string name_;
  cuda::Stream stream_;
  cuda::CublasLt blas_;
  cuda::CudaContext ctx_;
  cuda::PinnedBuffer<int32_t> staging_;
  cuda::DeviceBuffer<int32_t> batch_ints_;
  CudaPass pass_;
  GraphMode graphs_ = GraphMode::off;
  std::vector<std::unique_ptr<Recording>> recordings_;
  GraphStats stats_;
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
