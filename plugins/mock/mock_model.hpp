#pragma once
// MockModel: a deterministic stand-in for a language model, for engine and server tests.
//
// The "KV cache" stores, for each token slot, a 64-bit hash of the sequence up to that position:
// slot(p) = mix(slot(p-1), token(p)). Logits and hidden states are a pure function of that hash, so
// the output for a position depends on exactly the tokens before it — and on the engine handing the
// model correct block tables: a wrong block, a stale cached block or a missing position changes the
// output or fails the step ("position N is not in the KV cache"), which is what the tests look for.
// With a sliding window W the slot also keeps its token, and slot(p) is the hash of the tokens at
// positions max(0, p - W + 1)..p alone, read back through the block table: the output depends on
// exactly the tokens inside the window (so it equals the output of a window-less mock fed only those
// tokens), and a window block that is not a valid id fails the step.
//
// config.json:  architectures ["LlaisysMockForCausalLM"], vocab_size, hidden_size,
//               max_position_embeddings, eos_token_id (int or list), bos_token_id, and an optional
//               "mock" object; the same keys in the create options override it:
//   delay_ms_per_step   sleep per step() call                            (default 0)
//   delay_us_per_token  sleep per batch token, to imitate a long prefill (default 0)
//   load_delay_ms       sleep in create(), to imitate a slow load (readiness tests) (default 0)
//   eos_period          > 0: EOS is the argmax at about 1 in eos_period positions (default 0: never)
//   text_vocab_size     ids >= this get logit -30, keeping specials out  (default vocab_size)
//   seed                mixed into every hash                            (default 0)
//   sliding_window      > 0: every position attends the last N positions only, reported in
//                       ModelInfo::sliding_window (default 0: full attention; not 1 with replies)
//   replies             scripted answers: [{"when_prompt_contains": [ids], "ids": [ids]}, ...]. For a
//                       sequence containing the when_prompt_contains ids (contiguously; [] always
//                       matches), the argmax of generated position k is ids[k], then EOS. The first
//                       matching entry wins. The script is a pure function of the tokens (so the
//                       prefix cache cannot confuse it): a sequence "follows" entry e while its
//                       latest tokens are ids[0..k); otherwise the argmax is ids[0] of the first
//                       entry whose trigger occurred.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "llaisys/model/model.hpp"
#include "llaisys/sampling/step_sampler.hpp"

namespace llaisys::mock {

struct ScriptedReply {
  std::vector<TokenId> when_prompt_contains;
  std::vector<TokenId> ids;
  std::vector<int32_t> failure;  // KMP failure function of when_prompt_contains
};

struct MockConfig {
  int32_t vocab_size = 512;
  int32_t hidden_size = 64;
  int32_t max_context = 4096;
  int32_t text_vocab_size = 512;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;
  int64_t delay_ms_per_step = 0;
  int64_t delay_us_per_token = 0;
  int64_t load_delay_ms = 0;
  int64_t eos_period = 0;
  uint64_t seed = 0;
  int32_t sliding_window = 0;
  std::vector<ScriptedReply> replies;
};

class MockModel {
 public:
  // step() calls out.wait_for_masks after the forward pass (masks made while it runs).
  static constexpr bool kWaitsForMasks = true;
  static Result<std::unique_ptr<MockModel>> create(const ModelCreateParams& params);
  explicit MockModel(MockConfig config);

  const ModelInfo& info() const { return info_; }
  Status init_kv_cache(const KvCacheConfig& config);
  // Computes the rows; with sampling rows, samples them with the framework's StepSampler (the CPU
  // models' sampler), so engine tests exercise the real sampling path.
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out);
  Status forward(const ForwardBatch& batch, std::span<float> rows) { return step(batch, {}, StepOutput{.rows = rows}); }
  Status copy_blocks(std::span<const BlockCopy> copies);

  // The pure functions behind step(), exposed so tests can compute expected outputs directly.
  static uint64_t mix(uint64_t prefix_hash, TokenId token);
  uint64_t initial_hash() const;
  void fill_logits(uint64_t hash, std::span<float> row) const;
  void fill_hidden(uint64_t hash, std::span<float> row) const;

 private:
  Status compute_rows(const ForwardBatch& batch, std::span<float> out);
  std::size_t slot_of(std::span<const BlockId> table, int32_t position) const;
  // The hash of position `pos` (token `token`) given what the cache holds before it.
  Result<uint64_t> hash_at(std::span<const BlockId> table, int32_t seq, int32_t pos, TokenId token) const;

  MockConfig config_;
  ModelInfo info_;
  KvCacheConfig kv_config_;
  // Scripted replies: per slot, which reply the sequence follows (-1: none) and how far, and the
  // KMP progress of every trigger (== its length once it occurred).
  struct ScriptState {
    int32_t follow = -1;
    int32_t progress = 0;
  };
  void script_step(std::size_t prev_slot, bool has_prev, std::size_t slot, TokenId token);
  void script_logits(std::size_t slot, std::span<float> row) const;
  int32_t first_triggered(std::size_t slot) const;

  std::vector<uint64_t> slots_;  // [num_blocks * block_size], 0 = never written
  std::vector<TokenId> slot_tokens_;     // [slots] with a sliding window, -1 = never written
  std::vector<ScriptState> script_;      // [slots] when replies are configured
  std::vector<int32_t> triggers_;        // [slots x replies]
  StepSampler sampler_;
  std::vector<float> logits_;            // [outputs x vocab] of a sampled step
};

static_assert(PluginModel<MockModel>);

}  // namespace llaisys::mock
