// The engine over the real mistral plugin on tiny-mistral (a 16-token sliding window on every layer,
// tests/data/tiny-mistral): during a long generation the KV blocks that fall wholly outside the window
// go back to the pool, so the blocks in use stop growing with the sequence, and the tokens are those of
// a reference run straight on the model that keeps every block. With the prefix cache, a second
// request sharing the prompt gets cache hits and the same tokens.

#include <stdexcept>

#include "engine_test_support.hpp"
#include "model_writer.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

constexpr int32_t kWindow = 16;  // tests/data/tiny-mistral/config.json
constexpr int32_t kBlock = 4;

const TestModels& tiny_mistral() {
  static TempDir dir;
  static const TestModels models = [] {
    const auto path = dir / "tiny-mistral";
    const Status status = mkmodel::write_model(path, {.shape = *mkmodel::find_shape("tiny-mistral"), .seed = 0});
    if (!status.ok()) throw std::runtime_error(status.to_string());
    return TestModels(path, 2);
  }();
  return models;
}

GenerateRequest long_request(std::vector<TokenId> prompt, int32_t max_tokens) {
  GenerateRequest request = greedy_request(std::move(prompt), max_tokens);
  request.stop.ignore_eos = true;  // random weights: run to max_tokens whatever comes out
  return request;
}

}  // namespace

TEST_CASE("tiny Mistral: a 400-token generation gives back the blocks outside the window, tokens unchanged") {
  const std::vector<TokenId> prompt = make_prompt(7, 24);
  constexpr int32_t kNewTokens = 400;
  AnyModel model = tiny_mistral().open();
  REQUIRE(model.info().sliding_window == kWindow);
  const std::vector<TokenId> reference = reference_greedy(model, prompt, kNewTokens, 24 + kNewTokens, /*ignore_eos=*/true);
  REQUIRE(static_cast<int32_t>(reference.size()) == kNewTokens);

  auto engine = tiny_mistral().engine({.block_size = kBlock, .num_kv_blocks = 256});
  REQUIRE(engine->submit(long_request(prompt, kNewTokens)).ok());
  std::map<RequestId, Collected> results;
  int32_t late_peak = 0;
  int32_t at_end = 0;
  while (engine->has_unfinished()) {
    collect(engine->step(), results);
    REQUIRE(engine->check_kv_invariants().ok());
    const EngineStats stats = engine->stats();
    // Past two windows and a block, the cached prefix (at most one window) is given back too.
    if (stats.num_computed_tokens > 2 * kWindow + kBlock) late_peak = std::max(late_peak, stats.kv.num_used_blocks());
    at_end = stats.kv.num_used_blocks();
  }
  const EngineStats stats = engine->stats();
  INFO("blocks in use at most " << late_peak << " once past 2W + B; given back " << stats.kv.num_window_released_blocks);
  // A sequence of 424 tokens would hold 106 blocks; the window needs ceil(16 / 4) + 1 = 5.
  CHECK(late_peak <= kWindow / kBlock + 2);
  CHECK(stats.kv.num_window_released_blocks >= (24 + kNewTokens) / kBlock - (kWindow / kBlock + 2));
  CHECK(at_end == 0);
  REQUIRE(results.size() == 1);
  CHECK(results.begin()->second.choices.at(0).tokens == reference);
}

TEST_CASE("tiny Mistral: a second request sharing the prompt hits the prefix cache and gets the same tokens") {
  const std::vector<TokenId> prompt = make_prompt(11, 14);
  auto cached = tiny_mistral().engine({.block_size = kBlock, .num_kv_blocks = 256});
  REQUIRE(cached->submit(long_request(prompt, 60)).ok());
  const auto first = run_all(*cached);
  REQUIRE(cached->submit(long_request(prompt, 60)).ok());
  const auto second = run_all(*cached);
  REQUIRE(cached->check_kv_invariants().ok());
  // Only whole blocks inside the first window are cached (docs/ARCHITECTURE.md): 12 of 14 tokens.
  CHECK(cached->stats().prefix_hit_tokens == 12);

  auto uncached = tiny_mistral().engine({.block_size = kBlock, .num_kv_blocks = 256, .enable_prefix_cache = false});
  REQUIRE(uncached->submit(long_request(prompt, 60)).ok());
  const auto plain = run_all(*uncached);
  const auto tokens = [](const std::map<RequestId, Collected>& r) { return r.begin()->second.choices.at(0).tokens; };
  CHECK(tokens(first) == tokens(plain));
  CHECK(tokens(second) == tokens(plain));
}
