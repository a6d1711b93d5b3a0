#pragma once
// ForwardBatch: the tokens of one model pass, as a structure of arrays over caller-owned memory.
// It is the C++ face of llaisys_forward_batch (plugin_abi.h) and converts to and from it without
// copying; see there for the full contract.

#include <span>

#include "llaisys/core/status.hpp"
#include "llaisys/model/plugin_abi.h"
#include "llaisys/model/types.hpp"

namespace llaisys {

struct ModelInfo;

struct ForwardBatch {
  std::span<const TokenId> token_ids;   // [num_tokens]
  std::span<const int32_t> positions;   // [num_tokens]
  std::span<const int32_t> seq_indices; // [num_tokens] in [0, num_seqs)
  std::span<const BlockId* const> block_tables;  // [num_seqs]
  std::span<const int32_t> block_table_lens;     // [num_seqs]
  std::span<const int32_t> output_token_indices; // [num_outputs] in [0, num_tokens)
  OutputKind output_kind = OutputKind::logits;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_seqs() const { return static_cast<int32_t>(block_tables.size()); }
  int32_t num_outputs() const { return static_cast<int32_t>(output_token_indices.size()); }
  std::span<const BlockId> block_table(int32_t seq) const {
    const auto s = static_cast<std::size_t>(seq);
    return {block_tables[s], static_cast<std::size_t>(block_table_lens[s])};
  }

  llaisys_forward_batch to_c() const;
  // Fails when counts are negative or arrays are missing; does not check contents.
  static Result<ForwardBatch> from_c(const llaisys_forward_batch& batch);
};

// Checks everything a model relies on before touching memory: token ids inside the vocabulary,
// positions inside the context and covered by the block table, block ids inside the pool, sequences
// contiguous and increasing, output indices in range (validate_step adds the outputs' checks).
// With info.sliding_window = W > 0, a sequence's leading entries may be kNoBlock for the blocks
// wholly before the window of its first token in the batch (positions < p_first - W + 1); every
// block from there on (all that its tokens read or write, and any later entry) must be a valid id.
// Without a window kNoBlock is an error like any other id outside the pool.
Status validate_forward_batch(const ForwardBatch& batch, const ModelInfo& info, const KvCacheConfig& kv_config);

}  // namespace llaisys
