// The CUDA pieces of the Gemma 2 / Mistral / Qwen3 decoders against float64 (or exact f32)
// host references on fresh random inputs: geglu_tanh, softcap, rms_norm_heads, add_rows and
// scale_rows; and their argument checks ([host]: rejected before any CUDA call, so they run
// without a device). Tolerances are stated and justified at each case; u = 2^-24.

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <numbers>
#include <string>

#include "cuda/elementwise.hpp"
#include "cuda/geglu.hpp"
#include "cuda/rms_norm.hpp"
#include "cuda/softcap.hpp"
#include "cuda_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

namespace {

constexpr float kSentinel = -12345.0f;  // fills the stride padding, which no kernel may touch

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

}  // namespace

// gelu_tanh(g) up = 0.5 g (1 + t) up, t = tanh(c (g + k g^3)). Errors: the inner argument is
// within ~6 u |inner| (5 roundings and the f32 constants), which tanh's slope sech^2 turns into at
// most 6 u max(x sech^2 x) < 3 u absolute in t; tanhf adds 2 ulp (<= 2 u absolute, |t| < 1) and
// 1 + t one rounding (u). For g < 0, 1 + t cancels, so this error is absolute: |gpu - ref| <=
// 0.5 |g| |up| 6 u + 3 u |ref|. Stated: 0.5 |g| |up| 16 u + 16 u |ref|; bf16 output adds 2^-8 |ref|.
TEST_CASE("cuda geglu_tanh matches a float64 gelu_tanh(gate) * up", "[cuda][geglu]") {
  Fixture f;
  const int64_t rows = 7, width = 2309, gate_stride = 2 * width + 3, up_stride = width + 5, out_stride = width + 1;
  auto gate = random_floats(static_cast<std::size_t>(rows * gate_stride), 30, -8.0f, 8.0f);
  const auto up = random_floats(static_cast<std::size_t>(rows * up_stride), 31, -3.0f, 3.0f);
  // A few special gates: 0, tiny, the tanh saturation on both sides, g^3 past f32's range.
  const float specials[] = {0.0f, -0.0f, 1e-20f, -1e-20f, 20.0f, -20.0f, 1e13f, -1e13f, 1e30f, -1e30f};
  for (std::size_t i = 0; i < std::size(specials); ++i) gate[i * 3] = specials[i];
  auto dg = to_device(gate);
  auto du = to_device(up);
  auto dout = to_device(std::vector<float>(static_cast<std::size_t>(rows * out_stride), kSentinel));
  auto dout16 = to_device(std::vector<bf16_t>(static_cast<std::size_t>(rows * out_stride), f32_to_bf16(kSentinel)));
  REQUIRE(cuda::geglu_tanh(f.ctx, dg.data(), gate_stride, du.data(), up_stride, rows, width, dout.data(), out_stride)
              .ok());
  REQUIRE(cuda::geglu_tanh(f.ctx, dg.data(), gate_stride, du.data(), up_stride, rows, width, dout16.data(),
                           out_stride)
              .ok());
  const auto got = to_host(dout);
  const auto got16 = from_bf16(to_host(dout16));
  const double c = std::sqrt(2.0 / std::numbers::pi);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < out_stride; ++i) {
      const std::size_t o = static_cast<std::size_t>(r * out_stride + i);
      if (i >= width) {
        REQUIRE(same_bits(got[o], kSentinel));
        REQUIRE(got16[o] == bf16_to_f32(f32_to_bf16(kSentinel)));
        continue;
      }
      const double g = gate[static_cast<std::size_t>(r * gate_stride + i)];
      const double v = up[static_cast<std::size_t>(r * up_stride + i)];
      const double ref = 0.5 * g * (1.0 + std::tanh(c * (g + 0.044715 * g * g * g))) * v;
      const double tol = 0.5 * std::fabs(g) * std::fabs(v) * 16.0 * kF32Eps + 16.0 * kF32Eps * std::fabs(ref);
      INFO("row " << r << " column " << i << ": gate " << g << " up " << v << ", gpu " << got[o] << ", reference "
                  << ref);
      REQUIRE(std::isfinite(got[o]));
      REQUIRE(std::fabs(static_cast<double>(got[o]) - ref) <= tol);
      REQUIRE(std::fabs(static_cast<double>(got16[o]) - ref) <= tol + kBf16Eps * std::fabs(ref));
    }
  }
}

// cap tanh(x / cap): the division's rounding (u |x / cap|, slope <= 1 after tanh, times cap: u |x|),
// tanhf's 2 ulp (<= 4 u |t| relative, as ulp(t) <= 2 u |t|) and the product's rounding:
// |gpu - ref| <= u |x| + 5 u |ref|. Stated: 4 u |x| + 8 u |ref|.
TEST_CASE("cuda softcap matches a float64 cap * tanh(x / cap), in place, padding untouched", "[cuda][softcap]") {
  Fixture f;
  for (const float cap : {30.0f, 50.0f, 0.75f}) {
    CAPTURE(cap);
    const int64_t rows = 5, width = 32003, stride = 32011;  // a vocab-sized row, odd stride
    auto x = random_floats(static_cast<std::size_t>(rows * stride), 40, -120.0f, 120.0f);
    const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e30f, -1e30f, 3.4e38f, -3.4e38f};
    for (std::size_t i = 0; i < std::size(specials); ++i) x[i * 7] = specials[i];
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = width; i < stride; ++i) x[static_cast<std::size_t>(r * stride + i)] = kSentinel;
    }
    auto dx = to_device(x);
    REQUIRE(cuda::softcap(f.ctx, dx.data(), stride, rows, width, cap).ok());
    const auto got = to_host(dx);
    for (std::size_t o = 0; o < x.size(); ++o) {
      if (static_cast<int64_t>(o) % stride >= width) {
        REQUIRE(same_bits(got[o], kSentinel));
        continue;
      }
      const double xi = x[o];
      const double ref = static_cast<double>(cap) * std::tanh(xi / static_cast<double>(cap));
      INFO("element " << o << ": x " << xi << ", gpu " << got[o] << ", reference " << ref);
      REQUIRE(std::fabs(static_cast<double>(got[o]) - ref) <= 4.0 * kF32Eps * std::fabs(xi) + 8.0 * kF32Eps * std::fabs(ref));
    }
  }
}

// Per (token, head) RMSNorm in place inside a fused qkv-like buffer: the q heads (or k heads at an
// offset) are normalised, everything else (the other part, v, the padding) keeps its bits. Errors:
// the f32 sum of squares (per-lane fmaf chains of head_dim / 32 terms, then a 5-level tree:
// relative (head_dim / 32 + 5) u), halved by the square root, then the mean, eps, sqrt, reciprocal
// and the two products (6 u): stated (head_dim + 8) u |ref|.
TEST_CASE("cuda rms_norm_heads matches a float64 per-head RMSNorm (Qwen3 q/k norm)", "[cuda][rms_norm]") {
  Fixture f;
  struct Shape {
    int64_t q_heads, kv_heads, head_dim;
  };
  for (const Shape s : {Shape{16, 8, 128}, Shape{8, 2, 64}, Shape{4, 4, 256}, Shape{6, 3, 80}, Shape{2, 1, 17}}) {
    for (const bool k_part : {false, true}) {
      CAPTURE(s.q_heads, s.kv_heads, s.head_dim, k_part);
      const int64_t tokens = 11, D = s.head_dim;
      const int64_t stride = (s.q_heads + 2 * s.kv_heads) * D + 7;  // q | k | v | padding
      const int64_t heads = k_part ? s.kv_heads : s.q_heads;
      const int64_t offset = k_part ? s.q_heads * D : 0;
      auto x = random_floats(static_cast<std::size_t>(tokens * stride), 50, -3.0f, 3.0f);
      // Rows of very different magnitudes: the norm must not care.
      for (int64_t t = 0; t < tokens; ++t) {
        const float m = std::ldexp(1.0f, static_cast<int>(t % 5) * 6 - 12);
        for (int64_t i = 0; i < stride; ++i) x[static_cast<std::size_t>(t * stride + i)] *= m;
      }
      const auto weight = random_floats(static_cast<std::size_t>(D), 51, 0.5f, 1.5f);
      const float eps = 1e-6f;
      auto dx = to_device(x);
      auto dw = to_device(weight);
      REQUIRE(cuda::rms_norm_heads(f.ctx, dx.data() + offset, stride, tokens, heads, D, dw.data(), eps).ok());
      const auto got = to_host(dx);
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < stride; ++i) {
          const std::size_t o = static_cast<std::size_t>(t * stride + i);
          if (i < offset || i >= offset + heads * D) {
            REQUIRE(same_bits(got[o], x[o]));
            continue;
          }
          const int64_t h = (i - offset) / D;
          double ss = 0.0;
          for (int64_t d = 0; d < D; ++d) {
            const double v = x[static_cast<std::size_t>(t * stride + offset + h * D + d)];
            ss += v * v;
          }
          const double inv = 1.0 / std::sqrt(ss / static_cast<double>(D) + static_cast<double>(eps));
          const double ref = static_cast<double>(x[o]) * inv * static_cast<double>(weight[static_cast<std::size_t>((i - offset) % D)]);
          INFO("token " << t << " column " << i << ": gpu " << got[o] << ", reference " << ref);
          REQUIRE(std::fabs(static_cast<double>(got[o]) - ref) <= (static_cast<double>(D) + 8.0) * kF32Eps * std::fabs(ref) + 1e-37);
        }
      }
    }
  }
}

// One f32 addition / multiplication per element, correctly rounded on both sides: bit-identical to
// the host's float arithmetic (which is the float64 result rounded once to f32).
TEST_CASE("cuda add_rows and scale_rows are bit-identical to host f32 arithmetic", "[cuda][elementwise]") {
  Fixture f;
  const int64_t rows = 13, width = 3001, y_stride = 3011, x_stride = 6002;
  const auto y = random_floats(static_cast<std::size_t>(rows * y_stride), 60, -50.0f, 50.0f);
  const auto x = random_floats(static_cast<std::size_t>(rows * x_stride), 61, -50.0f, 50.0f);
  auto dy = to_device(y);
  auto dx = to_device(x);
  REQUIRE(cuda::add_rows(f.ctx, dy.data(), y_stride, dx.data(), x_stride, rows, width).ok());
  auto got = to_host(dy);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < y_stride; ++i) {
      const std::size_t o = static_cast<std::size_t>(r * y_stride + i);
      const float expected =
          i < width ? static_cast<float>(static_cast<double>(y[o]) + static_cast<double>(x[static_cast<std::size_t>(r * x_stride + i)]))
                    : y[o];
      INFO("row " << r << " column " << i);
      REQUIRE(same_bits(got[o], expected));
    }
  }
  // y += y (aliased, same stride) doubles exactly.
  REQUIRE(cuda::add_rows(f.ctx, dy.data(), y_stride, dy.data(), y_stride, rows, width).ok());
  const auto doubled = to_host(dy);
  for (std::size_t o = 0; o < doubled.size(); ++o) {
    REQUIRE(same_bits(doubled[o], static_cast<int64_t>(o) % y_stride < width ? 2.0f * got[o] : got[o]));
  }

  for (const float s : {std::sqrt(2304.0f), 0.0625f, -1.0f / 3.0f}) {  // Gemma's sqrt(hidden), exact, inexact
    CAPTURE(s);
    auto dz = to_device(y);
    REQUIRE(cuda::scale_rows(f.ctx, dz.data(), y_stride, rows, width, s).ok());
    got = to_host(dz);
    for (std::size_t o = 0; o < y.size(); ++o) {
      const float expected =
          static_cast<int64_t>(o) % y_stride < width ? static_cast<float>(static_cast<double>(y[o]) * static_cast<double>(s)) : y[o];
      INFO("element " << o);
      REQUIRE(same_bits(got[o], expected));
    }
  }
}

TEST_CASE("new cuda wrappers reject bad arguments with invalid_argument naming the op", "[cuda][host]") {
  // All rejected before any CUDA call: runs without a device (null stream, fake pointers never
  // dereferenced).
  const cuda::CudaContext ctx{};
  float fake[1] = {};
  float* p = fake;
  bf16_t* p16 = nullptr;
  auto rejected = [](const Status& s, const char* op) {
    INFO(s.message());
    return s.code() == ErrorCode::invalid_argument && s.message().find(op) != std::string::npos;
  };
  CHECK(rejected(cuda::geglu_tanh(ctx, p, 8, p, 8, 2, 0, p, 8), "geglu_tanh"));
  CHECK(rejected(cuda::geglu_tanh(ctx, p, 4, p, 8, 2, 8, p, 8), "geglu_tanh"));
  CHECK(rejected(cuda::geglu_tanh(ctx, p, 8, p, 8, 2, 8, p16, 8), "geglu_tanh"));
  CHECK(rejected(cuda::geglu_tanh(ctx, p, 8, p, 8, -1, 8, p, 8), "geglu_tanh"));
  CHECK(cuda::geglu_tanh(ctx, nullptr, 8, nullptr, 8, 0, 8, p, 8).ok());  // no rows: nothing to do

  CHECK(rejected(cuda::softcap(ctx, p, 8, 2, 8, 0.0f), "softcap"));
  CHECK(rejected(cuda::softcap(ctx, p, 8, 2, 8, -30.0f), "softcap"));
  CHECK(rejected(cuda::softcap(ctx, p, 8, 2, 8, std::numeric_limits<float>::quiet_NaN()), "softcap"));
  CHECK(rejected(cuda::softcap(ctx, p, 8, 2, 8, std::numeric_limits<float>::infinity()), "softcap"));
  CHECK(rejected(cuda::softcap(ctx, p, 7, 2, 8, 30.0f), "softcap"));
  CHECK(rejected(cuda::softcap(ctx, nullptr, 8, 2, 8, 30.0f), "softcap"));

  CHECK(rejected(cuda::rms_norm_heads(ctx, p, 100, 2, 2, 64, p, 1e-6f), "rms_norm_heads"));  // stride < 128
  CHECK(rejected(cuda::rms_norm_heads(ctx, p, 128, 2, 2, 0, p, 1e-6f), "rms_norm_heads"));
  CHECK(rejected(cuda::rms_norm_heads(ctx, p, 128, 2, 0, 64, p, 1e-6f), "rms_norm_heads"));
  CHECK(rejected(cuda::rms_norm_heads(ctx, p, 128, 2, 2, 64, nullptr, 1e-6f), "rms_norm_heads"));
  CHECK(rejected(cuda::rms_norm_heads(ctx, p, 128, 2, 2, 64, p, -1.0f), "rms_norm_heads"));
  CHECK(rejected(cuda::rms_norm_heads(ctx, p, 128, -1, 2, 64, p, 1e-6f), "rms_norm_heads"));

  CHECK(rejected(cuda::add_rows(ctx, p, 8, p, 7, 2, 8), "add_rows"));
  CHECK(rejected(cuda::add_rows(ctx, p, 8, nullptr, 8, 2, 8), "add_rows"));
  CHECK(rejected(cuda::add_rows(ctx, p, 8, p, 8, 2, 0), "add_rows"));
  CHECK(rejected(cuda::scale_rows(ctx, p, 7, 2, 8, 2.0f), "scale_rows"));
  CHECK(rejected(cuda::scale_rows(ctx, nullptr, 8, 2, 8, 2.0f), "scale_rows"));
  CHECK(rejected(cuda::scale_rows(ctx, p, 8, -2, 8, 2.0f), "scale_rows"));
}
