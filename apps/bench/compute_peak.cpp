#include "compute_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cpu/cpu_isa.hpp"
#include "cpu/linear_bf16.hpp"

namespace llaisys::bench {
namespace {

constexpr int kChains = 12;  // independent accumulators: more than latency x throughput on x86 cores
constexpr int64_t kIterations = 20'000'000;

// Each iteration: kChains instructions of 16 (f32 FMA) or 32 (bf16 dot) multiply-adds. The asm
// barrier keeps the compiler from folding the loop.
__attribute__((target("avx512f"))) float fma_loop() {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1e-3f);
  const __m512 y = _mm512_set1_ps(0.5f);
  for (int64_t i = 0; i < kIterations; ++i) {
#pragma GCC unroll 12
    for (__m512& a : acc) a = _mm512_fmadd_ps(x, y, a);
    asm volatile("" : "+v"(x));
  }
  float sum = 0.0f;
  for (const __m512& a : acc) sum += _mm512_cvtss_f32(a);
  return sum;
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop() {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512i x = _mm512_set1_epi16(0x3A83);  // ~1e-3 in bf16
  const __m512i y = _mm512_set1_epi16(0x3F00);
  for (int64_t i = 0; i < kIterations; ++i) {
#pragma GCC unroll 12
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, __builtin_bit_cast(__m512bh, x), __builtin_bit_cast(__m512bh, y));
    asm volatile("" : "+v"(x));
  }
  float sum = 0.0f;
  for (const __m512& a : acc) sum += _mm512_cvtss_f32(a);
  return sum;
}

}  // namespace

double measure_peak_macs(int num_threads, bool bf16) {
  if (!cpu::isa_supported(cpu::Isa::avx512) || (bf16 && !cpu::bf16dot::supported())) return 0.0;
  num_threads = std::max(1, num_threads);
  std::atomic<float> sink{0.0f};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < num_threads; ++t) {
    threads.emplace_back([&] { sink = sink + (bf16 ? dpbf16_loop() : fma_loop()); });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double per_instruction = bf16 ? 32.0 : 16.0;
  return static_cast<double>(num_threads) * static_cast<double>(kIterations) * kChains * per_instruction / seconds;
}

}  // namespace llaisys::bench
