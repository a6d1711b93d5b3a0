#pragma once
// The model shapes llaisys-mkmodel writes, and the tensors of each, following
// tests/data/tiny-qwen2/WEIGHTS.md (names, order, and the scale/offset of every tensor's values).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llaisys::mkmodel {

struct ModelShape {
  std::string name;               // "tiny", "qwen2-0.5b", "qwen2-7b"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 64;
  int64_t max_position_embeddings = 32768;
  bool tie_word_embeddings = false;
};

// "tiny" (the parity fixture), "qwen2-0.5b" (Qwen2-0.5B's real shape) or "qwen2-7b" (Qwen2-7B's).
std::optional<ModelShape> find_shape(std::string_view name);
std::vector<std::string> shape_names();

// One tensor to write: its HF name, shape and how its values are drawn (WEIGHTS.md, "Values").
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  double scale = 0;
  double offset = 0;

  uint64_t numel() const;
};

// Every tensor of `shape`, in the order WEIGHTS.md lists them (which is also the data order).
std::vector<TensorSpec> tensor_specs(const ModelShape& shape);

// config.json and generation_config.json for `shape` (Hugging Face Qwen2 conventions).
std::string config_json(const ModelShape& shape);
std::string generation_config_json();

}  // namespace llaisys::mkmodel
