// Device sampling against LogitsSampler (the CPU sampler) and an independent sorted-order draw.
//
// Greedy rows must equal llaisys::argmax exactly (ties, NaN, -inf included). For sampled rows the
// GPU is given uniform01() of a generator and the CPU sampler a copy of that same generator, so both
// draw with the same u. With top_k set both walk the candidates in probability order and must pick
// the same token (a mismatch needs u within ~1e-7 of a cumulative boundary: with these seeds it
// does not happen). Without top_k the CPU walks top-p candidates in quickselect order, so the GPU
// token is checked against an independent double-precision reference that walks the sorted
// candidate set, and must belong to the CPU's candidate set.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "cuda/sampling.hpp"
#include "cuda_test_util.hpp"
#include "llaisys/sampling/sampler.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

namespace {

// Sorted-order reference: temperature, min_p, top_k, top_p, then the first candidate whose
// cumulative weight exceeds u * total. Returns the token and the candidate set.
std::pair<TokenId, std::vector<TokenId>> reference_draw(const std::vector<float>& row, const cuda::RowSampling& p) {
  const float inv_t = 1.0f / p.temperature;
  std::vector<TokenId> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> scaled(row.size());
  for (std::size_t i = 0; i < row.size(); ++i) scaled[i] = row[i] * inv_t;
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) { return row[a] > row[b]; });
  const float max_scaled = scaled[order[0]];
  const float floor = p.min_p > 0.0f ? max_scaled + std::log(p.min_p) : -INFINITY;
  std::vector<TokenId> cand;
  for (TokenId t : order) {
    if (scaled[t] >= floor && scaled[t] > -INFINITY) cand.push_back(t);
  }
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < cand.size()) cand.resize(p.top_k);
  auto weight = [&](TokenId t) { return std::exp(static_cast<double>(scaled[t] - max_scaled)); };
  if (p.top_p < 1.0f) {
    double total = 0.0;
    for (TokenId t : cand) total += weight(t);
    double prefix = 0.0;
    std::size_t keep = cand.size();
    for (std::size_t i = 0; i < cand.size(); ++i) {
      prefix += weight(cand[i]);
      if (prefix >= static_cast<double>(p.top_p) * total) {
        keep = i + 1;
        break;
      }
    }
    cand.resize(keep);
  }
  double total = 0.0;
  for (TokenId t : cand) total += weight(t);
  double prefix = 0.0;
  for (TokenId t : cand) {
    prefix += weight(t);
    if (prefix > p.uniform * total) return {t, cand};
  }
  return {cand.back(), cand};
}

std::vector<int32_t> run_gpu(Fixture& f, const std::vector<float>& logits, int64_t rows, int64_t vocab,
                             const std::vector<cuda::RowSampling>& params) {
  auto dl = to_device(logits);
  auto dt = to_device(std::vector<int32_t>(static_cast<std::size_t>(rows), -7));
  cuda::SamplingWorkspace ws;
  REQUIRE(cuda::sample_tokens(f.ctx, dl.data(), vocab, rows, vocab, params, ws, dt.data()).ok());
  return to_host(dt);
}

}  // namespace

TEST_CASE("cuda greedy sampling equals argmax (ties to the lower id, NaN, -inf)", "[cuda][sampling]") {
  Fixture f;
  const int64_t vocab = 151936, rows = 6;
  auto logits = random_floats(static_cast<std::size_t>(rows * vocab), 40, -10.0f, 10.0f);
  logits[0 * vocab + 5000] = 50.0f;  // row 0: tie at 5000 and 90000 -> 5000
  logits[0 * vocab + 90000] = 50.0f;
  logits[1 * vocab + 0] = NAN;       // row 1: NaN first -> 0 (as llaisys::argmax)
  logits[2 * vocab + 77] = NAN;      // row 2: NaN elsewhere is ignored
  for (int64_t i = 0; i < vocab; ++i) logits[3 * vocab + i] = -INFINITY;  // row 3: all -inf -> 0
  logits[4 * vocab + vocab - 1] = 1e30f;  // row 4: the last id
  std::vector<cuda::RowSampling> params(rows);
  const auto got = run_gpu(f, logits, rows, vocab, params);
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    CHECK(got[r] == argmax(std::span<const float>(logits.data() + r * vocab, vocab)));
  }
  CHECK(got[0] == 5000);
}

TEST_CASE("cuda sampling matches the CPU sampler and a sorted-order reference", "[cuda][sampling]") {
  Fixture f;
  const int64_t vocab = 32000, rows = 48;
  const auto logits = random_floats(static_cast<std::size_t>(rows * vocab), 50, -6.0f, 6.0f);
  std::vector<cuda::RowSampling> params(rows);
  std::vector<SamplingParams> cpu_params(rows);
  std::vector<Rng> rngs;
  for (int64_t r = 0; r < rows; ++r) {
    SamplingParams& sp = cpu_params[r];
    switch (r % 6) {
      case 0: sp.temperature = 0.0f; break;
      case 1: sp.temperature = 0.7f; sp.top_k = 40; break;
      case 2: sp.temperature = 1.3f; sp.top_k = 5; sp.top_p = 0.8f; break;
      case 3: sp.temperature = 1.0f; sp.top_p = 0.9f; break;
      case 4: sp.temperature = 0.5f; sp.min_p = 0.05f; break;
      default: sp.temperature = 1.0f; break;
    }
    rngs.push_back(make_rng(1234, static_cast<uint32_t>(r)));
    Rng copy = rngs.back();
    params[r] = {.temperature = sp.temperature, .top_k = sp.top_k, .top_p = sp.top_p, .min_p = sp.min_p,
                 .uniform = uniform01(copy)};
  }
  const auto got = run_gpu(f, logits, rows, vocab, params);
  LogitsSampler sampler;
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r, params[r].temperature, params[r].top_k, params[r].top_p, params[r].min_p, params[r].uniform);
    std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    std::vector<float> cpu_row = row;
    const TokenId cpu_token = sampler.sample(cpu_row, TokenHistory{}, cpu_params[r], rngs[r]);
    if (cpu_params[r].greedy()) {
      CHECK(got[r] == cpu_token);
      continue;
    }
    const auto [ref_token, candidates] = reference_draw(row, params[r]);
    CHECK(got[r] == ref_token);
    CHECK(std::find(candidates.begin(), candidates.end(), cpu_token) != candidates.end());
    if (cpu_params[r].top_k > 0) CHECK(got[r] == cpu_token);
  }
}

TEST_CASE("cuda sampling: every u lands on the reference token (boundaries included)", "[cuda][sampling]") {
  Fixture f;
  // A small vocabulary with a known distribution: scaled logits log(1), log(2), log(3), log(4).
  const int64_t vocab = 4, rows = 64;
  std::vector<float> logits;
  std::vector<cuda::RowSampling> params;
  for (int64_t r = 0; r < rows; ++r) {
    for (float w : {1.0f, 2.0f, 3.0f, 4.0f}) logits.push_back(std::log(w));
    params.push_back({.temperature = 1.0f, .uniform = (static_cast<double>(r) + 0.5) / static_cast<double>(rows)});
  }
  const auto got = run_gpu(f, logits, rows, vocab, params);
  for (int64_t r = 0; r < rows; ++r) {
    // Sorted: ids 3 (0.4), 2 (0.3), 1 (0.2), 0 (0.1).
    const double u = params[r].uniform;
    const int32_t want = u < 0.4 ? 3 : u < 0.7 ? 2 : u < 0.9 ? 1 : 0;
    CAPTURE(r, u);
    CHECK(got[r] == want);
  }
}

TEST_CASE("cuda sampling rejects bad parameters", "[cuda][sampling]") {
  Fixture f;
  auto dl = to_device(std::vector<float>(8, 0.0f));
  auto dt = to_device(std::vector<int32_t>(1));
  cuda::SamplingWorkspace ws;
  const std::vector<cuda::RowSampling> bad_u = {{.temperature = 1.0f, .uniform = 1.0}};
  CHECK(cuda::sample_tokens(f.ctx, dl.data(), 8, 1, 8, bad_u, ws, dt.data()).code() == ErrorCode::invalid_argument);
  const std::vector<cuda::RowSampling> two = {{}, {}};
  CHECK(cuda::sample_tokens(f.ctx, dl.data(), 8, 1, 8, two, ws, dt.data()).code() == ErrorCode::invalid_argument);
}
