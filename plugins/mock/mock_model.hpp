#pragma once
// MockModel: a deterministic stand-in for a language model, for engine and server tests.
//
// The "KV cache" stores, for each token slot, a 64-bit hash of the sequence up to that position:
// slot(p) = mix(slot(p-1), token(p)). Logits and hidden states are a pure function of that hash, so
// the output for a position depends on exactly the tokens before it — and on the engine handing the
// model correct block tables: a wrong block, a stale cached block or a missing position changes the
// output or fails the step ("position N is not in the KV cache"), which is what the tests look for.
//
// config.json:  architectures ["LlaisysMockForCausalLM"], vocab_size, hidden_size,
//               max_position_embeddings, eos_token_id (int or list), bos_token_id, and an optional
//               "mock" object; the same keys in the create options override it:
//   delay_ms_per_step   sleep per forward() call                         (default 0)
//   delay_us_per_token  sleep per batch token, to imitate a long prefill (default 0)
//   eos_period          > 0: EOS is the argmax at about 1 in eos_period positions (default 0: never)
//   text_vocab_size     ids >= this get logit -30, keeping specials out  (default vocab_size)
//   seed                mixed into every hash                            (default 0)

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "llaisys/model/model.hpp"

namespace llaisys::mock {

struct MockConfig {
  int32_t vocab_size = 512;
  int32_t hidden_size = 64;
  int32_t max_context = 4096;
  int32_t text_vocab_size = 512;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;
  int64_t delay_ms_per_step = 0;
  int64_t delay_us_per_token = 0;
  int64_t eos_period = 0;
  uint64_t seed = 0;
};

class MockModel {
 public:
  static Result<std::unique_ptr<MockModel>> create(const ModelCreateParams& params);
  explicit MockModel(MockConfig config);

  const ModelInfo& info() const { return info_; }
  Status init_kv_cache(const KvCacheConfig& config);
  Status forward(const ForwardBatch& batch, std::span<float> out);
  Status copy_blocks(std::span<const BlockCopy> copies);

  // The pure functions behind forward(), exposed so tests can compute expected outputs directly.
  static uint64_t mix(uint64_t prefix_hash, TokenId token);
  uint64_t initial_hash() const;
  void fill_logits(uint64_t hash, std::span<float> row) const;
  void fill_hidden(uint64_t hash, std::span<float> row) const;

 private:
  std::size_t slot_of(std::span<const BlockId> table, int32_t position) const;

  MockConfig config_;
  ModelInfo info_;
  KvCacheConfig kv_config_;
  std::vector<uint64_t> slots_;  // [num_blocks * block_size], 0 = never written
};

static_assert(PluginModel<MockModel>);

}  // namespace llaisys::mock
