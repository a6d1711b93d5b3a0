#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <catch2/catch.hpp>

#include "llaisys/core/dtype.hpp"

using namespace llaisys;

TEST_CASE("bf16 conversion rounds to nearest even") {
  CHECK(f32_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_f32(0x3F80) == 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  CHECK(f32_to_bf16(1.00390625f) == 0x3F80);
  // 1 + 3*2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): rounds up.
  CHECK(f32_to_bf16(1.01171875f) == 0x3F82);
  CHECK(f32_to_bf16(-2.0f) == 0xC000);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST_CASE("bf16 round trip is exact for every bf16 value") {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = bf16_to_f32(static_cast<bf16_t>(bits));
    if (std::isnan(f)) continue;
    REQUIRE(f32_to_bf16(f) == bits);
  }
}

TEST_CASE("f16 conversion matches IEEE binary16 on every value") {
  // Every finite half converts to float and back exactly.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = f16_to_f32(static_cast<f16_t>(bits));
    if (std::isnan(f)) continue;
    REQUIRE(f32_to_f16(f) == bits);
  }
  CHECK(f16_to_f32(0x3C00) == 1.0f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_f32(0x7BFF) == 65504.0f);                // largest finite
  CHECK(f32_to_f16(65520.0f) == 0x7C00);                // rounds to infinity
  CHECK(f32_to_f16(65519.0f) == 0x7BFF);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);   // halfway to the smallest subnormal: even
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
}

TEST_CASE("dtype names and sizes") {
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::f32) == 4);
  CHECK(parse_dtype("BF16") == DType::bf16);
  CHECK(parse_dtype("F16") == DType::f16);
  CHECK_FALSE(parse_dtype("F8_E4M3").has_value());
  CHECK(to_string(DType::f16) == "f16");
}
