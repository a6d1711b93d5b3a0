// rms_norm, rope, swiglu, embedding and the canonical exp against double-precision references, and
// every ISA path against the others bit for bit.

#include <cfloat>
#include <limits>

#include <catch2/catch.hpp>

#include "cpu/embedding.hpp"
#include "cpu/rms_norm.hpp"
#include "cpu/rope.hpp"
#include "cpu/simd.hpp"
#include "cpu/swiglu.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

TEST_CASE("exp_canonical is accurate, and its vector forms give the same bits", "[kernels][exp]") {
  std::vector<float> inputs = random_floats(4096, 11, -90.0f, 90.0f);
  for (float special : {0.0f, -0.0f, 1.0f, -1.0f, -86.99f, -87.0f, -87.01f, 87.99f, 88.0f, 88.01f, -200.0f, 200.0f,
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    inputs.push_back(special);
  }
  while (inputs.size() % 16 != 0) inputs.push_back(0.5f);
  double worst_relative = 0;
  for (float x : inputs) {
    const float got = simd::exp_canonical(x);
    if (x < simd::kExpUnderflow) {
      CHECK(got == 0.0f);
    } else if (x > simd::kExpOverflow) {
      CHECK(std::isinf(got));
    } else {
      const double exact = std::exp(static_cast<double>(x));
      worst_relative = std::max(worst_relative, std::fabs(static_cast<double>(got) - exact) / exact);
    }
  }
  CHECK(worst_relative < 4 * static_cast<double>(FLT_EPSILON));  // within a few ulp
  CHECK(std::isnan(simd::exp_canonical(std::numeric_limits<float>::quiet_NaN())));

  // swiglu exercises the vector exp on every ISA; compare it to the scalar form element by element.
  const std::vector<float> up(inputs.size(), 1.0f);
  for (Isa isa : supported_isas()) {
    ThreadPool pool(1);
    std::vector<float> out(inputs.size());
    swiglu({.pool = &pool, .isa = isa}, inputs.data(), 0, up.data(), 0, 1, static_cast<int64_t>(inputs.size()),
           out.data(), 0);
    std::vector<float> expected(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) expected[i] = simd::silu_canonical(inputs[i]);
    INFO(to_string(isa));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (std::isnan(expected[i])) {
        CHECK(std::isnan(out[i]));
      } else {
        CHECK(std::memcmp(&out[i], &expected[i], sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("swiglu matches silu(g) * u in double precision", "[kernels][swiglu]") {
  const int64_t rows = 5, width = 300;
  const auto gate = random_floats(static_cast<std::size_t>(rows * width), 1, -12.0f, 12.0f);
  const auto up = random_floats(static_cast<std::size_t>(rows * width), 2, -3.0f, 3.0f);
  ThreadPool pool(2);
  std::vector<std::vector<float>> results;
  for (Isa isa : supported_isas()) {
    std::vector<float> out(gate.size());
    swiglu({.pool = &pool, .isa = isa}, gate.data(), width, up.data(), width, rows, width, out.data(), width);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double g = gate[i];
      const double exact = g / (1.0 + std::exp(-g)) * static_cast<double>(up[i]);
      CHECK(std::fabs(static_cast<double>(out[i]) - exact) <= 1e-6 * (1.0 + std::fabs(exact)));
    }
    results.push_back(std::move(out));
  }
  for (const auto& r : results) CHECK(same_bits(r, results.front()));
}

TEST_CASE("rms_norm matches a double reference and is the same on every ISA", "[kernels][rms_norm]") {
  const int64_t rows = 9, width = 200;
  const auto x = random_floats(static_cast<std::size_t>(rows * width), 5, -4.0f, 4.0f);
  const auto weight = random_floats(static_cast<std::size_t>(width), 6, 0.5f, 1.5f);
  ThreadPool pool(2);
  std::vector<std::vector<float>> results;
  for (Isa isa : supported_isas()) {
    std::vector<float> y(x.size());
    rms_norm({.pool = &pool, .isa = isa}, x.data(), width, rows, width, weight.data(), 1e-6f, y.data(), width);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < width; ++i) sum += static_cast<double>(x[static_cast<std::size_t>(r * width + i)]) * static_cast<double>(x[static_cast<std::size_t>(r * width + i)]);
      const double inv = 1.0 / std::sqrt(sum / width + 1e-6);
      for (int64_t i = 0; i < width; ++i) {
        const std::size_t at = static_cast<std::size_t>(r * width + i);
        const double exact = static_cast<double>(x[at]) * inv * static_cast<double>(weight[static_cast<std::size_t>(i)]);
        CHECK(std::fabs(static_cast<double>(y[at]) - exact) <= 1e-5 * (1.0 + std::fabs(exact)));
      }
    }
    // In place gives the same.
    std::vector<float> in_place = x;
    rms_norm({.pool = &pool, .isa = isa}, in_place.data(), width, rows, width, weight.data(), 1e-6f, in_place.data(), width);
    CHECK(same_bits(in_place, y));
    results.push_back(std::move(y));
  }
  for (const auto& r : results) CHECK(same_bits(r, results.front()));
}

TEST_CASE("rope rotates pairs (i, i + D/2) by position * theta^(-2i/D)", "[kernels][rope]") {
  const int64_t tokens = 4, heads = 3, dim = 64, half = dim / 2;
  const int32_t positions[] = {0, 1, 700, 31999};
  const double theta = 1e6;
  std::vector<float> cos_table(static_cast<std::size_t>(tokens * half)), sin_table(cos_table.size());
  rope_tables(positions, tokens, dim, theta, 1.0, cos_table.data(), sin_table.data());
  const auto x = random_floats(static_cast<std::size_t>(tokens * heads * dim), 9);
  std::vector<float> y = x;
  ThreadPool pool(2);
  rope_apply({.pool = &pool, .isa = detect_isa()}, y.data(), heads * dim, tokens, heads, dim, cos_table.data(),
             sin_table.data());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = positions[t] * std::pow(theta, -2.0 * static_cast<double>(i) / dim);
        const std::size_t a = static_cast<std::size_t>(t * heads * dim + h * dim + i), b = a + static_cast<std::size_t>(half);
        const double xa = x[a], xb = x[b];
        const double ya = xa * std::cos(angle) - xb * std::sin(angle);
        const double yb = xb * std::cos(angle) + xa * std::sin(angle);
        CHECK(std::fabs(static_cast<double>(y[a]) - ya) < 1e-6);
        CHECK(std::fabs(static_cast<double>(y[b]) - yb) < 1e-6);
      }
    }
  }
  // Linear scaling divides positions.
  const int32_t doubled[] = {1400};
  std::vector<float> c2(static_cast<std::size_t>(half)), s2(c2.size());
  rope_tables(doubled, 1, dim, theta, 2.0, c2.data(), s2.data());
  CHECK(std::equal(c2.begin(), c2.end(), cos_table.begin() + 2 * half));
}

TEST_CASE("embedding converts bf16, f16 and f32 rows exactly", "[kernels][embedding]") {
  const int64_t vocab = 10, width = 7;
  const auto values = random_floats(static_cast<std::size_t>(vocab * width), 3);
  std::vector<uint16_t> bf16(values.size()), f16(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    bf16[i] = f32_to_bf16(values[i]);
    f16[i] = f32_to_f16(values[i]);
  }
  const int32_t ids[] = {3, 0, 9, 3};
  ThreadPool pool(1);
  const CpuContext ctx{.pool = &pool, .isa = detect_isa()};
  std::vector<float> out(4 * width);
  embedding(ctx, {.data = bf16.data(), .dtype = DType::bf16, .rows = vocab, .cols = width}, ids, 4, out.data(), width);
  for (int64_t t = 0; t < 4; ++t) {
    for (int64_t i = 0; i < width; ++i) CHECK(out[static_cast<std::size_t>(t * width + i)] == bf16_to_f32(bf16[static_cast<std::size_t>(ids[t] * width + i)]));
  }
  embedding(ctx, {.data = f16.data(), .dtype = DType::f16, .rows = vocab, .cols = width}, ids, 4, out.data(), width);
  CHECK(out[static_cast<std::size_t>(width)] == f16_to_f32(f16[0]));
  embedding(ctx, {.data = values.data(), .dtype = DType::f32, .rows = vocab, .cols = width}, ids, 4, out.data(), width);
  CHECK(out[static_cast<std::size_t>(2 * width + 6)] == values[static_cast<std::size_t>(9 * width + 6)]);
}
