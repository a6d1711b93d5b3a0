// linear: bf16/f16/f32 weights against independent references, on every ISA; batch invariance.

#include <catch2/catch.hpp>

#include "cpu/linear.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

struct Weights {
  std::vector<uint16_t> half;  // bf16 or f16 bits
  std::vector<float> f32;      // f32 weights, or the exact f32 value of each half
  DType dtype;
  WeightMatrix matrix(int64_t n, int64_t k) const {
    return {.data = dtype == DType::f32 ? static_cast<const void*>(f32.data()) : half.data(),
            .dtype = dtype, .rows = n, .cols = k};
  }
};

Weights random_weights(DType dtype, int64_t n, int64_t k, uint32_t seed) {
  Weights w{.half = {}, .f32 = random_floats(static_cast<std::size_t>(n * k), seed), .dtype = dtype};
  if (dtype != DType::f32) {
    w.half.resize(w.f32.size());
    for (std::size_t i = 0; i < w.f32.size(); ++i) {
      w.half[i] = dtype == DType::bf16 ? f32_to_bf16(w.f32[i]) : f32_to_f16(w.f32[i]);
      w.f32[i] = dtype == DType::bf16 ? bf16_to_f32(w.half[i]) : f16_to_f32(w.half[i]);
    }
  }
  return w;
}

}  // namespace

TEST_CASE("linear matches the canonical-order reference bit for bit and a double reference closely", "[kernels][linear]") {
  ThreadPool pool(3);
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 17, 16}, {3, 5, 33}, {4, 16, 64}, {5, 37, 100}, {9, 70, 257}, {1, 300, 896}};
  for (DType dtype : {DType::bf16, DType::f16, DType::f32}) {
    for (const auto& shape : shapes) {
      const int64_t m = shape[0], n = shape[1], k = shape[2];
      const Weights w = random_weights(dtype, n, k, static_cast<uint32_t>(n * 31 + k));
      const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), static_cast<uint32_t>(m + k));
      const std::vector<float> bias = random_floats(static_cast<std::size_t>(n), 7);
      std::vector<float> expected(static_cast<std::size_t>(m * n));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float dot = canonical_dot(x.data() + i * k, w.f32.data() + j * k, k);
          expected[static_cast<std::size_t>(i * n + j)] = dot + bias[static_cast<std::size_t>(j)];
          double exact = bias[static_cast<std::size_t>(j)];
          for (int64_t kk = 0; kk < k; ++kk) exact += static_cast<double>(x[static_cast<std::size_t>(i * k + kk)]) * static_cast<double>(w.f32[static_cast<std::size_t>(j * k + kk)]);
          INFO("m " << m << " n " << n << " k " << k);
          CHECK(std::fabs(exact - static_cast<double>(expected[static_cast<std::size_t>(i * n + j)])) <= 1e-5 * (1.0 + static_cast<double>(k)));
        }
      }
      for (Isa isa : supported_isas()) {
        std::vector<float> y(static_cast<std::size_t>(m * n), -1.0f);
        const LinearJob job{.weight = w.matrix(n, k), .bias = bias.data(), .y = y.data(), .y_stride = n};
        linear({.pool = &pool, .isa = isa}, x.data(), k, m, k, std::span(&job, 1));
        INFO("isa " << to_string(isa) << " dtype " << to_string(dtype) << " m " << m << " n " << n << " k " << k);
        CHECK(same_bits(y, expected));
      }
    }
  }
}

TEST_CASE("linear gives the same bits on every ISA when products underflow to -0", "[kernels][linear]") {
  // x w = -1e-60 rounds to -0: a lane holding only such products is -0 until the padded last step
  // of a K that is not a multiple of 16 adds its +0 (on every ISA, as the canonical order says).
  ThreadPool pool(2);
  for (int64_t k : {1, 15, 16, 17, 33, 48}) {
    const int64_t n = 3, m = 2;
    const std::vector<float> x(static_cast<std::size_t>(m * k), 1e-30f);
    Weights w{.half = {}, .f32 = std::vector<float>(static_cast<std::size_t>(n * k), -1e-30f), .dtype = DType::f32};
    std::vector<float> expected(static_cast<std::size_t>(m * n));
    for (int64_t i = 0; i < m * n; ++i) expected[static_cast<std::size_t>(i)] = canonical_dot(x.data(), w.f32.data(), k);
    // 16 | k: every lane sums -0 products only, and -0 + -0 folds to -0.
    CHECK(std::signbit(expected[0]) == (k % 16 == 0));
    for (Isa isa : supported_isas()) {
      std::vector<float> y(static_cast<std::size_t>(m * n), 1.0f);
      const LinearJob job{.weight = w.matrix(n, k), .y = y.data(), .y_stride = n};
      linear({.pool = &pool, .isa = isa}, x.data(), k, m, k, std::span(&job, 1));
      INFO("isa " << to_string(isa) << " k " << k);
      CHECK(same_bits(y, expected));
    }
  }
}

TEST_CASE("linear rows do not depend on the batch, the thread count or the fused jobs", "[kernels][linear]") {
  const int64_t k = 200, n1 = 45, n2 = 19, m = 11;
  const Weights w1 = random_weights(DType::bf16, n1, k, 1), w2 = random_weights(DType::bf16, n2, k, 2);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 3);
  const std::vector<float> residual = random_floats(static_cast<std::size_t>(m * n2), 4);
  for (Isa isa : supported_isas()) {
    ThreadPool one(1), four(4);
    // The whole batch, both matrices in one region (the second accumulating into a residual).
    std::vector<float> y1(static_cast<std::size_t>(m * n1)), y2 = residual;
    const LinearJob jobs[] = {{.weight = w1.matrix(n1, k), .y = y1.data(), .y_stride = n1},
                              {.weight = w2.matrix(n2, k), .y = y2.data(), .y_stride = n2, .accumulate = true}};
    linear({.pool = &four, .isa = isa}, x.data(), k, m, k, jobs);
    // Each row alone, one matrix at a time, on one thread.
    for (int64_t row = 0; row < m; ++row) {
      std::vector<float> r1(static_cast<std::size_t>(n1));
      std::vector<float> r2(residual.begin() + row * n2, residual.begin() + (row + 1) * n2);
      const LinearJob a{.weight = w1.matrix(n1, k), .y = r1.data(), .y_stride = n1};
      const LinearJob b{.weight = w2.matrix(n2, k), .y = r2.data(), .y_stride = n2, .accumulate = true};
      linear({.pool = &one, .isa = isa}, x.data() + row * k, k, 1, k, std::span(&a, 1));
      linear({.pool = &one, .isa = isa}, x.data() + row * k, k, 1, k, std::span(&b, 1));
      INFO("isa " << to_string(isa) << " row " << row);
      CHECK(same_bits(r1, std::vector<float>(y1.begin() + row * n1, y1.begin() + (row + 1) * n1)));
      CHECK(same_bits(r2, std::vector<float>(y2.begin() + row * n2, y2.begin() + (row + 1) * n2)));
    }
  }
}
