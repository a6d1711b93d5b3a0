#pragma once
// The CPU device context: a thread pool, the ISA and matmul precision every CPU kernel call gets
// (kernels/cpu/context.hpp), and the host-side pass state (internal to ops/src).

#include <vector>

#include "cpu/context.hpp"
#include "cpu/paged_kv.hpp"
#include "llaisys/ops/device_context.hpp"
#include "llaisys/ops/pass.hpp"

namespace llaisys::ops {

class CpuRope final : public Rope {
 public:
  CpuRope(RopeFrequencies frequencies, int32_t max_positions) : Rope(std::move(frequencies), max_positions) {}
};

// The batch's host arrays as the CPU kernels take them, and each token's cos/sin.
class CpuPass final : public Pass {
 public:
  void reset(const ForwardBatch& batch, const PassShape& shape);
  const cpu::BatchSlots& slots() const { return slots_; }
  const float* cos() const { return cos_.data(); }
  const float* sin() const { return sin_.data(); }

 private:
  cpu::BatchSlots slots_;
  std::vector<float> cos_, sin_;  // [num_tokens, head_dim / 2]
};

class CpuDevice final : public DeviceContext {
 public:
  CpuDevice(int32_t num_threads, cpu::Isa isa, cpu::MatmulPrecision matmul, bool int8_quant);

  const cpu::CpuContext& kernels() const { return ctx_; }

  Device device() const override { return Device::cpu(); }
  DType activation_dtype() const override { return DType::f32; }
  DType default_kv_dtype() const override { return DType::f32; }
  std::string describe() const override;
  Result<Buffer> allocate(std::size_t bytes) override;
  Status copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  Status copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  Status copy_on_device(void* dst, const void* src, std::size_t bytes) override;
  Status synchronize() override { return Status(); }
  uint64_t free_memory() const override;
  Result<std::unique_ptr<Rope>> make_rope(const RopeFrequencies& frequencies, int32_t max_positions) override;
  Result<const Pass*> begin_pass(const ForwardBatch& batch, const PassShape& shape) override;

 private:
  cpu::ThreadPool pool_;
  cpu::CpuContext ctx_;
  CpuPass pass_;
};

inline CpuDevice& as_cpu(DeviceContext& ctx) { return static_cast<CpuDevice&>(ctx); }
inline const CpuPass& as_cpu(const Pass& pass) { return static_cast<const CpuPass&>(pass); }

}  // namespace llaisys::ops
