// CudaDevice (cuda_device.hpp): compiled only with the CUDA backend; cuda_device_stub.cpp otherwise.

#include "cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "cuda/cuda_status.hpp"
#include "llaisys/core/log.hpp"

namespace llaisys::ops {

namespace {

// Decode passes of up to this many sequences are recorded (one recording per batch size and table
// width: vLLM records up to 512 by default; 64 covers the single-stream and small-batch decode that
// per-launch host time hurts most, at a bounded number of recordings).
constexpr int64_t kMaxGraphTokens = 64;
// Block tables of recorded passes are padded to a power of two of at least this many blocks.
constexpr int64_t kMinGraphTableBlocks = 16;
// More recordings than this and they are all dropped (each holds its own kernel nodes).
constexpr std::size_t kMaxRecordings = 512;

}  // namespace

struct CudaDevice::Recording {
  GraphShape shape;
  ForwardKey key;
  std::vector<const void*> pointers;  // baked_pointers() when recorded
  cudaGraphExec_t exec = nullptr;
  Recording() = default;
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  ~Recording() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  }
};

Result<std::unique_ptr<DeviceContext>> make_cuda_context(const CudaOptions& options) {
  GraphMode graphs = GraphMode::off;
  if (options.graphs == "on") {
    graphs = GraphMode::on;
  } else if (options.graphs == "plans") {
    graphs = GraphMode::plans;
  } else if (options.graphs != "off") {
    return make_error(ErrorCode::invalid_argument, "option cuda_graphs: expected \"off\", \"on\" or \"plans\", got \"{}\"",
                      options.graphs);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> ctx, CudaDevice::open(options.device, graphs));
  return std::unique_ptr<DeviceContext>(std::move(ctx));
}

Result<std::unique_ptr<CudaDevice>> CudaDevice::open(int device, GraphMode graphs) {
  const int devices = cuda::device_count();
  if (devices == 0) {
    return make_error(ErrorCode::unsupported, "device cuda:{} requested, but no CUDA device is visible", device);
  }
  if (device < 0 || device >= devices) {
    return make_error(ErrorCode::unsupported, "device cuda:{} requested; {} CUDA device(s) visible", device, devices);
  }
  std::unique_ptr<CudaDevice> ctx(new CudaDevice());
  ctx->device_ = device;
  ctx->graphs_ = graphs;
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
  if (stats_.recorded > 0) {
    log::info("cuda:{} graphs: {} decode passes recorded, {} replayed", device_, stats_.recorded, stats_.replayed);
  }
  recordings_.clear();
}

std::string CudaDevice::describe() const {
  const char* graphs = graphs_ == GraphMode::on ? ", graphs on" : graphs_ == GraphMode::plans ? ", graph plans" : "";
  return fmt::format("cuda:{} ({}, {} SMs{})", device_, name_, num_sms_, graphs);
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
  // A decode pass (one token per sequence) of a recordable size gets a launch shape that depends on
  // its size and a power-of-two table width only: tables padded with -1 to that width, and an
  // attention plan with that many blocks of key capacity.
  GraphShape graph;
  if (graphs_ != GraphMode::off && t > 0 && t <= kMaxGraphTokens && batch.num_seqs() == t && o == t) {
    max_blocks = std::max<int64_t>(kMinGraphTableBlocks, static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(max_blocks))));
    graph = GraphShape{.num_tokens = t, .table_blocks = max_blocks};
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
  pass_.graph = graph;
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
  const int64_t capacity_keys = graph.num_tokens > 0 ? graph.table_blocks * shape.block_size : 0;
  LLAISYS_ASSIGN_OR_RETURN(pass_.plan,
                           cuda::plan_attention(batch.positions, batch.seq_indices, shape.num_q_heads,
                                                shape.num_kv_heads, shape.block_size, planned, num_sms_, 0, capacity_keys));
  LLAISYS_RETURN_IF_ERROR(pass_.workspace.prepare(pass_.plan, shape.num_q_heads, shape.head_dim, stream_.get()));
  return static_cast<const Pass*>(&pass_);
}

// Every device pointer a recorded forward's kernel arguments hold that this context may move: the
// batch arrays, the attention tiles and partials, the rotary tables. (The caller's buffers are in
// the ForwardKey; weights and the cuBLASLt workspace never move.)
std::vector<const void*> CudaDevice::baked_pointers() const {
  std::vector<const void*> pointers = {batch_ints_.data(), pass_.workspace.tiles(), pass_.workspace.partial_acc(),
                                       pass_.workspace.partial_ml()};
  if (pass_.shape().rope != nullptr) {
    const auto& rope = static_cast<const CudaRope&>(*pass_.shape().rope);
    pointers.push_back(rope.cos.data());
    pointers.push_back(rope.sin.data());
  }
  return pointers;
}

Status CudaDevice::run_forward(const ForwardKey& key, const std::function<Status()>& forward) {
  if (graphs_ != GraphMode::on || pass_.graph.num_tokens == 0) return forward();
  const std::vector<const void*> pointers = baked_pointers();
  for (const auto& r : recordings_) {
    if (r->shape == pass_.graph && r->key == key && r->pointers == pointers) {
      ++stats_.replayed;
      return cuda::cuda_status(cudaGraphLaunch(r->exec, stream_.get()), "cudaGraphLaunch");
    }
  }
  return record(key, forward);
}

Status CudaDevice::record(const ForwardKey& key, const std::function<Status()>& forward) {
  // A recording whose buffers moved is stale: drop those of this shape and key before adding one.
  std::erase_if(recordings_, [&](const std::unique_ptr<Recording>& r) { return r->shape == pass_.graph && r->key == key; });
  if (recordings_.size() >= kMaxRecordings) recordings_.clear();
  auto give_up = [&](const std::string& why) {
    log::warn("cuda:{} graphs: {}; decode passes run unrecorded from now on", device_, why);
    graphs_ = GraphMode::plans;  // the same launch shapes, so results do not change
    return forward();
  };
  // Thread-local mode: another thread's CUDA calls stay legal while this one records.
  const cudaError_t begin = cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal);
  if (begin != cudaSuccess) return give_up(fmt::format("cudaStreamBeginCapture: {}", cudaGetErrorString(begin)));
  const Status recorded = forward();
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream_.get(), &graph);
  if (!recorded.ok() || end != cudaSuccess || graph == nullptr) {
    // Nothing ran. An op the capture refused, or a real error: the unrecorded forward tells which
    // (it returns a real error again).
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // a refused capture leaves a (non-sticky) error behind
    return give_up(!recorded.ok() ? fmt::format("recording failed: {}", recorded.message())
                                  : fmt::format("cudaStreamEndCapture: {}", cudaGetErrorString(end)));
  }
  auto recording = std::make_unique<Recording>();
  recording->shape = pass_.graph;
  recording->key = key;
  recording->pointers = baked_pointers();
  const cudaError_t instantiated = cudaGraphInstantiate(&recording->exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) {
    recording->exec = nullptr;
    (void)cudaGetLastError();
    return give_up(fmt::format("cudaGraphInstantiate: {}", cudaGetErrorString(instantiated)));
  }
  ++stats_.recorded;
  const cudaGraphExec_t exec = recording->exec;
  recordings_.push_back(std::move(recording));
  return cuda::cuda_status(cudaGraphLaunch(exec, stream_.get()), "cudaGraphLaunch");
}

}  // namespace llaisys::ops
