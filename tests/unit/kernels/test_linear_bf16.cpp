// linear with MatmulPrecision::bf16 (AVX512-BF16 dot products): against a scalar model of the
// instruction written from its specification, against the exact f32 path within the error that
// rounding the activations to bf16 allows, and batch / thread / fusion invariance within the mode.
// Skipped (reported, not failed) on CPUs without AVX512-BF16.

#include <algorithm>
#include <limits>

#include <catch2/catch.hpp>

#include "cpu/linear.hpp"
#include "cpu/linear_bf16.hpp"
#include "cpu/quant.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

// vdpbf16ps on one lane, as the Intel SDM writes it: the odd pair's product is added first, then
// the even pair's, each product exact (bf16 x bf16 fits f32) and each sum rounded to nearest even.
float dpbf16_lane(float acc, uint16_t x0, uint16_t x1, uint16_t w0, uint16_t w1) {
  acc = acc + bf16_to_f32(x1) * bf16_to_f32(w1);
  return acc + bf16_to_f32(x0) * bf16_to_f32(w0);
}

// The mode's canonical order (linear_bf16.hpp) written out independently of the kernels.
float bf16_dot(const uint16_t* x, const uint16_t* w, int64_t k) {
  float lanes[16] = {};
  for (int64_t j = 0; j * 32 < k; ++j) {
    for (int64_t l = 0; l < 16; ++l) {
      const int64_t i0 = j * 32 + 2 * l, i1 = i0 + 1;
      const uint16_t x0 = i0 < k ? x[i0] : 0, x1 = i1 < k ? x[i1] : 0;
      const uint16_t w0 = i0 < k ? w[i0] : 0, w1 = i1 < k ? w[i1] : 0;
      lanes[l] = dpbf16_lane(lanes[l], x0, x1, w0, w1);
    }
  }
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
  }
  return lanes[0];
}

CpuContext bf16_context(ThreadPool& pool) { return {.pool = &pool, .isa = Isa::avx512, .matmul = MatmulPrecision::bf16}; }

}  // namespace

TEST_CASE("bf16 linear follows the vdpbf16ps model bit for bit and stays near the f32 path", "[kernels][linear][bf16]") {
  if (!bf16dot::supported()) {
    WARN("this CPU has no AVX512-BF16: the bf16 matmul path is not tested here");
    return;
  }
  ThreadPool pool(3);
  // K above 2,048 runs a tile in k chunks with its accumulators carried between them (2, 3 chunks;
  // a masked tail in the last; partial row and column tiles).
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 17, 31}, {3, 5, 33}, {4, 16, 64}, {5, 37, 100}, {9, 70, 257}, {1, 300, 896},
                               {13, 41, 896}, {2, 9, 4864}, {33, 6, 2049}, {11, 13, 4100}, {32, 8, 4864},
                               {1, 5, 0}, {6, 5, 0}};
  for (const auto& shape : shapes) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    const std::vector<uint16_t> w = to_bf16(random_floats(static_cast<std::size_t>(n * k), static_cast<uint32_t>(n * 31 + k)));
    const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), static_cast<uint32_t>(m + k));
    const std::vector<float> bias = random_floats(static_cast<std::size_t>(n), 7);
    const std::vector<uint16_t> xb = to_bf16(x);
    // The same rows with 5 NaNs between them: a row stride other than K, and padding never read.
    const int64_t stride = k + 5;
    std::vector<float> x_padded(static_cast<std::size_t>(m * stride), std::numeric_limits<float>::quiet_NaN());
    for (int64_t i = 0; i < m; ++i) std::copy_n(x.begin() + i * k, k, x_padded.begin() + i * stride);
    std::vector<float> expected(static_cast<std::size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        expected[static_cast<std::size_t>(i * n + j)] =
            bf16_dot(xb.data() + i * k, w.data() + j * k, k) + bias[static_cast<std::size_t>(j)];
      }
    }
    const WeightMatrix matrix{.data = w.data(), .dtype = DType::bf16, .rows = n, .cols = k};
    std::vector<float> y(static_cast<std::size_t>(m * n), -1.0f), exact(y.size(), -1.0f);
    const LinearJob job{.weight = matrix, .bias = bias.data(), .y = y.data(), .y_stride = n};
    linear(bf16_context(pool), x.data(), k, m, k, std::span(&job, 1));
    const LinearJob exact_job{.weight = matrix, .bias = bias.data(), .y = exact.data(), .y_stride = n};
    linear({.pool = &pool, .isa = Isa::avx512}, x.data(), k, m, k, std::span(&exact_job, 1));
    INFO("m " << m << " n " << n << " k " << k);
    CHECK(same_bits(y, expected));
    // Strided input, and accumulating into a residual with the bias: residual + (dot + bias).
    const std::vector<float> residual = random_floats(y.size(), 11);
    std::vector<float> accumulated = residual, expected_accumulated(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) expected_accumulated[i] = residual[i] + expected[i];
    const LinearJob accumulate_job{.weight = matrix, .bias = bias.data(), .y = accumulated.data(), .y_stride = n,
                                   .accumulate = true};
    linear(bf16_context(pool), x_padded.data(), stride, m, k, std::span(&accumulate_job, 1));
    CHECK(same_bits(accumulated, expected_accumulated));
    // Rounding each activation to bf16 moves it by at most 2^-9 relative: |x w| summed bounds the error.
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double magnitude = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          magnitude += std::fabs(static_cast<double>(x[static_cast<std::size_t>(i * k + kk)]) *
                                 static_cast<double>(bf16_to_f32(w[static_cast<std::size_t>(j * k + kk)])));
        }
        const std::size_t at = static_cast<std::size_t>(i * n + j);
        CHECK(std::fabs(static_cast<double>(y[at]) - static_cast<double>(exact[at])) <= magnitude * (1.0 / 256) + 1e-5);
      }
    }
  }
}

TEST_CASE("bf16 linear rows do not depend on the batch, the thread count or the fused jobs", "[kernels][linear][bf16]") {
  if (!bf16dot::supported()) {
    WARN("this CPU has no AVX512-BF16: the bf16 matmul path is not tested here");
    return;
  }
  // k = 4864 spans several 32-element steps and a 600-row batch several row blocks of the kernel.
  for (const int64_t k : {200, 4864}) {
    const int64_t n1 = 45, n2 = 19, m = k == 200 ? 600 : 37;
    const std::vector<uint16_t> w1 = to_bf16(random_floats(static_cast<std::size_t>(n1 * k), 1));
    const std::vector<uint16_t> w2 = to_bf16(random_floats(static_cast<std::size_t>(n2 * k), 2));
    const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 3);
    const std::vector<float> residual = random_floats(static_cast<std::size_t>(m * n2), 4);
    const WeightMatrix a{.data = w1.data(), .dtype = DType::bf16, .rows = n1, .cols = k};
    const WeightMatrix b{.data = w2.data(), .dtype = DType::bf16, .rows = n2, .cols = k};
    ThreadPool one(1), four(4);
    std::vector<float> y1(static_cast<std::size_t>(m * n1)), y2 = residual;
    const LinearJob jobs[] = {{.weight = a, .y = y1.data(), .y_stride = n1},
                              {.weight = b, .y = y2.data(), .y_stride = n2, .accumulate = true}};
    linear(bf16_context(four), x.data(), k, m, k, jobs);
    for (int64_t row = 0; row < m; ++row) {
      std::vector<float> r1(static_cast<std::size_t>(n1));
      std::vector<float> r2(residual.begin() + row * n2, residual.begin() + (row + 1) * n2);
      const LinearJob ja{.weight = a, .y = r1.data(), .y_stride = n1};
      const LinearJob jb{.weight = b, .y = r2.data(), .y_stride = n2, .accumulate = true};
      linear(bf16_context(one), x.data() + row * k, k, 1, k, std::span(&ja, 1));
      linear(bf16_context(one), x.data() + row * k, k, 1, k, std::span(&jb, 1));
      INFO("k " << k << " row " << row);
      CHECK(same_bits(r1, std::vector<float>(y1.begin() + row * n1, y1.begin() + (row + 1) * n1)));
      CHECK(same_bits(r2, std::vector<float>(y2.begin() + row * n2, y2.begin() + (row + 1) * n2)));
    }
  }
}

TEST_CASE("bf16 precision leaves non-bf16 weights and other ISAs on the exact f32 path", "[kernels][linear][bf16]") {
  ThreadPool pool(2);
  const int64_t m = 3, n = 10, k = 70;
  const std::vector<float> w = random_floats(static_cast<std::size_t>(n * k), 5);
  const std::vector<uint16_t> w_bf16 = to_bf16(w);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 6);
  for (Isa isa : supported_isas()) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      // bf16 weights on AVX-512 are the one case the mode changes.
      if (dtype == DType::bf16 && isa == Isa::avx512) continue;
      const WeightMatrix matrix{.data = dtype == DType::f32 ? static_cast<const void*>(w.data()) : w_bf16.data(),
                                .dtype = dtype, .rows = n, .cols = k};
      std::vector<float> fast(static_cast<std::size_t>(m * n)), exact(fast.size());
      const LinearJob a{.weight = matrix, .y = fast.data(), .y_stride = n};
      const LinearJob b{.weight = matrix, .y = exact.data(), .y_stride = n};
      linear({.pool = &pool, .isa = isa, .matmul = MatmulPrecision::bf16}, x.data(), k, m, k, std::span(&a, 1));
      linear({.pool = &pool, .isa = isa}, x.data(), k, m, k, std::span(&b, 1));
      INFO("isa " << to_string(isa) << " dtype " << to_string(dtype));
      CHECK(same_bits(fast, exact));
    }
  }
}

TEST_CASE("bf16 linear with quantized weights follows the vdpbf16ps model on their rounded dequantization",
          "[kernels][linear][bf16][quant]") {
  if (!bf16dot::supported()) {
    WARN("this CPU has no AVX512-BF16: the bf16 matmul path is not tested here");
    return;
  }
  // Every quantized type, alone and in one region with a bf16 job; the register path (M up to 16, or
  // 8 for Q5_K / Q6_K), the panel path above it, 301 rows so that each thread interleaves several
  // streams; biases and a residual.
  const DType types[] = {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0,
                         DType::q5_1, DType::q4_k, DType::q5_k, DType::q6_k};
  const int64_t k = 512, n = 301, n_bf16 = 23;
  const std::vector<uint16_t> w_bf16 = to_bf16(random_floats(static_cast<std::size_t>(n_bf16 * k), 91));
  const std::vector<float> bias = random_floats(static_cast<std::size_t>(n), 92);
  for (DType dtype : types) {
    const std::vector<float> values = random_floats(static_cast<std::size_t>(n * k), 93, -0.2f, 0.2f);
    std::vector<uint8_t> blocks(static_cast<std::size_t>(dtype_bytes(dtype, n * k)));
    quantize(dtype, values.data(), n * k, blocks.data());
    std::vector<float> dense(values.size());
    dequantize(dtype, blocks.data(), n * k, dense.data());
    const std::vector<uint16_t> rounded = to_bf16(dense);  // round to nearest even, as the test's model does
    const WeightMatrix q{.data = blocks.data(), .dtype = dtype, .rows = n, .cols = k};
    const WeightMatrix b{.data = w_bf16.data(), .dtype = DType::bf16, .rows = n_bf16, .cols = k};
    for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 16, 17, 40}) {
      const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), static_cast<uint32_t>(m + 94));
      const std::vector<uint16_t> xb = to_bf16(x);
      const std::vector<float> residual = random_floats(static_cast<std::size_t>(m * n), 95);
      std::vector<float> expected(residual.size()), expected_b(static_cast<std::size_t>(m * n_bf16));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const std::size_t at = static_cast<std::size_t>(i * n + j);
          expected[at] = residual[at] + (bf16_dot(xb.data() + i * k, rounded.data() + j * k, k) + bias[static_cast<std::size_t>(j)]);
        }
        for (int64_t j = 0; j < n_bf16; ++j) {
          expected_b[static_cast<std::size_t>(i * n_bf16 + j)] = bf16_dot(xb.data() + i * k, w_bf16.data() + j * k, k);
        }
      }
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> y = residual, y_b(expected_b.size());
        const LinearJob jobs[] = {{.weight = q, .bias = bias.data(), .y = y.data(), .y_stride = n, .accumulate = true},
                                  {.weight = b, .y = y_b.data(), .y_stride = n_bf16}};
        linear(bf16_context(pool), x.data(), k, m, k, jobs);
        INFO("dtype " << to_string(dtype) << " m " << m << " threads " << threads);
        CHECK(same_bits(y, expected));
        CHECK(same_bits(y_b, expected_b));
      }
    }
  }
}
