// Speculative decoding on real plugins: the tiny Qwen2 (llaisys-mkmodel's "tiny" shape, random
// weights) and stories260K (trained weights, llama plugin). Greedy outputs with n-gram speculation
// equal those without, token for token, for batches of 1-32 and under preemption; the n-gram
// proposer hits on repetitive prompts.

#include "llaisys/scheduler/draft_proposer.hpp"
#include "real_models.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

void check_model(const TestModels& models, int32_t max_tokens) {
  auto tokenizer = tokenizer_of(models);
  int64_t accepted = 0;
  for (int count : {1, 8, 32}) {
    INFO(count << " sequences");
    const std::vector<GenerateRequest> requests = story_prompts(*tokenizer, count, max_tokens);
    const auto expected = run_checked(*models.engine({.num_kv_blocks = 256}, tokenizer), requests);
    auto ngram = models.engine({.num_kv_blocks = 256, .speculative = SpeculativeMethod::ngram,
                                .num_speculative_tokens = 4},
                               tokenizer);
    check_same(run_checked(*ngram, requests), expected);
    accepted += ngram->stats().num_accepted_draft_tokens;
    if (count == 8) {  // preemption and chunked prefill: 8 sequences in a pool that holds about 3
      auto tight = models.engine({.block_size = 4, .num_kv_blocks = 3 * (40 + max_tokens) / 4,
                                  .max_num_batched_tokens = 32, .speculative = SpeculativeMethod::ngram},
                                 tokenizer);
      check_same(run_checked(*tight, requests), expected);
      CHECK(tight->stats().num_preemptions > 0);
    }
  }
  CHECK(accepted > 0);
}

}  // namespace

TEST_CASE("speculation on the tiny Qwen2: n-gram outputs equal plain greedy, 1-32 sequences, preemption") {
  check_model(tiny_qwen2(), 24);
}

TEST_CASE("speculation on stories260K: n-gram outputs equal plain greedy, 1-32 sequences, preemption") {
  check_model(stories(), 48);
}

TEST_CASE("speculation on stories260K: seeded sampled outputs with n-gram equal those without") {
  // Each row draws with the choice's seed at its token's position, as without speculation, so a
  // guessed draft changes nothing but the speed, even when sampling (and with n > 1).
  auto tokenizer = tokenizer_of(stories());
  std::vector<GenerateRequest> requests = story_prompts(*tokenizer, 12, 40);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    requests[i].sampling = {.temperature = 0.7f + 0.1f * static_cast<float>(i % 4), .top_k = i % 3 == 0 ? 0 : 20,
                            .top_p = i % 2 == 0 ? 1.0f : 0.9f, .seed = 100 + i};
    requests[i].n = i % 5 == 0 ? 2 : 1;
  }
  const auto expected = run_checked(*stories().engine({.num_kv_blocks = 256}, tokenizer), requests);
  auto ngram = stories().engine({.num_kv_blocks = 256, .speculative = SpeculativeMethod::ngram}, tokenizer);
  const auto got = run_checked(*ngram, requests);
  REQUIRE(got.size() == expected.size());
  for (auto g = got.begin(), e = expected.begin(); e != expected.end(); ++g, ++e) {
    REQUIRE(g->second.choices.size() == e->second.choices.size());
    for (std::size_t c = 0; c < e->second.choices.size(); ++c) {
      CHECK(g->second.choices[c].tokens == e->second.choices[c].tokens);
      CHECK(g->second.choices[c].text == e->second.choices[c].text);
    }
  }
  CHECK(ngram->stats().num_accepted_draft_tokens > 0);
}
