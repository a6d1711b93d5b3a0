#pragma once
// DecoderPlugin<Variant>: the model class of an architecture plugin that is the shared decoder with
// one variant. A plugin is then three lines (plugins/llama/llama_model.cpp):
//
//   inline constexpr decoder::DecoderVariant kLlama{.architecture = "LlamaForCausalLM", ...};
//   using LlamaModel = decoder::DecoderPlugin<kLlama>;
//   LLAISYS_EXPORT_PLUGIN(LlamaModel, "llama", "0.1.0", "LlamaForCausalLM")

#include <memory>
#include <optional>
#include <span>

#include "cuda_decoder.hpp"
#include "decoder_lm.hpp"
#include "llaisys/model/model.hpp"

namespace llaisys::decoder {

template <const DecoderVariant& Variant>
class DecoderPlugin {
 public:
  static Result<std::unique_ptr<DecoderPlugin>> create(const ModelCreateParams& params) {
    // {"device": "cuda"} (or a CUDA params.device): the same decoder on the GPU (cuda_decoder.hpp).
    LLAISYS_ASSIGN_OR_RETURN(std::optional<int> cuda_device, requested_cuda_device(params));
    if (cuda_device) {
      LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<CudaDecoderLM> gpu, CudaDecoderLM::open(params, Variant, *cuda_device));
      return std::make_unique<DecoderPlugin>(std::move(gpu));
    }
    LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<DecoderLM> lm, DecoderLM::open(params, Variant));
    return std::make_unique<DecoderPlugin>(std::move(lm));
  }
  explicit DecoderPlugin(std::unique_ptr<DecoderLM> lm) : lm_(std::move(lm)) {}
  explicit DecoderPlugin(std::unique_ptr<CudaDecoderLM> gpu) : gpu_(std::move(gpu)) {}

  const ModelInfo& info() const { return gpu_ ? gpu_->info() : lm_->info(); }
  Status init_kv_cache(const KvCacheConfig& config) {
    return gpu_ ? gpu_->init_kv_cache(config) : lm_->init_kv_cache(config);
  }
  Status forward(const ForwardBatch& batch, std::span<float> out) {
    return gpu_ ? gpu_->forward(batch, out) : lm_->forward(batch, out);
  }
  Status copy_blocks(std::span<const BlockCopy> copies) {
    return gpu_ ? gpu_->copy_blocks(copies) : lm_->copy_blocks(copies);
  }

 private:
  std::unique_ptr<DecoderLM> lm_;
  std::unique_ptr<CudaDecoderLM> gpu_;  // instead of lm_ on a CUDA device
};

}  // namespace llaisys::decoder
