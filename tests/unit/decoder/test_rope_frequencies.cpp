// The rotary frequencies of each rope_scaling kind (plugins/common/rope_frequencies.hpp) and the
// tables the ops build from them (ops::fill_rope_tables).

#include <cmath>
#include <cstring>

#include <catch2/catch.hpp>

#include "cpu/rope.hpp"
#include "rope_frequencies.hpp"

using namespace llaisys;
using namespace llaisys::decoder;

TEST_CASE("rope frequencies: default and linear give cpu::rope_tables' exact bits", "[decoder][rope]") {
  const std::vector<int32_t> positions{0, 1, 7, 100, 4095, 32767};
  for (const auto& [head_dim, theta, factor] : {std::tuple{8, 1e4, 1.0}, std::tuple{64, 1e6, 1.0},
                                                std::tuple{128, 5e5, 4.0}, std::tuple{64, 1e4, 2.5}}) {
    INFO("head_dim " << head_dim << " theta " << theta << " linear factor " << factor);
    const auto n = static_cast<int64_t>(positions.size());
    const auto half = static_cast<std::size_t>(head_dim / 2);
    std::vector<float> want_cos(positions.size() * half), want_sin(want_cos.size());
    std::vector<float> cos(want_cos.size()), sin(want_cos.size());
    cpu::rope_tables(positions.data(), n, head_dim, theta, factor, want_cos.data(), want_sin.data());
    const RopeScaling scaling = factor == 1.0 ? RopeScaling{} : RopeScaling{.kind = RopeScaling::Kind::linear, .factor = factor};
    ops::fill_rope_tables(make_rope_frequencies(head_dim, {.theta = theta, .scaling = scaling}), positions.data(), n,
                          cos.data(), sin.data());
    CHECK(std::memcmp(cos.data(), want_cos.data(), cos.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(sin.data(), want_sin.data(), sin.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("rope frequencies: llama3 scaling of Llama 3.1 (factor 8, bands 1..4 of 8192)", "[decoder][rope]") {
  const RopeScaling llama3{.kind = RopeScaling::Kind::llama3,
                           .factor = 8.0,
                           .low_freq_factor = 1.0,
                           .high_freq_factor = 4.0,
                           .original_max_position_embeddings = 8192};
  const ops::RopeFrequencies f = make_rope_frequencies(128, {.theta = 500000.0, .scaling = llama3});
  REQUIRE(f.inv_freq.size() == 64);
  CHECK(f.position_scale == 1.0);
  // Expected values from llama.cpp's formulation (convert_hf_to_gguf.py's rope_factors: the
  // frequency divided by 1, by factor, or by 1 / ((1 - s) / factor + s)), in float64.
  const std::pair<int, double> expected[] = {
      {0, 1.0},                        // high band: unchanged
      {20, 0.016560440080994446},
      {28, 0.003211445994752591},      // the last high-band frequency (wavelength 1956 < 2048)
      {29, 0.002166570763503359},      // medium band: interpolated
      {31, 0.000856751412919632},
      {34, 0.0001785078127679964},     // the last medium one (wavelength 6695 < 8192)
      {35, 9.556212353964683e-05},     // low band: divided by 8
      {63, 3.068925988914511e-07},
  };
  for (const auto& [i, want] : expected) {
    INFO("dimension pair " << i);
    CHECK(f.inv_freq[static_cast<std::size_t>(i)] == Approx(want).epsilon(1e-12));
  }
  // Scaling never raises a frequency, and keeps them decreasing.
  const ops::RopeFrequencies base = make_rope_frequencies(128, {.theta = 500000.0});
  for (std::size_t i = 0; i < 64; ++i) {
    CHECK(f.inv_freq[i] <= base.inv_freq[i]);
    if (i > 0) CHECK(f.inv_freq[i] < f.inv_freq[i - 1]);
  }
}
