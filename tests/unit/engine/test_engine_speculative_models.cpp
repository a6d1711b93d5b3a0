// Speculative decoding on real plugins: the tiny Qwen2 (llaisys-mkmodel's "tiny" shape, random
// weights) and stories260K (trained weights, llama plugin). Greedy outputs with n-gram speculation
// equal those without, token for token, for batches of 1-32 and under preemption; the n-gram
// proposer hits on repetitive prompts.

#include <stdexcept>

#include "engine_test_support.hpp"
#include "llaisys/scheduler/draft_proposer.hpp"
#include "model_writer.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

const TestModels& tiny_qwen2() {
  static TempDir dir;
  static const TestModels models = [] {
    const auto path = dir / "tiny-qwen2";
    const Status status = mkmodel::write_model(
        path, {.shape = *mkmodel::find_shape("tiny"),
               .seed = 0,
               .tokenizer_dir = std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer"});
    if (!status.ok()) throw std::runtime_error(status.to_string());
    return TestModels(path, 2);
  }();
  return models;
}

const TestModels& stories() {
  static const TestModels models(std::filesystem::path(LLAISYS_SOURCE_DIR) / "models" / "stories260K", 2);
  return models;
}

std::shared_ptr<const text::Tokenizer> tokenizer_of(const TestModels& models) {
  auto loaded = text::Tokenizer::from_model_dir(models.dir());
  REQUIRE(loaded.ok());
  return loaded.value();
}

std::map<RequestId, Collected> run_checked(LLMEngine& engine, const std::vector<GenerateRequest>& requests) {
  for (const GenerateRequest& request : requests) REQUIRE(engine.submit(request).ok());
  std::map<RequestId, Collected> results;
  while (engine.has_unfinished()) {
    collect(engine.step(), results);
    REQUIRE(engine.check_kv_invariants().ok());
  }
  return results;
}

void check_same(const std::map<RequestId, Collected>& got, const std::map<RequestId, Collected>& expected) {
  REQUIRE(got.size() == expected.size());
  for (auto g = got.begin(), e = expected.begin(); e != expected.end(); ++g, ++e) {
    INFO("request " << e->first);
    CHECK(g->second.choices[0].tokens == e->second.choices[0].tokens);
    CHECK(g->second.choices[0].text == e->second.choices[0].text);
    CHECK(g->second.choices[0].finish_reason == e->second.choices[0].finish_reason);
  }
}

// Prompts of varied lengths, half of them repetitive text (the n-gram proposer's case).
std::vector<GenerateRequest> prompts(const text::Tokenizer& tokenizer, int count, int32_t max_tokens) {
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. Lily liked to play. Once upon a time, there was",
      "The cat sat on the mat. The dog sat on the mat. The cat sat on the",
      "Tom had a red ball.",
      "one two three four one two three four one two three",
      "She went to the park and saw a big tree.",
      "Lily and Ben were friends. Lily and Ben were"};
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < count; ++i) {
    auto ids = tokenizer.encode(texts[static_cast<std::size_t>(i) % texts.size()] + std::string(static_cast<std::size_t>(i / 6), ' ') + ".");
    REQUIRE(ids.ok());
    requests.push_back(greedy_request(*ids, max_tokens + i % 5));
  }
  return requests;
}

void check_model(const TestModels& models, int32_t max_tokens) {
  auto tokenizer = tokenizer_of(models);
  int64_t accepted = 0;
  for (int count : {1, 8, 32}) {
    INFO(count << " sequences");
    const std::vector<GenerateRequest> requests = prompts(*tokenizer, count, max_tokens);
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
  std::vector<GenerateRequest> requests = prompts(*tokenizer, 12, 40);
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
