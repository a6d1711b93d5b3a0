#pragma once
// Helpers of the CUDA kernel tests: random inputs, synchronous host <-> device copies, bf16.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/context.hpp"
#include "cpu/thread_pool.hpp"
#include "cuda/context.hpp"
#include "cuda/cublaslt.hpp"
#include "cuda/device_memory.hpp"
#include "llaisys/core/dtype.hpp"
#include "kernel_test_util.hpp"  // tests/unit/kernels

namespace llaisys::cuda_test {

using test::random_floats;  // kernels/kernel_test_util.hpp: the CPU kernel tests' generator

inline std::vector<bf16_t> to_bf16(const std::vector<float>& v) {
  std::vector<bf16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}
inline std::vector<float> from_bf16(const std::vector<bf16_t>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}
// The values bf16 can hold: what both sides see when the GPU reads bf16.
inline std::vector<float> round_bf16(const std::vector<float>& v) { return from_bf16(to_bf16(v)); }

template <class T>
cuda::DeviceBuffer<T> to_device(const std::vector<T>& host) {
  auto buffer = cuda::DeviceBuffer<T>::allocate(host.size());
  REQUIRE(buffer.ok());
  if (!host.empty()) {
    REQUIRE(cudaMemcpy(buffer->data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  return std::move(buffer).value();
}

template <class T>
std::vector<T> to_host(const cuda::DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  if (!host.empty()) {
    REQUIRE(cudaMemcpy(host.data(), buffer.data(), host.size() * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  }
  return host;
}

// A stream, a cuBLASLt handle and a CPU context for the references.
struct Fixture {
  cuda::Stream stream = cuda::Stream::create().value();
  cuda::CublasLt blas = cuda::CublasLt::create().value();
  cuda::CudaContext ctx{.stream = stream.get(), .blas = &blas};
  cpu::ThreadPool pool{2};
  cpu::CpuContext cpu{.pool = &pool, .isa = cpu::detect_isa()};
};

inline constexpr double kF32Eps = 0x1.0p-24;  // unit roundoff of f32
inline constexpr double kBf16Eps = 0x1.0p-8;  // unit roundoff of bf16

// |a - b| and |a| in double (the tolerances are doubles).
inline double abs_diff(float a, float b) { return std::fabs(static_cast<double>(a) - static_cast<double>(b)); }
inline double mag(float a) { return std::fabs(static_cast<double>(a)); }

}  // namespace llaisys::cuda_test
