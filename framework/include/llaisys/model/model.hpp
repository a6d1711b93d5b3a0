#pragma once
// The Model concept: what the engine needs from a model architecture.
//
// Contract:
//  - info() is fixed for the model's lifetime.
//  - init_kv_cache(config) allocates the paged KV pool (config.num_blocks x config.block_size token
//    slots, all layers, K and V) and config.num_seq_slots sequence slots (sampling state) on the
//    model's device, dropping any previous contents. It must be called before the first step().
//  - step(batch, sampling, out) runs one pass over the batch's tokens (see ForwardBatch) and writes
//    each token's K/V into its slot. With sampling rows (one per output row, see SampleRow) it
//    samples each output row on the model's device and writes the token ids, and the logprobs and raw
//    logits rows the rows ask for, into `out`; without, it writes every output row (logits,
//    vocab_size floats, or final hidden states, hidden_size floats) into out.rows. A step that does
//    not validate (validate_step) is an invalid_argument error and changes nothing.
//  - A model whose class says `static constexpr bool kWaitsForMasks = true` calls
//    out.wait_for_masks (when set) after its forward pass and before it reads any allowed mask, so
//    the host may compute grammar masks while the forward pass runs; others get masks up front.
//  - copy_blocks(copies) copies whole KV blocks, in order.
//  - A model is used by one thread at a time; none of these throw.
//  - The result for a token depends only on its sequence's tokens (batch invariance): bit-exact on
//    the CPU backend. A sampled token depends only on its row's logits, its SampleRow and its slot.
//
// Implementations static_assert(llaisys::Model<T>). Plugins additionally provide
// `static Result<std::unique_ptr<T>> create(const ModelCreateParams&)` (PluginModel).

#include <concepts>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llaisys/core/device.hpp"
#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/model/forward_batch.hpp"
#include "llaisys/model/step.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

struct ModelInfo {
  std::string architecture;
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t max_context = 0;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;
  DType kv_dtype = DType::f32;
  uint64_t weight_bytes = 0;        // weights read per decode step
  uint64_t kv_bytes_per_token = 0;  // K + V, all layers
  // > 0: EVERY layer attends at most the last sliding_window positions (the token at position p
  // reads keys p - sliding_window < j <= p), so the KV blocks wholly before a sequence's window may
  // be given back (their table entries become kNoBlock). 0: full attention, or only some layers
  // windowed (Gemma 2 style): every block is kept.
  int32_t sliding_window = 0;

  int32_t output_width(OutputKind kind) const {
    return kind == OutputKind::logits ? vocab_size : hidden_size;
  }
};

struct ModelCreateParams {
  std::filesystem::path model_dir;
  Device device = Device::cpu();
  int32_t num_threads = 0;         // 0: the model's choice
  std::string options_json = "{}"; // plugin-specific options
};

// Whether a Model says it calls StepOutput::wait_for_masks (see the contract above).
template <class M>
constexpr bool waits_for_masks() {
  if constexpr (requires { M::kWaitsForMasks; }) {
    return M::kWaitsForMasks;
  } else {
    return false;
  }
}

template <class M>
concept Model = requires(M& model, const M& const_model, const ForwardBatch& batch,
                         std::span<const SampleRow> sampling, const StepOutput& out,
                         const KvCacheConfig& kv_config, std::span<const BlockCopy> copies) {
  { const_model.info() } -> std::same_as<const ModelInfo&>;
  { model.init_kv_cache(kv_config) } -> std::same_as<Status>;
  { model.step(batch, sampling, out) } -> std::same_as<Status>;
  { model.copy_blocks(copies) } -> std::same_as<Status>;
};

// A step without sampling: every output row (logits or hidden states) into `rows`.
template <Model M>
Status forward(M& model, const ForwardBatch& batch, std::span<float> rows) {
  return model.step(batch, {}, StepOutput{.rows = rows});
}

template <class M>
concept PluginModel = Model<M> && requires(const ModelCreateParams& params) {
  { M::create(params) } -> std::same_as<Result<std::unique_ptr<M>>>;
};

}  // namespace llaisys
