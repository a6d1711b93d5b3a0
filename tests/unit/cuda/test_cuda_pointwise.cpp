// embedding, add_rms_norm and swiglu on the GPU against the CPU kernels.

#include <cmath>

#include "cpu/embedding.hpp"
#include "cpu/rms_norm.hpp"
#include "cpu/swiglu.hpp"
#include "cuda/embedding.hpp"
#include "cuda/rms_norm.hpp"
#include "cuda/swiglu.hpp"
#include "cuda_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

// A gather and an exact bf16 -> f32 conversion: bit-identical to the CPU.
TEST_CASE("cuda embedding equals cpu embedding, out-of-range ids give zero rows", "[cuda][embedding]") {
  Fixture f;
  const int64_t rows = 1000, width = 896;
  const auto table = to_bf16(random_floats(static_cast<std::size_t>(rows * width), 1, -3.0f, 3.0f));
  const std::vector<int32_t> ids = {0, 999, 17, 17, 500, 3};
  std::vector<float> expected(ids.size() * width);
  cpu::embedding(f.cpu, {.data = table.data(), .dtype = DType::bf16, .rows = rows, .cols = width}, ids.data(),
                 static_cast<int64_t>(ids.size()), expected.data(), width);
  auto dt = to_device(table);
  auto di = to_device(ids);
  auto dout = to_device(std::vector<float>(ids.size() * width, NAN));
  const cuda::DeviceMatrix dtable{.data = dt.data(), .rows = rows, .cols = width};
  REQUIRE(cuda::embedding(f.ctx, dtable, di.data(), static_cast<int64_t>(ids.size()), dout.data(), width).ok());
  CHECK(to_host(dout) == expected);

  auto bad = to_device(std::vector<int32_t>{-1, 1000});
  auto bad_out = to_device(std::vector<float>(2 * width, NAN));
  REQUIRE(cuda::embedding(f.ctx, dtable, bad.data(), 2, bad_out.data(), width).ok());
  for (float v : to_host(bad_out)) REQUIRE(v == 0.0f);
}

// Tolerance: the residual add is one f32 addition on both sides (bit-identical). The sum of
// squares is reduced in a different order (CUB block reduction vs 16 lanes): relative error below
// 2 width u, which inv_rms halves and the two roundings of (x * inv_rms) * weight extend by 2 u:
// |gpu - cpu| <= (width u + 4 u) |cpu| for f32 output; a bf16 output adds its rounding, 2^-8 |cpu|.
TEST_CASE("cuda add_rms_norm matches residual add + cpu rms_norm", "[cuda][rms_norm]") {
  Fixture f;
  for (const int64_t width : {64, 896, 3584}) {
    for (const bool with_delta : {false, true}) {
      CAPTURE(width, with_delta);
      const int64_t rows = 5;
      const auto residual = random_floats(static_cast<std::size_t>(rows * width), 10, -4.0f, 4.0f);
      const auto delta = random_floats(static_cast<std::size_t>(rows * width), 11, -1.0f, 1.0f);
      const auto weight = random_floats(static_cast<std::size_t>(width), 12, 0.5f, 1.5f);
      const float eps = 1e-6f;
      std::vector<float> summed = residual;
      if (with_delta) {
        for (std::size_t i = 0; i < summed.size(); ++i) summed[i] = residual[i] + delta[i];
      }
      std::vector<float> expected(summed.size());
      cpu::rms_norm(f.cpu, summed.data(), width, rows, width, weight.data(), eps, expected.data(), width);

      auto dres = to_device(residual);
      auto ddelta = to_device(delta);
      auto dw = to_device(weight);
      auto dout = to_device(std::vector<float>(summed.size()));
      auto dout16 = to_device(std::vector<bf16_t>(summed.size()));
      REQUIRE(cuda::add_rms_norm(f.ctx, dres.data(), width, with_delta ? ddelta.data() : nullptr, width, rows, width,
                                 dw.data(), eps, dout.data(), width)
                  .ok());
      CHECK(to_host(dres) == summed);
      // Second call on the already summed residual, without delta, into bf16.
      REQUIRE(cuda::add_rms_norm(f.ctx, dres.data(), width, nullptr, width, rows, width, dw.data(), eps,
                                 dout16.data(), width)
                  .ok());
      const auto got = to_host(dout);
      const auto got16 = from_bf16(to_host(dout16));
      const double rel = (static_cast<double>(width) + 4.0) * kF32Eps;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO("element " << i);
        REQUIRE(abs_diff(got[i], expected[i]) <= rel * mag(expected[i]) + 1e-30);
        REQUIRE(abs_diff(got16[i], expected[i]) <= (rel + kBf16Eps) * mag(expected[i]) + 1e-30);
      }
    }
  }
}

// Tolerance: silu uses expf (<= 2 ulp) on the GPU and the canonical polynomial (about 1 ulp) on the
// CPU; through the division and the product the results differ by a few f32 ulp: 16 u relative,
// plus 2^-8 for the bf16 output.
TEST_CASE("cuda swiglu matches cpu swiglu", "[cuda][swiglu]") {
  Fixture f;
  const int64_t rows = 9, width = 4864;
  const auto gate = random_floats(static_cast<std::size_t>(rows * width), 20, -8.0f, 8.0f);
  const auto up = random_floats(static_cast<std::size_t>(rows * width), 21, -2.0f, 2.0f);
  std::vector<float> expected(gate.size());
  cpu::swiglu(f.cpu, gate.data(), width, up.data(), width, rows, width, expected.data(), width);
  auto dg = to_device(gate);
  auto du = to_device(up);
  auto dout = to_device(std::vector<float>(gate.size()));
  auto dout16 = to_device(std::vector<bf16_t>(gate.size()));
  REQUIRE(cuda::swiglu(f.ctx, dg.data(), width, du.data(), width, rows, width, dout.data(), width).ok());
  REQUIRE(cuda::swiglu(f.ctx, dg.data(), width, du.data(), width, rows, width, dout16.data(), width).ok());
  const auto got = to_host(dout);
  const auto got16 = from_bf16(to_host(dout16));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i << " gate " << gate[i] << " up " << up[i]);
    REQUIRE(abs_diff(got[i], expected[i]) <= 16.0 * kF32Eps * mag(expected[i]) + 1e-30);
    REQUIRE(abs_diff(got16[i], expected[i]) <= (16.0 * kF32Eps + kBf16Eps) * mag(expected[i]) + 1e-30);
  }
}
