#include "decoder_weights.hpp"

#include <fmt/format.h>

namespace llaisys::decoder {
namespace {

class Loader {
 public:
  Loader(ops::DeviceContext& ctx, const std::shared_ptr<const WeightStore>& store, std::optional<DType> quantize_to)
      : ctx_(ctx), store_(store), quantize_to_(quantize_to) {}

  static std::string name_of(const std::string& pattern, int32_t layer) {
    return fmt::format(fmt::runtime(pattern), layer);
  }
  Result<TensorView> find(const std::string& pattern, int32_t layer, const Shape& shape) const {
    return store_->require(name_of(pattern, layer), shape);
  }
  Result<ops::Tensor> vector(const std::string& pattern, int32_t layer, int64_t size, float add = 0.0f) const {
    LLAISYS_ASSIGN_OR_RETURN(TensorView view, find(pattern, layer, Shape{size}));
    return ops::upload_vector(ctx_, view, add);
  }
  Result<ops::Tensor> matrix(const std::string& pattern, int64_t rows, int64_t cols) const {
    LLAISYS_ASSIGN_OR_RETURN(TensorView view, find(pattern, 0, Shape{rows, cols}));
    std::shared_ptr<const void> owner = store_;
    LLAISYS_RETURN_IF_ERROR(maybe_quantize(view, owner));
    return ops::upload_matrix(ctx_, view, std::move(owner));
  }
  // With quantize_to set, `view` becomes a quantized copy of itself (owned by `owner`) when its rows
  // are whole blocks and it is not quantized already.
  Status maybe_quantize(TensorView& view, std::shared_ptr<const void>& owner) const {
    if (!quantize_to_ || is_quantized(view.dtype()) || view.dim(1) % dtype_block_elements(*quantize_to_) != 0) {
      return Status();
    }
    LLAISYS_ASSIGN_OR_RETURN(ops::Tensor q, ops::quantize_matrix(ctx_, view, *quantize_to_));
    view = q.view;
    owner = q.owner;
    return Status();
  }
  // One linear op: the fused tensor when `fused` names one, else the parts; biases when `bias`.
  Result<ops::LinearWeight> linear(int32_t layer, const std::string& fused, const std::string& fused_bias,
                                   std::initializer_list<std::pair<const std::string*, int64_t>> parts,
                                   std::initializer_list<const std::string*> part_biases, int64_t cols,
                                   bool bias) const {
    std::vector<TensorView> matrices, biases;
    if (!fused.empty()) {
      int64_t rows = 0;
      for (const auto& part : parts) rows += part.second;
      LLAISYS_ASSIGN_OR_RETURN(TensorView m, find(fused, layer, Shape{rows, cols}));
      matrices.push_back(m);
      if (bias) {
        LLAISYS_ASSIGN_OR_RETURN(TensorView b, find(fused_bias, layer, Shape{rows}));
        biases.push_back(b);
      }
    } else {
      auto bias_name = part_biases.begin();
      for (const auto& [name, rows] : parts) {
        LLAISYS_ASSIGN_OR_RETURN(TensorView m, find(*name, layer, Shape{rows, cols}));
        matrices.push_back(m);
        if (bias) {
          LLAISYS_ASSIGN_OR_RETURN(TensorView b, find(**bias_name, layer, Shape{rows}));
          biases.push_back(b);
        }
        ++bias_name;
      }
    }
    // Quantized copies own their memory: keep them all alive with the store.
    auto owners = std::make_shared<std::vector<std::shared_ptr<const void>>>();
    owners->push_back(store_);
    for (TensorView& m : matrices) {
      std::shared_ptr<const void> owner;
      LLAISYS_RETURN_IF_ERROR(maybe_quantize(m, owner));
      if (owner) owners->push_back(std::move(owner));
    }
    return ops::prepare_linear(ctx_, matrices, biases, std::move(owners));
  }

 private:
  ops::DeviceContext& ctx_;
  const std::shared_ptr<const WeightStore>& store_;
  std::optional<DType> quantize_to_;
};

}  // namespace

Result<DecoderWeights> load_decoder_weights(ops::DeviceContext& ctx, const std::shared_ptr<const WeightStore>& store,
                                            const DecoderSpec& s, std::optional<DType> quantize_to) {
  const Loader load(ctx, store, quantize_to);
  const TensorNames& n = s.names;
  const int64_t h = s.hidden_size;
  const int64_t q_dim = int64_t{s.num_heads} * s.head_dim;
  const int64_t kv_dim = int64_t{s.num_kv_heads} * s.head_dim;
  const int64_t inter = s.intermediate_size;
  const float offset = s.norm_weight_offset;
  DecoderWeights w;
  LLAISYS_ASSIGN_OR_RETURN(w.embed, load.matrix(n.embed, s.vocab_size, h));
  for (int32_t i = 0; i < s.num_layers; ++i) {
    LayerWeights layer;
    LLAISYS_ASSIGN_OR_RETURN(layer.attn_norm, load.vector(n.attn_norm, i, h, offset));
    LLAISYS_ASSIGN_OR_RETURN(layer.ffn_norm, load.vector(n.ffn_norm, i, h, offset));
    if (s.post_attention_norm) {
      LLAISYS_ASSIGN_OR_RETURN(layer.post_attn_norm, load.vector(n.post_attn_norm, i, h, offset));
    }
    if (s.post_ffn_norm) {
      LLAISYS_ASSIGN_OR_RETURN(layer.post_ffn_norm, load.vector(n.post_ffn_norm, i, h, offset));
    }
    if (s.qk_norm) {
      LLAISYS_ASSIGN_OR_RETURN(layer.q_norm, load.vector(n.q_norm, i, s.head_dim, offset));
      LLAISYS_ASSIGN_OR_RETURN(layer.k_norm, load.vector(n.k_norm, i, s.head_dim, offset));
    }
    LLAISYS_ASSIGN_OR_RETURN(layer.qkv, load.linear(i, n.qkv, n.qkv_bias, {{&n.q, q_dim}, {&n.k, kv_dim}, {&n.v, kv_dim}},
                                                    {&n.q_bias, &n.k_bias, &n.v_bias}, h, s.qkv_bias));
    LLAISYS_ASSIGN_OR_RETURN(layer.o, load.linear(i, "", "", {{&n.o, h}}, {&n.o_bias}, q_dim, s.o_bias));
    LLAISYS_ASSIGN_OR_RETURN(layer.gate_up, load.linear(i, n.gate_up, "", {{&n.gate, inter}, {&n.up, inter}},
                                                        {&n.gate_bias, &n.up_bias}, h, s.mlp_bias));
    LLAISYS_ASSIGN_OR_RETURN(layer.down, load.linear(i, "", "", {{&n.down, h}}, {&n.down_bias}, inter, s.mlp_bias));
    w.bytes_per_decode_step += layer.qkv.bytes() + layer.o.bytes() + layer.gate_up.bytes() + layer.down.bytes();
    w.layers.push_back(std::move(layer));
  }
  LLAISYS_ASSIGN_OR_RETURN(w.final_norm, load.vector(n.final_norm, 0, h, offset));
  if (s.tie_word_embeddings) {
    w.lm_head = ops::linear_weight_of(w.embed);
  } else {
    LLAISYS_ASSIGN_OR_RETURN(ops::Tensor head, load.matrix(n.lm_head, s.vocab_size, h));
    w.lm_head = ops::linear_weight_of(head);
  }
  w.bytes_per_decode_step += w.lm_head.bytes();
  return w;
}

}  // namespace llaisys::decoder
