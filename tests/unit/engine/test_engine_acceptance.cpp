// The engine's acceptance properties on the mock model (whose outputs are a pure function of the
// tokens read back through the block tables, so any bookkeeping slip changes them or fails the pass):
// batch invariance, cache hit == cache miss, preemption, abort, and 1,000 mixed requests.

#include <random>

#include "engine_test_support.hpp"

using namespace llaisys;
using namespace llaisys::test;

TEST_CASE("batch invariance: 64 different prompts together give what each gives alone") {
  MockModels models;
  AnyModel reference_model = models.open();
  // A small token budget forces chunked prefills mixed with decodes.
  auto engine = models.engine({.num_kv_blocks = 2048, .max_num_seqs = 64, .max_num_batched_tokens = 96});
  std::vector<std::vector<TokenId>> prompts;
  std::vector<int32_t> max_tokens;
  std::map<RequestId, std::size_t> index_of;
  for (int i = 0; i < 64; ++i) {
    prompts.push_back(make_prompt(static_cast<uint64_t>(i), 1 + (i * 37) % 120));
    max_tokens.push_back(8 + (i * 13) % 40);
    auto id = engine->submit(greedy_request(prompts.back(), max_tokens.back()));
    REQUIRE(id.ok());
    index_of[*id] = prompts.size() - 1;
  }
  const auto together = run_all(*engine);
  REQUIRE(together.size() == 64);
  int stopped_by_eos = 0;
  for (const auto& [id, result] : together) {
    const std::size_t i = index_of.at(id);
    const auto alone = reference_greedy(reference_model, prompts[i], max_tokens[i], 4096);
    INFO("prompt " << i);
    REQUIRE(result.choices.size() == 1);
    CHECK(result.choices[0].tokens == alone);
    stopped_by_eos += result.choices[0].finish_reason == FinishReason::stop;
    CHECK(result.usage.prompt_tokens == static_cast<int32_t>(prompts[i].size()));
    CHECK(result.usage.completion_tokens == static_cast<int32_t>(alone.size()));
  }
  CHECK(stopped_by_eos > 0);  // both stop rules were exercised
  CHECK(stopped_by_eos < 64);
  CHECK(engine->stats().num_steps < 64 * 20);  // they really ran together
  CHECK(engine->check_kv_invariants().ok());
}

TEST_CASE("seeded sampling gives the same tokens alone and in a crowd of 32") {
  MockModels models;
  // Every sampler setting, penalties (sequence slots) and logit_bias included.
  auto sampled = [](int i) {
    GenerateRequest request{.prompt_ids = make_prompt(static_cast<uint64_t>(100 + i), 5 + i)};
    request.sampling = {.temperature = 0.9f, .top_k = 50, .top_p = 0.95f, .seed = static_cast<uint64_t>(i)};
    switch (i % 4) {
      case 1: request.sampling.min_p = 0.05f; break;
      case 2:
        request.sampling.repetition_penalty = 1.2f;
        request.sampling.presence_penalty = 0.3f;
        request.sampling.frequency_penalty = 0.2f;
        break;
      case 3: request.sampling.logit_bias = {{7, 5.0f}, {8, -100.0f}}; break;
      default: break;
    }
    request.stop.max_tokens = 24;
    request.stop.min_tokens = i % 5 == 0 ? 4 : 0;
    return request;
  };
  auto crowd = models.engine({.num_kv_blocks = 512, .max_num_batched_tokens = 64});
  for (int i = 0; i < 32; ++i) REQUIRE(crowd->submit(sampled(i)).ok());
  const auto together = run_all(*crowd);
  for (int i = 0; i < 32; ++i) {
    auto alone_engine = models.engine({.num_kv_blocks = 512});
    REQUIRE(alone_engine->submit(sampled(i)).ok());
    const auto alone = run_all(*alone_engine);
    INFO("request " << i);
    CHECK(alone.begin()->second.choices[0].tokens == together.at(i + 1).choices[0].tokens);
  }
  // Different seeds give different streams.
  CHECK(together.at(1).choices[0].tokens != together.at(2).choices[0].tokens);
  CHECK(crowd->check_kv_invariants().ok());
}

TEST_CASE("cache hit == cache miss over a 4-turn conversation, with cached_tokens covering earlier turns") {
  MockModels models;
  auto cached = models.engine({.num_kv_blocks = 256, .max_num_batched_tokens = 64});
  auto uncached = models.engine({.num_kv_blocks = 256, .max_num_batched_tokens = 64, .enable_prefix_cache = false});
  std::vector<TokenId> conversation = make_prompt(7, 40);  // "system + first user message"
  int32_t previous_computed = 0;  // tokens of the previous turn whose K/V was computed
  for (int turn = 0; turn < 4; ++turn) {
    GenerateRequest request = greedy_request(conversation, 20);
    request.stop.ignore_eos = true;
    const int64_t computed_before = cached->stats().num_computed_tokens;
    REQUIRE(cached->submit(request).ok());
    REQUIRE(uncached->submit(request).ok());
    const Collected hit = run_all(*cached).begin()->second;
    const Collected miss = run_all(*uncached).begin()->second;
    INFO("turn " << turn);
    CHECK(hit.choices[0].tokens == miss.choices[0].tokens);
    CHECK(miss.usage.cached_tokens == 0);
    // Everything computed in earlier turns, in whole blocks of 16, is served from the cache ...
    CHECK(hit.usage.cached_tokens == previous_computed / 16 * 16);
    if (turn > 0) CHECK(hit.usage.cached_tokens > static_cast<int32_t>(conversation.size()) - 40);
    // ... and only the rest is prefilled (plus one pass per generated token but the last).
    CHECK(cached->stats().num_computed_tokens - computed_before ==
          static_cast<int64_t>(conversation.size()) - hit.usage.cached_tokens + 19);
    previous_computed = static_cast<int32_t>(conversation.size()) + 19;
    conversation.insert(conversation.end(), hit.choices[0].tokens.begin(), hit.choices[0].tokens.end());
    const auto next_user = make_prompt(static_cast<uint64_t>(50 + turn), 12);
    conversation.insert(conversation.end(), next_user.begin(), next_user.end());
  }
  CHECK(cached->stats().prefix_hit_tokens > 0);
  CHECK(cached->check_kv_invariants().ok());
}

TEST_CASE("preemption: a KV budget too small for everyone gives the same outputs as ample memory") {
  MockModels models;
  auto requests = [] {
    std::vector<GenerateRequest> list;
    for (int i = 0; i < 12; ++i) {
      GenerateRequest request = greedy_request(make_prompt(static_cast<uint64_t>(200 + i), 10 + 3 * i), 40);
      request.stop.ignore_eos = true;
      if (i % 3 == 0) request.sampling = {.temperature = 1.0f, .seed = static_cast<uint64_t>(i)};
      if (i % 3 == 1) {  // penalties: the sequence slot is given back at preemption, refilled on resume
        request.sampling = {.temperature = 0.8f, .repetition_penalty = 1.3f, .presence_penalty = 0.4f,
                            .frequency_penalty = 0.3f, .seed = static_cast<uint64_t>(i)};
      }
      if (i == 5) request.n = 2;
      list.push_back(request);
    }
    return list;
  };
  auto ample = models.engine({.num_kv_blocks = 1024});
  auto tight = models.engine({.block_size = 4, .num_kv_blocks = 40, .max_num_batched_tokens = 48});
  for (const GenerateRequest& request : requests()) {
    REQUIRE(ample->submit(request).ok());
    REQUIRE(tight->submit(request).ok());
  }
  const auto expected = run_all(*ample);
  std::map<RequestId, Collected> got;
  int32_t peak_usage_blocks = 0;
  while (tight->has_unfinished()) {
    collect(tight->step(), got);
    peak_usage_blocks = std::max(peak_usage_blocks, tight->stats().kv.num_used_blocks());
    REQUIRE(tight->check_kv_invariants().ok());
  }
  CHECK(tight->stats().num_preemptions > 0);
  CHECK(peak_usage_blocks <= 40);
  REQUIRE(got.size() == expected.size());
  for (const auto& [id, result] : expected) {
    INFO("request " << id);
    REQUIRE(got.at(id).choices.size() == result.choices.size());
    for (std::size_t c = 0; c < result.choices.size(); ++c) {
      CHECK(got.at(id).choices[c].tokens == result.choices[c].tokens);
      CHECK(got.at(id).choices[c].finish_reason == FinishReason::length);
    }
  }
  const auto& some_preempted = std::find_if(got.begin(), got.end(), [](const auto& r) {
    return r.second.times.num_preemptions > 0;
  });
  CHECK(some_preempted != got.end());
}

TEST_CASE("abort frees a request's blocks within one step, queued, prefilling or decoding") {
  MockModels models;
  AnyModel reference_model = models.open();
  auto engine = models.engine({.num_kv_blocks = 256, .max_num_seqs = 4, .max_num_batched_tokens = 32});
  const std::vector<TokenId> keep_prompt = make_prompt(1, 20);
  const RequestId keep = *engine->submit(greedy_request(keep_prompt, 30));
  const RequestId decoding = *engine->submit(greedy_request(make_prompt(2, 5), 100));
  std::map<RequestId, Collected> results;
  collect(engine->step(), results);  // both prefilled
  collect(engine->step(), results);
  const RequestId prefilling = *engine->submit(greedy_request(make_prompt(3, 200), 10));
  collect(engine->step(), results);  // 30 of its 200 tokens
  REQUIRE(engine->stats().kv.num_sequences == 3);
  const RequestId queued = *engine->submit(greedy_request(make_prompt(4, 300), 10));

  auto pinned = [&] { return engine->stats().kv.num_used_blocks(); };
  const int32_t before = pinned();
  for (RequestId id : {decoding, prefilling, queued}) {
    const int32_t used = pinned();
    CHECK(engine->abort(id));
    CHECK(pinned() <= used);
    REQUIRE(engine->check_kv_invariants().ok());
  }
  CHECK_FALSE(engine->abort(decoding));  // twice is a no-op
  CHECK(engine->stats().kv.num_sequences == 1);
  CHECK(pinned() < before);
  CHECK(pinned() == engine->stats().kv.num_blocks - engine->stats().kv.num_free_blocks -
                        engine->stats().kv.num_evictable_blocks);
  collect(engine->step(), results);  // the aborted requests' final outputs arrive with this step
  for (RequestId id : {decoding, prefilling, queued}) {
    REQUIRE(results.at(id).num_final_outputs == 1);
    CHECK(results.at(id).choices[0].finish_reason == FinishReason::abort);
  }
  while (engine->has_unfinished()) collect(engine->step(), results);
  // The survivor is unaffected.
  CHECK(results.at(keep).choices[0].tokens == reference_greedy(reference_model, keep_prompt, 30, 4096));
  const KVStats kv = engine->stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
}

TEST_CASE("1,000 mixed requests leave every block free or cached and unlocked, the radix tree valid") {
  MockModels models;
  auto engine = models.engine({.block_size = 4, .num_kv_blocks = 96, .max_num_seqs = 16, .max_num_batched_tokens = 64});
  std::mt19937 rng(99);
  const std::vector<std::vector<TokenId>> system_prompts = {make_prompt(1000, 13), make_prompt(1001, 30), make_prompt(1002, 7)};
  std::map<RequestId, Collected> results;
  std::vector<RequestId> live;
  int submitted = 0, aborted = 0;
  while (submitted < 1000 || engine->has_unfinished()) {
    for (int burst = 0; burst < 4 && submitted < 1000; ++burst, ++submitted) {
      std::vector<TokenId> prompt = system_prompts[rng() % 3];
      const auto tail = make_prompt(rng(), 1 + static_cast<int32_t>(rng() % 20));
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      GenerateRequest request = greedy_request(prompt, 1 + static_cast<int32_t>(rng() % 30));
      if (rng() % 3 == 0) request.sampling = {.temperature = 0.8f, .top_p = 0.9f};
      if (rng() % 5 == 0) request.n = 2;
      if (rng() % 7 == 0) request.cache_salt = "tenant-b";
      live.push_back(*engine->submit(std::move(request)));
    }
    if (!live.empty() && rng() % 4 == 0) {
      const std::size_t pick = rng() % live.size();
      aborted += engine->abort(live[pick]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    collect(engine->step(), results);
    if (submitted % 100 == 0) REQUIRE(engine->check_kv_invariants().ok());
  }
  REQUIRE(results.size() == 1000);
  for (const auto& [id, r] : results) REQUIRE(r.num_final_outputs == 1);
  const EngineStats stats = engine->stats();
  CHECK(aborted > 20);
  CHECK(stats.num_preemptions > 0);
  CHECK(stats.num_finished[static_cast<int>(FinishReason::abort)] == aborted);
  CHECK(stats.prefix_hit_tokens > 0);
  CHECK(stats.kv.num_sequences == 0);
  CHECK(stats.kv.num_free_blocks + stats.kv.num_evictable_blocks == stats.kv.num_blocks);
  CHECK(stats.kv.num_evictable_blocks == stats.kv.num_cached_blocks);  // cached ones are all unlocked
  CHECK(stats.kv.num_cached_blocks > 0);
  const Status valid = engine->check_kv_invariants();
  INFO(valid.message());
  CHECK(valid.ok());
}
