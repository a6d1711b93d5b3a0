// linear with CpuContext::int8_quant (Q8_0 / Q4_0 / Q5_0 weights against activations rounded to
// 8-bit blocks, integer dot products): against a model of the mode's canonical order written here
// from linear_int8.hpp's definition and the GGUF block layouts, bit for bit on every ISA path, M,
// thread count and fusion; against the exact path within the bound that rounding x allows; the
// other weight types untouched. The AVX-512 path (VNNI, VBMI, BITALG) is compared where the CPU has it (reported
// otherwise); the scalar form runs everywhere.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <catch2/catch.hpp>

#include "cpu/linear.hpp"
#include "cpu/linear_int8.hpp"
#include "cpu/quant.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

constexpr int64_t kBlock = 32;

// x rounded as the definition says: dx = max |x| / 127, q = round-to-nearest-even(x * (1 / dx)).
struct Rounded {
  std::vector<int> q;
  std::vector<float> d;
};
Rounded round_rows(const std::vector<float>& x, int64_t m, int64_t k) {
  Rounded r{std::vector<int>(static_cast<std::size_t>(m * k)), std::vector<float>(static_cast<std::size_t>(m * k / kBlock))};
  for (int64_t b = 0; b < m * k / kBlock; ++b) {
    float amax = 0.0f;
    for (int64_t e = 0; e < kBlock; ++e) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(b * kBlock + e)]));
    const float dx = amax / 127.0f, inv = dx > 0.0f ? 1.0f / dx : 0.0f;
    r.d[static_cast<std::size_t>(b)] = dx;
    for (int64_t e = 0; e < kBlock; ++e) {
      const std::size_t at = static_cast<std::size_t>(b * kBlock + e);
      r.q[at] = static_cast<int>(std::nearbyint(std::clamp(x[at] * inv, -127.0f, 127.0f)));
    }
  }
  return r;
}

// A weight row's integers and block scales, read back from its dequantization: each value is
// integer * d exactly (8-bit integers times an f16 scale fit f32), d the block's leading f16.
struct IntRow {
  std::vector<int> w;
  std::vector<float> d;
};
IntRow integer_row(DType dtype, const uint8_t* row, const float* dense, int64_t k) {
  IntRow r{std::vector<int>(static_cast<std::size_t>(k)), std::vector<float>(static_cast<std::size_t>(k / kBlock))};
  for (int64_t b = 0; b < k / kBlock; ++b) {
    uint16_t bits;
    std::memcpy(&bits, row + b * dtype_block_bytes(dtype), sizeof(bits));
    const float d = f16_to_f32(bits);
    r.d[static_cast<std::size_t>(b)] = d;
    for (int64_t e = 0; e < kBlock; ++e) {
      const float v = dense[b * kBlock + e];
      r.w[static_cast<std::size_t>(b * kBlock + e)] = d == 0.0f ? 0 : static_cast<int>(std::lround(v / d));
    }
  }
  return r;
}

// The canonical order: block by block, the block's exact integer dot product, then
// acc = fma(dw * dx, float(that integer), acc) from acc = 0.
float int8_dot(const int* xq, const float* xd, const IntRow& w, int64_t k) {
  float acc = 0.0f;
  for (int64_t b = 0; b < k / kBlock; ++b) {
    int dot = 0;
    for (int64_t e = b * kBlock; e < (b + 1) * kBlock; ++e) dot += xq[e] * w.w[static_cast<std::size_t>(e)];
    acc = std::fma(w.d[static_cast<std::size_t>(b)] * xd[b], static_cast<float>(dot), acc);
  }
  return acc;
}

std::vector<Isa> isas_to_test() {
  std::vector<Isa> isas{Isa::scalar};
  if (isa_supported(Isa::avx2)) isas.push_back(Isa::avx2);
  if (int8dot::supported()) {
    isas.push_back(Isa::avx512);
  } else {
    WARN("this CPU lacks AVX512-VNNI, VBMI or BITALG: only the int8 mode's scalar form is tested here");
  }
  return isas;
}

struct Quantized {
  std::vector<uint8_t> blocks;
  std::vector<float> dense;
};
Quantized make_weights(DType dtype, int64_t n, int64_t k, uint32_t seed) {
  const std::vector<float> values = random_floats(static_cast<std::size_t>(n * k), seed, -0.2f, 0.2f);
  Quantized q{std::vector<uint8_t>(static_cast<std::size_t>(dtype_bytes(dtype, n * k))), std::vector<float>(values.size())};
  quantize(dtype, values.data(), n * k, q.blocks.data());
  dequantize(dtype, q.blocks.data(), n * k, q.dense.data());
  return q;
}

}  // namespace

TEST_CASE("int8 linear follows its integer model bit for bit on every path, batch and thread count",
          "[kernels][linear][int8]") {
  // Q8_0, Q4_0 and Q5_0 in one region with a bf16 job (which stays exact); an even (16) and an odd
  // (15) number of blocks per row; 1-4 rows of x (streamed weight rows) and more (panels); biases
  // and a residual; 301 output rows so that each thread interleaves several streams.
  const DType types[] = {DType::q8_0, DType::q4_0, DType::q5_0};
  const int64_t n = 301, n_bf16 = 23;
  for (int64_t k : {512, 480}) {
    const std::vector<float> bias = random_floats(static_cast<std::size_t>(n), 1);
    std::vector<uint16_t> w_bf16(static_cast<std::size_t>(n_bf16 * k));
    {
      const std::vector<float> v = random_floats(w_bf16.size(), 2);
      for (std::size_t i = 0; i < v.size(); ++i) w_bf16[i] = f32_to_bf16(v[i]);
    }
    const WeightMatrix b{.data = w_bf16.data(), .dtype = DType::bf16, .rows = n_bf16, .cols = k};
    for (DType dtype : types) {
      const Quantized weights = make_weights(dtype, n, k, 3);
      std::vector<IntRow> rows;
      for (int64_t j = 0; j < n; ++j) {
        rows.push_back(integer_row(dtype, weights.blocks.data() + j * dtype_bytes(dtype, k), weights.dense.data() + j * k, k));
      }
      const WeightMatrix q{.data = weights.blocks.data(), .dtype = dtype, .rows = n, .cols = k};
      for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 17, 40}) {
        const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), static_cast<uint32_t>(m + 4));
        const Rounded xr = round_rows(x, m, k);
        const std::vector<float> residual = random_floats(static_cast<std::size_t>(m * n), 5);
        std::vector<float> expected(residual.size());
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            const std::size_t at = static_cast<std::size_t>(i * n + j);
            expected[at] = residual[at] + (int8_dot(xr.q.data() + i * k, xr.d.data() + i * k / kBlock,
                                                    rows[static_cast<std::size_t>(j)], k) + bias[static_cast<std::size_t>(j)]);
          }
        }
        // The bf16 job in the same region: the exact path's bits (int8 mode or not).
        std::vector<float> expected_b(static_cast<std::size_t>(m * n_bf16));
        {
          ThreadPool pool(1);
          const LinearJob job{.weight = b, .y = expected_b.data(), .y_stride = n_bf16};
          linear({.pool = &pool, .isa = Isa::scalar}, x.data(), k, m, k, {&job, 1});
        }
        for (Isa isa : isas_to_test()) {
          for (int threads : {1, 2, 3}) {
            ThreadPool pool(threads);
            std::vector<float> y = residual, y_b(expected_b.size());
            const LinearJob jobs[] = {{.weight = q, .bias = bias.data(), .y = y.data(), .y_stride = n, .accumulate = true},
                                      {.weight = b, .y = y_b.data(), .y_stride = n_bf16}};
            linear({.pool = &pool, .isa = isa, .int8_quant = true}, x.data(), k, m, k, jobs);
            INFO("dtype " << to_string(dtype) << " k " << k << " m " << m << " isa " << to_string(isa) << " threads "
                          << threads);
            CHECK(same_bits(y, expected));
            CHECK(same_bits(y_b, expected_b));
          }
        }
      }
    }
  }
}

TEST_CASE("int8 linear stays within the error of rounding x to 8 bits of the exact path", "[kernels][linear][int8]") {
  // |y_int8 - y_exact| <= sum_k |w_k| dx_k / 2 (x's rounding) + a few f32 roundings of sum |x w|.
  const int64_t n = 64, k = 896, m = 3;
  for (DType dtype : {DType::q8_0, DType::q4_0, DType::q5_0}) {
    const Quantized weights = make_weights(dtype, n, k, 11);
    const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 12, -3.0f, 3.0f);
    const Rounded xr = round_rows(x, m, k);
    const WeightMatrix q{.data = weights.blocks.data(), .dtype = dtype, .rows = n, .cols = k};
    ThreadPool pool(2);
    std::vector<float> exact(static_cast<std::size_t>(m * n)), rounded(exact.size());
    const LinearJob exact_job{.weight = q, .y = exact.data(), .y_stride = n};
    linear({.pool = &pool, .isa = detect_isa()}, x.data(), k, m, k, {&exact_job, 1});
    const LinearJob int8_job{.weight = q, .y = rounded.data(), .y_stride = n};
    linear({.pool = &pool, .isa = detect_isa(), .int8_quant = true}, x.data(), k, m, k, {&int8_job, 1});
    double worst = 0.0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double bound = 0.0, magnitude = 0.0;
        for (int64_t e = 0; e < k; ++e) {
          const double w = weights.dense[static_cast<std::size_t>(j * k + e)];
          bound += std::fabs(w) * static_cast<double>(xr.d[static_cast<std::size_t>((i * k + e) / kBlock)]) / 2.0;
          magnitude += std::fabs(w * static_cast<double>(x[static_cast<std::size_t>(i * k + e)]));
        }
        bound += 64.0 * static_cast<double>(std::numeric_limits<float>::epsilon()) * magnitude;
        const std::size_t at = static_cast<std::size_t>(i * n + j);
        const double error = std::fabs(static_cast<double>(rounded[at]) - static_cast<double>(exact[at]));
        INFO(to_string(dtype) << " row " << i << " column " << j);
        REQUIRE(error <= bound);
        worst = std::max(worst, error / bound);
      }
    }
    // The bound is not vacuous: the rounding shows (a path that ignored the mode would give 0).
    INFO(to_string(dtype));
    CHECK(worst > 0.0);
  }
}

TEST_CASE("int8 linear: a NaN or infinity in a row of x makes that row NaN and no other", "[kernels][linear][int8]") {
  const int64_t n = 20, k = 64, m = 3;
  const Quantized weights = make_weights(DType::q4_0, n, k, 21);
  const WeightMatrix q{.data = weights.blocks.data(), .dtype = DType::q4_0, .rows = n, .cols = k};
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 22);
    x[static_cast<std::size_t>(k + 40)] = bad;  // row 1, block 1
    for (Isa isa : isas_to_test()) {
      ThreadPool pool(2);
      std::vector<float> y(static_cast<std::size_t>(m * n));
      const LinearJob job{.weight = q, .y = y.data(), .y_stride = n};
      linear({.pool = &pool, .isa = isa, .int8_quant = true}, x.data(), k, m, k, {&job, 1});
      for (int64_t j = 0; j < n; ++j) {
        INFO("isa " << to_string(isa) << " column " << j);
        CHECK(std::isfinite(y[static_cast<std::size_t>(j)]));
        CHECK(std::isnan(y[static_cast<std::size_t>(n + j)]));
        CHECK(std::isfinite(y[static_cast<std::size_t>(2 * n + j)]));
      }
    }
  }
}

TEST_CASE("the int8 mode leaves the other quantized types on the exact path", "[kernels][linear][int8]") {
  const int64_t n = 40, k = 512, m = 5;
  for (DType dtype : {DType::q4_1, DType::q5_1, DType::q4_k, DType::q5_k, DType::q6_k}) {
    const Quantized weights = make_weights(dtype, n, k, 31);
    const WeightMatrix q{.data = weights.blocks.data(), .dtype = dtype, .rows = n, .cols = k};
    const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 32);
    ThreadPool pool(2);
    std::vector<float> exact(static_cast<std::size_t>(m * n)), moded(exact.size());
    const LinearJob a{.weight = q, .y = exact.data(), .y_stride = n}, b{.weight = q, .y = moded.data(), .y_stride = n};
    linear({.pool = &pool, .isa = detect_isa()}, x.data(), k, m, k, {&a, 1});
    linear({.pool = &pool, .isa = detect_isa(), .int8_quant = true}, x.data(), k, m, k, {&b, 1});
    INFO(to_string(dtype));
    CHECK(same_bits(exact, moded));
  }
}
