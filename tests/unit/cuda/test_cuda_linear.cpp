// cuda::linear (cuBLASLt, bf16 x bf16 -> f32) against cpu::linear on the same bf16 values.
//
// Tolerance: both sides compute sum_k x_k w_k of exactly the same inputs (x is rounded to bf16
// before the CPU sees it, W is bf16 on both sides), in f32 with different summation orders (and
// the tensor cores' own). Each order's error is at most gamma_K sum_k |x_k w_k| with
// gamma_K ~ K u (u = 2^-24), so the two differ by at most 2 K u (sum |x w| + |bias| + |y0|).
// A wrong index, transpose or missed bias gives errors of the order of the values themselves.

#include <cmath>

#include "cpu/linear.hpp"
#include "cuda/linear.hpp"
#include "cuda_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

TEST_CASE("cuda linear matches cpu linear (bf16 weights, f32 accumulation)", "[cuda][linear]") {
  Fixture f;
  struct Shape { int64_t M, K, N; bool bias, accumulate; };
  const Shape shapes[] = {{1, 64, 128, false, false},   {1, 896, 1000, true, false}, {7, 256, 320, true, true},
                          {64, 896, 128, false, true},  {33, 512, 1024, true, false}};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    CAPTURE(s.M, s.K, s.N, s.bias, s.accumulate);
    const auto x = round_bf16(random_floats(static_cast<std::size_t>(s.M * s.K), seed++, -2.0f, 2.0f));
    const auto w = to_bf16(random_floats(static_cast<std::size_t>(s.N * s.K), seed++));
    const auto bias = random_floats(static_cast<std::size_t>(s.N), seed++);
    const auto y0 = random_floats(static_cast<std::size_t>(s.M * s.N), seed++);

    std::vector<float> expected = y0;
    const cpu::LinearJob job{.weight = {.data = w.data(), .dtype = DType::bf16, .rows = s.N, .cols = s.K},
                             .bias = s.bias ? bias.data() : nullptr, .y = expected.data(), .y_stride = s.N,
                             .accumulate = s.accumulate};
    cpu::linear(f.cpu, x.data(), s.K, s.M, s.K, std::span(&job, 1));

    auto dx = to_device(to_bf16(x));
    auto dw = to_device(w);
    auto db = to_device(bias);
    auto dy = to_device(y0);
    REQUIRE(cuda::linear(f.ctx, dx.data(), s.K, s.M, s.K, {.data = dw.data(), .rows = s.N, .cols = s.K},
                         s.bias ? db.data() : nullptr, dy.data(), s.N, s.accumulate)
                .ok());
    const auto got = to_host(dy);

    for (int64_t m = 0; m < s.M; ++m) {
      for (int64_t n = 0; n < s.N; ++n) {
        double magnitude = (s.bias ? mag(bias[n]) : 0.0) + (s.accumulate ? mag(y0[m * s.N + n]) : 0.0);
        for (int64_t k = 0; k < s.K; ++k) magnitude += mag(x[m * s.K + k] * bf16_to_f32(w[n * s.K + k]));
        const double tolerance = 2.0 * static_cast<double>(s.K) * kF32Eps * magnitude + 1e-6;
        const auto i = static_cast<std::size_t>(m * s.N + n);
        INFO("m " << m << " n " << n);
        REQUIRE(abs_diff(got[i], expected[i]) <= tolerance);
      }
    }
  }
}

TEST_CASE("cuda linear rejects inconsistent shapes without launching", "[cuda][linear]") {
  Fixture f;
  auto dw = to_device(std::vector<bf16_t>(64 * 32));
  auto dx = to_device(std::vector<bf16_t>(32));
  auto dy = to_device(std::vector<float>(64));
  const cuda::DeviceMatrix w{.data = dw.data(), .rows = 64, .cols = 32};
  CHECK(cuda::linear(f.ctx, dx.data(), 32, 1, 16, w, nullptr, dy.data(), 64, false).code() == ErrorCode::invalid_argument);
  CHECK(cuda::linear(f.ctx, dx.data(), 32, 1, 32, w, nullptr, dy.data(), 63, false).code() == ErrorCode::invalid_argument);
  cuda::CudaContext no_blas{.stream = f.ctx.stream};
  CHECK(cuda::linear(no_blas, dx.data(), 32, 1, 32, w, nullptr, dy.data(), 64, false).code() == ErrorCode::invalid_argument);
}
