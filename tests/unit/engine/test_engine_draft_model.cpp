// Speculative decoding with a draft model (DraftModelProposer) on real plugins: stories260K as the
// target, drafted by a different model with its vocabulary (tiny-llama, random weights: mostly
// wrong) and by stories260K quantized to Q4_0 on load (a close but different model: mostly right).
//  - greedy: outputs equal plain greedy token for token, 1-32 sequences, under preemption;
//  - sampling: a chi-square test that the first tokens' joint distribution equals the
//    non-speculative one, with a control showing the same test tells the draft's own distribution
//    apart from the target's;
//  - abort mid-run frees every block of the target's and the draft's pools.

#include <cmath>
#include <map>

#include "llaisys/engine/draft_model_proposer.hpp"
#include "real_models.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

std::shared_ptr<DraftModelProposer> draft_of(const TestModels& models, const std::string& options = "{}") {
  auto proposer = DraftModelProposer::create(EngineModel(models.open(options)),
                                             {.block_size = 16, .kv_cache_bytes = uint64_t{16} << 20});
  REQUIRE(proposer.ok());
  return proposer.value();
}

EngineConfig speculative(EngineConfig config, std::shared_ptr<DraftProposer> proposer, int32_t k) {
  config.proposer = std::move(proposer);
  config.num_speculative_tokens = k;
  return config;
}

// Two-sample chi-square test of homogeneity: are `a` and `b` (counts per category) draws from one
// distribution? Categories with fewer than 10 pooled draws are merged into one. Returns the
// statistic over its critical value at significance 1e-3 (Wilson-Hilferty): > 1 rejects.
double chi_square_ratio(const std::map<std::vector<TokenId>, int>& a, const std::map<std::vector<TokenId>, int>& b) {
  std::map<std::vector<TokenId>, std::pair<double, double>> cells;
  double na = 0.0, nb = 0.0;
  for (const auto& [k, v] : a) {
    cells[k].first += v;
    na += v;
  }
  for (const auto& [k, v] : b) {
    cells[k].second += v;
    nb += v;
  }
  std::vector<std::pair<double, double>> merged;
  std::pair<double, double> rare{0.0, 0.0};
  for (const auto& [k, c] : cells) {
    if (c.first + c.second >= 10.0) {
      merged.push_back(c);
    } else {
      rare.first += c.first;
      rare.second += c.second;
    }
  }
  if (rare.first + rare.second > 0.0) merged.push_back(rare);
  double statistic = 0.0;
  for (const auto& [x, y] : merged) {
    const double total = x + y;
    const double ex = total * na / (na + nb), ey = total * nb / (na + nb);
    statistic += (x - ex) * (x - ex) / ex + (y - ey) * (y - ey) / ey;
  }
  const double df = static_cast<double>(merged.size()) - 1.0;
  if (df < 1.0) return 0.0;
  const double z = 3.0902;  // the standard normal's 1 - 1e-3 quantile
  const double h = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1.0 - h + z * std::sqrt(h), 3.0);
  INFO("chi-square " << statistic << " over " << df << " degrees of freedom, critical " << critical);
  return statistic / critical;
}

// The first max_tokens tokens of `count` sampled requests (seeds first_seed..), as counts per sequence.
std::map<std::vector<TokenId>, int> sample_runs(LLMEngine& engine, const std::vector<TokenId>& prompt,
                                                const SamplingParams& sampling, int count, uint64_t first_seed,
                                                int32_t max_tokens) {
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < count; ++i) {
    GenerateRequest r = greedy_request(prompt, max_tokens);
    r.sampling = sampling;
    r.sampling.seed = first_seed + static_cast<uint64_t>(i);
    r.stop.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  std::map<std::vector<TokenId>, int> counts;
  for (const auto& [id, result] : run_checked(engine, requests)) ++counts[result.choices[0].tokens];
  return counts;
}

}  // namespace

TEST_CASE("draft model: greedy outputs equal plain greedy, 1-32 sequences, preemption") {
  auto tokenizer = tokenizer_of(stories());
  for (const bool close : {false, true}) {
    INFO((close ? "Q4_0 stories260K" : "tiny-llama") << " drafts");
    int64_t drafted = 0, accepted = 0;
    for (int count : {1, 8, 32}) {
      INFO(count << " sequences");
      const std::vector<GenerateRequest> requests = story_prompts(*tokenizer, count, 40);
      const auto expected = run_checked(*stories().engine({.num_kv_blocks = 256}, tokenizer), requests);
      auto draft = close ? draft_of(stories(), R"({"weights_dtype": "q4_0"})") : draft_of(tiny_llama());
      auto engine = stories().engine(speculative({.num_kv_blocks = 256}, draft, 4), tokenizer);
      check_same(run_checked(*engine, requests), expected);
      drafted += engine->stats().num_draft_tokens;
      accepted += engine->stats().num_accepted_draft_tokens;
      CHECK(draft->num_free_blocks() == draft->num_blocks());  // every finished sequence released
      if (count == 8) {  // 8 sequences in a pool that holds about 3, 32-token steps
        auto tight = stories().engine(
            speculative({.block_size = 4, .num_kv_blocks = 3 * (40 + 40) / 4, .max_num_batched_tokens = 32}, draft, 4),
            tokenizer);
        check_same(run_checked(*tight, requests), expected);
        CHECK(tight->stats().num_preemptions > 0);
        CHECK(draft->num_free_blocks() == draft->num_blocks());
      }
    }
    CHECK(drafted > 0);
    if (close) CHECK(accepted > drafted / 2);  // the quantized copy mostly agrees
  }
}

TEST_CASE("draft model: abort during verification frees every block of both pools") {
  auto tokenizer = tokenizer_of(stories());
  auto draft = draft_of(stories(), R"({"weights_dtype": "q4_0"})");
  auto engine = stories().engine(speculative({.num_kv_blocks = 256}, draft, 4), tokenizer);
  std::vector<RequestId> ids;
  for (const GenerateRequest& r : story_prompts(*tokenizer, 8, 200)) ids.push_back(engine->submit(r).value());
  for (int step = 0; step < 12; ++step) {
    engine->step();
    REQUIRE(engine->check_kv_invariants().ok());
  }
  CHECK(engine->stats().num_draft_tokens > 0);
  CHECK(draft->num_free_blocks() < draft->num_blocks());
  for (RequestId id : ids) engine->abort(id);
  engine->step();
  REQUIRE(engine->check_kv_invariants().ok());
  const KVStats kv = engine->stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
  CHECK(draft->num_free_blocks() == draft->num_blocks());
}

TEST_CASE("draft model: speculative sampling keeps the first tokens' distribution (chi-square)") {
  auto tokenizer = tokenizer_of(stories());
  const std::vector<TokenId> prompt = tokenizer->encode("Once upon a time, there was a little").value();
  constexpr int kDraws = 3000;
  constexpr int32_t kTokens = 3;  // the first from the prefill, the next two through verification
  struct Case {
    const char* name;
    SamplingParams sampling;
    bool close;
  };
  const std::vector<Case> cases = {
      {"T 1, top_k 6, Q4_0 draft", {.temperature = 1.0f, .top_k = 6}, true},
      {"T 1.5, top_p 0.95, Q4_0 draft", {.temperature = 1.5f, .top_p = 0.95f}, true},
      {"T 1, tiny-llama draft", {.temperature = 1.0f}, false},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto plain = stories().engine({.num_kv_blocks = 512, .max_num_seqs = 64}, tokenizer);
    const auto expected = sample_runs(*plain, prompt, c.sampling, kDraws, 1, kTokens);
    auto draft = c.close ? draft_of(stories(), R"({"weights_dtype": "q4_0"})") : draft_of(tiny_llama());
    auto engine = stories().engine(speculative({.num_kv_blocks = 512, .max_num_seqs = 64}, draft, kTokens - 1), tokenizer);
    const auto got = sample_runs(*engine, prompt, c.sampling, kDraws, 1'000'000, kTokens);
    const EngineStats stats = engine->stats();
    INFO("drafts " << stats.num_draft_tokens << ", accepted " << stats.num_accepted_draft_tokens << ", "
                   << got.size() << " distinct outputs");
    WARN(c.name << ": drafts " << stats.num_draft_tokens << ", accepted " << stats.num_accepted_draft_tokens);
    // Both ways of deciding a token ran: accepted drafts and residual draws after rejections.
    CHECK(stats.num_accepted_draft_tokens > 0);
    CHECK(stats.num_accepted_draft_tokens < stats.num_draft_tokens);
    CHECK(chi_square_ratio(got, expected) < 1.0);
  }
  SECTION("control: the same test rejects the draft model's own distribution") {
    // What an engine that kept every draft would produce: tiny-llama's samples.
    const SamplingParams sampling{.temperature = 1.0f, .top_k = 6};
    auto target = stories().engine({.num_kv_blocks = 512, .max_num_seqs = 64}, tokenizer);
    auto drafter = tiny_llama().engine({.num_kv_blocks = 512, .max_num_seqs = 64}, tokenizer);
    CHECK(chi_square_ratio(sample_runs(*drafter, prompt, sampling, kDraws, 1, kTokens),
                           sample_runs(*target, prompt, sampling, kDraws, 1, kTokens)) > 1.0);
  }
}
