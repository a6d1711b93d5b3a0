#include "decoder_plugin.hpp"

namespace llaisys::decoder {
namespace {

// What the decoder relies on, whoever described the model.
Status check_spec(const DecoderSpec& s) {
  if (s.layer_windows.size() != 0 && s.layer_windows.size() != static_cast<std::size_t>(s.num_layers)) {
    return make_error(ErrorCode::internal, "{}: {} layer windows for {} layers", s.architecture,
                      s.layer_windows.size(), s.num_layers);
  }
  for (int32_t w : s.layer_windows) {
    if (w < 0) return make_error(ErrorCode::invalid_argument, "{}: sliding window {} is negative", s.architecture, w);
  }
  if (s.attention_scale < 0 || s.attention_softcap < 0 || s.final_softcap < 0 || !(s.embedding_scale > 0)) {
    return make_error(ErrorCode::invalid_argument, "{}: scales and soft caps must be positive", s.architecture);
  }
  if (s.qk_norm && (s.names.q_norm.empty() || s.names.k_norm.empty())) {
    return make_error(ErrorCode::internal, "{}: q/k norms without tensor names", s.architecture);
  }
  return Status();
}

}  // namespace

Result<std::unique_ptr<Decoder>> open_described(const ModelCreateParams& params, DescribeFn describe) {
  LLAISYS_ASSIGN_OR_RETURN(ConfigReader config, ConfigReader::load(params.model_dir));
  LLAISYS_ASSIGN_OR_RETURN(DecoderSpec spec, describe(config));
  LLAISYS_RETURN_IF_ERROR(finish_config(config, spec));
  LLAISYS_RETURN_IF_ERROR(check_spec(spec));
  return Decoder::open(params, std::move(spec));
}

}  // namespace llaisys::decoder
