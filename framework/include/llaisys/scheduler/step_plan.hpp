#pragma once
// The values one engine step passes around: the scheduler's plan (SchedulerOutput: which chunks of
// which sequences run, block copies, preemptions) and the engine's verdict on it (StepResult). The
// plan carries everything output processing needs, so nothing downstream reads scheduler state.

#include <optional>
#include <vector>

#include "llaisys/model/types.hpp"
#include "llaisys/scheduler/scheduler.hpp"
#include "llaisys/scheduler/sequence.hpp"

namespace llaisys {

// One sequence's share of a step.
struct ScheduledChunk {
  SeqId seq = -1;
  RequestId request_id = -1;
  int32_t start_position = 0;             // tokens already in the KV cache
  std::vector<TokenId> token_ids;         // [num_tokens] at positions start_position..
  std::vector<BlockId> block_table;       // covers start_position + num_tokens slots
  OutputKind output_kind = OutputKind::logits;
  bool completes_sequence = false;        // the chunk ends at the sequence's last token
  int32_t num_cached_tokens = 0;          // the sequence's prefix-cache hit at its first admission
  std::vector<SeqId> sample_for;          // who samples from this chunk's logits row (itself and
                                          // the choices forking from it); empty: no output row
  // Speculative decoding: token_ids = [the sequence's last token, drafts...]; the sequence samples
  // one row per position (num_draft_tokens + 1 rows) and keeps the drafts the rows agree with.
  int32_t num_draft_tokens = 0;
  std::vector<float> draft_probs;         // empty, or [num_draft_tokens x vocab]: Draft::probs
  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  // The position of the token sampled from this chunk's last row (the sequence's length before it,
  // plus the drafts).
  int32_t end_position() const { return start_position + num_tokens(); }
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;     // decodes first, then prefill chunks
  std::vector<BlockCopy> block_copies;    // apply (Model::copy_blocks) before the forward pass
  std::vector<SeqId> preempted;
  std::vector<FinishedSeq> finished;      // finished without running (ignored, capped)
  int32_t num_batched_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

// The engine's verdict on one sequence after a step.
struct SeqUpdate {
  SeqId seq = -1;
  std::optional<TokenId> token;           // the sampled token, if the chunk produced one
  std::vector<TokenId> extra_tokens;      // speculative chunks: the tokens accepted after `token`,
                                          // in order (the drafts that matched, then the bonus one)
  SeqStatus finish = SeqStatus::running;  // a finished_* status ends the sequence
};

struct StepResult {
  std::vector<SeqUpdate> updates;
};

}  // namespace llaisys
