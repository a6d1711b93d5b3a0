#pragma once
// DeviceContext: where a model's ops run, and everything device-specific a forward pass needs that is
// not a tensor of the model: the CPU's thread pool and ISA, or a CUDA device's stream, cuBLASLt
// handle, staging buffers and workspaces. The decoder (plugins/common/decoder.hpp) is written once
// over the ops (llaisys/ops/*.hpp); only this object knows which device it runs on.
//
//   auto ctx = ops::make_cpu_context({.num_threads = 2});        // or ops::make_cuda_context({.device = 0})
//   ops::Tensor w = ops::upload_matrix(*ctx, host_view, owner);  // weights: typed tensors on the device
//   ops::linear(*ctx, x, weight, y);                             // each op dispatches on device and dtype
//
// Contract: a context and everything made from it are used by one thread at a time (the engine
// thread), like the model that owns them. Ops enqueue work and return; results are visible on the
// host after copy_to_host() (which synchronises). Every call returns Status and never throws.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "llaisys/core/device.hpp"
#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/core/tensor.hpp"

namespace llaisys {
struct ForwardBatch;
}

namespace llaisys::ops {

class Pass;
class Rope;
struct PassShape;
struct RopeFrequencies;

// The caller's side of a recorded forward (DeviceContext::run_forward): the buffers its ops read and
// write, and the shape of its outputs. Equal keys (with equal passes) mean the same work.
struct ForwardKey {
  const void* activations = nullptr;  // the caller's activation workspace
  const void* kv_cache = nullptr;     // the KV pool the pass reads and writes
  int64_t num_outputs = 0;
  int64_t output_width = 0;
  int output_kind = 0;
  bool operator==(const ForwardKey&) const = default;
};

// Memory owned on one device (host memory for the CPU), freed when the last copy is dropped.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<void> memory, std::size_t bytes, Device device)
      : memory_(std::move(memory)), bytes_(bytes), device_(device) {}

  void* data() const { return memory_.get(); }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool empty() const { return bytes_ == 0; }
  // What keeps the memory alive, for tensors that point into it.
  const std::shared_ptr<void>& owner() const { return memory_; }

 private:
  std::shared_ptr<void> memory_;
  std::size_t bytes_ = 0;
  Device device_;
};

// A tensor a model keeps (a weight, a norm vector): a typed view on the context's device and whatever
// keeps its memory alive (a device buffer, or the mapped files of a CPU model's weights).
struct Tensor {
  TensorView view;
  std::shared_ptr<const void> owner;

  bool empty() const { return view.data() == nullptr; }
  DType dtype() const { return view.dtype(); }
  int64_t dim(int axis) const { return view.dim(axis); }
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;

  virtual Device device() const = 0;
  // The dtype linear() reads its input rows in, i.e. what norms, attention and activations write
  // for it: f32 on the CPU (exact products; its bf16 matmul mode rounds inside the kernel), bf16 on
  // CUDA (tensor-core GEMMs).
  virtual DType activation_dtype() const = 0;
  // The KV cache dtype a model gets when its options do not choose (f32 on the CPU, bf16 on CUDA).
  virtual DType default_kv_dtype() const = 0;
  // One line for logs: "cpu: 2 threads, isa avx512, matmul f32", "cuda:0 (NVIDIA H100, 132 SMs)".
  virtual std::string describe() const = 0;

  // Uninitialised memory on the device. out_of_memory when it does not fit.
  virtual Result<Buffer> allocate(std::size_t bytes) = 0;
  // dst and src may be on the device or the host as the names say; copy_to_host synchronises.
  virtual Status copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual Status copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual Status copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  // Waits for everything enqueued so far; kernel faults surface here.
  virtual Status synchronize() = 0;
  // Bytes a new allocation could still get (device memory, or the host's available memory).
  virtual uint64_t free_memory() const = 0;

  // The rotary tables of a model (llaisys/ops/rope_kv.hpp), for positions [0, max_positions).
  virtual Result<std::unique_ptr<Rope>> make_rope(const RopeFrequencies& frequencies, int32_t max_positions) = 0;
  // Uploads one pass's batch (llaisys/ops/pass.hpp). The Pass belongs to the context and stays valid
  // until the next begin_pass().
  virtual Result<const Pass*> begin_pass(const ForwardBatch& batch, const PassShape& shape) = 0;

  // Runs the current pass's forward (the ops enqueued by `forward`, which must neither synchronise
  // nor copy to the host). A device may record it once and replay the recording for later passes
  // of the same shape (CUDA graphs for decode passes, cuda_device.hpp); `key` names the caller's
  // buffers that the ops read and write, so that a recording is replayed only onto the same ones.
  // Here: runs it.
  virtual Status run_forward(const ForwardKey& key, const std::function<Status()>& forward) {
    (void)key;
    return forward();
  }
};

// CPU options, as a model's options spell them (errors name the option and the valid values).
struct CpuOptions {
  int32_t num_threads = 0;         // <= 0: one per CPU this process may use
  std::string_view isa = "auto";   // "auto" | "avx512" | "avx2" | "scalar": every path gives the same bits
  std::string_view matmul = "f32"; // "f32" | "bf16" (AVX512-BF16 products) | "int8" (Q8_0/Q4_0/Q5_0 weights: integer
                                   // products on 8-bit activations) | "auto" (bf16 on AMD CPUs that have it,
                                   // int8 where AVX512-VNNI/VBMI/BITALG run it; the decoder's default)
};
Result<std::unique_ptr<DeviceContext>> make_cpu_context(const CpuOptions& options);

// CUDA options, as a model's options spell them. graphs: "on" (default: decode passes of up to
// 64 sequences recorded as CUDA graphs and replayed), "plans" (the launch shapes "on" records, run
// without recording: what the tests compare "on" with), "off" (launched one by one).
struct CudaOptions {
  int device = 0;
  std::string_view graphs = "on";
};
// unsupported when this build has no CUDA backend, no device is visible or `device` is out of range;
// invalid_argument for an unknown graphs value.
Result<std::unique_ptr<DeviceContext>> make_cuda_context(const CudaOptions& options);

}  // namespace llaisys::ops
