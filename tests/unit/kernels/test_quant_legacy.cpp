// quantize() for ggml's 32-element types with a minimum or a fifth bit (Q4_1, Q5_0, Q5_1): the
// bytes of ggml's reference quantizers (written out here from quantize_row_q4_1_ref, ..._q5_0_ref,
// ..._q5_1_ref), blocks whose bytes are worked out by hand, and the round trip within half a step.
// Their decoding, linear and embedding are tested with the other types in test_quant.cpp.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cpu/quant.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

float half_at(const uint8_t* p) { return f16_to_f32(static_cast<f16_t>(p[0] | (p[1] << 8))); }

void put_half(uint8_t* p, float value) {
  const f16_t bits = f32_to_f16(value);
  p[0] = static_cast<uint8_t>(bits & 0xFF);
  p[1] = static_cast<uint8_t>(bits >> 8);
}

// ggml's reference quantizers for one block, statement by statement (inputs here keep every
// float -> int8 conversion in range).
void put_qh(uint8_t* p, uint32_t qh) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(qh >> (8 * b));
}
void ggml_q4_1(const float* x, uint8_t* out) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / 15, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(out, d);
  put_half(out + 2, min);
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    const auto xi0 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x0 + 0.5f)));
    const auto xi1 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x1 + 0.5f)));
    out[4 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}
void ggml_q5_0(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(out, d);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id, x1 = x[16 + j] * id;
    const auto xi0 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x0 + 16.5f)));
    const auto xi1 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x1 + 16.5f)));
    out[6 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << j;
    qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
  }
  put_qh(out + 2, qh);
}
void ggml_q5_1(const float* x, uint8_t* out) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / 31, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(out, d);
  put_half(out + 2, min);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    const auto xi0 = static_cast<uint8_t>(x0 + 0.5f), xi1 = static_cast<uint8_t>(x1 + 0.5f);
    out[8 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << j;
    qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
  }
  put_qh(out + 4, qh);
}

// Gaussian blocks of 32 and edge blocks: all zero, constant, one outlier, all negative, all
// positive, values small enough for a subnormal f16 d, two values of equal magnitude and opposite sign.
std::vector<float> blocks_like_weights(int64_t num_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> v(static_cast<std::size_t>(32 * num_blocks));
  for (float& x : v) x = dist(rng);
  for (int j = 0; j < 32; ++j) {
    auto at = [&](int block) -> float& { return v[static_cast<std::size_t>(32 * block + j)]; };
    at(1) = 0.0f;
    at(2) = 0.3f;
    if (j == 7) at(3) = 4.0f;
    at(4) = -std::fabs(at(4)) - 0.01f;
    at(5) = std::fabs(at(5)) + 0.2f;
    at(6) *= 1e-4f;
    if (j < 2) at(7) = j == 0 ? 0.5f : -0.5f;
  }
  return v;
}

}  // namespace

TEST_CASE("quantize Q4_1, Q5_0 and Q5_1 as ggml's reference quantizers, within half a step", "[kernels][quant]") {
  const int64_t num_blocks = 96, count = 32 * num_blocks;
  const std::vector<float> x = blocks_like_weights(num_blocks, 13);
  for (DType dtype : {DType::q4_1, DType::q5_0, DType::q5_1}) {
    const auto bytes = static_cast<std::size_t>(dtype_block_bytes(dtype));
    std::vector<uint8_t> got(static_cast<std::size_t>(dtype_bytes(dtype, count))), want(got.size());
    quantize(dtype, x.data(), count, got.data());
    for (int64_t b = 0; b < num_blocks; ++b) {
      auto* encode = dtype == DType::q4_1 ? ggml_q4_1 : dtype == DType::q5_0 ? ggml_q5_0 : ggml_q5_1;
      encode(x.data() + 32 * b, want.data() + static_cast<std::size_t>(b) * bytes);
    }
    INFO("dtype " << to_string(dtype));
    CHECK(got == want);
    std::vector<float> y(static_cast<std::size_t>(count));
    dequantize(Isa::scalar, dtype, got.data(), count, y.data());
    for (int64_t b = 0; b < num_blocks; ++b) {
      const float* xb = x.data() + 32 * b;
      const uint8_t* block = &got[static_cast<std::size_t>(b) * bytes];
      float min = xb[0], max = xb[0], amax = 0.0f, signed_max = 0.0f;
      for (int j = 0; j < 32; ++j) {
        min = std::min(min, xb[j]);
        max = std::max(max, xb[j]);
        if (std::fabs(xb[j]) > amax) {
          amax = std::fabs(xb[j]);
          signed_max = xb[j];
        }
      }
      // The step before and after its f16 rounding, and the minimum's rounding: a value q steps up
      // is off by half a step, plus q times d's rounding, plus m's.
      const int levels = dtype == DType::q4_1 ? 15 : 31;
      const float d = dtype == DType::q5_0 ? signed_max / -16.0f : (max - min) / static_cast<float>(levels);
      const float d_error = std::fabs(half_at(block) - d);
      const float m_error = dtype == DType::q5_0 ? 0.0f : std::fabs(half_at(block + 2) - min);
      for (int j = 0; j < 32; ++j) {
        const float xj = xb[j], yj = y[static_cast<std::size_t>(32 * b + j)];
        // Q5_0's range is one-sided: a value of the sign opposite the largest magnitude's, at >= 15.5
        // steps, rounds down to 15: up to a step.
        const bool clipped = dtype == DType::q5_0 && amax > 0.0f && std::fabs(xj) >= 15.5f * amax / 16.0f &&
                             (xj > 0.0f) != (signed_max > 0.0f);
        const float bound = (clipped ? 1.0f : 0.5f) * std::fabs(d) * (1.0f + 1e-5f) + 32.0f * d_error + m_error +
                            1e-7f * (std::fabs(xj) + std::fabs(min));
        INFO("block " << b << " element " << j << " x " << xj << " y " << yj);
        CHECK(std::fabs(yj - xj) <= bound);
      }
    }
  }
}

TEST_CASE("quantize Q4_1, Q5_0 and Q5_1 blocks worked out by hand", "[kernels][quant]") {
  std::vector<float> x(32);
  std::vector<uint8_t> got;
  auto encode = [&](DType dtype) {
    got.assign(static_cast<std::size_t>(dtype_block_bytes(dtype)), 0xA5);
    quantize(dtype, x.data(), 32, got.data());
    return got;
  };

  // Q4_1: levels 0..15 then 15..0 of -1 + 0.25 q: min -1, d = 3.75 / 15 = 0.25 (f16 0x3400), m = -1
  // (0xBC00); element 3 is 3.5 levels up, which rounds half up to 4.
  for (int j = 0; j < 16; ++j) {
    x[static_cast<std::size_t>(j)] = -1.0f + 0.25f * static_cast<float>(j);
    x[static_cast<std::size_t>(16 + j)] = -1.0f + 0.25f * static_cast<float>(15 - j);
  }
  x[3] = -1.0f + 0.25f * 3.5f;
  CHECK(encode(DType::q4_1) == std::vector<uint8_t>{0x00, 0x34, 0x00, 0xBC, 0xF0, 0xE1, 0xD2, 0xC4, 0xB4, 0xA5,
                                                    0x96, 0x87, 0x78, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F});

  // Q5_0: levels q[e] = (7 e + 3) % 32 of (q - 16) * 0.25; the largest magnitude is -4 (q = 0, e = 27),
  // so d = -4 / -16 = 0.25. Fifth bits of e = 0..7: q = 3 10 17 24 31 6 13 20 -> 0b10011100 = 0x9C,
  // and so on; qs[0] = (3 & 15) | (19 & 15) << 4 = 0x33.
  for (int e = 0; e < 32; ++e) x[static_cast<std::size_t>(e)] = static_cast<float>((7 * e + 3) % 32 - 16) * 0.25f;
  CHECK(encode(DType::q5_0) == std::vector<uint8_t>{0x00, 0x34, 0x9C, 0x39, 0x63, 0xC6, 0x33, 0xAA, 0x11, 0x88, 0xFF,
                                                    0x66, 0xDD, 0x44, 0xBB, 0x22, 0x99, 0x00, 0x77, 0xEE, 0x55, 0xCC});

  // Q5_0, one-sided: the largest magnitude 2 comes first and is positive, d = 2 / -16 = -0.125
  // (0xB000): 2 -> 0, zeros -> 16 (fifth bit set), and -2 -> 16 + 16 = 32, clamped to 31 (0x1F).
  std::fill(x.begin(), x.end(), 0.0f);
  x[5] = 2.0f;
  x[6] = -2.0f;
  CHECK(encode(DType::q5_0) == std::vector<uint8_t>{0x00, 0xB0, 0xDF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00,
                                                    0x00, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});

  // Q5_1: levels q[e] = (11 e + 5) % 32 of -1 + 0.125 q (0 at e = 17, 31 at e = 14): d = 3.875 / 31 =
  // 0.125 (0x3000), m = -1. Fifth bits of e = 0..7: q = 5 16 27 6 17 28 7 18 -> 0b10110110 = 0xB6.
  for (int e = 0; e < 32; ++e) x[static_cast<std::size_t>(e)] = -1.0f + 0.125f * static_cast<float>((11 * e + 5) % 32);
  CHECK(encode(DType::q5_1) == std::vector<uint8_t>{0x00, 0x30, 0x00, 0xBC, 0xB6, 0x6D, 0x49, 0x92, 0x55, 0x00, 0xBB, 0x66,
                                                    0x11, 0xCC, 0x77, 0x22, 0xDD, 0x88, 0x33, 0xEE, 0x99, 0x44, 0xFF, 0xAA});

  // A constant block: d = 0, every level 0 (Q5_0: 16), m the value.
  std::fill(x.begin(), x.end(), 0.75f);
  std::vector<uint8_t> q41(20, 0), q51(24, 0);
  put_half(&q41[2], 0.75f);
  put_half(&q51[2], 0.75f);
  CHECK(encode(DType::q4_1) == q41);
  CHECK(encode(DType::q5_1) == q51);
  std::vector<float> y(32);
  dequantize(DType::q5_1, got.data(), 32, y.data());
  CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 0.75f; }));
}
