#pragma once
// Shared helpers of the kernel tests: random inputs, the ISAs this CPU runs, independent references.

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/context.hpp"
#include "llaisys/core/dtype.hpp"

namespace llaisys::test {

inline std::vector<float> random_floats(std::size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<cpu::Isa> supported_isas() {
  std::vector<cpu::Isa> isas;
  for (cpu::Isa isa : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (cpu::isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The canonical order written out independently of the kernels: lane l sums k = 16 j + l with fma,
// the lanes past n in the last step taking fma(0, 0, lane) (-0 becomes +0), then lanes are folded
// 8, 4, 2, 1 apart.
inline float canonical_dot(const float* a, const float* b, int64_t n) {
  float lanes[16] = {};
  for (int64_t j = 0; j * 16 < n; ++j) {
    for (int64_t l = 0; l < 16; ++l) {
      const bool present = j * 16 + l < n;
      lanes[l] = std::fma(present ? a[j * 16 + l] : 0.0f, present ? b[j * 16 + l] : 0.0f, lanes[l]);
    }
  }
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
  }
  return lanes[0];
}

}  // namespace llaisys::test
