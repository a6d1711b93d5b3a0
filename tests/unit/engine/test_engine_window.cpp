// The engine over a sliding-window model (the mock with "sliding_window"): KV stays bounded during a
// long generation, cache hit == cache miss with shared prompt prefixes, preemption and n > 1 still
// give the outputs of an unconstrained run, and the KV invariants hold after every step. The windowed
// mock's logits depend on exactly the tokens inside the window, read back through the block tables,
// so a block given back too early fails the step and a wrong window changes the tokens.

#include "engine_test_support.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

// EOS (511) is never the argmax (text ids stop at 500): generations run to max_tokens, in the
// engine and in reference_greedy alike.
constexpr const char* kNoEosConfig = R"({"architectures": ["LlaisysMockForCausalLM"],
  "vocab_size": 512, "hidden_size": 16, "max_position_embeddings": 4096, "eos_token_id": 511,
  "bos_token_id": 1, "mock": {"text_vocab_size": 500}})";

constexpr int32_t kWindow = 48;
constexpr int32_t kBlock = 16;
const std::string kWindowOptions = R"({"sliding_window": 48})";

// Steps until done, checking the KV invariants after every step.
std::map<RequestId, Collected> run_checked(LLMEngine& engine) {
  std::map<RequestId, Collected> results;
  for (int step = 0; engine.has_unfinished() && step < 100000; ++step) {
    collect(engine.step(), results);
    const Status status = engine.check_kv_invariants();
    INFO("step " << step << ": " << status.message());
    REQUIRE(status.ok());
  }
  REQUIRE_FALSE(engine.has_unfinished());
  return results;
}

}  // namespace

TEST_CASE("window: a 600-token generation keeps about two windows of KV, without the window it grows") {
  MockModels models(kNoEosConfig);
  const std::vector<TokenId> prompt = make_prompt(42, 20);
  struct Run {
    std::vector<TokenId> tokens;
    int32_t peak = 0;       // used blocks after any step
    int32_t late_peak = 0;  // ... once more than 2W + one block were computed
    int64_t released = 0;
  };
  auto generate = [&](const std::string& options) {
    auto engine = models.engine({.block_size = kBlock, .num_kv_blocks = 64}, nullptr, options);
    REQUIRE(engine->submit(greedy_request(prompt, 600)).ok());
    Run run;
    std::map<RequestId, Collected> results;
    while (engine->has_unfinished()) {
      collect(engine->step(), results);
      REQUIRE(engine->check_kv_invariants().ok());
      const EngineStats stats = engine->stats();
      run.peak = std::max(run.peak, stats.kv.num_used_blocks());
      if (stats.num_computed_tokens > 2 * kWindow + kBlock) {
        run.late_peak = std::max(run.late_peak, stats.kv.num_used_blocks());
      }
    }
    run.tokens = results.begin()->second.choices[0].tokens;
    run.released = engine->stats().kv.num_window_released_blocks;
    const KVStats kv = engine->stats().kv;
    CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
    return run;
  };
  const Run windowed = generate(kWindowOptions);
  REQUIRE(windowed.tokens.size() == 600);
  // The cached first window (3 blocks) until it is outside, plus the window and its partial block.
  CHECK(windowed.peak <= 2 * (kWindow / kBlock) + 1);
  CHECK(windowed.late_peak <= kWindow / kBlock + 1);
  CHECK(windowed.released >= (620 - kWindow) / kBlock - 1);

  const Run full = generate("{}");
  REQUIRE(full.tokens.size() == 600);
  CHECK(full.peak >= 619 / kBlock);
  CHECK(full.released == 0);
  CHECK(full.tokens != windowed.tokens);  // the window really changes what the model sees

  // Both equal greedy generation straight on the model with every block kept.
  AnyModel windowed_model = models.open(kWindowOptions);
  CHECK(windowed.tokens == reference_greedy(windowed_model, prompt, 600, 4096));
  AnyModel full_model = models.open();
  CHECK(full.tokens == reference_greedy(full_model, prompt, 600, 4096));
}

TEST_CASE("window: concurrent requests sharing a long prompt prefix, cache hit == cache miss") {
  MockModels models(kNoEosConfig);
  const std::vector<TokenId> system = make_prompt(3, 100);  // longer than the window
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> prompt = system;
    const auto tail = make_prompt(static_cast<uint64_t>(10 + i), 5 + 3 * i);
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    requests.push_back(greedy_request(prompt, 90 + 10 * i));
  }
  auto serve = [&](bool prefix_cache) {
    auto engine = models.engine(
        {.block_size = kBlock, .num_kv_blocks = 256, .max_num_batched_tokens = 64, .enable_prefix_cache = prefix_cache},
        nullptr, kWindowOptions);
    std::map<RequestId, Collected> results;
    for (int i = 0; i < 4; ++i) REQUIRE(engine->submit(requests[static_cast<std::size_t>(i)]).ok());
    for (int step = 0; engine->has_unfinished(); ++step) {
      if (step == 3) {  // a second wave once the first one's prefix is cached
        for (int i = 4; i < 8; ++i) REQUIRE(engine->submit(requests[static_cast<std::size_t>(i)]).ok());
      }
      collect(engine->step(), results);
      const Status status = engine->check_kv_invariants();
      INFO("step " << step << ": " << status.message());
      REQUIRE(status.ok());
    }
    const EngineStats stats = engine->stats();
    CHECK(stats.kv.num_free_blocks + stats.kv.num_evictable_blocks == stats.kv.num_blocks);
    CHECK(stats.kv.num_window_released_blocks > 0);
    return std::make_pair(results, stats);
  };
  const auto [hit, hit_stats] = serve(true);
  const auto [miss, miss_stats] = serve(false);
  CHECK(hit_stats.prefix_hit_tokens > 0);
  CHECK(miss_stats.prefix_hit_tokens == 0);
  // Only the first window of a prefix is cached: the rest of the shared 100 tokens is recomputed.
  CHECK(hit_stats.kv.num_cached_blocks == kWindow / kBlock);
  REQUIRE(hit.size() == 8);
  REQUIRE(miss.size() == 8);
  AnyModel reference_model = models.open(kWindowOptions);
  for (RequestId id = 1; id <= 8; ++id) {
    INFO("request " << id);
    const GenerateRequest& request = requests[static_cast<std::size_t>(id - 1)];
    CHECK(hit.at(id).choices[0].tokens == miss.at(id).choices[0].tokens);
    CHECK(hit.at(id).choices[0].tokens ==
          reference_greedy(reference_model, request.prompt_ids, *request.stop.max_tokens, 4096));
    CHECK(hit.at(id).usage.cached_tokens <= kWindow);
    if (id > 4) CHECK(hit.at(id).usage.cached_tokens == kWindow);  // the second wave hits the first window
  }
}

TEST_CASE("window: preemption and n > 1 give the outputs of ample memory") {
  MockModels models(kNoEosConfig);
  const std::string options = R"({"sliding_window": 24})";
  auto requests = [] {
    std::vector<GenerateRequest> list;
    for (int i = 0; i < 12; ++i) {
      GenerateRequest request = greedy_request(make_prompt(static_cast<uint64_t>(300 + i), 10 + 3 * i), 60);
      if (i % 3 == 0) request.sampling = {.temperature = 1.0f, .seed = static_cast<uint64_t>(i)};
      if (i == 5) request.n = 3;  // greedy: all three agree
      if (i == 7) {
        request.n = 2;
        request.sampling = {.temperature = 1.0f, .seed = 7};
      }
      list.push_back(request);
    }
    return list;
  };
  auto ample = models.engine({.block_size = 4, .num_kv_blocks = 1024}, nullptr, options);
  auto tight = models.engine({.block_size = 4, .num_kv_blocks = 28, .max_num_batched_tokens = 48}, nullptr, options);
  for (const GenerateRequest& request : requests()) {
    REQUIRE(ample->submit(request).ok());
    REQUIRE(tight->submit(request).ok());
  }
  const auto expected = run_checked(*ample);
  const auto got = run_checked(*tight);
  CHECK(tight->stats().num_preemptions > 0);
  CHECK(tight->stats().kv.num_window_released_blocks > 0);
  REQUIRE(got.size() == expected.size());
  for (const auto& [id, result] : expected) {
    INFO("request " << id);
    REQUIRE(got.at(id).choices.size() == result.choices.size());
    for (std::size_t c = 0; c < result.choices.size(); ++c) {
      CHECK(got.at(id).choices[c].tokens == result.choices[c].tokens);
      CHECK(got.at(id).choices[c].tokens.size() == 60);
    }
  }
  // n = 3 greedy: every choice is the reference; n = 2 seeded: the choices differ.
  AnyModel reference_model = models.open(options);
  const std::vector<TokenId> greedy_prompt = make_prompt(305, 25);
  for (const CollectedChoice& choice : got.at(6).choices) {
    CHECK(choice.tokens == reference_greedy(reference_model, greedy_prompt, 60, 4096));
  }
  CHECK(got.at(8).choices[0].tokens != got.at(8).choices[1].tokens);
  const KVStats kv = tight->stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
}
