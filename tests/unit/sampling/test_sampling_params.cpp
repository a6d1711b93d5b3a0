#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/sampling/sampler.hpp"

using namespace llaisys;

TEST_CASE("SamplingParams::validate rejects out-of-range values with the field's name") {
  CHECK(SamplingParams{}.validate(100).ok());
  CHECK(SamplingParams{.temperature = 3.0f}.validate(100).message() ==
        "temperature must be in [0, 2], got 3");
  CHECK_FALSE(SamplingParams{.top_p = 0.0f}.validate(100).ok());
  CHECK_FALSE(SamplingParams{.min_p = 1.5f}.validate(100).ok());
  CHECK_FALSE(SamplingParams{.top_k = -1}.validate(100).ok());
  SamplingParams bias;
  bias.logit_bias = {{100, 1.0f}};
  CHECK(bias.validate(100).message() == "logit_bias: token 100 outside the vocabulary of 100");
}

TEST_CASE("greedy picks the first maximal logit") {
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f};
  GreedySampler sampler;
  Rng rng(1);
  CHECK(sampler.sample(logits, {}, SamplingParams{.temperature = 0.0f}, rng) == 1);
  CHECK(argmax(std::vector<float>{}) == -1);
}
