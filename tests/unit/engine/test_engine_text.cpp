// Text through the engine with the Qwen2 tokenizer over a mock model of Qwen2's vocabulary size:
// deltas decode to the tokenizer's own decode, and stop strings end generation without appearing
// in the text.

#include "engine_test_support.hpp"
#include "llaisys/text/tokenizer.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

Collected run_one(LLMEngine& engine, GenerateRequest request) {
  REQUIRE(engine.submit(std::move(request)).ok());
  auto results = run_all(engine);
  REQUIRE(results.size() == 1);
  return results.begin()->second;
}

}  // namespace

TEST_CASE("text deltas add up to the tokenizer's decode of the output") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  auto engine = models.engine({.num_kv_blocks = 64}, tokenizer);
  const std::vector<TokenId> prompt = *tokenizer->encode("Once upon a time, in a quiet town,");
  for (int n : {1, 2}) {
    GenerateRequest request = greedy_request(prompt, 40);
    request.n = n;
    if (n == 2) request.sampling = {.temperature = 1.0f, .seed = 5};
    const Collected result = run_one(*engine, request);
    for (const CollectedChoice& choice : result.choices) {
      REQUIRE_FALSE(choice.tokens.empty());
      std::vector<TokenId> text_tokens = choice.tokens;
      if (choice.finish_reason == FinishReason::stop) text_tokens.pop_back();  // EOS is not text
      CHECK(choice.text == *tokenizer->decode(text_tokens));
      CHECK_FALSE(choice.text.empty());
    }
  }
}

TEST_CASE("a stop string ends generation and never reaches the text") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  auto engine = models.engine({.num_kv_blocks = 64}, tokenizer);
  GenerateRequest request = greedy_request(*tokenizer->encode("The weather today"), 60);
  request.stop.ignore_eos = true;
  const Collected free_run = run_one(*engine, request);
  const std::string& full = free_run.choices[0].text;
  // A 3-character ASCII stop string from the middle of the free run's text.
  std::string stop;
  for (std::size_t at = full.size() / 2; at + 3 <= full.size() && stop.empty(); ++at) {
    const std::string candidate = full.substr(at, 3);
    if (std::all_of(candidate.begin(), candidate.end(), [](char c) { return c > ' ' && c < 127; })) stop = candidate;
  }
  REQUIRE_FALSE(stop.empty());
  request.stop.stop = {"never-there", stop};
  const Collected stopped = run_one(*engine, request);
  const CollectedChoice& choice = stopped.choices[0];
  CHECK(choice.finish_reason == FinishReason::stop);
  CHECK(choice.finish_detail == stop);
  CHECK(choice.text == full.substr(0, full.find(stop)));
  REQUIRE(choice.tokens.size() <= free_run.choices[0].tokens.size());
  CHECK(std::equal(choice.tokens.begin(), choice.tokens.end(), free_run.choices[0].tokens.begin()));
  // The token that completed the stop string is the last one generated.
  const std::string through_last = *tokenizer->decode(choice.tokens);
  CHECK(through_last.find(stop) != std::string::npos);
  std::vector<TokenId> but_last(choice.tokens.begin(), choice.tokens.end() - 1);
  CHECK(tokenizer->decode(but_last)->find(stop) == std::string::npos);
}
