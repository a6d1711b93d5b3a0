#include "cpu_device.hpp"

#include <cstring>
#include <new>

#include <fmt/format.h>

#include "cpu/linear_bf16.hpp"
#include "cpu/linear_int8.hpp"
#include "llaisys/core/host_memory.hpp"
#include "llaisys/core/memory.hpp"

namespace llaisys::ops {

void CpuPass::reset(const ForwardBatch& batch, const PassShape& shape) {
  batch_ = batch;
  shape_ = shape;
  const int64_t t = batch.num_tokens();
  slots_ = cpu::BatchSlots{.num_tokens = t,
                           .positions = batch.positions.data(),
                           .seq_indices = batch.seq_indices.data(),
                           .block_tables = batch.block_tables.data()};
  if (shape.rope != nullptr) {
    const auto half = static_cast<std::size_t>(shape.rope->head_dim() / 2);
    const std::size_t n = static_cast<std::size_t>(t) * half;
    if (cos_.size() < n) {
      cos_.resize(n);
      sin_.resize(n);
    }
    fill_rope_tables(shape.rope->frequencies(), batch.positions.data(), t, cos_.data(), sin_.data());
  }
}

CpuDevice::CpuDevice(int32_t num_threads, cpu::Isa isa, cpu::MatmulPrecision matmul, bool int8_quant)
    : pool_(num_threads), ctx_{.pool = &pool_, .isa = isa, .matmul = matmul, .int8_quant = int8_quant} {}

std::string CpuDevice::describe() const {
  // bf16 products apply where both the ISA and the weights allow them (cpu/linear_bf16.hpp).
  const bool bf16 = ctx_.matmul == cpu::MatmulPrecision::bf16 && ctx_.isa == cpu::Isa::avx512;
  return fmt::format("cpu: {} threads, isa {}, matmul {}{}", pool_.num_threads(), cpu::to_string(ctx_.isa),
                     bf16 ? "bf16 (activations rounded to bf16 for bf16 and quantized weights)" : "f32",
                     ctx_.int8_quant ? ", int8 for Q8_0/Q4_0/Q5_0 weights (activations rounded to 8-bit blocks)" : "");
}

Result<Buffer> CpuDevice::allocate(std::size_t bytes) {
  try {
    auto holder = std::make_shared<AlignedBuffer>(bytes);
    std::shared_ptr<void> memory(holder, holder->data());
    return Buffer(std::move(memory), bytes, Device::cpu());
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::out_of_memory, "cannot allocate {} MiB of host memory", bytes >> 20);
  }
}

Status CpuDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status();
}
Status CpuDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status();
}
Status CpuDevice::copy_on_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
  return Status();
}

uint64_t CpuDevice::free_memory() const { return available_memory_bytes(); }

Result<std::unique_ptr<Rope>> CpuDevice::make_rope(const RopeFrequencies& frequencies, int32_t max_positions) {
  return std::unique_ptr<Rope>(std::make_unique<CpuRope>(frequencies, max_positions));
}

Result<const Pass*> CpuDevice::begin_pass(const ForwardBatch& batch, const PassShape& shape) {
  pass_.reset(batch, shape);
  return static_cast<const Pass*>(&pass_);
}

Result<std::unique_ptr<DeviceContext>> make_cpu_context(const CpuOptions& options) {
  const std::optional<cpu::Isa> isa = cpu::parse_isa(options.isa);
  if (!isa) {
    return make_error(ErrorCode::invalid_argument, "option isa: expected auto, avx512, avx2 or scalar, got \"{}\"",
                      options.isa);
  }
  if (!cpu::isa_supported(*isa)) {
    return make_error(ErrorCode::unsupported, "option isa: this CPU does not support {}", cpu::to_string(*isa));
  }
  cpu::MatmulPrecision matmul = cpu::MatmulPrecision::f32;
  bool int8_quant = false;
  if (options.matmul == "int8") {
    // Same bits on every ISA (the scalar form without VNNI/VBMI/BITALG, much slower): no refusal needed.
    int8_quant = true;
  } else if (options.matmul == "bf16") {
    if (!cpu::bf16dot::supported()) {
      return Status(ErrorCode::unsupported,
                    "option matmul: bf16 needs AVX512-BF16, which this CPU lacks (use f32 or auto)");
    }
    // An explicit "bf16" with an ISA that cannot run it would silently compute in f32 otherwise.
    if (*isa != cpu::Isa::avx512) {
      return make_error(ErrorCode::invalid_argument, "option matmul: bf16 needs isa avx512, not {}",
                        cpu::to_string(*isa));
    }
    matmul = cpu::MatmulPrecision::bf16;
  } else if (options.matmul == "auto") {
    // bf16 products only where they were measured faster: AMD's AVX512-BF16 (Zen 5: 1.3x the prefill).
    // Intel's ran slower than the f32 FMAs (Emerald Rapids: 0.85x the prefill, quantized decode 0.6x),
    // so "auto" stays exact there; "bf16" still insists. docs/BENCHMARKS.md has both.
    if (cpu::bf16dot::supported() && *isa == cpu::Isa::avx512 && cpu::cpu_is_amd()) matmul = cpu::MatmulPrecision::bf16;
    // Q8_0 / Q4_0 / Q5_0 weights in the int8 mode where its AVX-512 form runs (llama.cpp's
    // arithmetic for these files): on Emerald Rapids it decodes 1.2x and more and prefills 2-3x the
    // exact path (docs/BENCHMARKS.md). Without the instructions only its scalar form would run:
    // exact instead.
    int8_quant = *isa == cpu::Isa::avx512 && cpu::int8dot::supported();
  } else if (options.matmul != "f32") {
    return make_error(ErrorCode::invalid_argument, "option matmul: expected f32, bf16, int8 or auto, got \"{}\"",
                      options.matmul);
  }
  try {
    return std::unique_ptr<DeviceContext>(std::make_unique<CpuDevice>(options.num_threads, *isa, matmul, int8_quant));
  } catch (const std::system_error& e) {
    return make_error(ErrorCode::internal, "cannot start the CPU threads: {}", e.what());
  }
}

}  // namespace llaisys::ops
