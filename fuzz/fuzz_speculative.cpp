// libFuzzer target: speculative sampling's pieces on arbitrary rows. Bytes become logits (any float
// bits, NaN and infinities included), draw parameters inside SamplingParams' ranges, an allowed mask
// and a draft distribution q. LogitsSampler::distribution must give finite probabilities summing to
// 1 (one-hot when greedy) that pick() agrees with, and verify_draft must return a token of the
// vocabulary: the draft exactly when it says accepted, one the target can draw otherwise.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz_bytes.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/sampling/speculative.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  llaisys::fuzz::Bytes in(data, size);
  const std::size_t vocab = 1 + in.take<uint8_t>() % 80;
  llaisys::DrawParams params;
  const uint8_t mode = in.take<uint8_t>();
  params.temperature = mode % 5 == 0 ? 0.0f : 0.05f + 2.0f * static_cast<float>(in.unit());
  params.top_k = mode & 8 ? static_cast<int32_t>(in.take<uint8_t>() % (vocab + 2)) : 0;
  params.top_p = mode & 16 ? static_cast<float>(0.01 + 0.99 * in.unit()) : 1.0f;
  params.min_p = mode & 32 ? static_cast<float>(in.unit()) : 0.0f;
  std::vector<float> logits(vocab);
  for (float& l : logits) l = mode & 64 ? in.take<float>() : static_cast<float>(in.take<int8_t>()) / 8.0f;
  std::vector<uint32_t> allowed;
  if (mode & 128) {
    allowed.assign((vocab + 31) / 32, 0u);
    for (uint32_t& w : allowed) w = in.take<uint32_t>();
    allowed[0] |= 1u << (in.take<uint8_t>() % std::min<std::size_t>(vocab, 32));  // at least one allowed
  }

  llaisys::LogitsSampler sampler;
  std::vector<float> scratch = logits;
  std::vector<float> p;
  sampler.distribution(scratch, params, p, allowed);
  require(p.size() == vocab);
  double total = 0.0;
  for (std::size_t t = 0; t < vocab; ++t) {
    require(std::isfinite(p[t]) && p[t] >= 0.0f);
    if (!allowed.empty() && ((allowed[t / 32] >> (t % 32)) & 1u) == 0) require(p[t] == 0.0f);
    total += static_cast<double>(p[t]);
  }
  require(std::abs(total - 1.0) < 1e-3);
  for (int i = 0; i < 3; ++i) {
    scratch = logits;
    const llaisys::TokenId token = sampler.pick(scratch, params, in.unit(), allowed);
    require(token >= 0 && static_cast<std::size_t>(token) < vocab);
    if (params.greedy()) require(p[static_cast<std::size_t>(token)] == 1.0f);
  }

  std::vector<float> q(vocab);
  double q_total = 0.0;
  for (float& v : q) q_total += v = static_cast<float>(in.take<uint8_t>() % 4 == 0 ? 0 : in.take<uint8_t>());
  if (q_total == 0.0) q[0] = 1.0f, q_total = 1.0;
  for (float& v : q) v = static_cast<float>(v / q_total);
  const double u = in.unit();
  const llaisys::TokenId draft = llaisys::draw_from(q, u);
  require(draft >= 0 && q[static_cast<std::size_t>(draft)] > 0.0f);
  const llaisys::DraftVerdict verdict = llaisys::verify_draft(p, q, draft, in.unit(), in.unit());
  require(verdict.token >= 0 && static_cast<std::size_t>(verdict.token) < vocab);
  require(verdict.accepted == (verdict.token == draft) || !verdict.accepted);
  if (verdict.accepted) require(p[static_cast<std::size_t>(draft)] > 0.0f);
  if (!verdict.accepted) require(p[static_cast<std::size_t>(verdict.token)] > 0.0f);
  return 0;
}
