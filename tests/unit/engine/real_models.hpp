#pragma once
// The real models engine tests run on (the tiny Qwen2: llaisys-mkmodel's "tiny" shape, random
// weights; stories260K: trained weights, llama plugin; tiny-llama: random weights with stories260K's
// vocabulary, a draft model for it) and the run-and-compare helpers those tests share.

#include <stdexcept>

#include "engine_test_support.hpp"
#include "model_writer.hpp"

namespace llaisys::test {

// A model written by llaisys-mkmodel's library once per test process (in a temporary directory).
inline TestModels generated_model(const TempDir& dir, const char* shape, uint64_t seed,
                                  const std::filesystem::path& tokenizer_dir) {
  const auto path = dir / shape;
  const Status status = mkmodel::write_model(
      path, {.shape = *mkmodel::find_shape(shape), .seed = seed, .tokenizer_dir = tokenizer_dir});
  if (!status.ok()) throw std::runtime_error(status.to_string());
  return TestModels(path, 2);
}

inline const TestModels& tiny_qwen2() {
  static TempDir dir;
  static const TestModels models =
      generated_model(dir, "tiny", 0, std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer");
  return models;
}

inline const TestModels& stories() {
  static const TestModels models(std::filesystem::path(LLAISYS_SOURCE_DIR) / "models" / "stories260K", 2);
  return models;
}

// Random weights, stories260K's vocabulary and tokenizer: a (poor) draft model for stories260K.
inline const TestModels& tiny_llama() {
  static TempDir dir;
  static const TestModels models =
      generated_model(dir, "tiny-llama", 7, std::filesystem::path(LLAISYS_SOURCE_DIR) / "models" / "stories260K");
  return models;
}

inline std::shared_ptr<const text::Tokenizer> tokenizer_of(const TestModels& models) {
  auto loaded = text::Tokenizer::from_model_dir(models.dir());
  REQUIRE(loaded.ok());
  return loaded.value();
}

// Runs the requests to the end, checking the KV invariants after every step and that every block
// is free or merely cached at the end.
inline std::map<RequestId, Collected> run_checked(LLMEngine& engine, const std::vector<GenerateRequest>& requests) {
  for (const GenerateRequest& request : requests) REQUIRE(engine.submit(request).ok());
  std::map<RequestId, Collected> results;
  while (engine.has_unfinished()) {
    collect(engine.step(), results);
    REQUIRE(engine.check_kv_invariants().ok());
  }
  const KVStats kv = engine.stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
  return results;
}

inline void check_same(const std::map<RequestId, Collected>& got, const std::map<RequestId, Collected>& expected) {
  REQUIRE(got.size() == expected.size());
  for (auto g = got.begin(), e = expected.begin(); e != expected.end(); ++g, ++e) {
    INFO("request " << e->first);
    REQUIRE(g->second.choices.size() == e->second.choices.size());
    for (std::size_t c = 0; c < e->second.choices.size(); ++c) {
      CHECK(g->second.choices[c].tokens == e->second.choices[c].tokens);
      CHECK(g->second.choices[c].text == e->second.choices[c].text);
      CHECK(g->second.choices[c].finish_reason == e->second.choices[c].finish_reason);
      CHECK(g->second.choices[c].finish_detail == e->second.choices[c].finish_detail);
    }
    CHECK(g->second.usage.completion_tokens == e->second.usage.completion_tokens);
  }
}

// Greedy requests over prompts of varied lengths, half of them repetitive text (the n-gram
// proposer's case).
inline std::vector<GenerateRequest> story_prompts(const text::Tokenizer& tokenizer, int count, int32_t max_tokens) {
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

}  // namespace llaisys::test
