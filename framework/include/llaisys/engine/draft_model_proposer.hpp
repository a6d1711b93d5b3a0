#pragma once
// DraftModelProposer: speculative decoding's draft model (vLLM's and llama.cpp's "draft model"):
// a second, smaller model with the same tokenizer proposes each sequence's next k tokens, one
// batched step of the draft model per draft position, and the target verifies them in one pass.
//
// The draft keeps its own paged KV cache (its own block pool, a table per sequence) and remembers
// which tokens each sequence's cache holds, so a step only runs what is new: the tokens the target
// accepted since the last step (usually one or two), then the drafts. Rejected drafts are dropped by
// forgetting everything past the longest common prefix. A greedy request gets the draft's most
// likely tokens (checked by equality with the target's draws); a sampled one gets tokens drawn from
// the draft's distribution q under the request's temperature / min_p / top_k / top_p, q travels
// with them, and the engine decides by speculative sampling (sampling/speculative.hpp).
//
// Never fails a target step: when the draft's pool is full or its step fails, the sequences
// concerned get no drafts and decode one token as without speculation.

#include <memory>
#include <unordered_map>
#include <vector>

#include "llaisys/engine/engine_model.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/scheduler/draft_proposer.hpp"

namespace llaisys {

struct DraftModelConfig {
  int32_t block_size = 16;
  uint64_t kv_cache_bytes = uint64_t{256} << 20;  // the draft's KV pool
  int32_t target_vocab_size = 0;  // the target's vocabulary: drafts stay inside it (0: the draft's)
  int32_t max_num_blocks = 0;     // > 0: at most this many blocks, whatever the budget holds
};

struct DraftModelStats {
  int64_t num_steps = 0;         // draft model steps
  int64_t num_tokens = 0;        // tokens they ran (catch-up and drafts)
  int64_t num_failed_steps = 0;
  int64_t num_starved = 0;       // sequences given no drafts because the pool was full
  uint64_t step_ns = 0;          // time in the draft model and its sampling
};

class DraftModelProposer final : public DraftProposer {
 public:
  static Result<std::shared_ptr<DraftModelProposer>> create(EngineModel model, const DraftModelConfig& config);

  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override;
  void release(SeqId seq) override;
  std::string_view method() const override { return "draft"; }
  int32_t num_blocks_held() const override { return num_blocks_ - num_free_blocks(); }

  const ModelInfo& info() const { return model_.info(); }
  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_blocks_.size()); }
  const DraftModelStats& stats() const { return stats_; }

 private:
  DraftModelProposer(EngineModel model, const DraftModelConfig& config, int32_t num_blocks);

  struct SeqState {
    std::vector<TokenId> cached;  // tokens whose K/V the draft's cache holds, from position 0
    std::vector<BlockId> blocks;
  };
  // One sequence's share of the current propose() call.
  struct Active {
    std::size_t request = 0;  // index into the requests
    SeqState* state = nullptr;
    std::vector<TokenId> run;  // what the next draft step runs for it
    int32_t start = 0;         // the position of run[0]
  };
  bool reserve(SeqState& state, int32_t num_tokens, std::span<const DraftRequest> requests);
  void drop(SeqId seq);
  // One draft step over every active sequence's `run`; the logits of each one's last token land in
  // logits_ (one row per active sequence, in order).
  Status run_step(std::span<const Active> active);
  // Draws the draft token of `active` from its logits row; appends it (and q when sampled).
  void draw(const DraftRequest& request, std::span<float> logits, int32_t position, Draft& draft);

  EngineModel model_;
  DraftModelConfig config_;
  int32_t num_blocks_;
  std::vector<BlockId> free_blocks_;
  std::unordered_map<SeqId, SeqState> seqs_;
  LogitsSampler sampler_;
  DraftModelStats stats_;
  // Scratch for a step.
  std::vector<TokenId> token_ids_;
  std::vector<int32_t> positions_, seq_indices_, table_lens_, output_indices_;
  std::vector<const BlockId*> tables_;
  std::vector<float> logits_, probs_;
  std::vector<uint32_t> allowed_;  // the target's vocabulary, when the draft's is larger
};

}  // namespace llaisys
