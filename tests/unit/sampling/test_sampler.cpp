// LogitsSampler: penalties, bias, seeded reproducibility, and chi-square tests of the distributions
// temperature, top-k, top-p and min-p produce, against expectations computed here independently.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "distribution.hpp"
#include "llaisys/sampling/sampler.hpp"

using namespace llaisys;
using namespace llaisys::sampling_test;

namespace {

const std::vector<float> kLogits = {2.0f, 1.5f, 1.0f, 0.6f, 0.2f, -0.3f, -1.0f, -2.5f};

std::vector<int> draw(const SamplingParams& params, int n, uint64_t seed) {
  LogitsSampler sampler;
  Rng rng(seed);
  std::vector<int> counts(kLogits.size(), 0);
  for (int i = 0; i < n; ++i) {
    std::vector<float> row = kLogits;
    ++counts[static_cast<std::size_t>(sampler.sample(row, {}, params, rng))];
  }
  return counts;
}

void check_distribution(const SamplingParams& params, const std::vector<double>& expected) {
  const std::vector<int> counts = draw(params, 20000, 20240601);
  check_chi_square(counts, expected, softmax(kLogits, 1.0));
}

}  // namespace

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
  GreedySampler greedy;
  LogitsSampler chain;
  Rng rng(1);
  CHECK(greedy.sample(logits, {}, SamplingParams{.temperature = 0.0f}, rng) == 1);
  CHECK(chain.sample(logits, {}, SamplingParams{.temperature = 0.0f}, rng) == 1);
  CHECK(argmax(std::vector<float>{}) == -1);
}

TEST_CASE("argmax over vocabulary-sized rows equals the plain first-maximum scan") {
  // The reference: the definition, index by index.
  auto reference = [](const std::vector<float>& row) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < row.size(); ++i) {
      if (row[i] > row[best]) best = i;
    }
    return static_cast<TokenId>(best);
  };
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const std::size_t sizes[] = {1, 2, 15, 16, 17, 255, 256, 257, 258, 511, 4097, 151936};
  for (std::size_t size : sizes) {
    for (int trial = 0; trial < 24; ++trial) {
      std::vector<float> row(size);
      for (float& x : row) x = normal(gen);
      const std::size_t a = gen() % size, b = gen() % size;
      switch (trial % 6) {
        case 1:  // a tie for the maximum: the lower index wins
          row[a] = row[b] = 100.0f;
          break;
        case 2:  // the maximum in the last element (a partial block)
          row[size - 1] = 50.0f;
          break;
        case 3:  // NaNs are never chosen after index 0; NaN at index 0 wins (nothing is greater)
          row[a] = std::nanf("");
          row[0] = trial % 12 == 3 ? std::nanf("") : row[0];
          break;
        case 4:  // all -inf but one position, or all -inf
          std::fill(row.begin(), row.end(), -INFINITY);
          if (trial % 12 == 4) row[b] = -1e30f;
          break;
        case 5:  // +inf and a tie of +inf
          row[b] = INFINITY;
          row[a] = INFINITY;
          break;
        default:
          break;
      }
      INFO("size " << size << ", trial " << trial);
      CHECK(argmax(row) == reference(row));
    }
  }
}

TEST_CASE("a temperature so small that 1 / t overflows samples the raw argmax") {
  LogitsSampler chain;
  Rng rng(3);
  const SamplingParams tiny{.temperature = 1e-39f};
  const std::vector<std::vector<float>> rows = {{1, 5, 3, -2}, {-3, -1, -2}, {0, -1}, {-1, 0, -2}, {2, 0, 7, 0}};
  for (const std::vector<float>& row : rows) {
    std::vector<float> logits = row;
    INFO("row starting " << row[0]);
    CHECK(chain.sample(logits, {}, tiny, rng) == argmax(row));
  }
}

TEST_CASE("penalties and logit_bias") {
  SlotCounts scratch;
  const std::vector<TokenId> prompt = {0, 1};
  const std::vector<TokenId> output = {2, 2, 3};
  SECTION("repetition divides positive and multiplies negative logits of every seen token") {
    std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f, 4.0f};
    apply_penalties(logits, {prompt, output}, {.repetition_penalty = 2.0f}, scratch);
    CHECK(logits == std::vector<float>{1.0f, -4.0f, 0.5f, 0.25f, 4.0f});
  }
  SECTION("presence and frequency count generated tokens only") {
    std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    apply_penalties(logits, {prompt, output}, {.presence_penalty = 0.5f, .frequency_penalty = 0.25f}, scratch);
    CHECK(logits == std::vector<float>{1.0f, 1.0f, 0.0f, 0.25f, 1.0f});
  }
  SECTION("logit_bias adds, and can make a token the greedy choice") {
    std::vector<float> logits = {1.0f, 3.0f, 2.0f};
    SamplingParams params{.temperature = 0.0f};
    params.logit_bias = {{2, 1.5f}};
    LogitsSampler sampler;
    Rng rng(1);
    CHECK(sampler.sample(logits, {}, params, rng) == 2);
  }
  SECTION("a strong frequency penalty moves greedy off a repeated token") {
    std::vector<float> logits = {0.0f, 0.0f, 3.0f, 2.6f};  // 3 - 2 * 0.5 < 2.6 - 0.5
    LogitsSampler sampler;
    Rng rng(1);
    CHECK(sampler.sample(logits, {prompt, output}, {.temperature = 0.0f, .frequency_penalty = 0.5f}, rng) == 3);
  }
}

TEST_CASE("seeded sampling reproduces exactly, other seeds and choices differ") {
  auto run = [](Rng rng) {
    LogitsSampler sampler;
    std::vector<TokenId> tokens;
    for (int i = 0; i < 64; ++i) {
      std::vector<float> row = kLogits;
      tokens.push_back(sampler.sample(row, {}, {.temperature = 1.0f}, rng));
    }
    return tokens;
  };
  CHECK(run(make_rng(42, 0)) == run(make_rng(42, 0)));
  CHECK(run(make_rng(42, 0)) == run(Rng(42)));
  CHECK(run(make_rng(42, 0)) != run(make_rng(43, 0)));
  CHECK(run(make_rng(42, 1)) != run(make_rng(42, 0)));
  CHECK(run(make_rng(42, 1)) == run(make_rng(42, 1)));
}

TEST_CASE("temperature: frequencies follow softmax(logits / T)") {
  check_distribution({.temperature = 0.6f}, softmax(kLogits, 0.6));
}

TEST_CASE("top-k: the k most likely tokens, renormalized") {
  std::vector<bool> keep(kLogits.size(), false);
  keep[0] = keep[1] = keep[2] = true;
  check_distribution({.temperature = 1.0f, .top_k = 3}, renormalized(softmax(kLogits, 1.0), keep));
}

TEST_CASE("top-p: the smallest most-likely set whose mass reaches p, renormalized") {
  const std::vector<double> p = softmax(kLogits, 1.0);  // already in decreasing order
  std::vector<bool> keep(p.size(), false);
  double mass = 0;
  for (std::size_t i = 0; i < p.size() && mass < 0.75; ++i) {
    keep[i] = true;
    mass += p[i];
  }
  REQUIRE(std::count(keep.begin(), keep.end(), true) == 3);
  check_distribution({.temperature = 1.0f, .top_p = 0.75f}, renormalized(p, keep));
}

TEST_CASE("min-p: tokens at least min_p times as likely as the best, renormalized") {
  const std::vector<double> p = softmax(kLogits, 1.0);
  std::vector<bool> keep(p.size(), false);
  for (std::size_t i = 0; i < p.size(); ++i) keep[i] = p[i] >= 0.2 * p[0];
  REQUIRE(std::count(keep.begin(), keep.end(), true) == 4);
  check_distribution({.temperature = 1.0f, .min_p = 0.2f}, renormalized(p, keep));
}

TEST_CASE("top-p on a large vocabulary selects without sorting and stays correct") {
  // 50,000 tokens, one dominant: top_p 0.5 must keep just it.
  std::vector<float> logits(50000, 0.0f);
  logits[31337] = 20.0f;
  LogitsSampler sampler;
  Rng rng(3);
  for (int i = 0; i < 20; ++i) {
    std::vector<float> row = logits;
    CHECK(sampler.sample(row, {}, {.temperature = 1.0f, .top_p = 0.5f}, rng) == 31337);
  }
  // A flat vocabulary with top_p 0.9 keeps ~90% of it: draws spread over many tokens.
  std::vector<int> seen(50000, 0);
  for (int i = 0; i < 2000; ++i) {
    std::vector<float> row(50000, 0.0f);
    ++seen[static_cast<std::size_t>(sampler.sample(row, {}, {.temperature = 1.0f, .top_p = 0.9f}, rng))];
  }
  CHECK(std::count_if(seen.begin(), seen.end(), [](int c) { return c > 0; }) > 1500);
  // Ties are broken by id: the kept 90% are the lowest ids.
  CHECK(std::all_of(seen.begin() + 45001, seen.end(), [](int c) { return c == 0; }));
}

TEST_CASE("logprobs come from the raw distribution") {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  const TokenLogprob lp = compute_logprobs(logits, 2, 2);
  const double lse = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0));
  CHECK(lp.logprob == Approx(2.0 - lse));
  REQUIRE(lp.top.size() == 2);
  CHECK(lp.top[0].first == 1);
  CHECK(lp.top[1].first == 3);
  CHECK(lp.top[0].second == Approx(3.0 - lse));
  CHECK(compute_logprobs(logits, 0, 0).top.empty());
}

TEST_CASE("top-p keeps exactly the reference nucleus on random vocabularies") {
  std::mt19937 gen(17);
  std::normal_distribution<float> normal(0.0f, 2.5f);
  LogitsSampler sampler;
  Rng rng(4);
  for (const float top_p : {0.3f, 0.6f, 0.9f}) {
    std::vector<float> logits(1000);
    for (float& l : logits) l = normal(gen);
    // Reference: sort by (probability desc, id asc), keep the smallest prefix reaching top_p.
    std::vector<double> p = softmax(logits, 1.0);
    std::vector<std::size_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    std::vector<bool> in_nucleus(p.size(), false);
    double mass = 0;
    std::size_t size = 0;
    for (std::size_t i = 0; i < order.size() && mass < static_cast<double>(top_p); ++i, ++size) {
      in_nucleus[order[i]] = true;
      mass += p[order[i]];
    }
    std::vector<int> counts(p.size(), 0);
    for (int draw = 0; draw < 4000; ++draw) {
      std::vector<float> row = logits;
      ++counts[static_cast<std::size_t>(sampler.sample(row, {}, {.temperature = 1.0f, .top_p = top_p}, rng))];
    }
    std::size_t outside = 0, seen = 0;
    for (std::size_t t = 0; t < counts.size(); ++t) {
      outside += !in_nucleus[t] && counts[t] > 0;
      seen += counts[t] > 0;
    }
    INFO("top_p " << top_p << ": nucleus of " << size << ", " << seen << " tokens drawn");
    CHECK(outside == 0);
    CHECK(seen >= size * 3 / 4);
    // The least likely member of the nucleus is drawn at its renormalised rate (within 5 sigma).
    const std::size_t edge = order[size - 1];
    const double expected = 4000 * p[edge] / mass;
    CHECK(std::abs(counts[edge] - expected) <= 5 * std::sqrt(expected) + 1);
  }
}

TEST_CASE("every draw equals an independent sorted reference (ties, -inf, NaN, every filter)") {
  // Reference: sort the candidates (scaled logit desc, id asc), cut top_k then the smallest top_p
  // prefix, and walk the kept tokens most likely first with top_k, in token order without.
  auto reference = [](const std::vector<float>& row, const SamplingParams& p, double u) {
    const float inv_t = 1.0f / p.temperature;
    std::vector<float> scaled(row.size());
    float max_scaled = -INFINITY;
    for (std::size_t i = 0; i < row.size(); ++i) {
      scaled[i] = row[i] * inv_t;
      if (scaled[i] > max_scaled) max_scaled = scaled[i];
    }
    const float floor = p.min_p > 0.0f ? max_scaled + std::log(p.min_p) : -INFINITY;
    std::vector<TokenId> order;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (scaled[i] >= floor && scaled[i] > -INFINITY) order.push_back(static_cast<TokenId>(i));
    }
    std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
      return scaled[a] > scaled[b] || (scaled[a] == scaled[b] && a < b);
    });
    const bool top_k = p.top_k > 0 && static_cast<std::size_t>(p.top_k) < row.size();
    if (top_k && static_cast<std::size_t>(p.top_k) < order.size()) order.resize(static_cast<std::size_t>(p.top_k));
    auto weight = [&](TokenId t) { return std::exp(static_cast<double>(scaled[t] - max_scaled)); };
    if (p.top_p < 1.0f) {
      double total = 0.0;
      for (TokenId t : order) total += weight(t);
      double prefix = 0.0;
      for (std::size_t i = 0; i < order.size(); ++i) {
        prefix += weight(order[i]);
        if (prefix >= static_cast<double>(p.top_p) * total) {
          order.resize(i + 1);
          break;
        }
      }
    }
    if (!top_k) std::sort(order.begin(), order.end());
    double total = 0.0;
    for (TokenId t : order) total += weight(t);
    double threshold = u * total;
    for (TokenId t : order) {
      threshold -= weight(t);
      if (threshold < 0.0) return t;
    }
    return order.back();
  };
  std::mt19937 gen(71);
  LogitsSampler sampler;
  int checked = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const std::size_t vocab = trial % 4 == 0 ? 40 : 3000;
    const float sigma = trial % 3 == 0 ? 0.5f : trial % 3 == 1 ? 3.0f : 12.0f;
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> row(vocab);
    for (float& l : row) l = normal(gen);
    if (trial % 5 == 1) {
      for (float& l : row) l = std::round(l);  // ties everywhere, the nucleus ends inside one
    }
    if (trial % 7 == 2) row[gen() % vocab] = -INFINITY;
    if (trial % 11 == 3) row[1 + gen() % (vocab - 1)] = std::nanf("");
    SamplingParams params{.temperature = 0.5f + static_cast<float>(trial % 4) * 0.4f};
    switch (trial % 6) {
      case 1: params.top_k = 1 + static_cast<int32_t>(gen() % 60); break;
      case 2: params.top_p = 0.3f + 0.69f * static_cast<float>(gen() % 100) / 100.0f; break;
      case 3: params.min_p = 0.02f + 0.2f * static_cast<float>(gen() % 100) / 100.0f; break;
      case 4:
        params.top_k = static_cast<int32_t>(vocab / 2);
        params.top_p = 0.8f;
        params.min_p = 0.01f;
        break;
      case 5:
        params.top_p = 0.995f;
        params.min_p = 0.001f;
        break;
      default: break;
    }
    for (int i = 0; i < 40; ++i) {
      const double u = (static_cast<double>(i) + 0.37) / 40.0;
      std::vector<float> logits = row;
      INFO("trial " << trial << ", u " << u);
      CHECK(sampler.pick(logits, draw_params(params), u) == reference(row, params, u));
      ++checked;
    }
  }
  CHECK(checked == 4800);
}

TEST_CASE("top-k and top-p cuts inside a tie keep the lower ids") {
  LogitsSampler sampler;
  std::vector<int> counts(100, 0);
  for (int i = 0; i < 1000; ++i) {
    const double u = (static_cast<double>(i) + 0.5) / 1000.0;
    std::vector<float> flat(100, 1.0f);
    ++counts[static_cast<std::size_t>(sampler.pick(flat, {.temperature = 1.0f, .top_k = 5}, u))];
    flat.assign(100, 1.0f);
    ++counts[static_cast<std::size_t>(sampler.pick(flat, {.temperature = 1.0f, .top_p = 0.095f}, u))];
  }
  // top_k keeps ids 0..4; top_p ids 0..9 (the tenth of 100 equal tokens reaches 0.095).
  for (std::size_t t = 0; t < counts.size(); ++t) {
    INFO("token " << t);
    CHECK(counts[t] == (t < 5 ? 300 : t < 10 ? 100 : 0));
  }
}
