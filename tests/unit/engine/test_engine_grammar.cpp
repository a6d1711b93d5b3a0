// Structured output through the engine: every choice's text is in the grammar's language when it
// stops and a valid prefix when cut by max_tokens; constrained requests keep batch invariance and
// survive preemption; a grammar that is complete ends the choice without an EOS step.

#include "../grammar/json_test_grammar.hpp"
#include "engine_test_support.hpp"
#include "llaisys/grammar/reference_match.hpp"
#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/scheduler/draft_proposer.hpp"
#include "llaisys/text/tokenizer.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

constexpr TokenId kEos = 151645;

struct TestGrammar {
  grammar::GrammarBuilder builder;
  int32_t root = 0;
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
};

TestGrammar json_test_grammar() {
  auto [builder, root] = grammar::test::json_grammar(false);
  auto built = builder.build(root);
  REQUIRE(built.ok());
  auto vocab = grammar::TokenVocabulary::from_tokenizer(*qwen2_tokenizer(), 151936, {kEos});
  return TestGrammar{std::move(builder), root, grammar::CompiledGrammar::create(*built, vocab)};
}

GenerateRequest sampled(const std::vector<TokenId>& prompt, uint64_t seed, int32_t max_tokens,
                        std::shared_ptr<const grammar::CompiledGrammar> g) {
  GenerateRequest request{.prompt_ids = prompt};
  request.sampling = {.temperature = 1.0f, .seed = seed};
  request.stop.max_tokens = max_tokens;
  request.grammar = std::move(g);
  return request;
}

void check_choice(const TestGrammar& g, const CollectedChoice& choice) {
  REQUIRE(choice.finish_reason.has_value());
  INFO("text: " << choice.text << " (" << to_string(*choice.finish_reason) << ")");
  if (*choice.finish_reason == FinishReason::stop) {
    CHECK(grammar::reference_match(g.builder.exprs(), g.root, choice.text));
  } else {
    REQUIRE(*choice.finish_reason == FinishReason::length);
    grammar::GrammarMatcher fresh(g.compiled);
    CHECK(fresh.accept_bytes(choice.text));
  }
}

}  // namespace

TEST_CASE("grammar: sampled JSON is complete when stopped, a valid prefix when cut, alone == in a crowd") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  const TestGrammar g = json_test_grammar();
  const std::vector<TokenId> prompt = *tokenizer->encode("Reply in JSON:");
  auto crowd = models.engine({.num_kv_blocks = 512}, tokenizer);
  for (uint64_t seed = 0; seed < 24; ++seed) {
    GenerateRequest r = sampled(prompt, seed, 48, g.compiled);
    r.n = seed % 3 == 0 ? 2 : 1;
    REQUIRE(crowd->submit(std::move(r)).ok());
  }
  // Unconstrained neighbours share the batch.
  for (uint64_t seed = 100; seed < 104; ++seed) REQUIRE(crowd->submit(sampled(prompt, seed, 30, nullptr)).ok());
  auto results = run_all(*crowd);
  int stops = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    const Collected& c = results.at(static_cast<RequestId>(seed + 1));
    for (const CollectedChoice& choice : c.choices) {
      check_choice(g, choice);
      stops += *choice.finish_reason == FinishReason::stop ? 1 : 0;
    }
    // The same request alone gives the same tokens.
    if (seed % 6 == 0) {
      auto alone = models.engine({.num_kv_blocks = 512}, tokenizer);
      GenerateRequest r = sampled(prompt, seed, 48, g.compiled);
      r.n = seed % 3 == 0 ? 2 : 1;
      REQUIRE(alone->submit(std::move(r)).ok());
      auto one = run_all(*alone);
      REQUIRE(one.begin()->second.choices.size() == c.choices.size());
      for (std::size_t i = 0; i < c.choices.size(); ++i) CHECK(one.begin()->second.choices[i].tokens == c.choices[i].tokens);
    }
  }
  CHECK(stops > 0);
  CHECK(crowd->stats().times.mask_ns > 0);
}

TEST_CASE("grammar: preemption under a tight KV budget keeps constrained outputs") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  const TestGrammar g = json_test_grammar();
  const std::vector<TokenId> prompt = *tokenizer->encode("Reply in JSON, please:");
  auto run = [&](int32_t blocks) {
    auto engine = models.engine({.block_size = 4, .num_kv_blocks = blocks, .max_num_seqs = 8}, tokenizer);
    for (uint64_t seed = 0; seed < 8; ++seed) REQUIRE(engine->submit(sampled(prompt, seed, 40, g.compiled)).ok());
    auto results = run_all(*engine);
    return std::make_pair(results, engine->stats().num_preemptions);
  };
  const auto [ample, none] = run(1024);
  const auto [tight, preemptions] = run(40);
  CHECK(none == 0);
  CHECK(preemptions > 0);
  for (const auto& [id, c] : ample) {
    for (std::size_t i = 0; i < c.choices.size(); ++i) {
      check_choice(g, tight.at(id).choices[i]);
      CHECK(tight.at(id).choices[i].tokens == c.choices[i].tokens);
    }
  }
}

TEST_CASE("grammar: a complete choice stops without an EOS step, EOS only where the grammar may end") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  auto vocab = grammar::TokenVocabulary::from_tokenizer(*tokenizer, 151936, {kEos});
  grammar::GrammarBuilder b;
  const int32_t root = b.add_rule("root", grammar::alt({grammar::literal("yes"), grammar::literal("no"),
                                                         grammar::literal("maybe later")}));
  auto built = b.build(root);
  REQUIRE(built.ok());
  auto compiled = grammar::CompiledGrammar::create(*built, vocab);
  auto engine = models.engine({.num_kv_blocks = 256}, tokenizer);
  for (uint64_t seed = 0; seed < 12; ++seed) {
    REQUIRE(engine->submit(sampled(*tokenizer->encode("Answer:"), seed, 50, compiled)).ok());
  }
  for (const auto& [id, c] : run_all(*engine)) {
    const CollectedChoice& choice = c.choices.front();
    CHECK(choice.finish_reason == FinishReason::stop);
    CHECK((choice.text == "yes" || choice.text == "no" || choice.text == "maybe later"));
    CHECK(std::find(choice.tokens.begin(), choice.tokens.end(), kEos) == choice.tokens.end());
  }
  // A grammar that may end or go on ("a" then any number of "b"): EOS is the only way to stop.
  grammar::GrammarBuilder open;
  const int32_t r2 = open.add_rule("root", grammar::seq({grammar::literal("a"), grammar::star(grammar::literal("b"))}));
  auto open_compiled = grammar::CompiledGrammar::create(*open.build(r2), vocab);
  for (uint64_t seed = 0; seed < 6; ++seed) REQUIRE(engine->submit(sampled({1, 2, 3}, seed, 30, open_compiled)).ok());
  for (const auto& [id, c] : run_all(*engine)) {
    const CollectedChoice& choice = c.choices.front();
    INFO(choice.text);
    CHECK(grammar::reference_match(open.exprs(), r2, choice.text));
    if (choice.finish_reason == FinishReason::stop) CHECK(choice.tokens.back() == kEos);
  }
}

namespace {

// A model in front of the mock plugin that says whether it waits for masks, and records what the
// engine hands it: whether masks were still pending, and how often the wait ran.
template <bool Waits>
struct MaskProbe {
  static constexpr bool kWaitsForMasks = Waits;
  AnyModel inner;
  std::shared_ptr<int> pending_steps = std::make_shared<int>(0);
  std::shared_ptr<int> waits = std::make_shared<int>(0);

  const ModelInfo& info() const { return inner.info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return inner.init_kv_cache(config); }
  Status copy_blocks(std::span<const BlockCopy> copies) { return inner.copy_blocks(copies); }
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
    if (out.wait_for_masks == nullptr) return inner.step(batch, sampling, out);
    ++*pending_steps;
    const std::function<Status()> counted = [&] {
      ++*waits;
      return (*out.wait_for_masks)();
    };
    StepOutput probed = out;
    probed.wait_for_masks = &counted;
    return inner.step(batch, sampling, probed);
  }
};

}  // namespace

TEST_CASE("grammar: masks made while the forward pass runs equal masks made before it") {
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  const TestGrammar g = json_test_grammar();
  const std::vector<TokenId> prompt = *tokenizer->encode("Reply in JSON:");
  auto run = [&](auto probe) {
    auto pending = probe.pending_steps;
    auto waits = probe.waits;
    auto engine = LLMEngine::create(EngineModel(std::move(probe)), {.num_kv_blocks = 512, .seed = 1234}, tokenizer);
    REQUIRE(engine.ok());
    for (uint64_t seed = 0; seed < 12; ++seed) REQUIRE((*engine)->submit(sampled(prompt, seed, 40, g.compiled)).ok());
    REQUIRE((*engine)->submit(sampled(prompt, 99, 20, nullptr)).ok());  // an unconstrained neighbour
    auto results = run_all(**engine);
    CHECK((*engine)->stats().times.mask_ns > 0);
    return std::tuple(std::move(results), *pending, *waits);
  };
  const auto [overlapped, pending, waits] = run(MaskProbe<true>{.inner = models.open()});
  const auto [upfront, pending_upfront, waits_upfront] = run(MaskProbe<false>{.inner = models.open()});
  CHECK(pending > 10);         // grammar steps reached the model with masks still being made
  CHECK(waits == pending);     // and it waited once in each, through the plugin ABI's callback
  CHECK(pending_upfront == 0);  // a model that does not wait gets them made before its step
  REQUIRE(overlapped.size() == upfront.size());
  for (const auto& [id, c] : overlapped) {
    const Collected& other = upfront.at(id);
    REQUIRE(c.choices.size() == other.choices.size());
    for (std::size_t i = 0; i < c.choices.size(); ++i) {
      CHECK(c.choices[i].tokens == other.choices[i].tokens);
      if (id <= 12) check_choice(g, c.choices[i]);
    }
  }
}

TEST_CASE("grammar: speculation keeps constrained outputs token for token (masks made after the drafts)") {
  // Rows after a draft get the mask of the grammar advanced over the drafts before them. Replayed
  // drafts (always right) are accepted; shifted ones (mostly outside the grammar) are rejected by
  // the mask; either way the seeded outputs equal those without speculation.
  MockModels models(kQwenSizedMock);
  auto tokenizer = qwen2_tokenizer();
  const TestGrammar g = json_test_grammar();
  const std::vector<TokenId> prompt = *tokenizer->encode("Reply in JSON:");
  std::vector<GenerateRequest> requests;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    GenerateRequest r = sampled(prompt, seed, 40, g.compiled);
    if (seed % 4 == 0) r.sampling.temperature = 0.0f;
    if (seed % 5 == 0) r.n = 2;
    requests.push_back(std::move(r));
  }
  auto plain = models.engine({.num_kv_blocks = 512}, tokenizer);
  for (const GenerateRequest& r : requests) REQUIRE(plain->submit(r).ok());
  const auto expected = run_all(*plain);
  std::vector<std::vector<TokenId>> known;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    std::vector<TokenId> tokens = prompt;
    const auto& out = expected.at(static_cast<RequestId>(i + 1)).choices[0].tokens;
    tokens.insert(tokens.end(), out.begin(), out.end());
    known.push_back(std::move(tokens));
  }
  for (const bool wrong : {false, true}) {
    INFO((wrong ? "always-wrong" : "replayed") << " drafts");
    EngineConfig config{.num_kv_blocks = 512, .num_speculative_tokens = 4};
    config.proposer = std::make_shared<ReplayProposer>(known, 151936, wrong);
    auto engine = models.engine(config, tokenizer);
    for (const GenerateRequest& r : requests) REQUIRE(engine->submit(r).ok());
    const auto got = run_all(*engine);
    REQUIRE(got.size() == expected.size());
    for (const auto& [id, c] : expected) {
      REQUIRE(got.at(id).choices.size() == c.choices.size());
      for (std::size_t i = 0; i < c.choices.size(); ++i) {
        INFO("request " << id << " choice " << i);
        CHECK(got.at(id).choices[i].tokens == c.choices[i].tokens);
        CHECK(got.at(id).choices[i].finish_reason == c.choices[i].finish_reason);
        check_choice(g, got.at(id).choices[i]);
      }
    }
    CHECK(engine->stats().num_draft_tokens > 0);
    if (wrong) {
      CHECK(engine->stats().num_accepted_draft_tokens == 0);
    } else {
      CHECK(engine->stats().num_accepted_draft_tokens > engine->stats().num_draft_tokens / 2);
    }
  }
}
