// LLMEngine features on the mock model: stop rules, n choices, logprobs, embeddings, validation,
// and a failing model pass that must fail only its step's requests.

#include <atomic>
#include <cmath>

#include "engine_test_support.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

// Wraps the mock; step() fails while `poison` is in the batch (a model error we can aim).
struct FaultyModel {
  AnyModel inner;
  std::shared_ptr<std::atomic<TokenId>> poison;
  const ModelInfo& info() const { return inner.info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return inner.init_kv_cache(config); }
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
    for (TokenId t : batch.token_ids) {
      if (t == poison->load()) return Status(ErrorCode::internal, "injected failure");
    }
    return inner.step(batch, sampling, out);
  }
  Status copy_blocks(std::span<const BlockCopy> copies) { return inner.copy_blocks(copies); }
};
static_assert(Model<FaultyModel>);

Collected run_one(LLMEngine& engine, GenerateRequest request) {
  auto id = engine.submit(std::move(request));
  REQUIRE(id.ok());
  auto results = run_all(engine);
  REQUIRE(results.size() == 1);
  return results.begin()->second;
}

}  // namespace

TEST_CASE("validation errors name the field") {
  MockModels models;
  auto engine = models.engine({.num_kv_blocks = 64});
  CHECK(engine->submit(greedy_request({}, 4)).status().message() == "the prompt is empty");
  CHECK(engine->submit(greedy_request({1, 512}, 4)).status().message() == "prompt token 512 is outside the vocabulary of 512");
  GenerateRequest request = greedy_request({1, 2, 3}, 4);
  request.n = 0;
  CHECK(engine->submit(request).status().message() == "n must be in [1, 64], got 0");
  request = greedy_request({1, 2, 3}, 4);
  request.stop.stop = {"\n"};
  CHECK(engine->submit(request).status().message() == "stop strings need a model with a tokenizer");
  request = greedy_request({1, 2, 3}, 4);
  request.sampling.temperature = 5.0f;
  CHECK(engine->submit(request).status().code() == ErrorCode::invalid_argument);
  request = greedy_request({1, 2, 3}, 4);
  request.stop.stop_token_ids = {600};
  CHECK_FALSE(engine->submit(request).ok());
  CHECK_FALSE(engine->has_unfinished());
}

TEST_CASE("stop rules") {
  MockModels models;
  AnyModel reference_model = models.open();
  auto engine = models.engine({.num_kv_blocks = 256});
  const std::vector<TokenId> prompt = make_prompt(42, 9);
  GenerateRequest unlimited = greedy_request(prompt, 60);
  unlimited.stop.ignore_eos = true;
  const std::vector<TokenId> free_run = run_one(*engine, unlimited).choices[0].tokens;
  REQUIRE(free_run.size() == 60);

  SECTION("max_tokens") {
    GenerateRequest request = unlimited;
    request.stop.max_tokens = 7;
    const Collected r = run_one(*engine, request);
    CHECK(r.choices[0].tokens == std::vector<TokenId>(free_run.begin(), free_run.begin() + 7));
    CHECK(r.choices[0].finish_reason == FinishReason::length);
  }
  SECTION("max_tokens 0 finishes at once") {
    const Collected r = run_one(*engine, greedy_request(prompt, 0));
    CHECK(r.choices[0].tokens.empty());
    CHECK(r.choices[0].finish_reason == FinishReason::length);
    CHECK(r.usage.prompt_tokens == 9);
  }
  SECTION("stop token ids end generation, the id included") {
    // The first token of the free run that does not occur before position 5.
    std::size_t at = 5;
    while (std::find(free_run.begin(), free_run.begin() + static_cast<long>(at), free_run[at]) !=
           free_run.begin() + static_cast<long>(at)) {
      ++at;
    }
    GenerateRequest request = unlimited;
    request.stop.stop_token_ids = {free_run[at]};
    const Collected r = run_one(*engine, request);
    CHECK(r.choices[0].tokens == std::vector<TokenId>(free_run.begin(), free_run.begin() + static_cast<long>(at) + 1));
    CHECK(r.choices[0].finish_reason == FinishReason::stop);
    CHECK(r.choices[0].finish_detail == std::to_string(free_run[at]));
  }
  SECTION("EOS stops unless ignored; min_tokens holds it off") {
    // A prompt whose greedy continuation hits the mock's EOS (2) within 60 tokens, after a few others.
    std::vector<TokenId> eos_prompt;
    std::vector<TokenId> reference;
    for (uint64_t seed = 1; reference.size() < 4 || reference.back() != 2; ++seed) {
      REQUIRE(seed < 200);
      eos_prompt = make_prompt(seed, 9);
      reference = reference_greedy(reference_model, eos_prompt, 60, 4096);
    }
    const Collected plain = run_one(*engine, greedy_request(eos_prompt, 60));
    CHECK(plain.choices[0].tokens == reference);
    CHECK(plain.choices[0].finish_reason == FinishReason::stop);
    GenerateRequest late = greedy_request(eos_prompt, 60);
    late.stop.min_tokens = static_cast<int32_t>(reference.size()) + 1;
    const Collected held = run_one(*engine, late);
    CHECK(held.choices[0].tokens.size() >= reference.size() + 1);
    CHECK(std::count(held.choices[0].tokens.begin(), held.choices[0].tokens.begin() + static_cast<long>(reference.size()) + 1, 2) == 0);
  }
}

TEST_CASE("the end of the context stops generation, a prompt that fills it is ignored") {
  MockModels models(R"({"architectures": ["LlaisysMockForCausalLM"], "vocab_size": 64, "hidden_size": 4,
                        "max_position_embeddings": 40, "eos_token_id": 2})");
  auto engine = models.engine({.block_size = 8, .num_kv_blocks = 64});
  CHECK(engine->max_sequence_tokens() == 40);
  std::vector<TokenId> prompt(36, 5);
  const Collected near_end = run_one(*engine, GenerateRequest{.prompt_ids = prompt});
  CHECK(near_end.choices[0].tokens.size() == 4);
  CHECK(near_end.choices[0].finish_reason == FinishReason::length);
  CHECK(near_end.choices[0].finish_detail == "the context is full");
  const Collected full = run_one(*engine, GenerateRequest{.prompt_ids = std::vector<TokenId>(40, 5)});
  CHECK(full.choices[0].finish_reason == FinishReason::ignored);
  CHECK(full.choices[0].finish_detail == "the prompt has 40 tokens but the context holds 40 including at least one generated token");
  CHECK(engine->check_kv_invariants().ok());
}

TEST_CASE("a context near INT32_MAX sizes the cache by the budget, without overflow") {
  MockModels models(R"({"architectures": ["LlaisysMockForCausalLM"], "vocab_size": 64, "hidden_size": 4,
                        "max_position_embeddings": 2147483647, "eos_token_id": 2})");
  // The mock stores 8 bytes per token: 64 MiB hold 8 Mi tokens = 524,288 blocks of 16.
  auto engine = models.engine({.block_size = 16, .kv_cache_bytes = 64ull << 20, .max_num_seqs = 4, .max_context = 0});
  CHECK(engine->stats().kv.num_blocks == 524288);
  CHECK(engine->max_sequence_tokens() == 524288 * 16);
  const Collected out = run_one(*engine, GenerateRequest{.prompt_ids = std::vector<TokenId>(20, 5),
                                                         .stop = {.max_tokens = 3}});
  CHECK(out.choices[0].tokens.size() == 3);
}

TEST_CASE("n choices share the prompt: greedy choices agree, seeded ones differ and reproduce") {
  MockModels models;
  AnyModel reference_model = models.open();
  auto engine = models.engine({.num_kv_blocks = 256});
  const std::vector<TokenId> prompt = make_prompt(5, 21);
  GenerateRequest greedy = greedy_request(prompt, 30);
  greedy.n = 3;
  const Collected g = run_one(*engine, greedy);
  REQUIRE(g.choices.size() == 3);
  const auto reference = reference_greedy(reference_model, prompt, 30, 4096);
  int32_t total = 0;
  for (const CollectedChoice& c : g.choices) {
    CHECK(c.tokens == reference);
    total += static_cast<int32_t>(c.tokens.size());
  }
  CHECK(g.usage.completion_tokens == total);
  CHECK(g.usage.prompt_tokens == 21);

  GenerateRequest sampled{.prompt_ids = prompt, .n = 4};
  sampled.sampling = {.temperature = 1.0f, .seed = 77};
  sampled.stop.max_tokens = 20;
  const Collected first = run_one(*engine, sampled);
  const Collected again = run_one(*engine, sampled);
  for (std::size_t c = 0; c < 4; ++c) CHECK(first.choices[c].tokens == again.choices[c].tokens);
  CHECK(first.choices[0].tokens != first.choices[1].tokens);
  CHECK(first.choices[2].tokens != first.choices[3].tokens);
  // choice 0 of a seeded request is what n = 1 with that seed gives
  sampled.n = 1;
  CHECK(run_one(*engine, sampled).choices[0].tokens == first.choices[0].tokens);
  CHECK(engine->check_kv_invariants().ok());
}

TEST_CASE("seeded requests do not shift the seeds the engine gives unseeded ones") {
  MockModels models;
  const std::vector<TokenId> prompt = make_prompt(21, 3);
  GenerateRequest unseeded{.prompt_ids = prompt};
  unseeded.sampling = {.temperature = 1.0f};
  unseeded.stop.max_tokens = 20;
  GenerateRequest seeded = unseeded;
  seeded.sampling.seed = 5;
  // Two engines with the same seed: the first unseeded request gets the same draw whether or not
  // seeded requests ran before it.
  auto alone = models.engine({.num_kv_blocks = 64, .seed = 99});
  const Collected a = run_one(*alone, unseeded);
  auto after_seeded = models.engine({.num_kv_blocks = 64, .seed = 99});
  run_one(*after_seeded, seeded);
  run_one(*after_seeded, seeded);
  const Collected b = run_one(*after_seeded, unseeded);
  CHECK(a.choices[0].tokens == b.choices[0].tokens);
  // and the engine's stream does move on between unseeded requests
  CHECK(run_one(*alone, unseeded).choices[0].tokens != a.choices[0].tokens);
}

TEST_CASE("penalties, bias and seeds through the engine equal a host reference, with preemption") {
  MockModels models;
  AnyModel reference_model = models.open();
  SamplingParams params{.temperature = 0.8f, .top_p = 0.9f, .repetition_penalty = 1.5f, .presence_penalty = 0.5f,
                        .frequency_penalty = 0.5f, .seed = 11};
  params.logit_bias = {{9, 3.0f}, {10, -100.0f}};
  const std::vector<TokenId> prompt = make_prompt(77, 12);
  const std::vector<TokenId> expected = reference_sampled(reference_model, prompt, params, 11, 48);
  // A tight pool and competing requests preempt the penalised one at least once.
  auto engine = models.engine({.block_size = 4, .num_kv_blocks = 24, .max_num_batched_tokens = 32});
  for (int i = 0; i < 4; ++i) {
    GenerateRequest other = greedy_request(make_prompt(static_cast<uint64_t>(300 + i), 20), 40);
    other.stop.ignore_eos = true;
    REQUIRE(engine->submit(other).ok());
  }
  GenerateRequest request{.prompt_ids = prompt, .sampling = params};
  request.stop = {.max_tokens = 48, .ignore_eos = true};
  const RequestId id = engine->submit(request).value();  // the newest: preempted first
  const auto results = run_all(*engine);
  CHECK(results.at(id).times.num_preemptions > 0);
  CHECK(results.at(id).choices[0].tokens == expected);
  CHECK(engine->check_kv_invariants().ok());
}

TEST_CASE("logprobs: the chosen token's raw log-probability and the top alternatives") {
  MockModels models;
  auto engine = models.engine({.num_kv_blocks = 64});
  GenerateRequest request = greedy_request(make_prompt(9, 6), 5);
  request.sampling.num_logprobs = 3;
  const Collected r = run_one(*engine, request);
  REQUIRE(r.choices[0].logprobs.size() == r.choices[0].tokens.size());
  for (std::size_t i = 0; i < r.choices[0].tokens.size(); ++i) {
    const TokenLogprob& lp = r.choices[0].logprobs[i];
    CHECK(lp.token == r.choices[0].tokens[i]);
    REQUIRE(lp.top.size() == 3);
    CHECK(lp.top[0].first == lp.token);  // greedy: the most likely one
    CHECK(lp.logprob == lp.top[0].second);
    CHECK(lp.logprob < 0.0f);
    CHECK(lp.top[1].second <= lp.top[0].second);
  }
}

TEST_CASE("embeddings pool the final hidden states of the prompt") {
  MockModels models;
  AnyModel reference_model = models.open();
  auto engine = models.engine({.num_kv_blocks = 64, .max_num_batched_tokens = 8});
  const std::vector<TokenId> prompt = make_prompt(11, 19);
  // Reference: one pass with a hidden row per token.
  REQUIRE(reference_model.init_kv_cache({.num_blocks = 4, .block_size = 16}).ok());
  std::vector<int32_t> positions(19), seqs(19, 0), outputs(19);
  std::iota(positions.begin(), positions.end(), 0);
  std::iota(outputs.begin(), outputs.end(), 0);
  const BlockId table[] = {0, 1};
  const BlockId* tables[] = {table};
  const int32_t lens[] = {2};
  std::vector<float> hidden(19 * 16);
  REQUIRE(reference_model.forward({.token_ids = prompt, .positions = positions, .seq_indices = seqs,
                                   .block_tables = tables, .block_table_lens = lens,
                                   .output_token_indices = outputs, .output_kind = OutputKind::hidden},
                                  hidden).ok());
  REQUIRE(engine->add_embedding(1, {.prompt_ids = prompt, .pooling = Pooling::mean, .normalize = false}).ok());
  REQUIRE(engine->add_embedding(2, {.prompt_ids = prompt, .pooling = Pooling::last}).ok());
  REQUIRE(engine->submit(greedy_request(prompt, 5)).ok());  // mixed with generation in one step
  const auto results = run_all(*engine);
  const std::vector<float>& mean = results.at(1).embedding;
  const std::vector<float>& last = results.at(2).embedding;
  REQUIRE(mean.size() == 16);
  REQUIRE(last.size() == 16);
  auto h = [&](std::size_t token, std::size_t i) { return static_cast<double>(hidden[token * 16 + i]); };
  double norm = 0;
  for (std::size_t i = 0; i < 16; ++i) norm += h(18, i) * h(18, i);
  for (std::size_t i = 0; i < 16; ++i) {
    double sum = 0;
    for (std::size_t t = 0; t < 19; ++t) sum += h(t, i);
    CHECK(mean[i] == Approx(sum / 19).epsilon(1e-6));
    CHECK(last[i] == Approx(h(18, i) / std::sqrt(norm)).epsilon(1e-6));
  }
  CHECK(results.at(1).choices[0].finish_reason == FinishReason::stop);
  CHECK(results.at(3).choices[0].tokens.size() > 0);
}

TEST_CASE("a failing model pass fails only that step's requests and the engine keeps serving") {
  MockModels models;
  AnyModel reference_model = models.open();
  auto poison = std::make_shared<std::atomic<TokenId>>(-1);
  auto created = LLMEngine::create(EngineModel(FaultyModel{models.open(), poison}),
                                   {.num_kv_blocks = 128, .max_num_batched_tokens = 64, .seed = 1});
  REQUIRE(created.ok());
  LLMEngine& engine = **created;
  const std::vector<TokenId> healthy = make_prompt(1, 30);
  std::map<RequestId, Collected> results;
  const RequestId bystander = *engine.submit(greedy_request(healthy, 10));
  collect(engine.step(), results);
  poison->store(healthy[0] == 500 ? 501 : 500);
  std::vector<TokenId> bad = make_prompt(2, 10);
  bad[3] = poison->load();
  const RequestId culprit = *engine.submit(greedy_request(bad, 10));
  collect(engine.step(), results);  // the decode of bystander and the prefill of culprit fail together
  REQUIRE(results.at(culprit).num_final_outputs == 1);
  CHECK(results.at(culprit).choices[0].finish_reason == FinishReason::error);
  CHECK(results.at(culprit).choices[0].finish_detail == "injected failure");
  CHECK(results.at(bystander).choices[0].finish_reason == FinishReason::error);
  CHECK(engine.stats().num_failed_steps == 1);
  CHECK(engine.check_kv_invariants().ok());
  CHECK(engine.stats().kv.num_sequences == 0);
  // The engine goes on, and the prefix cache holds nothing from the failed pass.
  const RequestId later = *engine.submit(greedy_request(healthy, 10));
  while (engine.has_unfinished()) collect(engine.step(), results);
  CHECK(results.at(later).choices[0].tokens == reference_greedy(reference_model, healthy, 10, 4096));
  CHECK(results.at(later).choices[0].finish_reason != FinishReason::error);
}

TEST_CASE("a preempted embedding request pools every prompt position exactly once") {
  MockModels models;
  AnyModel reference_model = models.open();
  const std::vector<TokenId> prompt = make_prompt(21, 40);
  REQUIRE(reference_model.init_kv_cache({.num_blocks = 4, .block_size = 16}).ok());
  std::vector<int32_t> positions(40), seqs(40, 0), outputs(40);
  std::iota(positions.begin(), positions.end(), 0);
  std::iota(outputs.begin(), outputs.end(), 0);
  const BlockId table[] = {0, 1, 2};
  const BlockId* tables[] = {table};
  const int32_t lens[] = {3};
  std::vector<float> hidden(40 * 16);
  REQUIRE(reference_model.forward({.token_ids = prompt, .positions = positions, .seq_indices = seqs,
                                   .block_tables = tables, .block_table_lens = lens,
                                   .output_token_indices = outputs, .output_kind = OutputKind::hidden},
                                  hidden).ok());
  // 13 blocks of 4: the growing generation (12 blocks at the end) squeezes the embedding (10) out.
  auto engine = models.engine({.block_size = 4, .num_kv_blocks = 13, .max_num_batched_tokens = 6});
  GenerateRequest grow = greedy_request(make_prompt(22, 8), 40);
  grow.stop.ignore_eos = true;
  REQUIRE(engine->submit(grow).ok());
  REQUIRE(engine->add_embedding(100, {.prompt_ids = prompt, .pooling = Pooling::mean, .normalize = false}).ok());
  const auto results = run_all(*engine);
  CHECK(engine->stats().num_preemptions > 0);
  CHECK(results.at(100).times.num_preemptions > 0);
  const std::vector<float>& mean = results.at(100).embedding;
  REQUIRE(mean.size() == 16);
  for (std::size_t i = 0; i < 16; ++i) {
    double sum = 0;
    for (std::size_t t = 0; t < 40; ++t) sum += static_cast<double>(hidden[t * 16 + i]);
    CHECK(mean[i] == Approx(sum / 40).epsilon(1e-6));
  }
}
