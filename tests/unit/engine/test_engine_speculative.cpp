// Speculative decoding on the mock model (whose outputs are a pure function of the tokens read back
// through the block tables, so a rejected draft left in a table or in the prefix cache changes them):
// greedy outputs are identical token for token with and without speculation, with every proposer
// (always right, always wrong, n-gram), under preemption and chunked prefill, with stop rules landing
// inside an accepted run; abort frees every block; the KV invariants hold after every step.

#include "llaisys/scheduler/draft_proposer.hpp"
#include "real_models.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

std::vector<GenerateRequest> mixed_requests(int count, int32_t max_tokens) {
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < count; ++i) {
    requests.push_back(greedy_request(make_prompt(static_cast<uint64_t>(300 + i), 3 + (i * 29) % 70),
                                      max_tokens + i % 7));
  }
  return requests;
}

// Prompt + output of every request of a run: what ReplayProposer replays.
std::vector<std::vector<TokenId>> continuations(const std::vector<GenerateRequest>& requests,
                                                const std::map<RequestId, Collected>& results) {
  std::vector<std::vector<TokenId>> known;
  std::size_t i = 0;
  for (const auto& [id, result] : results) {
    std::vector<TokenId> tokens = requests[i++].prompt_ids;
    tokens.insert(tokens.end(), result.choices[0].tokens.begin(), result.choices[0].tokens.end());
    known.push_back(std::move(tokens));
  }
  return known;
}

EngineConfig with_proposer(EngineConfig config, std::shared_ptr<DraftProposer> proposer, int32_t k = 4) {
  config.proposer = std::move(proposer);
  config.num_speculative_tokens = k;
  return config;
}

}  // namespace

TEST_CASE("n-gram proposer: the most recent earlier occurrence of the longest suffix") {
  NgramProposer ngram;
  std::vector<TokenId> drafts;
  // "5 6 7" occurs at 0 and 5: the later one is followed by 9 9.
  ngram.propose_tokens(std::vector<TokenId>{5, 6, 7, 1, 2, 5, 6, 7, 9, 9, 3, 5, 6, 7}, 3, 4, drafts);
  CHECK(drafts == std::vector<TokenId>{9, 9, 3, 5});
  drafts.clear();
  ngram.propose_tokens(std::vector<TokenId>{5, 6, 7, 1, 2, 5, 6, 7, 9, 9, 3, 5, 6, 7}, 3, 2, drafts);
  CHECK(drafts == std::vector<TokenId>{9, 9});
  drafts.clear();  // only the last token recurs: a 1-gram match
  ngram.propose_tokens(std::vector<TokenId>{8, 4, 1, 2, 3, 8}, 3, 3, drafts);
  CHECK(drafts == std::vector<TokenId>{4, 1, 2});
  drafts.clear();
  ngram.propose_tokens(std::vector<TokenId>{1, 2, 3, 4}, 4, 3, drafts);
  CHECK(drafts.empty());
  drafts.clear();  // the continuation runs into the end of the tokens
  ngram.propose_tokens(std::vector<TokenId>{7, 7}, 2, 3, drafts);
  CHECK(drafts == std::vector<TokenId>{7});
}

TEST_CASE("speculation: 1 and 32 greedy sequences give the same tokens with every proposer") {
  MockModels models;
  for (int count : {1, 32}) {
    INFO(count << " sequences");
    const std::vector<GenerateRequest> requests = mixed_requests(count, 30);
    const auto expected = run_checked(*models.engine({.num_kv_blocks = 1024}), requests);
    const int32_t vocab = 512;
    const auto known = continuations(requests, expected);
    int64_t generated = 0;
    for (const auto& [id, r] : expected) generated += static_cast<int64_t>(r.choices[0].tokens.size());

    auto right = models.engine(with_proposer({.num_kv_blocks = 1024}, std::make_shared<ReplayProposer>(known, vocab)));
    check_same(run_checked(*right, requests), expected);
    const EngineStats right_stats = right->stats();
    CHECK(right_stats.num_draft_tokens > 0);
    // Every draft is right, except past the end of a run (EOS or max_tokens ends it first).
    CHECK(right_stats.num_accepted_draft_tokens > right_stats.num_draft_tokens / 2);
    CHECK(right_stats.num_generated_tokens == generated);
    // Each step yields a token per sequence plus the accepted drafts: far fewer steps.
    CHECK(right_stats.num_steps < generated / count);

    auto wrong = models.engine(
        with_proposer({.num_kv_blocks = 1024}, std::make_shared<ReplayProposer>(known, vocab, /*always_wrong=*/true)));
    check_same(run_checked(*wrong, requests), expected);
    CHECK(wrong->stats().num_draft_tokens > 0);
    CHECK(wrong->stats().num_accepted_draft_tokens == 0);

    auto ngram = models.engine({.num_kv_blocks = 1024, .speculative = SpeculativeMethod::ngram,
                                .num_speculative_tokens = 3});
    check_same(run_checked(*ngram, requests), expected);
  }
}

TEST_CASE("speculation: a KV budget too small for everyone, chunked prefill, the same tokens") {
  MockModels models;
  std::vector<GenerateRequest> requests = mixed_requests(12, 40);
  for (GenerateRequest& request : requests) request.stop.ignore_eos = true;
  const auto expected = run_checked(*models.engine({.num_kv_blocks = 1024}), requests);
  const auto known = continuations(requests, expected);
  for (bool always_wrong : {false, true}) {
    INFO("always wrong " << always_wrong);
    auto tight = models.engine(with_proposer({.block_size = 4, .num_kv_blocks = 40, .max_num_batched_tokens = 24},
                                             std::make_shared<ReplayProposer>(known, 512, always_wrong), 5));
    check_same(run_checked(*tight, requests), expected);
    CHECK(tight->stats().num_preemptions > 0);
    CHECK(tight->stats().num_draft_tokens > 0);
    CHECK((tight->stats().num_accepted_draft_tokens > 0) == !always_wrong);
  }
}

TEST_CASE("speculation: max_tokens, EOS and stop ids landing inside an accepted run") {
  MockModels models;
  const std::vector<TokenId> prompt = make_prompt(77, 9);
  GenerateRequest free_request = greedy_request(prompt, 60);
  free_request.stop.ignore_eos = true;
  const auto free_run = run_checked(*models.engine({.num_kv_blocks = 256}), {free_request});
  const std::vector<TokenId> full = free_run.begin()->second.choices[0].tokens;
  REQUIRE(full.size() == 60);
  std::vector<TokenId> known = prompt;
  known.insert(known.end(), full.begin(), full.end());
  auto proposer = std::make_shared<ReplayProposer>(std::vector<std::vector<TokenId>>{known}, 512);
  for (int32_t max_tokens = 1; max_tokens <= 11; ++max_tokens) {
    INFO("max_tokens " << max_tokens);
    GenerateRequest request = free_request;
    request.stop.max_tokens = max_tokens;
    auto engine = models.engine(with_proposer({.num_kv_blocks = 256}, proposer, 4));
    const auto got = run_checked(*engine, {request});
    const CollectedChoice& choice = got.begin()->second.choices[0];
    CHECK(choice.tokens == std::vector<TokenId>(full.begin(), full.begin() + max_tokens));
    CHECK(choice.finish_reason == FinishReason::length);
    CHECK(engine->stats().num_generated_tokens == max_tokens);
  }
  // A stop id at output position 6, 7 or 8 (mid-run with k = 4: the first step yields 5 tokens).
  for (std::size_t at : {5u, 6u, 7u}) {
    INFO("stop id at " << at);
    GenerateRequest request = free_request;
    request.stop.stop_token_ids = {full[at]};
    const std::size_t first = static_cast<std::size_t>(std::find(full.begin(), full.end(), full[at]) - full.begin());
    auto engine = models.engine(with_proposer({.num_kv_blocks = 256}, proposer, 4));
    const auto got = run_checked(*engine, {request});
    const CollectedChoice& choice = got.begin()->second.choices[0];
    CHECK(choice.tokens == std::vector<TokenId>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(first) + 1));
    CHECK(choice.finish_reason == FinishReason::stop);
  }
}

TEST_CASE("speculation: rejected drafts give their slots back after every step") {
  MockModels models;
  const std::vector<GenerateRequest> requests = mixed_requests(1, 60);
  const auto expected = run_checked(*models.engine({.num_kv_blocks = 1024}), requests);
  const auto known = continuations(requests, expected);
  for (bool always_wrong : {false, true}) {
    auto engine = models.engine(with_proposer({.block_size = 4, .num_kv_blocks = 256},
                                              std::make_shared<ReplayProposer>(known, 512, always_wrong), 8));
    REQUIRE(engine->submit(requests[0]).ok());
    std::map<RequestId, Collected> results;
    while (engine->has_unfinished()) {
      collect(engine->step(), results);
      REQUIRE(engine->check_kv_invariants().ok());
      if (!engine->has_unfinished()) break;
      // The sequence holds the K/V of its tokens but the last, nothing of the drafts it rejected.
      const auto num_tokens = static_cast<int32_t>(requests[0].prompt_ids.size() + results.begin()->second.choices[0].tokens.size());
      CHECK(engine->stats().kv.num_used_blocks() == (num_tokens - 1 + 3) / 4);
    }
    check_same(results, expected);
  }
}

TEST_CASE("speculation: stop strings inside an accepted run end the text where they would without") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  GenerateRequest request = greedy_request(*tokenizer->encode("The weather today"), 60);
  request.stop.ignore_eos = true;
  const auto free_run = run_checked(*models.engine({.num_kv_blocks = 64}, tokenizer), {request});
  const CollectedChoice& full = free_run.begin()->second.choices[0];
  std::vector<TokenId> known = request.prompt_ids;
  known.insert(known.end(), full.tokens.begin(), full.tokens.end());
  auto proposer = std::make_shared<ReplayProposer>(std::vector<std::vector<TokenId>>{known}, 151936);
  int tried = 0;
  for (std::size_t at = 5; at + 3 <= full.text.size() && tried < 8; at += full.text.size() / 9) {
    const std::string stop = full.text.substr(at, 3);
    if (!std::all_of(stop.begin(), stop.end(), [](char c) { return c > ' ' && c < 127; })) continue;
    ++tried;
    INFO("stop string '" << stop << "'");
    GenerateRequest stopped = request;
    stopped.stop.stop = {stop};
    const auto expected = run_checked(*models.engine({.num_kv_blocks = 64}, tokenizer), {stopped});
    const auto got = run_checked(*models.engine(with_proposer({.num_kv_blocks = 64}, proposer), tokenizer), {stopped});
    check_same(got, expected);
    CHECK(got.begin()->second.choices[0].finish_detail == stop);
  }
  CHECK(tried >= 3);
}

TEST_CASE("speculation: abort between verifications frees every block, rejected drafts never reach the cache") {
  MockModels models;
  const std::vector<GenerateRequest> requests = mixed_requests(6, 50);
  const auto expected = run_checked(*models.engine({.num_kv_blocks = 1024}), requests);
  const auto known = continuations(requests, expected);
  for (bool always_wrong : {false, true}) {
    auto engine = models.engine(
        with_proposer({.block_size = 4, .num_kv_blocks = 512}, std::make_shared<ReplayProposer>(known, 512, always_wrong)));
    std::vector<RequestId> ids;
    for (const GenerateRequest& request : requests) ids.push_back(*engine->submit(request));
    std::map<RequestId, Collected> results;
    for (int step = 0; step < 4; ++step) {
      collect(engine->step(), results);
      REQUIRE(engine->check_kv_invariants().ok());
    }
    for (RequestId id : ids) {
      engine->abort(id);
      REQUIRE(engine->check_kv_invariants().ok());
    }
    collect(engine->step(), results);
    CHECK_FALSE(engine->has_unfinished());
    const KVStats kv = engine->stats().kv;
    CHECK(kv.num_sequences == 0);
    CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
    // The prefix cache now holds what those sequences computed. A prompt extending a cached path
    // (request 0's prompt + output) must give what a fresh engine gives: a rejected draft's K/V
    // cached in a block would change the mock's output.
    std::vector<TokenId> extended = known[0];
    extended.resize(std::min<std::size_t>(extended.size(), requests[0].prompt_ids.size() + 12));
    const GenerateRequest next = greedy_request(extended, 20);
    const auto cached = run_checked(*engine, {next});
    CHECK(cached.begin()->second.usage.cached_tokens > 0);
    check_same(cached, run_checked(*models.engine({.num_kv_blocks = 1024}), {next}));
  }
}

TEST_CASE("speculation: n > 1, sampled, logprobs and min_tokens requests speculate and get the same outputs") {
  // Guessed drafts are checked against each row's own draw, which uses the choice's seed at the
  // token's position as without speculation: seeded sampled outputs are identical token for token.
  MockModels models;
  std::vector<GenerateRequest> requests = mixed_requests(5, 20);
  requests[0].n = 3;
  requests[0].sampling = {.temperature = 1.0f, .top_k = 40, .seed = 5};
  requests[1].sampling = {.temperature = 0.8f, .top_p = 0.9f, .seed = 9};
  requests[2].sampling.num_logprobs = 2;
  requests[2].sampling.num_top_logits = 3;
  requests[3].stop.min_tokens = 10;
  requests[3].stop.stop_token_ids = {7, 8, 9, 10, 11};
  const auto expected = run_checked(*models.engine({.num_kv_blocks = 1024}), requests);
  auto engine = models.engine({.num_kv_blocks = 1024, .speculative = SpeculativeMethod::ngram});
  check_same(run_checked(*engine, requests), expected);
  // Choice 0 of every request replayed: always right for n = 1 and for request 0's first choice.
  const auto known = continuations(requests, expected);
  auto replay = models.engine(with_proposer({.num_kv_blocks = 1024}, std::make_shared<ReplayProposer>(known, 512)));
  const auto got = run_checked(*replay, requests);
  check_same(got, expected);
  for (auto g = got.begin(), e = expected.begin(); e != expected.end(); ++g, ++e) {
    for (std::size_t c = 0; c < e->second.choices.size(); ++c) {
      const std::vector<TokenLogprob>& a = g->second.choices[c].logprobs;
      const std::vector<TokenLogprob>& b = e->second.choices[c].logprobs;
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].token == b[i].token);
        CHECK(a[i].logprob == b[i].logprob);
        CHECK(a[i].top == b[i].top);
      }
    }
  }
  int64_t replayed = 0;
  for (const auto& [id, r] : expected) replayed += static_cast<int64_t>(r.choices[0].tokens.size()) - 1;
  // Most of every request's choice-0 tokens came as accepted drafts (each verification also adds
  // its own token, and request 3's min_tokens rows cut no draft).
  CHECK(replay->stats().num_accepted_draft_tokens > replayed / 2);
}

TEST_CASE("speculation: penalties, grammars and opted-out requests decode without it") {
  MockModels models;
  std::vector<GenerateRequest> requests = mixed_requests(2, 20);
  requests[0].sampling.repetition_penalty = 1.3f;
  requests[1].speculative = false;
  const auto expected = run_checked(*models.engine({.num_kv_blocks = 1024}), requests);
  const auto known = continuations(requests, expected);
  auto replay = models.engine(with_proposer({.num_kv_blocks = 1024}, std::make_shared<ReplayProposer>(known, 512)));
  check_same(run_checked(*replay, requests), expected);
  CHECK(replay->stats().num_draft_tokens == 0);
}
