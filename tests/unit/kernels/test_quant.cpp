// Quantized weights (cpu/quant.hpp): dequantize against formulas written out here from the GGUF
// block layouts, on every ISA; quantize's round trip within its stated bounds (and ggml's reference
// bytes for Q8_0 / Q4_0); linear and embedding with quantized weights bit-identical to the same ops
// on the dequantized f32 matrix, for every M, thread count and ISA.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cpu/embedding.hpp"
#include "cpu/linear.hpp"
#include "cpu/linear_bf16.hpp"
#include "cpu/quant.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

constexpr DType kQuantTypes[] = {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k,
                                 DType::q6_k, DType::q4_1, DType::q5_0, DType::q5_1};

float half_at(const uint8_t* p) { return f16_to_f32(static_cast<f16_t>(p[0] | (p[1] << 8))); }

void put_half(uint8_t* p, float value) {
  const f16_t bits = f32_to_f16(value);
  p[0] = static_cast<uint8_t>(bits & 0xFF);
  p[1] = static_cast<uint8_t>(bits >> 8);
}

// Q4_K / Q5_K sub-block j's 6-bit scale and min from the 12 packed bytes: for j < 4 the low six bits
// of bytes j (scale) and j + 4 (min); for j >= 4 the low (scale) or high (min) nibble of byte j + 4,
// with the top two bits of byte j - 4 (scale) or byte j (min) above it.
int packed_scale(const uint8_t* s, int j) { return j < 4 ? s[j] % 64 : s[j + 4] % 16 + 16 * (s[j - 4] / 64); }
int packed_min(const uint8_t* s, int j) { return j < 4 ? s[j + 4] % 64 : s[j + 4] / 16 + 16 * (s[j] / 64); }

// The inverse, for building blocks with chosen scales and mins.
void pack_scales(const int scale[8], const int min[8], uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(scale[j] + 64 * (scale[j + 4] / 16));
    s[j + 4] = static_cast<uint8_t>(min[j] + 64 * (min[j + 4] / 16));
    s[j + 8] = static_cast<uint8_t>(scale[j + 4] % 16 + 16 * (min[j + 4] % 16));
  }
}

// Element e of a block, written from the layouts (ggml's float operations: each product and the
// difference rounded to f32).
float reference_value(DType dtype, const uint8_t* b, int e) {
  switch (dtype) {
    case DType::q8_0: return static_cast<float>(static_cast<int8_t>(b[2 + e])) * half_at(b);
    case DType::q4_0: {
      const int q = e < 16 ? b[2 + e] % 16 : b[2 + e - 16] / 16;
      return static_cast<float>(q - 8) * half_at(b);
    }
    case DType::q4_1: {
      const int q = e < 16 ? b[4 + e] % 16 : b[4 + e - 16] / 16;
      return static_cast<float>(q) * half_at(b) + half_at(b + 2);
    }
    case DType::q5_0:
    case DType::q5_1: {
      // qh: 4 bytes, element e's fifth bit is bit e % 8 of byte e / 8.
      const int qh = dtype == DType::q5_0 ? 2 : 4, qs = qh + 4;
      const int low = e < 16 ? b[qs + e] % 16 : b[qs + e - 16] / 16;
      const int q = low + 16 * ((b[qh + e / 8] >> (e % 8)) & 1);
      if (dtype == DType::q5_0) return static_cast<float>(q - 16) * half_at(b);
      return static_cast<float>(q) * half_at(b) + half_at(b + 2);
    }
    case DType::q4_k:
    case DType::q5_k: {
      const int chunk = e / 64, within = e % 64, l = within % 32, j = 2 * chunk + within / 32;
      const int byte = b[(dtype == DType::q4_k ? 16 : 48) + 32 * chunk + l];
      int q = within < 32 ? byte % 16 : byte / 16;
      if (dtype == DType::q5_k) q += 16 * ((b[16 + l] >> j) & 1);
      const float d1 = half_at(b) * static_cast<float>(packed_scale(b + 4, j));
      const float m1 = half_at(b + 2) * static_cast<float>(packed_min(b + 4, j));
      return d1 * static_cast<float>(q) - m1;
    }
    case DType::q6_k: {
      const int half = e / 128, within = e % 128, i = within / 32, l = within % 32;
      const int byte = b[64 * half + 32 * (i % 2) + l];
      const int low = i < 2 ? byte % 16 : byte / 16;
      const int high = (b[128 + 32 * half + l] >> (2 * i)) & 3;
      const float ds = half_at(b + 208) * static_cast<float>(static_cast<int8_t>(b[192 + e / 16]));
      return ds * static_cast<float>(low + 16 * high - 32);
    }
    default: return NAN;
  }
}

// Where each type keeps its f16 fields.
std::vector<int> half_fields(DType dtype) {
  if (dtype == DType::q4_k || dtype == DType::q5_k || dtype == DType::q4_1 || dtype == DType::q5_1) return {0, 2};
  if (dtype == DType::q6_k) return {208};
  return {0};
}

// Random blocks with finite f16 fields drawn from ordinary, negative, tiny (subnormal), zero and
// large values.
std::vector<uint8_t> random_blocks(DType dtype, int64_t num_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto bytes = static_cast<std::size_t>(dtype_block_bytes(dtype));
  std::vector<uint8_t> data(static_cast<std::size_t>(num_blocks) * bytes);
  for (uint8_t& v : data) v = static_cast<uint8_t>(rng());
  const float special[] = {0.0f, -0.0f, 6e-8f, -3e-6f, 1000.0f, -0.5f, 65504.0f / 64.0f};
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  for (int64_t b = 0; b < num_blocks; ++b) {
    for (int field : half_fields(dtype)) {
      const float value = b % 4 == 3 ? special[(b / 4 + field) % 7] : dist(rng);
      put_half(&data[static_cast<std::size_t>(b) * bytes + static_cast<std::size_t>(field)], value);
    }
  }
  return data;
}

std::vector<float> dequantized(Isa isa, DType dtype, const std::vector<uint8_t>& blocks) {
  const int64_t count = static_cast<int64_t>(blocks.size()) / dtype_block_bytes(dtype) * dtype_block_elements(dtype);
  std::vector<float> out(static_cast<std::size_t>(count));
  dequantize(isa, dtype, blocks.data(), count, out.data());
  return out;
}

void check_against_reference(DType dtype, const std::vector<uint8_t>& blocks) {
  const int64_t elements = dtype_block_elements(dtype), bytes = dtype_block_bytes(dtype);
  const int64_t num_blocks = static_cast<int64_t>(blocks.size()) / bytes;
  std::vector<float> expected(static_cast<std::size_t>(num_blocks * elements));
  for (int64_t b = 0; b < num_blocks; ++b) {
    for (int64_t e = 0; e < elements; ++e) {
      expected[static_cast<std::size_t>(b * elements + e)] =
          reference_value(dtype, &blocks[static_cast<std::size_t>(b * bytes)], static_cast<int>(e));
    }
  }
  for (Isa isa : supported_isas()) {
    INFO("dtype " << to_string(dtype) << " isa " << to_string(isa));
    CHECK(same_bits(dequantized(isa, dtype, blocks), expected));
  }
}

}  // namespace

TEST_CASE("dequantize matches the block layouts on every ISA", "[kernels][quant]") {
  for (DType dtype : kQuantTypes) check_against_reference(dtype, random_blocks(dtype, 64, static_cast<uint32_t>(dtype)));
}

TEST_CASE("dequantize takes every 6-bit scale and min of Q4_K / Q5_K in every sub-block", "[kernels][quant]") {
  for (DType dtype : {DType::q4_k, DType::q5_k}) {
    std::vector<uint8_t> blocks = random_blocks(dtype, 64, 99);
    const auto bytes = static_cast<std::size_t>(dtype_block_bytes(dtype));
    for (int v = 0; v < 64; ++v) {
      int scale[8], min[8];
      for (int j = 0; j < 8; ++j) {
        scale[j] = (v + 9 * j) % 64;
        min[j] = (7 * v + 3 * j + 1) % 64;
      }
      uint8_t* block = &blocks[static_cast<std::size_t>(v) * bytes];
      pack_scales(scale, min, block + 4);
      put_half(block, v % 2 == 0 ? 0.01f : -0.02f);      // d, negative in odd blocks
      put_half(block + 2, v % 3 == 0 ? -0.005f : 0.03f);  // dmin, negative in some
      for (int j = 0; j < 8; ++j) {
        REQUIRE(packed_scale(block + 4, j) == scale[j]);
        REQUIRE(packed_min(block + 4, j) == min[j]);
      }
    }
    check_against_reference(dtype, blocks);
  }
}

TEST_CASE("dequantize of Q6_K takes signed scales, Q8_0 and Q4_0 the extreme quants", "[kernels][quant]") {
  std::vector<uint8_t> q6 = random_blocks(DType::q6_k, 16, 5);
  for (int b = 0; b < 16; ++b) {
    uint8_t* block = &q6[static_cast<std::size_t>(b) * 210];
    for (int g = 0; g < 16; ++g) block[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(-128 + 17 * g + b));
    if (b == 0) std::memset(block, 0, 192);     // every quant -32
    if (b == 1) std::memset(block, 0xFF, 192);  // every quant +31
  }
  check_against_reference(DType::q6_k, q6);
  std::vector<uint8_t> q8 = random_blocks(DType::q8_0, 4, 6), q4 = random_blocks(DType::q4_0, 4, 7);
  std::memset(&q8[2], 0x80, 32);  // -128
  std::memset(&q8[36], 0x7F, 32);
  std::memset(&q4[2], 0x00, 16);
  std::memset(&q4[20], 0xFF, 16);
  check_against_reference(DType::q8_0, q8);
  check_against_reference(DType::q4_0, q4);
  CHECK(dequantized(Isa::scalar, DType::q8_0, q8)[0] == -128.0f * half_at(q8.data()));
}

TEST_CASE("dequantize of Q5_0 / Q5_1 takes the fifth bit at every position, Q4_1 every nibble", "[kernels][quant]") {
  // Block 2 p: only bit p of qh set; block 2 p + 1: all bits but p. Negative d in every third block,
  // negative m in every other; the nibbles run through 0..15 at every position.
  for (DType dtype : {DType::q5_0, DType::q5_1}) {
    const int qh = dtype == DType::q5_0 ? 2 : 4, qs = qh + 4;
    std::vector<uint8_t> blocks = random_blocks(dtype, 64, 41);
    const auto bytes = static_cast<std::size_t>(dtype_block_bytes(dtype));
    for (int v = 0; v < 64; ++v) {
      uint8_t* block = &blocks[static_cast<std::size_t>(v) * bytes];
      const uint32_t mask = v % 2 == 0 ? 1u << (v / 2) : ~(1u << (v / 2));
      for (int b = 0; b < 4; ++b) block[qh + b] = static_cast<uint8_t>(mask >> (8 * b));
      for (int j = 0; j < 16; ++j) block[qs + j] = static_cast<uint8_t>((j + v) % 16 + 16 * ((15 - j + v) % 16));
      put_half(block, v % 3 == 0 ? -0.03f : 0.02f);
      if (dtype == DType::q5_1) put_half(block + 2, v % 2 == 0 ? -0.25f : 0.125f);
    }
    check_against_reference(dtype, blocks);
    // The bit alone, written out: element p of block 2 p is (16 + nibble) levels up.
    for (int p = 0; p < 32; ++p) {
      const uint8_t* block = &blocks[static_cast<std::size_t>(2 * p) * bytes];
      const int nibble = p < 16 ? (p + 2 * p) % 16 : (15 - (p - 16) + 2 * p) % 16;
      const float d = half_at(block), m = dtype == DType::q5_1 ? half_at(block + 2) : 0.0f;
      const float want =
          dtype == DType::q5_0 ? static_cast<float>(nibble) * d : static_cast<float>(16 + nibble) * d + m;
      CHECK(dequantized(Isa::scalar, dtype, blocks)[static_cast<std::size_t>(64 * p + p)] == want);
    }
  }
  std::vector<uint8_t> q41 = random_blocks(DType::q4_1, 4, 42);
  std::memset(&q41[4], 0x00, 16);    // every quant 0: m
  std::memset(&q41[24], 0xFF, 16);   // every quant 15
  put_half(&q41[40], -0.5f);         // negative d and m
  put_half(&q41[42], -3.0f);
  check_against_reference(DType::q4_1, q41);
  CHECK(dequantized(Isa::scalar, DType::q4_1, q41)[0] == half_at(&q41[2]));
}

TEST_CASE("dequantize refuses what it cannot decode", "[kernels][quant]") {
  std::vector<uint8_t> blocks(144);
  std::vector<float> out(256);
  CHECK_THROWS_AS(dequantize(DType::q4_k, blocks.data(), 100, out.data()), std::invalid_argument);
  CHECK_THROWS_AS(dequantize(DType::i32, blocks.data(), 4, out.data()), std::invalid_argument);
  CHECK(is_dequantizable(DType::q6_k));
  CHECK_FALSE(is_dequantizable(DType::u8));
}

namespace {

// Test data: mostly Gaussian blocks, with a few that test the edges (all zero, constant, one
// outlier, all negative, all positive).
std::vector<float> weights_like(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = dist(rng);
  const int64_t blocks = count / 256;
  for (int64_t i = 0; i < 256; ++i) {
    if (blocks > 1) v[static_cast<std::size_t>(256 + i)] = 0.0f;
    if (blocks > 2) v[static_cast<std::size_t>(512 + i)] = 0.3f;
    if (blocks > 3 && i == 100) v[static_cast<std::size_t>(768 + i)] = 4.0f;
    if (blocks > 4) v[static_cast<std::size_t>(1024 + i)] = -std::fabs(v[static_cast<std::size_t>(1024 + i)]) - 0.01f;
    if (blocks > 5) v[static_cast<std::size_t>(1280 + i)] = std::fabs(v[static_cast<std::size_t>(1280 + i)]) + 0.2f;
  }
  return v;
}

// ggml's quantize_row_q8_0_ref and quantize_row_q4_0_ref, written out for one block.
void ggml_q8_0(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(out, d);
  for (int j = 0; j < 32; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
}
void ggml_q4_0(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(out, d);
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
    out[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

}  // namespace

TEST_CASE("quantize Q8_0 and Q4_0 as ggml's reference quantizers, within half a step", "[kernels][quant]") {
  const int64_t count = 2048;
  const std::vector<float> x = weights_like(count, 11);
  for (DType dtype : {DType::q8_0, DType::q4_0}) {
    std::vector<uint8_t> got(static_cast<std::size_t>(dtype_bytes(dtype, count))), want(got.size());
    quantize(dtype, x.data(), count, got.data());
    for (int64_t b = 0; b < count / 32; ++b) {
      (dtype == DType::q8_0 ? ggml_q8_0 : ggml_q4_0)(x.data() + 32 * b, want.data() + b * dtype_block_bytes(dtype));
    }
    INFO("dtype " << to_string(dtype));
    CHECK(got == want);
    const std::vector<float> y = dequantized(Isa::scalar, dtype, got);
    for (int64_t b = 0; b < count / 32; ++b) {
      const float d = std::fabs(half_at(&got[static_cast<std::size_t>(b * dtype_block_bytes(dtype))]));
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(32 * b + j)]));
      for (int j = 0; j < 32; ++j) {
        const auto i = static_cast<std::size_t>(32 * b + j);
        // Half a step, plus the f16 rounding of d over up to 127 (8) steps: amax 2^-11; Q4_0's step is the largest
        // magnitude / 8 with the sign making it -8, so a value of the other sign at >= 7.5 steps (the
        // same magnitude) rounds down to 7: up to one step.
        const bool clipped = dtype == DType::q4_0 && std::fabs(x[i]) >= 7.5f * amax / 8.0f && amax > 0.0f;
        const float bound = (clipped ? 1.0f : 0.5f) * d + amax * 0x1p-11f;
        CHECK(std::fabs(y[i] - x[i]) <= bound);
      }
    }
  }
}

TEST_CASE("quantize K types: each value within half its sub-block's step, small RMS error", "[kernels][quant]") {
  const int64_t count = 256 * 40;
  const std::vector<float> x = weights_like(count, 12);
  for (DType dtype : {DType::q4_k, DType::q5_k, DType::q6_k}) {
    std::vector<uint8_t> q(static_cast<std::size_t>(dtype_bytes(dtype, count)));
    quantize(dtype, x.data(), count, q.data());
    for (Isa isa : supported_isas()) CHECK(same_bits(dequantized(isa, dtype, q), dequantized(Isa::scalar, dtype, q)));
    const std::vector<float> y = dequantized(Isa::scalar, dtype, q);
    double error2 = 0.0, signal2 = 0.0;
    for (int64_t e = 0; e < count; ++e) {
      const uint8_t* block = &q[static_cast<std::size_t>(e / 256 * dtype_block_bytes(dtype))];
      const int within = static_cast<int>(e % 256);
      float step = 0.0f;  // the decoded step of the element's sub-block
      if (dtype == DType::q6_k) {
        step = std::fabs(half_at(block + 208) * static_cast<float>(static_cast<int8_t>(block[192 + within / 16])));
      } else {
        step = half_at(block) * static_cast<float>(packed_scale(block + 4, within / 32));
      }
      const auto i = static_cast<std::size_t>(e);
      INFO("dtype " << to_string(dtype) << " element " << e << " x " << x[i] << " y " << y[i] << " step " << step);
      CHECK(std::fabs(y[i] - x[i]) <= 0.5f * step + 1e-6f * (std::fabs(x[i]) + 1.0f));
      error2 += static_cast<double>(y[i] - x[i]) * static_cast<double>(y[i] - x[i]);
      signal2 += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    }
    const double relative_rms = std::sqrt(error2 / signal2);
    const double limit = dtype == DType::q4_k ? 0.12 : dtype == DType::q5_k ? 0.06 : 0.03;
    INFO("dtype " << to_string(dtype) << " relative RMS error " << relative_rms);
    CHECK(relative_rms < limit);
  }
}

namespace {

// A quantized matrix and the f32 matrix dequantize() makes of it.
struct QuantMatrix {
  DType dtype;
  int64_t rows, cols;
  std::vector<uint8_t> blocks;
  std::vector<float> dense;
  WeightMatrix quantized() const { return {.data = blocks.data(), .dtype = dtype, .rows = rows, .cols = cols}; }
  WeightMatrix f32() const { return {.data = dense.data(), .dtype = DType::f32, .rows = rows, .cols = cols}; }
};

QuantMatrix quant_matrix(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  QuantMatrix m{.dtype = dtype, .rows = rows, .cols = cols, .blocks = {}, .dense = {}};
  const std::vector<float> values = weights_like(rows * cols, seed);
  m.blocks.resize(static_cast<std::size_t>(dtype_bytes(dtype, rows * cols)));
  quantize(dtype, values.data(), rows * cols, m.blocks.data());
  m.dense.resize(values.size());
  dequantize(dtype, m.blocks.data(), rows * cols, m.dense.data());
  return m;
}

}  // namespace

TEST_CASE("linear with quantized weights equals linear on their dequantization, bit for bit", "[kernels][quant]") {
  // One region with every type: output widths that no tile size divides, biases on some, some
  // accumulating into a residual.
  const int64_t widths[] = {37, 70, 19, 45, 3, 29, 52, 11};
  for (int64_t k : {256, 512, 768}) {
    std::vector<QuantMatrix> matrices;
    for (std::size_t t = 0; t < std::size(kQuantTypes); ++t) {
      matrices.push_back(quant_matrix(kQuantTypes[t], widths[t], k, static_cast<uint32_t>(k + t)));
    }
    for (int64_t m : {1, 2, 3, 5, 16, 17, 64}) {
      const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), static_cast<uint32_t>(m * 7 + k));
      const std::vector<float> bias = random_floats(128, 3);
      std::vector<std::vector<float>> residual;
      for (std::size_t t = 0; t < matrices.size(); ++t) {
        residual.push_back(random_floats(static_cast<std::size_t>(m * widths[t]), static_cast<uint32_t>(t + 40)));
      }
      auto run = [&](const CpuContext& ctx, bool dense) {
        std::vector<std::vector<float>> ys;
        std::vector<LinearJob> jobs;
        for (std::size_t t = 0; t < matrices.size(); ++t) ys.push_back(t % 2 == 1 ? residual[t] : std::vector<float>(residual[t].size()));
        for (std::size_t t = 0; t < matrices.size(); ++t) {
          jobs.push_back({.weight = dense ? matrices[t].f32() : matrices[t].quantized(),
                          .bias = t % 3 == 0 ? bias.data() + t : nullptr,
                          .y = ys[t].data(),
                          .y_stride = widths[t],
                          .accumulate = t % 2 == 1});
        }
        linear(ctx, x.data(), k, m, k, jobs);
        return ys;
      };
      ThreadPool one(1);
      const auto expected = run({.pool = &one, .isa = Isa::scalar}, true);
      for (Isa isa : supported_isas()) {
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          const auto got = run({.pool = &pool, .isa = isa}, false);
          for (std::size_t t = 0; t < matrices.size(); ++t) {
            INFO("dtype " << to_string(kQuantTypes[t]) << " isa " << to_string(isa) << " threads " << threads << " m " << m
                          << " k " << k);
            CHECK(same_bits(got[t], expected[t]));
          }
        }
      }
    }
  }
}

TEST_CASE("linear streams long quantized matrices exactly, and the bf16 mode only where it runs", "[kernels][quant]") {
  // Enough rows that each thread's range is split into several interleaved streams.
  const int64_t k = 512, n = 301;
  for (DType dtype : kQuantTypes) {
    const QuantMatrix w = quant_matrix(dtype, n, k, 77);
    for (int64_t m : {1, 4, 9}) {
      const std::vector<float> x = random_floats(static_cast<std::size_t>(m * k), 5);
      ThreadPool one(1), two(2);
      std::vector<float> expected(static_cast<std::size_t>(m * n)), got(expected.size()), bf16_mode(expected.size());
      const LinearJob dense{.weight = w.f32(), .y = expected.data(), .y_stride = n};
      linear({.pool = &one, .isa = Isa::scalar}, x.data(), k, m, k, std::span(&dense, 1));
      for (Isa isa : supported_isas()) {
        const LinearJob job{.weight = w.quantized(), .y = got.data(), .y_stride = n};
        linear({.pool = &two, .isa = isa}, x.data(), k, m, k, std::span(&job, 1));
        const LinearJob job_bf16{.weight = w.quantized(), .y = bf16_mode.data(), .y_stride = n};
        linear({.pool = &one, .isa = isa, .matmul = MatmulPrecision::bf16}, x.data(), k, m, k, std::span(&job_bf16, 1));
        INFO("dtype " << to_string(dtype) << " isa " << to_string(isa) << " m " << m);
        CHECK(same_bits(got, expected));
        // The bf16 mode runs on AVX-512 with AVX512-BF16 (its own results: test_linear_bf16.cpp);
        // elsewhere it is the exact path.
        if (isa != Isa::avx512 || !bf16dot::supported()) CHECK(same_bits(bf16_mode, expected));
      }
    }
  }
}

TEST_CASE("embedding rows of a quantized table are the dequantized rows", "[kernels][quant]") {
  const int64_t vocab = 9, width = 512;
  const int32_t ids[] = {3, 0, 8, 3, 5};
  for (DType dtype : kQuantTypes) {
    const QuantMatrix table = quant_matrix(dtype, vocab, width, 31);
    for (Isa isa : supported_isas()) {
      ThreadPool pool(2);
      std::vector<float> out(static_cast<std::size_t>(5 * (width + 3)), -1.0f);
      embedding({.pool = &pool, .isa = isa}, table.quantized(), ids, 5, out.data(), width + 3);
      for (int t = 0; t < 5; ++t) {
        INFO("dtype " << to_string(dtype) << " isa " << to_string(isa) << " token " << t);
        CHECK(std::memcmp(out.data() + t * (width + 3), table.dense.data() + ids[t] * width, width * sizeof(float)) == 0);
        CHECK(out[static_cast<std::size_t>(t * (width + 3) + width)] == -1.0f);
      }
    }
  }
}
