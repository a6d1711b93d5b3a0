#pragma once
// What each architecture writes for a shape: its tensors, in WEIGHTS.md order with the scale and
// offset of each, and its config.json / generation_config.json text. One file per architecture
// (architecture_<name>.cpp); model_shape.cpp picks by ModelShape::architecture.

#include <cmath>
#include <string>
#include <vector>

#include "model_shape.hpp"

namespace llaisys::mkmodel {

std::vector<TensorSpec> qwen2_tensors(const ModelShape& shape);
std::string qwen2_config_json(const ModelShape& shape);
std::string qwen2_generation_config_json();

std::vector<TensorSpec> qwen3_tensors(const ModelShape& shape);
std::string qwen3_config_json(const ModelShape& shape);
std::string qwen3_generation_config_json();

std::vector<TensorSpec> mistral_tensors(const ModelShape& shape);
std::string mistral_config_json(const ModelShape& shape);
std::string mistral_generation_config_json();

// The Llama layout without biases (tiny-llama-gguf and tiny-mistral): embedding, per layer input
// norm, q/k/v/o, post-attention norm, gate/up/down, final norm, lm head unless tied. Scales:
// the embedding's, a factor on o/down's unit-variance scale, a factor on the lm head's.
struct LlamaLayoutScales {
  double embed = 1.0;
  double output = 1.0;
  double head = 1.0;
};
std::vector<TensorSpec> llama_layout_tensors(const ModelShape& shape, const LlamaLayoutScales& scales);
std::vector<TensorSpec> llama_tensors(const ModelShape& shape);
std::string llama_config_json(const ModelShape& shape);
std::string llama_generation_config_json();

std::vector<TensorSpec> gemma2_tensors(const ModelShape& shape);
std::string gemma2_config_json(const ModelShape& shape);
std::string gemma2_generation_config_json();

// `items` as a JSON array of strings, one per line, in the layout of the fixtures' config.json
// (the array's lines indented by 4, its closing bracket by 2).
std::string json_string_array(const std::vector<std::string>& items);

// sqrt(3 / fan_in): the half-width of a uniform distribution with variance 1 / fan_in, the scale
// WEIGHTS.md gives the projections (times a per-tensor factor).
inline double unit_variance_scale(int64_t fan_in) { return std::sqrt(3.0 / static_cast<double>(fan_in)); }

}  // namespace llaisys::mkmodel
