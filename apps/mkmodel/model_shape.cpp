#include "model_shape.hpp"

#include "architectures.hpp"

namespace llaisys::mkmodel {
namespace {

// Every shape mkmodel writes. The Qwen2 shapes follow tests/data/tiny-qwen2/WEIGHTS.md; each tiny-*
// shape is the model its fixture's WEIGHTS.md defines (tests/data/<name>/).
const std::vector<ModelShape>& shapes() {
  static const std::vector<ModelShape> all = {
      ModelShape{.name = "tiny", .architecture = Architecture::qwen2, .vocab_size = 151936, .hidden_size = 256,
                 .intermediate_size = 512, .num_layers = 3, .num_heads = 4, .num_kv_heads = 2, .head_dim = 64,
                 .max_position_embeddings = 32768, .tie_word_embeddings = false},
      ModelShape{.name = "qwen2-0.5b", .architecture = Architecture::qwen2, .vocab_size = 151936,
                 .hidden_size = 896, .intermediate_size = 4864, .num_layers = 24, .num_heads = 14,
                 .num_kv_heads = 2, .head_dim = 64, .max_position_embeddings = 32768, .tie_word_embeddings = true},
      ModelShape{.name = "qwen2-7b", .architecture = Architecture::qwen2, .vocab_size = 152064,
                 .hidden_size = 3584, .intermediate_size = 18944, .num_layers = 28, .num_heads = 28,
                 .num_kv_heads = 4, .head_dim = 128, .max_position_embeddings = 131072,
                 .tie_word_embeddings = false},
      // head_dim 64 with 8 query heads: the attention width (512) is not hidden_size.
      ModelShape{.name = "tiny-qwen3", .architecture = Architecture::qwen3, .vocab_size = 151936,
                 .hidden_size = 256, .intermediate_size = 512, .num_layers = 3, .num_heads = 8, .num_kv_heads = 2,
                 .head_dim = 64, .max_position_embeddings = 40960, .tie_word_embeddings = false},
      ModelShape{.name = "tiny-mistral", .architecture = Architecture::mistral, .vocab_size = 512,
                 .hidden_size = 256, .intermediate_size = 512, .num_layers = 3, .num_heads = 4, .num_kv_heads = 2,
                 .head_dim = 64, .max_position_embeddings = 2048, .sliding_window = 16,
                 .tie_word_embeddings = false, .tokenizer = "stories260K-tokenizer"},
      ModelShape{.name = "tiny-gemma2", .architecture = Architecture::gemma2, .vocab_size = 512,
                 .hidden_size = 256, .intermediate_size = 512, .num_layers = 4, .num_heads = 4, .num_kv_heads = 2,
                 .head_dim = 64, .max_position_embeddings = 2048, .sliding_window = 32,
                 .tie_word_embeddings = true, .tokenizer = "stories260K-tokenizer"},
      ModelShape{.name = "tiny-llama", .architecture = Architecture::llama, .vocab_size = 512,
                 .hidden_size = 256, .intermediate_size = 768, .num_layers = 3, .num_heads = 4, .num_kv_heads = 2,
                 .head_dim = 64, .max_position_embeddings = 2048, .tie_word_embeddings = false,
                 .tokenizer = "stories260K-tokenizer"},
  };
  return all;
}

}  // namespace

std::optional<ModelShape> find_shape(std::string_view name) {
  for (const ModelShape& shape : shapes()) {
    if (shape.name == name) return shape;
  }
  return std::nullopt;
}

std::vector<std::string> shape_names() {
  std::vector<std::string> names;
  for (const ModelShape& shape : shapes()) names.push_back(shape.name);
  return names;
}

std::string json_string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "\n    \"" : ",\n    \"") + items[i] + "\"";
  return out + "\n  ]";
}

uint64_t TensorSpec::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::vector<TensorSpec> tensor_specs(const ModelShape& shape) {
  switch (shape.architecture) {
    case Architecture::qwen2: return qwen2_tensors(shape);
    case Architecture::qwen3: return qwen3_tensors(shape);
    case Architecture::mistral: return mistral_tensors(shape);
    case Architecture::llama: return llama_tensors(shape);
    case Architecture::gemma2: return gemma2_tensors(shape);
  }
  return {};
}

std::string config_json(const ModelShape& shape) {
  switch (shape.architecture) {
    case Architecture::qwen2: return qwen2_config_json(shape);
    case Architecture::qwen3: return qwen3_config_json(shape);
    case Architecture::mistral: return mistral_config_json(shape);
    case Architecture::llama: return llama_config_json(shape);
    case Architecture::gemma2: return gemma2_config_json(shape);
  }
  return {};
}

std::string generation_config_json(const ModelShape& shape) {
  switch (shape.architecture) {
    case Architecture::qwen2: return qwen2_generation_config_json();
    case Architecture::qwen3: return qwen3_generation_config_json();
    case Architecture::mistral: return mistral_generation_config_json();
    case Architecture::llama: return llama_generation_config_json();
    case Architecture::gemma2: return gemma2_generation_config_json();
  }
  return {};
}

}  // namespace llaisys::mkmodel
