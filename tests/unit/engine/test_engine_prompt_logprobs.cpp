// Prompt logprobs (GenerateRequest::num_prompt_logprobs) on the mock model against a reference
// that feeds the prompt one token at a time straight to the model and takes the log-softmax of each
// full logits row by hand: chunked prefill, a warm prefix cache, n > 1, preemption mid-prompt, and
// the per-step bound on prompt rows.

#include <algorithm>
#include <cmath>

#include "engine_test_support.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

struct ReferenceLogprob {
  double logprob = 0.0;
  std::vector<TokenId> top;  // the k largest logits, ties by lower id
};

// Position t of the result scores prompt[t + 1] after prompt[0..t], from a one-token pass each.
std::vector<ReferenceLogprob> reference_prompt_logprobs(AnyModel& model, const std::vector<TokenId>& prompt,
                                                        std::size_t k) {
  ReferenceSequence sequence(model, {prompt[0]}, static_cast<int32_t>(prompt.size()) + 16);
  std::vector<ReferenceLogprob> out;
  for (std::size_t t = 1; t < prompt.size(); ++t) {
    const std::span<const float> logits = sequence.next_logits();
    const double max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
    ReferenceLogprob ref{.logprob = static_cast<double>(logits[static_cast<std::size_t>(prompt[t])]) - max - std::log(sum)};
    std::vector<TokenId> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](TokenId a, TokenId b) {
      const float x = logits[static_cast<std::size_t>(a)];
      const float y = logits[static_cast<std::size_t>(b)];
      return x > y || (x == y && a < b);
    });
    ref.top.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k));
    out.push_back(std::move(ref));
    sequence.append(prompt[t]);
  }
  return out;
}

void check_prompt_logprobs(const Collected& result, const std::vector<TokenId>& prompt,
                           const std::vector<ReferenceLogprob>& reference, std::size_t k) {
  CHECK(result.num_prompt_logprob_outputs == 1);
  REQUIRE(result.prompt_logprobs.size() == prompt.size() - 1);
  for (std::size_t i = 0; i < result.prompt_logprobs.size(); ++i) {
    INFO("prompt token " << i + 1);
    const TokenLogprob& lp = result.prompt_logprobs[i];
    CHECK(lp.token == prompt[i + 1]);
    CHECK(lp.logprob == Approx(reference[i].logprob).margin(1e-5));
    REQUIRE(lp.top.size() == k);
    for (std::size_t j = 0; j < k; ++j) CHECK(lp.top[j].first == reference[i].top[j]);
  }
}

}  // namespace

TEST_CASE("prompt logprobs equal a token-by-token reference, chunked, cache warm, n = 2") {
  MockModels models;
  AnyModel reference_model = models.open();
  const std::vector<TokenId> prompt = make_prompt(31, 45);
  const auto reference = reference_prompt_logprobs(reference_model, prompt, 3);
  // Chunks of 8: the prompt takes 6 steps, rows crossing each chunk boundary.
  auto engine = models.engine({.num_kv_blocks = 64, .max_num_batched_tokens = 8});
  REQUIRE(engine->submit(greedy_request(prompt, 4)).ok());
  run_all(*engine);  // the prompt's blocks are now cached
  GenerateRequest request = greedy_request(prompt, 4);
  request.num_prompt_logprobs = 3;
  request.n = 2;
  const RequestId id = *engine->submit(request);
  const auto results = run_all(*engine);
  const Collected& r = results.at(id);
  check_prompt_logprobs(r, prompt, reference, 3);
  CHECK(r.usage.cached_tokens == 0);  // every position was computed, not read from the cache
  CHECK(r.choices.size() == 2);
  CHECK(r.choices[0].tokens == reference_greedy(reference_model, prompt, 4, 4096));
  CHECK(engine->check_kv_invariants().ok());
}

TEST_CASE("a one-token prompt has no prompt logprobs, out-of-range values are refused") {
  MockModels models;
  auto engine = models.engine({.num_kv_blocks = 64});
  GenerateRequest request = greedy_request({7}, 2);
  request.num_prompt_logprobs = 0;
  const RequestId id = *engine->submit(request);
  const auto results = run_all(*engine);
  CHECK(results.at(id).prompt_logprobs.empty());
  CHECK(results.at(id).choices[0].tokens.size() == 2);
  request.num_prompt_logprobs = 21;
  CHECK(engine->submit(request).status().code() == ErrorCode::invalid_argument);
  request.num_prompt_logprobs = -2;
  CHECK(engine->submit(request).status().code() == ErrorCode::invalid_argument);
}

TEST_CASE("a request preempted in its prompt scores every prompt token exactly once") {
  MockModels models;
  AnyModel reference_model = models.open();
  const std::vector<TokenId> prompt = make_prompt(21, 40);
  const auto reference = reference_prompt_logprobs(reference_model, prompt, 2);
  // 13 blocks of 4: the growing generation (12 blocks at the end) squeezes the scored prompt out.
  auto engine = models.engine({.block_size = 4, .num_kv_blocks = 13, .max_num_batched_tokens = 6});
  GenerateRequest grow = greedy_request(make_prompt(22, 8), 40);
  grow.stop.ignore_eos = true;
  REQUIRE(engine->submit(grow).ok());
  GenerateRequest request = greedy_request(prompt, 2);
  request.num_prompt_logprobs = 2;
  const RequestId id = *engine->submit(request);
  const auto results = run_all(*engine);
  CHECK(results.at(id).times.num_preemptions > 0);
  check_prompt_logprobs(results.at(id), prompt, reference, 2);
  CHECK(engine->check_kv_invariants().ok());
}

TEST_CASE("with a large vocabulary a step takes at most 64 MiB of prompt rows") {
  MockModels models(kQwenSizedMock);
  AnyModel reference_model = models.open();
  const std::vector<TokenId> prompt = make_prompt(5, 300);
  const auto reference = reference_prompt_logprobs(reference_model, prompt, 1);
  auto engine = models.engine({.num_kv_blocks = 64});
  GenerateRequest request = greedy_request(prompt, 1);
  request.num_prompt_logprobs = 1;
  const RequestId id = *engine->submit(request);
  // 64 MiB / (151936 x 4 bytes) = 110 rows a step: the 300-token prompt runs in three steps, where
  // max_num_batched_tokens alone would allow one.
  std::map<RequestId, Collected> results;
  int steps = 0;
  while (results[id].choices.empty() || results[id].choices[0].tokens.empty()) {
    collect(engine->step(), results);
    ++steps;
  }
  CHECK(steps == 3);
  while (engine->has_unfinished()) collect(engine->step(), results);
  check_prompt_logprobs(results.at(id), prompt, reference, 1);
}
