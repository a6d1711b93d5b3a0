// The pointwise kernels Gemma 2 and Qwen3 add (canonical tanh, geglu_tanh, softcap, rms_norm_heads,
// add_rows, scale_rows) against double-precision references, and every ISA path against the others
// bit for bit.

#include <limits>
#include <numbers>
#include <utility>

#include <catch2/catch.hpp>

#include "cpu/elementwise.hpp"
#include "cpu/geglu.hpp"
#include "cpu/rms_norm.hpp"
#include "cpu/simd.hpp"
#include "cpu/softcap.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// tanh on an ISA's path: softcap with cap 1 is tanh_canonical, tanh_avx2 or tanh_avx512 of each
// element (x / 1 and 1 * t are exact), all vector steps when n is a multiple of 16.
std::vector<float> tanh_all(Isa isa, const std::vector<float>& x) {
  std::vector<float> out = x;
  softcap_row(isa, out.data(), static_cast<int64_t>(out.size()), 1.0f);
  return out;
}

// Bit-for-bit equality, any NaN matching any NaN.
bool same_values(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  }
  return true;
}

std::vector<std::pair<int, Isa>> threads_and_isas() {
  std::vector<std::pair<int, Isa>> all;
  for (int threads : {1, 3}) {
    for (Isa isa : supported_isas()) all.emplace_back(threads, isa);
  }
  return all;
}

double gelu_tanh_exact(double g) {
  return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g)));
}

}  // namespace

TEST_CASE("tanh_canonical is within 1.5e-7 of tanh, and its vector forms give the same bits", "[kernels][tanh]") {
  std::vector<float> inputs = random_floats(4096, 21, -12.0f, 12.0f);
  const std::vector<float> small = random_floats(1024, 22, -1e-3f, 1e-3f);
  inputs.insert(inputs.end(), small.begin(), small.end());
  for (float special : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, 0.5f, -0.5f, 9.0f, -9.0f, 9.02f, -9.02f, 44.0f, 44.5f,
                        88.0f, -100.0f, 1e30f, -1e30f, std::numeric_limits<float>::max(), kInf, -kInf, kNaN}) {
    inputs.push_back(special);
  }
  while (inputs.size() % 16 != 0) inputs.push_back(0.25f);
  double worst = 0;
  for (float x : inputs) {
    const float got = simd::tanh_canonical(x);
    if (std::isnan(x)) {
      CHECK(std::isnan(got));
      continue;
    }
    worst = std::max(worst, std::fabs(static_cast<double>(got) - std::tanh(static_cast<double>(x))));
    CHECK(std::fabs(got) <= 1.0f);
    CHECK(std::signbit(got) == std::signbit(x));  // odd, -0 included
    if (std::fabs(x) >= 9.02f) CHECK(got == std::copysign(1.0f, x));
  }
  CHECK(worst < 1.5e-7);
  CHECK(simd::tanh_canonical(0.0f) == 0.0f);
  CHECK(simd::tanh_canonical(0.5f) == -simd::tanh_canonical(-0.5f));

  std::vector<std::vector<float>> results;
  for (Isa isa : supported_isas()) results.push_back(tanh_all(isa, inputs));
  for (const auto& r : results) CHECK(same_values(r, results.front()));
}

TEST_CASE("geglu_tanh matches gelu_pytorch_tanh(g) * u in double precision", "[kernels][geglu]") {
  const int64_t rows = 5, width = 300, stride = 311;  // a tail for both vector widths, padded rows
  auto gate = random_floats(static_cast<std::size_t>(rows * stride), 1, -8.0f, 8.0f);
  const auto up = random_floats(static_cast<std::size_t>(rows * stride), 2, -3.0f, 3.0f);
  // Inputs whose cube overflows f32, and the ones where tanh saturates.
  gate[3] = 1e20f;
  gate[4] = -1e20f;
  gate[5] = 20.0f;
  gate[6] = -20.0f;
  gate[7] = 0.0f;
  ThreadPool pool(2);
  std::vector<std::vector<float>> results;
  for (Isa isa : supported_isas()) {
    INFO("isa " << to_string(isa));
    const CpuContext ctx{.pool = &pool, .isa = isa};
    std::vector<float> out(gate.size(), kNaN);
    geglu_tanh(ctx, gate.data(), stride, up.data(), stride, rows, width, out.data(), stride);
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < width; ++i) {
        const auto at = static_cast<std::size_t>(r * stride + i);
        const double g = gate[at], u = up[at];
        REQUIRE(std::isfinite(out[at]));
        const double exact = std::fabs(g) > 1e10 ? (g > 0 ? g * u : 0.0) : gelu_tanh_exact(g) * u;
        // tanh's absolute error (1.5e-7) scaled by 0.5 |g u|, plus a few roundings of the result.
        const double bound = 0.5 * std::fabs(g * u) * 1.5e-7 + 1e-6 * std::fabs(exact) + 1e-30;
        worst = std::max(worst, std::fabs(static_cast<double>(out[at]) - exact) / bound);
      }
      // Row padding untouched.
      for (int64_t i = width; i < stride; ++i) CHECK(std::isnan(out[static_cast<std::size_t>(r * stride + i)]));
    }
    CHECK(worst <= 1.0);
    // In place over gate, and over up: the same bits.
    std::vector<float> over_gate = gate, over_up = up;
    geglu_tanh(ctx, over_gate.data(), stride, up.data(), stride, rows, width, over_gate.data(), stride);
    geglu_tanh(ctx, gate.data(), stride, over_up.data(), stride, rows, width, over_up.data(), stride);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < width; ++i) {
        const auto at = static_cast<std::size_t>(r * stride + i);
        CHECK(std::memcmp(&over_gate[at], &out[at], sizeof(float)) == 0);
        CHECK(std::memcmp(&over_up[at], &out[at], sizeof(float)) == 0);
      }
    }
    results.push_back(std::move(out));
  }
  for (const auto& r : results) CHECK(same_values(r, results.front()));
  // A batch large enough for the threads gives each row the bits it has alone.
  const int64_t big_rows = 64, big_width = 1000;
  const auto big_gate = random_floats(static_cast<std::size_t>(big_rows * big_width), 3, -6.0f, 6.0f);
  const auto big_up = random_floats(big_gate.size(), 4);
  ThreadPool four(4);
  std::vector<float> all(big_gate.size()), row(static_cast<std::size_t>(big_width));
  geglu_tanh({.pool = &four, .isa = detect_isa()}, big_gate.data(), big_width, big_up.data(), big_width, big_rows,
             big_width, all.data(), big_width);
  geglu_tanh({.pool = &four, .isa = detect_isa()}, big_gate.data() + 37 * big_width, big_width,
             big_up.data() + 37 * big_width, big_width, 1, big_width, row.data(), big_width);
  CHECK(same_bits(row, std::vector<float>(all.begin() + 37 * big_width, all.begin() + 38 * big_width)));
}

TEST_CASE("softcap is cap * tanh(x / cap) on every ISA, over rows and chunks of long rows", "[kernels][softcap]") {
  // A few logits rows long enough to split into column chunks (with a tail), padded, and one row
  // of a Gemma-sized vocabulary.
  struct Shape {
    int64_t rows, width, stride;
  };
  for (const Shape shape : {Shape{3, 10003, 10019}, Shape{1, 256000, 256000}, Shape{40, 37, 40}}) {
    INFO(shape.rows << " rows of " << shape.width);
    const float cap = 30.0f;
    auto x = random_floats(static_cast<std::size_t>(shape.rows * shape.stride), 5, -120.0f, 120.0f);
    x[0] = 0.0f;
    x[1] = -0.0f;
    x[2] = 1e30f;
    x[3] = -kInf;
    std::vector<std::vector<float>> results;
    for (const auto& [threads, isa] : threads_and_isas()) {
      INFO("isa " << to_string(isa) << ", " << threads << " threads");
      ThreadPool pool(threads);
      std::vector<float> y = x;
      softcap({.pool = &pool, .isa = isa}, y.data(), shape.stride, shape.rows, shape.width, cap);
      double worst = 0;
      bool padding_kept = true;
      for (int64_t r = 0; r < shape.rows; ++r) {
        for (int64_t i = 0; i < shape.stride; ++i) {
          const auto at = static_cast<std::size_t>(r * shape.stride + i);
          if (i >= shape.width) {
            padding_kept = padding_kept && std::memcmp(&y[at], &x[at], sizeof(float)) == 0;
            continue;
          }
          const double exact = static_cast<double>(cap) * std::tanh(static_cast<double>(x[at]) / static_cast<double>(cap));
          // tanh's absolute error times the cap, plus the rounding of x / cap carried through.
          const double bound = static_cast<double>(cap) * 1.5e-7 + 1e-7 * std::fabs(static_cast<double>(x[at]));
          const double error = std::isfinite(y[at]) ? std::fabs(static_cast<double>(y[at]) - exact) / bound
                                                    : std::numeric_limits<double>::infinity();
          worst = std::max(worst, error);
        }
      }
      CHECK(worst <= 1.0);
      CHECK(padding_kept);
      CHECK(y[2] == cap);
      CHECK(y[3] == -cap);
      CHECK((y[1] == 0.0f && std::signbit(y[1])));
      results.push_back(std::move(y));
    }
    for (const auto& r : results) CHECK(same_bits(r, results.front()));
  }
  // cap = 1 is tanh itself, element by element.
  const auto x = random_floats(100, 6, -5.0f, 5.0f);
  for (Isa isa : supported_isas()) {
    std::vector<float> y = x;
    softcap_row(isa, y.data(), static_cast<int64_t>(y.size()), 1.0f);
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == simd::tanh_canonical(x[i]));
  }
}

TEST_CASE("rms_norm_heads normalises each head exactly as rms_norm normalises that row", "[kernels][rms_norm]") {
  struct Shape {
    int64_t tokens, heads, head_dim;
  };
  // Few rows (on the caller) and many (across the threads); a head_dim with a tail.
  for (const Shape shape : {Shape{1, 2, 128}, Shape{7, 16, 128}, Shape{5, 3, 40}}) {
    INFO(shape.tokens << " tokens, " << shape.heads << " heads of " << shape.head_dim);
    // Heads inside a wider token row (q of a fused qkv row), with a gap after them.
    const int64_t token_stride = shape.heads * shape.head_dim + 24;
    const auto x = random_floats(static_cast<std::size_t>(shape.tokens * token_stride), 8, -4.0f, 4.0f);
    const auto weight = random_floats(static_cast<std::size_t>(shape.head_dim), 9, 0.5f, 1.5f);
    ThreadPool pool(3);
    std::vector<std::vector<float>> results;
    for (Isa isa : supported_isas()) {
      INFO("isa " << to_string(isa));
      const CpuContext ctx{.pool = &pool, .isa = isa};
      std::vector<float> y = x;
      rms_norm_heads(ctx, y.data(), token_stride, shape.tokens, shape.heads, shape.head_dim, weight.data(), 1e-6f);
      std::vector<float> expected = x;
      for (int64_t t = 0; t < shape.tokens; ++t) {
        for (int64_t h = 0; h < shape.heads; ++h) {
          const float* row = x.data() + t * token_stride + h * shape.head_dim;
          rms_norm(ctx, row, shape.head_dim, 1, shape.head_dim, weight.data(), 1e-6f,
                   expected.data() + t * token_stride + h * shape.head_dim, shape.head_dim);
          // And close to the definition, so the comparison is with a real normalisation.
          double sum = 0;
          for (int64_t i = 0; i < shape.head_dim; ++i) sum += static_cast<double>(row[i]) * static_cast<double>(row[i]);
          const double inv = 1.0 / std::sqrt(sum / static_cast<double>(shape.head_dim) + 1e-6);
          const float* got = y.data() + t * token_stride + h * shape.head_dim;
          for (int64_t i = 0; i < shape.head_dim; ++i) {
            const double exact = static_cast<double>(row[i]) * inv * static_cast<double>(weight[static_cast<std::size_t>(i)]);
            CHECK(std::fabs(static_cast<double>(got[i]) - exact) <= 1e-5 * (1.0 + std::fabs(exact)));
          }
        }
      }
      CHECK(same_bits(y, expected));  // the gaps after the heads are untouched in both
      results.push_back(std::move(y));
    }
    for (const auto& r : results) CHECK(same_bits(r, results.front()));
  }
}

TEST_CASE("add_rows and scale_rows round once per element and leave row padding alone", "[kernels][elementwise]") {
  struct Shape {
    int64_t rows, width;
  };
  // Many short rows, and two long ones split into column chunks.
  for (const Shape shape : {Shape{33, 70}, Shape{2, 20000}, Shape{1, 1}}) {
    INFO(shape.rows << " rows of " << shape.width);
    const int64_t y_stride = shape.width + 5, x_stride = shape.width + 3;
    const auto y0 = random_floats(static_cast<std::size_t>(shape.rows * y_stride), 10, -1e3f, 1e3f);
    const auto x = random_floats(static_cast<std::size_t>(shape.rows * x_stride), 11, -1e-2f, 1e-2f);
    const float s = 0.7071067811865476f;
    for (const auto& [threads, isa] : threads_and_isas()) {
      INFO(threads << " threads, isa " << to_string(isa));
      ThreadPool pool(threads);
      const CpuContext ctx{.pool = &pool, .isa = isa};
      std::vector<float> added = y0, scaled = y0;
      add_rows(ctx, added.data(), y_stride, x.data(), x_stride, shape.rows, shape.width);
      scale_rows(ctx, scaled.data(), y_stride, shape.rows, shape.width, s);
      bool exact = true, padding_kept = true;
      for (int64_t r = 0; r < shape.rows; ++r) {
        for (int64_t i = 0; i < y_stride; ++i) {
          const auto at = static_cast<std::size_t>(r * y_stride + i);
          if (i >= shape.width) {
            padding_kept = padding_kept && added[at] == y0[at] && scaled[at] == y0[at];
            continue;
          }
          // The double sum (product) of two floats rounded to float is the correctly rounded f32
          // result (53 >= 2 * 24 + 2 bits: no double-rounding error).
          const double xv = x[static_cast<std::size_t>(r * x_stride + i)];
          exact = exact && added[at] == static_cast<float>(static_cast<double>(y0[at]) + xv) &&
                  scaled[at] == static_cast<float>(static_cast<double>(y0[at]) * static_cast<double>(s));
        }
      }
      CHECK(exact);
      CHECK(padding_kept);
    }
  }
  // x may alias y: y += y doubles it.
  ThreadPool pool(1);
  for (Isa isa : supported_isas()) {
    std::vector<float> y = random_floats(50, 12);
    const std::vector<float> before = y;
    add_rows({.pool = &pool, .isa = isa}, y.data(), 10, y.data(), 10, 5, 10);
    for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == 2.0f * before[i]);
  }
}
