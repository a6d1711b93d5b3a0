#pragma once
// The model shapes llaisys-mkmodel writes. Each shape has an architecture, and each architecture its
// own tensor list and config text (architectures.hpp), following the WEIGHTS.md of its fixture:
// tests/data/tiny-qwen2 (Qwen2 shapes), tiny-qwen3, tiny-mistral, tiny-gemma2, tiny-llama-gguf.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llaisys::mkmodel {

enum class Architecture { qwen2, qwen3, mistral, gemma2, llama };

struct ModelShape {
  std::string name;               // "tiny", "qwen2-0.5b", "qwen2-7b", "tiny-qwen3", "tiny-mistral", "tiny-gemma2"
  Architecture architecture = Architecture::qwen2;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 64;
  int64_t max_position_embeddings = 32768;
  int64_t sliding_window = 0;     // tokens, on the layers the architecture windows (Mistral, Gemma 2); 0: none
  bool tie_word_embeddings = false;
  std::string tokenizer = "qwen2-tokenizer";  // the folder under share/llaisys/ whose tokenizer files it gets
};

// "tiny" (the tiny-qwen2 fixture), "qwen2-0.5b" (Qwen2-0.5B's real shape), "qwen2-7b" (Qwen2-7B's),
// and the tiny-qwen3, tiny-mistral, tiny-gemma2 and tiny-llama (tests/data/tiny-llama-gguf) fixtures.
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

// Every tensor of `shape`, in the order its WEIGHTS.md lists them (which is also the data order).
std::vector<TensorSpec> tensor_specs(const ModelShape& shape);

// config.json and generation_config.json for `shape` (Hugging Face conventions of its architecture).
std::string config_json(const ModelShape& shape);
std::string generation_config_json(const ModelShape& shape);

}  // namespace llaisys::mkmodel
