#include "llaisys/engine/draft_model_proposer.hpp"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "llaisys/core/log.hpp"
#include "llaisys/kv/kv_store.hpp"
#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/speculative.hpp"

namespace llaisys {

Result<std::shared_ptr<DraftModelProposer>> DraftModelProposer::create(EngineModel model, const DraftModelConfig& config) {
  const ModelInfo info = model.info();
  if (config.block_size <= 0) {
    return make_error(ErrorCode::invalid_argument, "the draft model's block size must be positive, got {}", config.block_size);
  }
  if (info.vocab_size <= 0) return Status(ErrorCode::invalid_argument, "the draft model reports no vocabulary");
  int32_t num_blocks = kv_blocks_for_budget(config.kv_cache_bytes, info.kv_bytes_per_token, config.block_size);
  if (config.max_num_blocks > 0) num_blocks = std::min(num_blocks, config.max_num_blocks);
  if (num_blocks <= 0) {
    return make_error(ErrorCode::resource_exhausted,
                      "a draft KV budget of {} bytes holds no block of {} tokens at {} bytes per token",
                      config.kv_cache_bytes, config.block_size, info.kv_bytes_per_token);
  }
  LLAISYS_RETURN_IF_ERROR(model.init_kv_cache({.num_blocks = num_blocks, .block_size = config.block_size, .num_seq_slots = 1})
                              .with_context("allocating the draft model's KV cache"));
  return std::shared_ptr<DraftModelProposer>(new DraftModelProposer(std::move(model), config, num_blocks));
}

DraftModelProposer::DraftModelProposer(EngineModel model, const DraftModelConfig& config, int32_t num_blocks)
    : model_(std::move(model)), config_(config), num_blocks_(num_blocks) {
  for (BlockId b = num_blocks - 1; b >= 0; --b) free_blocks_.push_back(b);
  const int32_t vocab = model_.info().vocab_size;
  if (config_.target_vocab_size <= 0) config_.target_vocab_size = vocab;
  if (config_.target_vocab_size < vocab) {  // a draft token must be a target token
    allowed_.assign(allowed_mask_words(vocab), 0u);
    for (int32_t t = 0; t < config_.target_vocab_size; ++t) allowed_[static_cast<std::size_t>(t) / 32] |= 1u << (t % 32);
  }
}

void DraftModelProposer::drop(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  free_blocks_.insert(free_blocks_.end(), it->second.blocks.rbegin(), it->second.blocks.rend());
  seqs_.erase(it);
}

void DraftModelProposer::release(SeqId seq) { drop(seq); }

bool DraftModelProposer::reserve(SeqState& state, int32_t num_tokens, std::span<const DraftRequest> requests) {
  const int64_t needed = (int64_t{num_tokens} + config_.block_size - 1) / config_.block_size -
                         static_cast<int64_t>(state.blocks.size());
  if (needed <= 0) return true;
  if (static_cast<int64_t>(free_blocks_.size()) < needed) {
    // Sequences that do not ask this step (waiting for a prefill, backing off) give way.
    std::unordered_set<SeqId> asking;
    for (const DraftRequest& r : requests) asking.insert(r.seq);
    std::vector<SeqId> idle;
    for (const auto& [seq, s] : seqs_) {
      if (!asking.contains(seq)) idle.push_back(seq);
    }
    for (SeqId seq : idle) {
      if (static_cast<int64_t>(free_blocks_.size()) >= needed) break;
      drop(seq);
    }
    if (static_cast<int64_t>(free_blocks_.size()) < needed) return false;
  }
  for (int64_t i = 0; i < needed; ++i) {
    state.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  return true;
}

Status DraftModelProposer::run_step(std::span<const Active> active) {
  token_ids_.clear();
  positions_.clear();
  seq_indices_.clear();
  tables_.clear();
  table_lens_.clear();
  output_indices_.clear();
  for (std::size_t k = 0; k < active.size(); ++k) {
    const Active& a = active[k];
    for (std::size_t j = 0; j < a.run.size(); ++j) {
      token_ids_.push_back(a.run[j]);
      positions_.push_back(a.start + static_cast<int32_t>(j));
      seq_indices_.push_back(static_cast<int32_t>(k));
    }
    output_indices_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
    tables_.push_back(a.state->blocks.data());
    table_lens_.push_back(static_cast<int32_t>(a.state->blocks.size()));
  }
  logits_.resize(active.size() * static_cast<std::size_t>(model_.info().vocab_size));
  ++stats_.num_steps;
  stats_.num_tokens += static_cast<int64_t>(token_ids_.size());
  return model_.forward({.token_ids = token_ids_,
                         .positions = positions_,
                         .seq_indices = seq_indices_,
                         .block_tables = tables_,
                         .block_table_lens = table_lens_,
                         .output_token_indices = output_indices_,
                         .output_kind = OutputKind::logits},
                        logits_);
}

void DraftModelProposer::draw(const DraftRequest& request, std::span<float> logits, int32_t position, Draft& draft) {
  const DraftSampling& s = request.sampling;
  if (s.greedy()) {  // the draft's most likely token, checked by equality with the target's own
    draft.tokens.push_back(masked_argmax(logits, allowed_));
    return;
  }
  sampler_.distribution(logits, {.temperature = s.temperature, .top_k = s.top_k, .top_p = s.top_p, .min_p = s.min_p},
                        probs_, allowed_);
  const TokenId token = draw_from(probs_, counter_uniform01(speculative_seed(s.seed, SpeculativeStream::draft),
                                                            static_cast<uint64_t>(position)));
  draft.tokens.push_back(token);
  // q over the target's vocabulary (the draft's tokens past it have probability 0 here).
  const auto width = static_cast<std::size_t>(config_.target_vocab_size);
  const std::size_t copied = std::min(width, probs_.size());
  draft.probs.insert(draft.probs.end(), probs_.begin(), probs_.begin() + static_cast<std::ptrdiff_t>(copied));
  draft.probs.resize(draft.probs.size() + (width - copied), 0.0f);
}

void DraftModelProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  const auto started = std::chrono::steady_clock::now();
  const int32_t max_context = model_.info().max_context;
  std::vector<Active> active;
  std::vector<int32_t> max_drafts(requests.size(), 0);
  for (std::size_t i = 0; i < requests.size() && i < drafts.size(); ++i) {
    const DraftRequest& r = requests[i];
    const auto n = static_cast<int32_t>(r.tokens.size());
    // The draft runs positions up to n + k - 2 and draws position n + k - 1: all inside its context.
    max_drafts[i] = std::min(r.max_drafts, max_context - n);
    if (n == 0 || max_drafts[i] <= 0) continue;
    SeqState& state = seqs_[r.seq];
    // Keep the K/V of the longest common prefix, never that of the last token (its row is needed).
    const auto common = static_cast<int32_t>(
        std::mismatch(state.cached.begin(), state.cached.end(), r.tokens.begin(), r.tokens.end()).first -
        state.cached.begin());
    state.cached.resize(static_cast<std::size_t>(std::min(common, n - 1)));
    if (!reserve(state, n + max_drafts[i] - 1, requests)) {
      ++stats_.num_starved;
      drop(r.seq);
      continue;
    }
    const auto from = static_cast<std::ptrdiff_t>(state.cached.size());
    active.push_back({.request = i,
                      .state = &state,
                      .run = std::vector<TokenId>(r.tokens.begin() + from, r.tokens.end()),
                      .start = static_cast<int32_t>(from)});
  }
  const auto vocab = static_cast<std::size_t>(model_.info().vocab_size);
  while (!active.empty()) {
    if (Status status = run_step(active); !status.ok()) {
      // Nothing of this call is trusted: no drafts, and the caches it touched start again.
      log::warn("speculative decoding: the draft model's step failed, no drafts this step: {}", status.message());
      ++stats_.num_failed_steps;
      for (const Active& a : active) drop(requests[a.request].seq);
      for (std::size_t i = 0; i < requests.size() && i < drafts.size(); ++i) drafts[i] = Draft{};
      break;
    }
    std::vector<Active> next;
    for (std::size_t k = 0; k < active.size(); ++k) {
      Active& a = active[k];
      a.state->cached.insert(a.state->cached.end(), a.run.begin(), a.run.end());
      const int32_t position = a.start + static_cast<int32_t>(a.run.size());  // of the token drawn
      Draft& draft = drafts[a.request];
      draw(requests[a.request], std::span<float>(logits_).subspan(k * vocab, vocab), position, draft);
      if (static_cast<int32_t>(draft.tokens.size()) < max_drafts[a.request]) {
        next.push_back({.request = a.request, .state = a.state, .run = {draft.tokens.back()}, .start = position});
      }
    }
    active = std::move(next);
  }
  stats_.step_ns += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace llaisys
