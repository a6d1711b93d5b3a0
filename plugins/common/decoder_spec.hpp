#pragma once
// DecoderSpec: what an architecture plugin says about its model, and all the shared decoder
// (decoder.hpp) needs: the shape, the tokens, and which pieces its block is made of, with the
// tensor names of each. Every field has the plain Llama meaning by default; an architecture file
// (plugins/<arch>/) reads its config.json keys (decoder_config.hpp) and sets the pieces it uses.
//
// The block, for each layer (pieces in brackets are optional):
//   h = norm(x);  q, k, v = h [Wq; Wk; Wv]^T [+ b]          (one fused [Wqkv] tensor, or three)
//   [q = norm_head(q); k = norm_head(k)]                    (qk_norm: Qwen3's per-head RMSNorm)
//   rope(q, k); store k, v;  a = attention(q, KV)           (scale, [softcap], [window of the layer])
//   o = a Wo^T [+ b];  x += [post_attention_norm](o)
//   h = norm(x);  g, u = h [Wgate; Wup]^T [+ b];  m = act(g) * u      (silu or gelu_tanh)
//   d = m Wdown^T [+ b];  x += [post_ffn_norm](d)
// then logits = final_norm(x) Wlm^T (the embedding when tied) [softcapped]; the embeddings may be
// scaled. Norms multiply by (w + norm_weight_offset): Gemma stores w and multiplies by 1 + w.

#include <cstdint>
#include <string>
#include <vector>

#include "llaisys/model/types.hpp"
#include "llaisys/ops/activation.hpp"
#include "rope_frequencies.hpp"

namespace llaisys::decoder {

// Hugging Face tensor names; "{}" stands for the layer index. An empty name: the piece is absent.
struct TensorNames {
  std::string embed = "model.embed_tokens.weight";
  std::string attn_norm = "model.layers.{}.input_layernorm.weight";
  // Separate projections, or one fused qkv (then q, k, v names are ignored).
  std::string q = "model.layers.{}.self_attn.q_proj.weight";
  std::string k = "model.layers.{}.self_attn.k_proj.weight";
  std::string v = "model.layers.{}.self_attn.v_proj.weight";
  std::string qkv;
  std::string q_bias = "model.layers.{}.self_attn.q_proj.bias";
  std::string k_bias = "model.layers.{}.self_attn.k_proj.bias";
  std::string v_bias = "model.layers.{}.self_attn.v_proj.bias";
  std::string qkv_bias;
  std::string q_norm = "model.layers.{}.self_attn.q_norm.weight";
  std::string k_norm = "model.layers.{}.self_attn.k_norm.weight";
  std::string o = "model.layers.{}.self_attn.o_proj.weight";
  std::string o_bias = "model.layers.{}.self_attn.o_proj.bias";
  std::string post_attn_norm;  // Gemma 2: "model.layers.{}.post_attention_layernorm.weight"
  std::string ffn_norm = "model.layers.{}.post_attention_layernorm.weight";
  // Separate gate and up, or one fused gate_up (gate rows first).
  std::string gate = "model.layers.{}.mlp.gate_proj.weight";
  std::string up = "model.layers.{}.mlp.up_proj.weight";
  std::string gate_up;
  std::string gate_bias = "model.layers.{}.mlp.gate_proj.bias";
  std::string up_bias = "model.layers.{}.mlp.up_proj.bias";
  std::string down = "model.layers.{}.mlp.down_proj.weight";
  std::string down_bias = "model.layers.{}.mlp.down_proj.bias";
  std::string post_ffn_norm;  // Gemma 2: "model.layers.{}.post_feedforward_layernorm.weight"
  std::string final_norm = "model.norm.weight";
  std::string lm_head = "lm_head.weight";
};

struct DecoderSpec {
  std::string architecture;  // the HF architecture served, e.g. "Qwen3ForCausalLM"

  // Shape.
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t max_context = 0;
  float norm_eps = 1e-6f;
  RopeSpec rope;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;

  // Block pieces.
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;
  float norm_weight_offset = 0.0f;
  ops::Activation activation = ops::Activation::silu;
  bool post_attention_norm = false;
  bool post_ffn_norm = false;
  float embedding_scale = 1.0f;
  float attention_scale = 0.0f;  // 0: 1 / sqrt(head_dim)
  float attention_softcap = 0.0f;
  float final_softcap = 0.0f;
  std::vector<int32_t> layer_windows;  // [num_layers] sliding window per layer, 0 = full; empty = all full
  bool tie_word_embeddings = false;

  TensorNames names;

  int32_t window_of(int32_t layer) const {
    return layer_windows.empty() ? 0 : layer_windows[static_cast<std::size_t>(layer)];
  }
  // The window every layer stays within (the largest), or 0 when some layer attends to everything:
  // what the engine may free KV blocks by (ModelInfo::sliding_window).
  int32_t kv_window() const;
};

}  // namespace llaisys::decoder
