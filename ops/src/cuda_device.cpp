// CudaDevice (cuda_device.hpp): compiled only with the CUDA backend; cuda_device_stub.cpp otherwise.

#include "cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "cuda/cuda_status.hpp"

namespace llaisys::ops {

Result<std::unique_ptr<DeviceContext>> make_cuda_context(int device) {
  LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> ctx, CudaDevice::open(device));
  return std::unique_ptr<DeviceContext>(std::move(ctx));
}

Result<std::unique_ptr<CudaDevice>> CudaDevice::open(int device) {
  const int devices = cuda::device_count();
  if (devices == 0) {
    return make_error(ErrorCode::unsupported, "device cuda:{} requested, but no CUDA device is visible", device);
  }
  if (device < 0 || device >= devices) {
    return make_error(ErrorCode::unsupported, "device cuda:{} requested; {} CUDA device(s) visible", device, devices);
  }
  std::unique_ptr<CudaDevice> ctx(new CudaDevice());
  ctx->device_ = device;
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&ctx->num_sms_, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp prop{};
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  ctx->name_ = prop.name;
  LLAISYS_ASSIGN_OR_RETURN(ctx->stream_, cuda::Stream::create());
  LLAISYS_ASSIGN_OR_RETURN(ctx->blas_, cuda::CublasLt::create());
  ctx->ctx_ = cuda::CudaContext{.stream = ctx->stream_.get(), .blas = &ctx->blas_};
  return ctx;
}

CudaDevice::~CudaDevice() {
  // Pending copies from the pinned staging buffer must finish before it is freed.
  (void)cudaSetDevice(device_);
  if (stream_.get() != nullptr) (void)cudaStreamSynchronize(stream_.get());
}

std::string CudaDevice::describe() const {
  return fmt::format("cuda:{} ({}, {} SMs)", device_, name_, num_sms_);
}

Result<Buffer> CudaDevice::allocate(std::size_t bytes) {
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  void* ptr = nullptr;
  if (bytes > 0) LLAISYS_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, bytes));
  const int device = device_;
  std::shared_ptr<void> memory(ptr, [device](void* p) {
    if (p != nullptr) {
      (void)cudaSetDevice(device);
      (void)cudaFree(p);
    }
  });
  return Buffer(std::move(memory), bytes, Device::cuda(device_));
}

Status CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return Status();
  // On the stream every kernel runs on (a plain cudaMemcpy on the legacy stream is not ordered with a
  // non-blocking stream, and returns from pageable memory before the DMA lands), then waited for:
  // `src` may be pageable memory the caller frees right after.
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()));
  return synchronize();
}

Status CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return synchronize();
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
  return synchronize();
}

Status CudaDevice::copy_on_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return Status();
  return cuda::cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()),
                           "cudaMemcpyAsync(D2D)");
}

Status CudaDevice::synchronize() { return stream_.synchronize(); }

uint64_t CudaDevice::free_memory() const {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(device_) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  return free_bytes;
}

Result<std::unique_ptr<Rope>> CudaDevice::make_rope(const RopeFrequencies& frequencies, int32_t max_positions) {
  // The cos/sin tables grow with the positions passes use (ensure_rope_positions), not the whole
  // context at once: 2 x 4 MB at 1M positions of head_dim 128 would be 2 x 0.5 GB.
  return std::unique_ptr<Rope>(std::make_unique<CudaRope>(frequencies, std::max<int32_t>(1, max_positions)));
}

Status CudaDevice::ensure_rope_positions(const CudaRope& rope, int32_t needed) {
  needed = std::min(needed, rope.max_positions());
  if (needed <= rope.filled) return Status();
  // Doubling from 4096: a handful of rebuilds over a sequence's life, each before the pass's kernels
  // (begin_pass has synchronised, so no kernel reads the old table).
  int64_t grown = std::max(4096, rope.filled);
  while (grown < needed) grown *= 2;
  const auto positions = static_cast<int32_t>(std::min<int64_t>(grown, rope.max_positions()));
  std::vector<int32_t> ids(static_cast<std::size_t>(positions));
  std::iota(ids.begin(), ids.end(), 0);
  const std::size_t table = static_cast<std::size_t>(positions) * rope.frequencies().inv_freq.size();
  std::vector<float> cos(table), sin(table);
  fill_rope_tables(rope.frequencies(), ids.data(), positions, cos.data(), sin.data());
  rope.cos.reset();
  rope.sin.reset();
  rope.filled = 0;
  LLAISYS_ASSIGN_OR_RETURN(rope.cos, cuda::DeviceBuffer<float>::allocate(table));
  LLAISYS_ASSIGN_OR_RETURN(rope.sin, cuda::DeviceBuffer<float>::allocate(table));
  LLAISYS_RETURN_IF_ERROR(copy_from_host(rope.cos.data(), cos.data(), table * sizeof(float)));
  LLAISYS_RETURN_IF_ERROR(copy_from_host(rope.sin.data(), sin.data(), table * sizeof(float)));
  rope.filled = positions;
  return Status();
}

Result<const Pass*> CudaDevice::begin_pass(const ForwardBatch& batch, const PassShape& shape) {
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // The previous pass's copies from the staging buffer and its plan must be done with.
  LLAISYS_RETURN_IF_ERROR(synchronize());
  const int64_t t = batch.num_tokens();
  const int64_t o = batch.num_outputs();
  int64_t max_blocks = 1;
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    max_blocks = std::max<int64_t>(max_blocks, batch.block_table_lens[static_cast<std::size_t>(s)]);
  }
  // One pinned staging buffer, one upload.
  const std::size_t ints = static_cast<std::size_t>(3 * t + o + batch.num_seqs() * max_blocks);
  if (staging_.size() < ints) {
    staging_.reset();
    LLAISYS_ASSIGN_OR_RETURN(staging_, cuda::PinnedBuffer<int32_t>::allocate(std::max<std::size_t>(ints, 4096)));
  }
  LLAISYS_RETURN_IF_ERROR(batch_ints_.reserve(ints));
  int32_t* packed = staging_.data();
  std::memcpy(packed, batch.token_ids.data(), static_cast<std::size_t>(t) * sizeof(int32_t));
  std::memcpy(packed + t, batch.positions.data(), static_cast<std::size_t>(t) * sizeof(int32_t));
  std::memcpy(packed + 2 * t, batch.seq_indices.data(), static_cast<std::size_t>(t) * sizeof(int32_t));
  if (o > 0) {
    std::memcpy(packed + 3 * t, batch.output_token_indices.data(), static_cast<std::size_t>(o) * sizeof(int32_t));
  }
  int32_t* tables = packed + 3 * t + o;
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const std::span<const BlockId> table = batch.block_table(s);
    int32_t* row = tables + static_cast<std::size_t>(s) * static_cast<std::size_t>(max_blocks);
    std::copy(table.begin(), table.end(), row);
    std::fill(row + table.size(), row + max_blocks, -1);
  }
  LLAISYS_RETURN_IF_ERROR(batch_ints_.upload(packed, ints, stream_.get()));
  const int32_t* d = batch_ints_.data();
  pass_.set(batch, shape);
  pass_.token_ids = d;
  pass_.output_indices = d + 3 * t;
  pass_.device_batch = cuda::DeviceBatch{.num_tokens = t,
                                         .positions = d + t,
                                         .seq_indices = d + 2 * t,
                                         .block_tables = d + 3 * t + o,
                                         .max_blocks_per_seq = max_blocks};
  if (shape.rope != nullptr && t > 0) {
    const int32_t highest = *std::max_element(batch.positions.begin(), batch.positions.end());
    LLAISYS_RETURN_IF_ERROR(ensure_rope_positions(static_cast<const CudaRope&>(*shape.rope), highest + 1));
  }
  const cuda::AttentionParams planned{.window = shape.window};
  LLAISYS_ASSIGN_OR_RETURN(pass_.plan, cuda::plan_attention(batch.positions, batch.seq_indices, shape.num_q_heads,
                                                            shape.num_kv_heads, shape.block_size, planned, num_sms_));
  LLAISYS_RETURN_IF_ERROR(pass_.workspace.prepare(pass_.plan, shape.num_q_heads, shape.head_dim, stream_.get()));
  return static_cast<const Pass*>(&pass_);
}

}  // namespace llaisys::ops
