#pragma once
// Hugging Face config.json (+ generation_config.json) of a decoder-only transformer, read into the
// hyperparameters llaisys needs.
//
// Contract: a setting that would change the function the model computes and that llaisys does not
// implement is an `unsupported` error naming the key — never silently ignored. Today that is: a
// rope_scaling (or transformers v5 rope_parameters) kind other than "default", "linear" or "llama3", use_sliding_window true, a hidden_act other
// than silu, partial_rotary_factor != 1, more than 8 EOS ids. Missing or ill-typed required keys,
// and values the kernels cannot take (rms_norm_eps outside [FLT_MIN, 1]), are `invalid_argument`
// errors naming the key. Keys that do not change the computation (dropout, initializer_range,
// use_cache, ...) are ignored.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

struct RopeScaling {
  enum class Kind { none, linear, llama3 };
  Kind kind = Kind::none;
  double factor = 1.0;  // linear: positions are divided by it
  // llama3 (Llama 3.1+): frequencies whose wavelength exceeds original_max_position_embeddings /
  // low_freq_factor are divided by `factor`, those below original / high_freq_factor are kept, and
  // the band between is interpolated (transformers' _compute_llama3_parameters).
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int32_t original_max_position_embeddings = 0;
};

struct HfTransformerConfig {
  std::vector<std::string> architectures;
  std::string model_type;
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_layers = 0;           // num_hidden_layers
  int32_t num_heads = 0;            // num_attention_heads
  int32_t num_kv_heads = 0;         // num_key_value_heads (default: num_heads)
  int32_t head_dim = 0;             // head_dim (default: hidden_size / num_heads)
  int32_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;      // Llama-style key; Qwen2 has q/k/v biases regardless
  bool mlp_bias = false;
  std::optional<DType> torch_dtype;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;  // generation_config.json's when it has any, else config.json's
};

// Parses the text of config.json and, when given, of generation_config.json. `source` names the
// directory in messages.
Result<HfTransformerConfig> parse_hf_config(std::string_view config_json,
                                            std::optional<std::string_view> generation_config_json,
                                            std::string_view source = "config.json");

// Reads model_dir/config.json and, if present, model_dir/generation_config.json.
Result<HfTransformerConfig> load_hf_config(const std::filesystem::path& model_dir);

}  // namespace llaisys
