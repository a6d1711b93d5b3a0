// The shared decoder's pieces that differ between Llama-family models (plugins/common): which
// biases a variant loads, and the rotary frequencies of each rope_scaling kind.

#include <cmath>
#include <cstring>

#include <catch2/catch.hpp>

#include "cpu/rope.hpp"
#include "decoder_weights.hpp"
#include "rope_frequencies.hpp"

using namespace llaisys;
using namespace llaisys::decoder;

namespace {

constexpr DecoderVariant kLlama{.architecture = "LlamaForCausalLM", .biases_from_config = true};
constexpr DecoderVariant kQwen2{.architecture = "Qwen2ForCausalLM", .qkv_bias = true};

HfTransformerConfig small_config() {
  HfTransformerConfig hf;
  hf.vocab_size = 32;
  hf.hidden_size = 16;
  hf.intermediate_size = 24;
  hf.num_layers = 1;
  hf.num_heads = 2;
  hf.num_kv_heads = 1;
  hf.head_dim = 8;
  hf.max_position_embeddings = 64;
  return hf;
}

}  // namespace

TEST_CASE("decoder variants: Llama takes its biases from config.json, Qwen2 always has q/k/v biases", "[decoder]") {
  HfTransformerConfig hf = small_config();
  DecoderConfig plain = make_decoder_config(hf, kLlama).value();
  CHECK_FALSE(plain.qkv_bias);
  CHECK_FALSE(plain.o_bias);
  CHECK_FALSE(plain.mlp_bias);

  hf.attention_bias = true;
  DecoderConfig attention = make_decoder_config(hf, kLlama).value();
  CHECK(attention.qkv_bias);
  CHECK(attention.o_bias);  // transformers' LlamaAttention: o_proj has bias=attention_bias too
  CHECK_FALSE(attention.mlp_bias);
  hf.mlp_bias = true;
  CHECK(make_decoder_config(hf, kLlama).value().mlp_bias);

  // Qwen2: q/k/v biases whatever the config says, never o; an MLP bias it cannot load is refused.
  HfTransformerConfig q = small_config();
  DecoderConfig qwen = make_decoder_config(q, kQwen2).value();
  CHECK(qwen.qkv_bias);
  CHECK_FALSE(qwen.o_bias);
  q.mlp_bias = true;
  auto refused = make_decoder_config(q, kQwen2);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::unsupported);
  CHECK_THAT(refused.status().message(), Catch::Contains("mlp_bias") && Catch::Contains("Qwen2ForCausalLM"));
}

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
    fill_rope_tables(make_rope_frequencies(head_dim, theta, scaling), positions.data(), n, cos.data(), sin.data());
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
  const RopeFrequencies f = make_rope_frequencies(128, 500000.0, llama3);
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
  const RopeFrequencies base = make_rope_frequencies(128, 500000.0, {});
  for (std::size_t i = 0; i < 64; ++i) {
    CHECK(f.inv_freq[i] <= base.inv_freq[i]);
    if (i > 0) CHECK(f.inv_freq[i] < f.inv_freq[i - 1]);
  }
}
