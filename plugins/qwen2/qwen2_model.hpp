#pragma once
// Qwen2ForCausalLM (Qwen2, Qwen2.5): the Llama-family decoder with biases on the q, k and v
// projections. Everything else — config mapping, tensor names, the forward pass — is the shared
// decoder in plugins/common.

#include <memory>
#include <span>

#include "decoder_lm.hpp"
#include "llaisys/model/model.hpp"

namespace llaisys::qwen2 {

inline constexpr decoder::DecoderVariant kQwen2Variant{.architecture = "Qwen2ForCausalLM", .qkv_bias = true};

class Qwen2Model {
 public:
  static Result<std::unique_ptr<Qwen2Model>> create(const ModelCreateParams& params);
  explicit Qwen2Model(std::unique_ptr<decoder::DecoderLM> lm) : lm_(std::move(lm)) {}

  const ModelInfo& info() const { return lm_->info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return lm_->init_kv_cache(config); }
  Status forward(const ForwardBatch& batch, std::span<float> out) { return lm_->forward(batch, out); }
  Status copy_blocks(std::span<const BlockCopy> copies) { return lm_->copy_blocks(copies); }

 private:
  std::unique_ptr<decoder::DecoderLM> lm_;
};

static_assert(PluginModel<Qwen2Model>);

}  // namespace llaisys::qwen2
