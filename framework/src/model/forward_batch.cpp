#include "llaisys/model/forward_batch.hpp"

#include <algorithm>
#include <vector>

#include "llaisys/model/model.hpp"

namespace llaisys {

llaisys_forward_batch ForwardBatch::to_c() const {
  llaisys_forward_batch c{};
  c.num_tokens = num_tokens();
  c.token_ids = token_ids.data();
  c.positions = positions.data();
  c.seq_indices = seq_indices.data();
  c.num_seqs = num_seqs();
  c.block_tables = block_tables.data();
  c.block_table_lens = block_table_lens.data();
  c.num_outputs = num_outputs();
  c.output_token_indices = output_token_indices.data();
  c.output_kind = static_cast<int32_t>(output_kind);
  return c;
}

Result<ForwardBatch> ForwardBatch::from_c(const llaisys_forward_batch& c) {
  if (c.num_tokens < 0 || c.num_seqs < 0 || c.num_outputs < 0) {
    return make_error(ErrorCode::invalid_argument, "batch has negative counts ({} tokens, {} seqs, {} outputs)",
                      c.num_tokens, c.num_seqs, c.num_outputs);
  }
  if (c.num_tokens > 0 && (c.token_ids == nullptr || c.positions == nullptr || c.seq_indices == nullptr)) {
    return Status(ErrorCode::invalid_argument, "batch token arrays are NULL");
  }
  if (c.num_seqs > 0 && (c.block_tables == nullptr || c.block_table_lens == nullptr)) {
    return Status(ErrorCode::invalid_argument, "batch block tables are NULL");
  }
  if (c.num_outputs > 0 && c.output_token_indices == nullptr) {
    return Status(ErrorCode::invalid_argument, "batch output indices are NULL");
  }
  if (c.output_kind != LLAISYS_OUTPUT_LOGITS && c.output_kind != LLAISYS_OUTPUT_HIDDEN) {
    return make_error(ErrorCode::invalid_argument, "unknown output kind {}", c.output_kind);
  }
  const auto n = static_cast<std::size_t>(c.num_tokens);
  const auto s = static_cast<std::size_t>(c.num_seqs);
  ForwardBatch b;
  b.token_ids = {c.token_ids, n};
  b.positions = {c.positions, n};
  b.seq_indices = {c.seq_indices, n};
  b.block_tables = {c.block_tables, s};
  b.block_table_lens = {c.block_table_lens, s};
  b.output_token_indices = {c.output_token_indices, static_cast<std::size_t>(c.num_outputs)};
  b.output_kind = static_cast<OutputKind>(c.output_kind);
  return b;
}

Status validate_forward_batch(const ForwardBatch& batch, const ModelInfo& info, const KvCacheConfig& kv_config) {
  if (batch.positions.size() != batch.token_ids.size() ||
      batch.seq_indices.size() != batch.token_ids.size() ||
      batch.block_table_lens.size() != batch.block_tables.size()) {
    return Status(ErrorCode::invalid_argument, "batch arrays disagree in length");
  }
  const int32_t num_seqs = batch.num_seqs();
  for (int32_t s = 0; s < num_seqs; ++s) {
    const int32_t len = batch.block_table_lens[static_cast<std::size_t>(s)];
    if (len < 0) return make_error(ErrorCode::invalid_argument, "sequence {}: negative block table length", s);
    if (len > 0 && batch.block_tables[static_cast<std::size_t>(s)] == nullptr) {
      return make_error(ErrorCode::invalid_argument, "sequence {}: block table is NULL", s);
    }
    for (BlockId block : batch.block_table(s)) {
      const bool released = block == kNoBlock && info.sliding_window > 0;  // checked below
      if ((block < 0 && !released) || block >= kv_config.num_blocks) {
        return make_error(ErrorCode::invalid_argument,
                          "sequence {}: block {} outside the KV pool of {} blocks", s, block,
                          kv_config.num_blocks);
      }
    }
  }
  // Last position seen per sequence, to check contiguity; the first is the lowest.
  std::vector<int32_t> last_position(static_cast<std::size_t>(num_seqs), -1);
  std::vector<int32_t> first_position(static_cast<std::size_t>(num_seqs), -1);
  for (std::size_t i = 0; i < batch.token_ids.size(); ++i) {
    const TokenId token = batch.token_ids[i];
    const int32_t pos = batch.positions[i];
    const int32_t seq = batch.seq_indices[i];
    if (token < 0 || token >= info.vocab_size) {
      return make_error(ErrorCode::invalid_argument, "token {}: id {} outside the vocabulary of {}", i,
                        token, info.vocab_size);
    }
    if (seq < 0 || seq >= num_seqs) {
      return make_error(ErrorCode::invalid_argument, "token {}: sequence index {} outside [0, {})", i, seq,
                        num_seqs);
    }
    if (pos < 0 || (info.max_context > 0 && pos >= info.max_context)) {
      return make_error(ErrorCode::invalid_argument, "token {}: position {} outside the context of {}", i,
                        pos, info.max_context);
    }
    const int64_t block_index = pos / kv_config.block_size;
    if (block_index >= batch.block_table_lens[static_cast<std::size_t>(seq)]) {
      return make_error(ErrorCode::invalid_argument,
                        "token {}: position {} needs block {} but sequence {} has {} blocks", i, pos,
                        block_index, seq, batch.block_table_lens[static_cast<std::size_t>(seq)]);
    }
    int32_t& last = last_position[static_cast<std::size_t>(seq)];
    if (last >= 0 && pos != last + 1) {
      return make_error(ErrorCode::invalid_argument,
                        "token {}: sequence {} jumps from position {} to {} (positions must be "
                        "consecutive within a batch)",
                        i, seq, last, pos);
    }
    last = pos;
    if (first_position[static_cast<std::size_t>(seq)] < 0) first_position[static_cast<std::size_t>(seq)] = pos;
  }
  if (info.sliding_window > 0) {
    // Entries from the first block the window of the sequence's first token reaches must be valid.
    for (int32_t s = 0; s < num_seqs; ++s) {
      const int32_t first = first_position[static_cast<std::size_t>(s)];
      const std::span<const BlockId> table = batch.block_table(s);
      const int32_t first_read = first < 0 ? static_cast<int32_t>(table.size())
                                           : std::max(0, first - info.sliding_window + 1) / kv_config.block_size;
      for (std::size_t b = static_cast<std::size_t>(first_read); b < table.size(); ++b) {
        if (table[b] == kNoBlock) {
          return make_error(ErrorCode::invalid_argument,
                            "sequence {}: block table entry {} is {} (no block) but is not wholly "
                            "before the window of position {} (sliding window {})",
                            s, b, kNoBlock, first, info.sliding_window);
        }
      }
    }
  }
  for (int32_t index : batch.output_token_indices) {
    if (index < 0 || index >= batch.num_tokens()) {
      return make_error(ErrorCode::invalid_argument, "output index {} outside [0, {})", index,
                        batch.num_tokens());
    }
  }
  return Status();
}

}  // namespace llaisys
