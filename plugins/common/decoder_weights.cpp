#include "decoder_weights.hpp"

#include <fmt/format.h>

namespace llaisys::decoder {
namespace {

cpu::WeightMatrix matrix(const TensorView& view) {
  return {.data = view.data(), .dtype = view.dtype(), .rows = view.dim(0), .cols = view.dim(1)};
}

uint64_t matrix_bytes(const cpu::WeightMatrix& m) {
  return static_cast<uint64_t>(m.rows) * static_cast<uint64_t>(m.cols) * dtype_size(m.dtype);
}

Result<std::vector<float>> to_f32(const std::string& name, const TensorView& view) {
  std::vector<float> out(static_cast<std::size_t>(view.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (view.dtype()) {
      case DType::bf16: out[i] = bf16_to_f32(view.data_as<const bf16_t>()[i]); break;
      case DType::f16: out[i] = f16_to_f32(view.data_as<const f16_t>()[i]); break;
      case DType::f32: out[i] = view.data_as<const float>()[i]; break;
      default:
        return make_error(ErrorCode::unsupported, "tensor '{}' has dtype {}; weights must be BF16, F16 or F32", name,
                          to_string(view.dtype()));
    }
  }
  return out;
}

class Loader {
 public:
  explicit Loader(const WeightStore& store) : store_(store) {}

  Result<cpu::WeightMatrix> matrix_of(const std::string& name, int64_t rows, int64_t cols) {
    LLAISYS_ASSIGN_OR_RETURN(TensorView view, store_.require(name, Shape{rows, cols}));
    return matrix(view);
  }
  Result<std::vector<float>> vector_of(const std::string& name, int64_t size) {
    LLAISYS_ASSIGN_OR_RETURN(TensorView view, store_.require(name, Shape{size}));
    return to_f32(name, view);
  }

 private:
  const WeightStore& store_;
};

}  // namespace

Result<DecoderConfig> make_decoder_config(const HfTransformerConfig& hf, const DecoderVariant& variant) {
  bool qkv_bias = variant.qkv_bias;
  bool o_bias = false;
  bool mlp_bias = false;
  if (variant.biases_from_config) {
    qkv_bias = o_bias = hf.attention_bias;
    mlp_bias = hf.mlp_bias;
  } else {
    if (hf.mlp_bias) {
      return make_error(ErrorCode::unsupported, "config.json: mlp_bias is true; {} has no MLP biases",
                        variant.architecture);
    }
    if (hf.attention_bias && !variant.qkv_bias) {
      return make_error(ErrorCode::unsupported, "config.json: attention_bias is true; {} has no attention biases",
                        variant.architecture);
    }
  }
  return DecoderConfig{.vocab_size = hf.vocab_size,
                       .hidden_size = hf.hidden_size,
                       .intermediate_size = hf.intermediate_size,
                       .num_layers = hf.num_layers,
                       .num_heads = hf.num_heads,
                       .num_kv_heads = hf.num_kv_heads,
                       .head_dim = hf.head_dim,
                       .max_context = hf.max_position_embeddings,
                       .rms_norm_eps = static_cast<float>(hf.rms_norm_eps),
                       .rope_theta = hf.rope_theta,
                       .rope_scaling = hf.rope_scaling,
                       .qkv_bias = qkv_bias,
                       .o_bias = o_bias,
                       .mlp_bias = mlp_bias,
                       .tie_word_embeddings = hf.tie_word_embeddings,
                       .bos_token_id = hf.bos_token_id,
                       .eos_token_ids = hf.eos_token_ids};
}

Result<DecoderWeights> load_decoder_weights(const WeightStore& store, const DecoderConfig& c) {
  Loader load(store);
  const int64_t h = c.hidden_size;
  const int64_t q_dim = static_cast<int64_t>(c.num_heads) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const int64_t inter = c.intermediate_size;
  DecoderWeights w;
  LLAISYS_ASSIGN_OR_RETURN(w.embed, load.matrix_of("model.embed_tokens.weight", c.vocab_size, h));
  for (int32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    DecoderLayerWeights layer;
    LLAISYS_ASSIGN_OR_RETURN(layer.input_norm, load.vector_of(p + "input_layernorm.weight", h));
    LLAISYS_ASSIGN_OR_RETURN(layer.q, load.matrix_of(p + "self_attn.q_proj.weight", q_dim, h));
    LLAISYS_ASSIGN_OR_RETURN(layer.k, load.matrix_of(p + "self_attn.k_proj.weight", kv_dim, h));
    LLAISYS_ASSIGN_OR_RETURN(layer.v, load.matrix_of(p + "self_attn.v_proj.weight", kv_dim, h));
    LLAISYS_ASSIGN_OR_RETURN(layer.o, load.matrix_of(p + "self_attn.o_proj.weight", h, q_dim));
    if (c.qkv_bias) {
      LLAISYS_ASSIGN_OR_RETURN(layer.q_bias, load.vector_of(p + "self_attn.q_proj.bias", q_dim));
      LLAISYS_ASSIGN_OR_RETURN(layer.k_bias, load.vector_of(p + "self_attn.k_proj.bias", kv_dim));
      LLAISYS_ASSIGN_OR_RETURN(layer.v_bias, load.vector_of(p + "self_attn.v_proj.bias", kv_dim));
    }
    if (c.o_bias) {
      LLAISYS_ASSIGN_OR_RETURN(layer.o_bias, load.vector_of(p + "self_attn.o_proj.bias", h));
    }
    LLAISYS_ASSIGN_OR_RETURN(layer.post_norm, load.vector_of(p + "post_attention_layernorm.weight", h));
    LLAISYS_ASSIGN_OR_RETURN(layer.gate, load.matrix_of(p + "mlp.gate_proj.weight", inter, h));
    LLAISYS_ASSIGN_OR_RETURN(layer.up, load.matrix_of(p + "mlp.up_proj.weight", inter, h));
    LLAISYS_ASSIGN_OR_RETURN(layer.down, load.matrix_of(p + "mlp.down_proj.weight", h, inter));
    if (c.mlp_bias) {
      LLAISYS_ASSIGN_OR_RETURN(layer.gate_bias, load.vector_of(p + "mlp.gate_proj.bias", inter));
      LLAISYS_ASSIGN_OR_RETURN(layer.up_bias, load.vector_of(p + "mlp.up_proj.bias", inter));
      LLAISYS_ASSIGN_OR_RETURN(layer.down_bias, load.vector_of(p + "mlp.down_proj.bias", h));
    }
    for (const cpu::WeightMatrix* m : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down}) {
      w.bytes_per_decode_step += matrix_bytes(*m);
    }
    w.layers.push_back(std::move(layer));
  }
  LLAISYS_ASSIGN_OR_RETURN(w.final_norm, load.vector_of("model.norm.weight", h));
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed;
  } else {
    LLAISYS_ASSIGN_OR_RETURN(w.lm_head, load.matrix_of("lm_head.weight", c.vocab_size, h));
  }
  w.bytes_per_decode_step += matrix_bytes(w.lm_head);
  return w;
}

}  // namespace llaisys::decoder
