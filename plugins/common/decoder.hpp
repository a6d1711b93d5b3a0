#pragma once
// Decoder: the forward pass of a decoder-only transformer, written once over the ops
// (llaisys/ops/*.hpp) for every device, from the pieces a DecoderSpec names (decoder_spec.hpp has the
// block). One pass over a ForwardBatch (any mix of prefill chunks and decode tokens of several
// sequences):
//   x = embed(ids) [* embedding_scale]
//   per layer: the block of decoder_spec.hpp, K/V written to the paged cache before attention
//   rows that want output: final_norm(x) -> hidden states, or x Wlm^T [softcapped] -> logits
//   with sampling rows: the logits are sampled on the device (ops/sample.hpp); ids come back
// On the CPU every op is batch invariant (kernels/cpu), so a token's outputs are bit-identical
// whatever else is in the batch and whatever the thread count or ISA path.
//
// The device and its settings come from the model options (decoder_options.hpp); buffers, streams
// and workspaces live in the device context, activations in one workspace grown to the largest batch.

#include <memory>
#include <span>

#include "decoder_options.hpp"
#include "decoder_spec.hpp"
#include "decoder_weights.hpp"
#include "llaisys/model/model.hpp"
#include "llaisys/ops/device_context.hpp"
#include "llaisys/ops/kv_cache.hpp"
#include "llaisys/ops/pass.hpp"
#include "llaisys/ops/sample.hpp"

namespace llaisys::decoder {

class Decoder {
 public:
  // step() calls out.wait_for_masks after the forward pass (masks made while it runs).
  static constexpr bool kWaitsForMasks = true;
  // Reads the safetensors of params.model_dir for `spec` onto the device the options name.
  static Result<std::unique_ptr<Decoder>> open(const ModelCreateParams& params, DecoderSpec spec);

  const ModelInfo& info() const { return info_; }
  const DecoderSpec& spec() const { return spec_; }
  const ops::DeviceContext& device() const { return *ctx_; }

  Status init_kv_cache(const KvCacheConfig& config);
  Status step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out);
  Status copy_blocks(std::span<const BlockCopy> copies);

  Decoder(DecoderSpec spec, std::unique_ptr<ops::DeviceContext> ctx, DecoderWeights weights,
          std::unique_ptr<ops::Rope> rope, DType kv_dtype);

 private:
  struct Activations;
  Status reserve(int64_t num_tokens, int64_t num_outputs, int64_t output_width, Activations& a);
  Status run_layer(int32_t index, const ops::Pass& pass, const Activations& a);
  Status run_step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out);

  DecoderSpec spec_;
  std::unique_ptr<ops::DeviceContext> ctx_;
  DecoderWeights weights_;
  std::unique_ptr<ops::Rope> rope_;
  ops::KvShape kv_shape_;
  ops::KvCache kv_;
  ModelInfo info_;
  ops::Buffer workspace_;  // activations, grown to the largest batch seen
  std::unique_ptr<ops::Sampler> sampler_;  // made with the KV cache (it holds the sequence slots)
};

static_assert(Model<Decoder>);

}  // namespace llaisys::decoder
