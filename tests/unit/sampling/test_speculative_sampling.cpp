// Speculative sampling's pieces, checked by integrating over the uniforms instead of sampling:
//  - LogitsSampler::distribution is exactly the distribution pick() draws from (the share of a fine
//    grid of uniforms each token gets);
//  - verify_draft turns a draft drawn from any q into a token distributed as p (summed over the
//    draft's q and a grid of both uniforms), and never returns a rejected draft.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "llaisys/sampling/sampler.hpp"
#include "llaisys/sampling/speculative.hpp"

using namespace llaisys;

namespace {

std::vector<float> random_logits(std::mt19937& rng, std::size_t vocab) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = normal(rng);
  logits[3] = logits[7];  // a tie
  logits[5] = -std::numeric_limits<float>::infinity();
  return logits;
}

std::vector<float> random_probs(std::mt19937& rng, std::size_t vocab, double zero_share) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> weights(vocab);
  double total = 0.0;
  for (double& w : weights) total += w = uniform(rng) < zero_share ? 0.0 : std::pow(uniform(rng), 3.0);
  if (total == 0.0) total = weights[0] = 1.0;
  std::vector<float> probs(vocab);
  for (std::size_t i = 0; i < vocab; ++i) probs[i] = static_cast<float>(weights[i] / total);
  return probs;
}

}  // namespace

TEST_CASE("LogitsSampler::distribution: the share of the uniforms pick() maps to each token") {
  std::mt19937 rng(11);
  constexpr std::size_t kVocab = 40;
  constexpr int kGrid = 100000;
  const std::vector<DrawParams> params = {
      {.temperature = 1.0f},
      {.temperature = 0.5f, .top_k = 5},
      {.temperature = 2.0f, .top_p = 0.7f},
      {.temperature = 1.0f, .top_k = 8, .top_p = 0.6f},
      {.temperature = 0.8f, .min_p = 0.1f},
      {.temperature = 1.3f, .top_k = 12, .top_p = 0.9f, .min_p = 0.02f},
      {.temperature = 0.0f},
  };
  std::vector<uint32_t> allowed((kVocab + 31) / 32, ~0u);
  allowed[0] &= ~(1u << 9);  // token 9 is never allowed
  for (const DrawParams& p : params) {
    for (const bool masked : {false, true}) {
      INFO("temperature " << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p << " min_p " << p.min_p
                          << (masked ? " masked" : ""));
      const std::span<const uint32_t> mask = masked ? std::span<const uint32_t>(allowed) : std::span<const uint32_t>();
      const std::vector<float> logits = random_logits(rng, kVocab);
      LogitsSampler sampler;
      std::vector<float> scratch = logits;
      std::vector<float> probs;
      sampler.distribution(scratch, p, probs, mask);
      REQUIRE(probs.size() == kVocab);
      std::vector<int> counts(kVocab, 0);
      for (int i = 0; i < kGrid; ++i) {
        scratch = logits;
        ++counts[static_cast<std::size_t>(sampler.pick(scratch, p, (i + 0.5) / kGrid, mask))];
      }
      double total = 0.0;
      for (std::size_t t = 0; t < kVocab; ++t) {
        INFO("token " << t);
        total += static_cast<double>(probs[t]);
        // Each token owns one run of the walk: the grid misses at most one point at each end.
        CHECK(std::abs(static_cast<double>(counts[t]) / kGrid - static_cast<double>(probs[t])) <= 2.0 / kGrid + 1e-6);
      }
      CHECK(total == Approx(1.0).epsilon(1e-5));
      CHECK(probs[5] == 0.0f);
      if (masked) CHECK(probs[9] == 0.0f);
    }
  }
}

TEST_CASE("verify_draft: whatever q is, the token is distributed as p, and a rejected draft never comes back") {
  std::mt19937 rng(5);
  constexpr std::size_t kVocab = 12;
  constexpr int kGrid = 400;
  for (int trial = 0; trial < 12; ++trial) {
    INFO("trial " << trial);
    const std::vector<float> p = random_probs(rng, kVocab, trial % 3 == 0 ? 0.0 : 0.3);
    const std::vector<float> q = trial == 0 ? p : random_probs(rng, kVocab, trial % 2 == 0 ? 0.0 : 0.4);
    std::vector<double> got(kVocab, 0.0);
    double accepted = 0.0;
    int broken = 0;  // verdicts whose token is out of range or whose flag disagrees with it
    for (std::size_t x = 0; x < kVocab; ++x) {
      if (q[x] <= 0.0f) continue;  // never drawn from q
      const double share = static_cast<double>(q[x]) / (kGrid * kGrid);
      for (int a = 0; a < kGrid; ++a) {
        for (int b = 0; b < kGrid; ++b) {
          const DraftVerdict v = verify_draft(p, q, static_cast<TokenId>(x), (a + 0.5) / kGrid, (b + 0.5) / kGrid);
          if (v.token < 0 || v.token >= static_cast<TokenId>(kVocab) || v.accepted != (v.token == static_cast<TokenId>(x))) {
            ++broken;
            continue;
          }
          got[static_cast<std::size_t>(v.token)] += share;
          accepted += v.accepted ? share : 0.0;
        }
      }
    }
    REQUIRE(broken == 0);
    double overlap = 0.0;  // the acceptance rate theory gives: sum of min(p, q)
    for (std::size_t t = 0; t < kVocab; ++t) {
      INFO("token " << t << ": p " << p[t] << ", q " << q[t]);
      CHECK(std::abs(got[t] - static_cast<double>(p[t])) <= 3.0 / kGrid);
      overlap += std::min(static_cast<double>(p[t]), static_cast<double>(q[t]));
    }
    CHECK(std::abs(accepted - overlap) <= 2.0 / kGrid);
    if (trial == 0) CHECK(accepted == Approx(1.0));
  }
}

TEST_CASE("draw_from: inverse CDF in token order, zeros skipped, the sliver to the last positive") {
  const std::vector<float> probs = {0.0f, 0.25f, 0.0f, 0.5f, 0.25f, 0.0f};
  CHECK(draw_from(probs, 0.0) == 1);
  CHECK(draw_from(probs, 0.2499) == 1);
  CHECK(draw_from(probs, 0.25) == 3);
  CHECK(draw_from(probs, 0.7499) == 3);
  CHECK(draw_from(probs, 0.75) == 4);
  CHECK(draw_from(probs, 0.9999999) == 4);
  CHECK(draw_from(std::vector<float>{0.0f, 0.0f}, 0.5) == -1);
  CHECK(speculative_seed(1, SpeculativeStream::accept) != speculative_seed(1, SpeculativeStream::residual));
  CHECK(speculative_seed(1, SpeculativeStream::accept) != speculative_seed(2, SpeculativeStream::accept));
}
