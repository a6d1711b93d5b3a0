#pragma once
// Fixtures for the engine tests: the mock model through the real plugin path, engines over it, a
// collector that merges a run's deltas per request, and an independent greedy reference (one
// sequence, a contiguous block table, no scheduler, no KV store, no prefix cache).

#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/model/registry.hpp"
#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "temp_dir.hpp"

namespace llaisys::test {

// vocab 512, EOS 2 as the argmax at about 1 position in 24: sequences of varied lengths.
inline constexpr const char* kMockConfig = R"({"architectures": ["LlaisysMockForCausalLM"],
  "vocab_size": 512, "hidden_size": 16, "max_position_embeddings": 4096, "eos_token_id": 2,
  "bos_token_id": 1, "mock": {"eos_period": 24}})";

// Opens a model directory through the plugin registry (mock, qwen2, ...) and builds engines on it.
class TestModels {
 public:
  explicit TestModels(std::filesystem::path model_dir, int32_t num_threads = 0)
      : model_dir_(std::move(model_dir)), num_threads_(num_threads) {
    registry_.load_directory(LLAISYS_PLUGIN_DIR);
  }
  AnyModel open(const std::string& options = "{}") const {
    auto model = registry_.open_model({.model_dir = model_dir_, .num_threads = num_threads_, .options_json = options});
    REQUIRE(model.ok());
    return std::move(model).value();
  }
  std::unique_ptr<LLMEngine> engine(EngineConfig config, std::shared_ptr<const text::Tokenizer> tokenizer = nullptr,
                                    const std::string& options = "{}") const {
    if (!config.seed) config.seed = 1234;
    auto engine = LLMEngine::create(EngineModel(open(options)), config, std::move(tokenizer));
    REQUIRE(engine.ok());
    return std::move(engine).value();
  }
  const std::filesystem::path& dir() const { return model_dir_; }

 private:
  std::filesystem::path model_dir_;
  int32_t num_threads_;
  PluginRegistry registry_;
};

struct OwnedTempDir {
  TempDir temp_dir;
};

// The mock model (plugins/mock) with `config` as its config.json, in a directory of its own.
class MockModels : private OwnedTempDir, public TestModels {
 public:
  explicit MockModels(const std::string& config = kMockConfig)
      : OwnedTempDir(), TestModels(temp_dir.write("config.json", config).parent_path()) {}
};

struct CollectedChoice {
  std::vector<TokenId> tokens;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::optional<FinishReason> finish_reason;
  std::string finish_detail;
  int num_finishes = 0;
};

struct Collected {
  std::vector<CollectedChoice> choices;
  Usage usage;
  RequestTimes times;
  std::vector<float> embedding;
  std::vector<TokenLogprob> prompt_logprobs;
  int num_prompt_logprob_outputs = 0;  // outputs that carried prompt logprobs
  int num_final_outputs = 0;
  int num_outputs = 0;
};

// Merges outputs into `into`, checking the delta contract on the way.
inline void collect(const std::vector<RequestOutput>& outputs, std::map<RequestId, Collected>& into) {
  for (const RequestOutput& out : outputs) {
    Collected& c = into[out.id];
    REQUIRE(c.num_final_outputs == 0);  // nothing after the last output
    ++c.num_outputs;
    for (const ChoiceDelta& delta : out.choices) {
      if (c.choices.size() <= static_cast<std::size_t>(delta.index)) c.choices.resize(static_cast<std::size_t>(delta.index) + 1);
      CollectedChoice& choice = c.choices[static_cast<std::size_t>(delta.index)];
      REQUIRE(choice.num_finishes == 0);
      choice.tokens.insert(choice.tokens.end(), delta.token_ids.begin(), delta.token_ids.end());
      choice.text += delta.text;
      choice.logprobs.insert(choice.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
      if (delta.finish_reason) {
        choice.finish_reason = delta.finish_reason;
        choice.finish_detail = delta.finish_detail;
        ++choice.num_finishes;
      }
    }
    if (!out.prompt_logprobs.empty()) {
      ++c.num_prompt_logprob_outputs;
      c.prompt_logprobs = out.prompt_logprobs;
    }
    c.usage = out.usage;
    c.times = out.times;
    if (out.finished) {
      ++c.num_final_outputs;
      c.embedding = out.embedding;
      for (const CollectedChoice& choice : c.choices) REQUIRE(choice.num_finishes == 1);
    }
  }
}

inline std::map<RequestId, Collected> run_all(LLMEngine& engine, int max_steps = 100000) {
  std::map<RequestId, Collected> results;
  for (int step = 0; engine.has_unfinished() && step < max_steps; ++step) collect(engine.step(), results);
  REQUIRE_FALSE(engine.has_unfinished());
  return results;
}

// A mock of Qwen2's vocabulary size (EOS <|im_end|>, text tokens below 6000: plain words and
// pieces), for tests that need the real Qwen2 tokenizer's text.
inline constexpr const char* kQwenSizedMock = R"({"architectures": ["LlaisysMockForCausalLM"],
  "vocab_size": 151936, "hidden_size": 8, "max_position_embeddings": 2048, "eos_token_id": 151645,
  "mock": {"text_vocab_size": 6000, "eos_period": 40}})";

inline std::shared_ptr<const text::Tokenizer> qwen2_tokenizer() {
  static auto tokenizer = [] {
    auto loaded = text::Tokenizer::from_model_dir(std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer");
    REQUIRE(loaded.ok());
    return loaded.value();
  }();
  return tokenizer;
}

inline GenerateRequest greedy_request(std::vector<TokenId> prompt, int32_t max_tokens) {
  GenerateRequest request{.prompt_ids = std::move(prompt)};
  request.sampling.temperature = 0.0f;
  request.stop.max_tokens = max_tokens;
  return request;
}

// One sequence straight on the model: blocks 0.. in order, every block kept, one pass per call over
// the tokens not yet fed; no scheduler, KV store or prefix cache.
class ReferenceSequence {
 public:
  static constexpr int32_t kBlock = 16;
  ReferenceSequence(AnyModel& model, std::vector<TokenId> prompt, int32_t context)
      : model_(model), tokens_(std::move(prompt)), table_(static_cast<std::size_t>((context + kBlock - 1) / kBlock)),
        logits_(static_cast<std::size_t>(model.info().vocab_size)) {
    REQUIRE(model.init_kv_cache({.num_blocks = static_cast<int32_t>(table_.size()), .block_size = kBlock}).ok());
    std::iota(table_.begin(), table_.end(), 0);
  }
  // The raw logits after the last token (feeds what was appended since the previous call).
  std::span<float> next_logits() {
    const std::size_t n = tokens_.size() - fed_;
    std::vector<int32_t> positions(n), seqs(n, 0);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(fed_));
    const BlockId* tables[] = {table_.data()};
    const int32_t lens[] = {static_cast<int32_t>(table_.size())};
    const int32_t last[] = {static_cast<int32_t>(n - 1)};
    REQUIRE(model_.forward({.token_ids = std::span(tokens_).subspan(fed_), .positions = positions, .seq_indices = seqs,
                            .block_tables = tables, .block_table_lens = lens, .output_token_indices = last},
                           logits_).ok());
    fed_ = tokens_.size();
    return logits_;
  }
  void append(TokenId token) { tokens_.push_back(token); }
  std::size_t size() const { return tokens_.size(); }

 private:
  AnyModel& model_;
  std::vector<TokenId> tokens_;
  std::vector<BlockId> table_;
  std::vector<float> logits_;
  std::size_t fed_ = 0;
};

// Greedy generation for one prompt straight on the model; stops at an EOS id unless `ignore_eos`.
inline std::vector<TokenId> reference_greedy(AnyModel& model, const std::vector<TokenId>& prompt, int32_t max_tokens,
                                             int32_t context, bool ignore_eos = false) {
  const ModelInfo& info = model.info();
  ReferenceSequence sequence(model, prompt, context);
  std::vector<TokenId> output;
  while (static_cast<int32_t>(output.size()) < max_tokens) {
    const TokenId next = argmax(sequence.next_logits());
    output.push_back(next);
    sequence.append(next);
    if (!ignore_eos && std::find(info.eos_token_ids.begin(), info.eos_token_ids.end(), next) != info.eos_token_ids.end()) {
      break;
    }
    if (static_cast<int32_t>(sequence.size()) >= context) break;
  }
  return output;
}

// Seeded sampling for one prompt straight on the model, as ABI 2 defines it: raw logits from a plain
// forward, then the request's penalties (from the whole history) and bias, then the draw with
// u = counter_uniform01(seed, position of the sampled token). EOS is ignored; no engine, scheduler,
// sequence slot or KV store involved.
inline std::vector<TokenId> reference_sampled(AnyModel& model, const std::vector<TokenId>& prompt,
                                              const SamplingParams& params, uint64_t seed, int32_t max_tokens) {
  ReferenceSequence sequence(model, prompt, static_cast<int32_t>(prompt.size()) + max_tokens);
  LogitsSampler sampler;
  SlotCounts scratch;
  std::vector<TokenId> output;
  while (static_cast<int32_t>(output.size()) < max_tokens) {
    const std::span<float> logits = sequence.next_logits();
    apply_penalties(logits, TokenHistory(prompt, output), params, scratch);
    const TokenId next = sampler.pick(logits, draw_params(params), counter_uniform01(seed, sequence.size()));
    output.push_back(next);
    sequence.append(next);
  }
  return output;
}

// Deterministic pseudo-random prompt of `length` text tokens (ids 3..511).
inline std::vector<TokenId> make_prompt(uint64_t seed, int32_t length) {
  std::vector<TokenId> prompt;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int32_t i = 0; i < length; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    prompt.push_back(static_cast<TokenId>(3 + x % 509));
  }
  return prompt;
}

}  // namespace llaisys::test
