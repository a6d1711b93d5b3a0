#include "qwen2_model.hpp"

#include "llaisys/model/plugin_export.hpp"

namespace llaisys::qwen2 {

Result<std::unique_ptr<Qwen2Model>> Qwen2Model::create(const ModelCreateParams& params) {
  LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<decoder::DecoderLM> lm, decoder::DecoderLM::open(params, kQwen2Variant));
  return std::make_unique<Qwen2Model>(std::move(lm));
}

}  // namespace llaisys::qwen2

LLAISYS_EXPORT_PLUGIN(llaisys::qwen2::Qwen2Model, "qwen2", "0.1.0", "Qwen2ForCausalLM")
