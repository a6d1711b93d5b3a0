#pragma once
// DecoderPlugin<Variant>: the model class of an architecture plugin that is the shared decoder with
// one variant. A plugin is then three lines (plugins/llama/llama_model.cpp):
//
//   inline constexpr decoder::DecoderVariant kLlama{.architecture = "LlamaForCausalLM", ...};
//   using LlamaModel = decoder::DecoderPlugin<kLlama>;
//   LLAISYS_EXPORT_PLUGIN(LlamaModel, "llama", "0.1.0", "LlamaForCausalLM")

#include <memory>
#include <span>

#include "decoder_lm.hpp"
#include "llaisys/model/model.hpp"

namespace llaisys::decoder {

template <const DecoderVariant& Variant>
class DecoderPlugin {
 public:
  static Result<std::unique_ptr<DecoderPlugin>> create(const ModelCreateParams& params) {
    LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<DecoderLM> lm, DecoderLM::open(params, Variant));
    return std::make_unique<DecoderPlugin>(std::move(lm));
  }
  explicit DecoderPlugin(std::unique_ptr<DecoderLM> lm) : lm_(std::move(lm)) {}

  const ModelInfo& info() const { return lm_->info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return lm_->init_kv_cache(config); }
  Status forward(const ForwardBatch& batch, std::span<float> out) { return lm_->forward(batch, out); }
  Status copy_blocks(std::span<const BlockCopy> copies) { return lm_->copy_blocks(copies); }

 private:
  std::unique_ptr<DecoderLM> lm_;
};

}  // namespace llaisys::decoder
