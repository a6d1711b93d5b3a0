// A GGUF model file translated into Hugging Face terms: config.json keys and tensor names.

#include "llaisys/model/gguf_model.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace llaisys::gguf {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct Architecture {
  std::string_view gguf;       // general.architecture
  std::string_view hf_class;   // config.json "architectures"
  std::string_view model_type;
  bool permuted_qk = false;    // llama.cpp's converter interleaves q/k rows (llama only)
  bool qk_norm = false;        // attn_q_norm / attn_k_norm tensors belong to it
  bool optional_biases = false;  // q/k/v/o and MLP biases are config keys (attention_bias, mlp_bias)
};

constexpr std::array kArchitectures = {
    Architecture{"llama", "LlamaForCausalLM", "llama", true, false, true},
    Architecture{"qwen2", "Qwen2ForCausalLM", "qwen2", false, false, false},
    Architecture{"qwen3", "Qwen3ForCausalLM", "qwen3", false, true, true},
};

std::string supported_names() {
  std::string out;
  for (const Architecture& a : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(a.gguf);
  return out;
}

// Reads the metadata the translation needs, naming the file and key in every error.
class Metadata {
 public:
  Metadata(const File& file, std::string_view source) : file_(file), source_(source) {}

  Result<std::string> string(std::string_view key) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return make_error(ErrorCode::invalid_argument, "{}: missing metadata key '{}'", source_, key);
    if (v->type != ValueType::string) return wrong_type(key, *v, "a string");
    return v->s;
  }
  // An integer in [min, max]; `fallback` when absent.
  Result<int64_t> integer(std::string_view key, std::optional<int64_t> fallback, int64_t min = 1,
                          int64_t max = std::numeric_limits<int32_t>::max()) const {
    const Value* v = file_.find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return make_error(ErrorCode::invalid_argument, "{}: missing metadata key '{}'", source_, key);
    }
    const std::optional<int64_t> value = v->as_int();
    if (!value) return wrong_type(key, *v, "an integer");
    if (*value < min || *value > max) {
      return make_error(ErrorCode::invalid_argument, "{}: metadata '{}' = {} is outside [{}, {}]", source_, key,
                        *value, min, max);
    }
    return *value;
  }
  Result<std::optional<double>> number(std::string_view key) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return std::optional<double>();
    const std::optional<double> value = v->as_number();
    if (!value || !std::isfinite(*value)) return wrong_type(key, *v, "a finite number");
    return value;
  }
  bool contains(std::string_view key) const { return file_.find(key) != nullptr; }

 private:
  Status wrong_type(std::string_view key, const Value& v, std::string_view expected) const {
    return make_error(ErrorCode::invalid_argument, "{}: metadata '{}' is {}, expected {}", source_, key,
                      to_string(v.type), expected);
  }
  const File& file_;
  std::string_view source_;
};

Result<const Architecture*> architecture_of(const File& file, std::string_view source) {
  LLAISYS_ASSIGN_OR_RETURN(std::string name, Metadata(file, source).string("general.architecture"));
  for (const Architecture& a : kArchitectures) {
    if (a.gguf == name) return &a;
  }
  return make_error(ErrorCode::unsupported, "{}: general.architecture '{}' is not supported (supported: {})", source,
                    name, supported_names());
}

// llama.cpp's tensor names and their Hugging Face counterparts: the model-wide ones, then the
// per-layer parts (blk.N.<part>.weight|bias <-> model.layers.N.<hf part>.weight|bias).
const std::array<std::pair<std::string_view, std::string_view>, 3> kGlobal = {{
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
}};
const std::array<std::pair<std::string_view, std::string_view>, 11> kLayer = {{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};

// Token texts that end a turn or a document (llama.cpp's end-of-generation list, for the families
// read here).
constexpr std::string_view kEndOfGenerationTexts[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>",
                                                      "<|end|>", "<end_of_turn>", "<EOT>"};

// Keys under "<arch>." that change what the model computes and that the translation does not carry.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kRefusedKeys = {{
    {"expert_count", "mixture-of-experts layers"},
    {"attention.sliding_window", "sliding-window attention"},
    {"attn_logit_softcapping", "attention logit soft-capping"},
    {"final_logit_softcapping", "final logit soft-capping"},
    {"rope.scaling.attn_factor", "YaRN attention scaling"},
    {"attention.layer_norm_epsilon", "LayerNorm (not RMSNorm)"},
}};

}  // namespace

bool is_gguf_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

Result<std::unique_ptr<const MappedGguf>> open_gguf(const fs::path& path) {
  auto opened = std::make_unique<MappedGguf>();
  LLAISYS_ASSIGN_OR_RETURN(opened->file, MappedFile::open(path, WeightLoading::map));
  LLAISYS_ASSIGN_OR_RETURN(opened->parsed, File::parse(opened->file.bytes(), path.string()));
  return std::unique_ptr<const MappedGguf>(std::move(opened));
}

Result<std::string> gguf_config_json(const File& file, std::string_view source) {
  LLAISYS_ASSIGN_OR_RETURN(const Architecture* arch, architecture_of(file, source));
  const Metadata m(file, source);
  const std::string p = std::string(arch->gguf) + ".";
  for (const auto& [key, what] : kRefusedKeys) {
    const Value* v = file.find(p + std::string(key));
    if (v == nullptr) continue;
    if (key == "expert_count" && v->as_int() == 0) continue;
    return make_error(ErrorCode::unsupported, "{}: metadata '{}{}' asks for {}, which is not supported from GGUF",
                      source, p, key, what);
  }
  if (file.find_tensor("rope_freqs.weight") != nullptr) {
    return make_error(ErrorCode::unsupported,
                      "{}: tensor 'rope_freqs.weight' (Llama 3.1-style RoPE frequency factors) is not supported from "
                      "GGUF; use the Hugging Face directory",
                      source);
  }

  json::object config;
  config["architectures"] = json::array{json::string(arch->hf_class)};
  config["model_type"] = arch->model_type;
  LLAISYS_ASSIGN_OR_RETURN(const int64_t hidden, m.integer(p + "embedding_length", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t heads, m.integer(p + "attention.head_count", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t kv_heads, m.integer(p + "attention.head_count_kv", heads));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t head_dim, m.integer(p + "attention.key_length", hidden / heads));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t value_dim, m.integer(p + "attention.value_length", head_dim));
  if (value_dim != head_dim) {
    return make_error(ErrorCode::unsupported, "{}: value heads of {} and key heads of {} are not supported", source,
                      value_dim, head_dim);
  }
  config["hidden_size"] = hidden;
  config["num_attention_heads"] = heads;
  config["num_key_value_heads"] = kv_heads;
  config["head_dim"] = head_dim;
  LLAISYS_ASSIGN_OR_RETURN(config["num_hidden_layers"], m.integer(p + "block_count", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(config["intermediate_size"], m.integer(p + "feed_forward_length", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(config["max_position_embeddings"], m.integer(p + "context_length", std::nullopt));

  // The vocabulary: the key when present, else the embedding's rows.
  int64_t vocab = 0;
  if (m.contains(p + "vocab_size")) {
    LLAISYS_ASSIGN_OR_RETURN(vocab, m.integer(p + "vocab_size", std::nullopt));
  } else if (const TensorInfo* embed = file.find_tensor("token_embd.weight"); embed != nullptr && embed->dims.size() == 2) {
    vocab = embed->dims[1];
  } else {
    return make_error(ErrorCode::invalid_argument, "{}: no '{}vocab_size' and no token_embd.weight to size the vocabulary",
                      source, p);
  }
  config["vocab_size"] = vocab;

  LLAISYS_ASSIGN_OR_RETURN(std::optional<double> eps, m.number(p + "attention.layer_norm_rms_epsilon"));
  if (!eps) return make_error(ErrorCode::invalid_argument, "{}: missing metadata key '{}attention.layer_norm_rms_epsilon'", source, p);
  config["rms_norm_eps"] = *eps;
  LLAISYS_ASSIGN_OR_RETURN(std::optional<double> theta, m.number(p + "rope.freq_base"));
  config["rope_theta"] = theta.value_or(10000.0);
  LLAISYS_ASSIGN_OR_RETURN(const int64_t rope_dims, m.integer(p + "rope.dimension_count", head_dim));
  if (rope_dims != head_dim) config["partial_rotary_factor"] = static_cast<double>(rope_dims) / static_cast<double>(head_dim);
  // llama.cpp reads a scaling factor without a type as linear, and the older rope.scale_linear too.
  LLAISYS_ASSIGN_OR_RETURN(std::optional<double> factor, m.number(p + "rope.scaling.factor"));
  if (!factor) {
    LLAISYS_ASSIGN_OR_RETURN(factor, m.number(p + "rope.scale_linear"));
  }
  std::string scaling = factor ? "linear" : "none";
  if (m.contains(p + "rope.scaling.type")) {
    LLAISYS_ASSIGN_OR_RETURN(scaling, m.string(p + "rope.scaling.type"));
  }
  if (scaling == "linear" && factor && *factor != 1.0) {
    config["rope_scaling"] = json::object{{"rope_type", "linear"}, {"factor", *factor}};
  } else if (scaling == "linear" && !factor) {
    return make_error(ErrorCode::invalid_argument, "{}: linear RoPE scaling without '{}rope.scaling.factor'", source, p);
  } else if (scaling != "none" && scaling != "linear") {
    return make_error(ErrorCode::unsupported, "{}: metadata '{}rope.scaling.type' = '{}' is not supported from GGUF "
                      "(none, linear)", source, p, scaling);
  }
  config["hidden_act"] = "silu";
  if (arch->optional_biases) {  // biases are optional tensors there; the config must say so
    config["attention_bias"] = file.find_tensor("blk.0.attn_q.bias") != nullptr;
    config["mlp_bias"] = file.find_tensor("blk.0.ffn_gate.bias") != nullptr;
  }
  config["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;

  const int64_t max_id = vocab - 1;
  if (m.contains("tokenizer.ggml.bos_token_id")) {
    LLAISYS_ASSIGN_OR_RETURN(config["bos_token_id"], m.integer("tokenizer.ggml.bos_token_id", std::nullopt, 0, max_id));
  }
  json::array eos;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (!m.contains(key)) continue;
    LLAISYS_ASSIGN_OR_RETURN(const int64_t id, m.integer(key, std::nullopt, 0, max_id));
    if (std::find(eos.begin(), eos.end(), json::value(id)) == eos.end()) eos.push_back(id);
  }
  // As llama.cpp does, tokens whose text marks the end of a turn end generation too (a Qwen2.5 file
  // names <|im_end|> as EOS; <|endoftext|> still ends a completion, as generation_config.json says).
  if (const Value* tokens = file.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == ValueType::array && tokens->array->element_type == ValueType::string) {
    const auto& items = tokens->array->items;
    for (std::size_t id = 0; id < items.size() && static_cast<int64_t>(id) < vocab && eos.size() < 8; ++id) {
      if (std::find(std::begin(kEndOfGenerationTexts), std::end(kEndOfGenerationTexts), items[id].s) ==
              std::end(kEndOfGenerationTexts) ||
          std::find(eos.begin(), eos.end(), json::value(static_cast<int64_t>(id))) != eos.end()) {
        continue;
      }
      eos.push_back(static_cast<int64_t>(id));
    }
  }
  if (!eos.empty()) config["eos_token_id"] = std::move(eos);
  return json::serialize(config);
}

Result<std::vector<HfTensor>> hf_tensor_names(const File& file, std::string_view source) {
  LLAISYS_ASSIGN_OR_RETURN(const Architecture* arch, architecture_of(file, source));
  const Metadata m(file, source);
  const std::string p = std::string(arch->gguf) + ".";
  LLAISYS_ASSIGN_OR_RETURN(const int64_t heads, m.integer(p + "attention.head_count", std::nullopt));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t kv_heads, m.integer(p + "attention.head_count_kv", heads));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t layers, m.integer(p + "block_count", std::nullopt));

  std::vector<HfTensor> out;
  for (const TensorInfo& t : file.tensors()) {
    HfTensor mapped{.tensor = &t};
    for (const auto& [gguf_name, hf_name] : kGlobal) {
      if (t.name == gguf_name) mapped.hf_name = hf_name;
    }
    std::string_view name = t.name;
    if (mapped.hf_name.empty() && name.starts_with("blk.")) {
      name.remove_prefix(4);
      const std::size_t dot = name.find('.');
      int64_t layer = -1;
      const std::string_view digits = name.substr(0, dot);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
      // "blk.7", not "blk.07": one spelling per layer, inside the model.
      const bool canonical = digits.size() == 1 || digits.front() != '0';
      if (dot != std::string_view::npos && ec == std::errc() && end == digits.data() + digits.size() && canonical &&
          layer >= 0 && layer < layers) {
        const std::string_view rest = name.substr(dot + 1);  // "attn_q.weight"
        const std::size_t suffix_dot = rest.rfind('.');
        const std::string_view part = rest.substr(0, suffix_dot);
        const std::string_view suffix = suffix_dot == std::string_view::npos ? "" : rest.substr(suffix_dot + 1);
        for (const auto& [gguf_part, hf_part] : kLayer) {
          if (part != gguf_part || (suffix != "weight" && suffix != "bias")) continue;
          if ((part == "attn_q_norm" || part == "attn_k_norm") && (!arch->qk_norm || suffix != "weight")) continue;
          mapped.hf_name = fmt::format("model.layers.{}.{}.{}", layer, hf_part, suffix);
          if (arch->permuted_qk && part == "attn_q") mapped.permute_heads = heads;
          if (arch->permuted_qk && part == "attn_k") mapped.permute_heads = kv_heads;
        }
      }
    }
    if (mapped.hf_name.empty()) {
      return make_error(ErrorCode::unsupported, "{}: tensor '{}' has no counterpart in the {} architecture's layout",
                        source, t.name, arch->gguf);
    }
    out.push_back(std::move(mapped));
  }
  return out;
}

Result<GgufArchitecture> gguf_architecture_of(std::string_view hf_class) {
  for (const Architecture& a : kArchitectures) {
    if (a.hf_class == hf_class) return GgufArchitecture{.name = a.gguf, .permuted_qk = a.permuted_qk};
  }
  if (hf_class == "MistralForCausalLM") return GgufArchitecture{.name = "llama", .permuted_qk = true};
  std::string names;
  for (const Architecture& a : kArchitectures) names += std::string(a.hf_class) + ", ";
  return make_error(ErrorCode::unsupported, "architecture {} cannot be written as GGUF (supported: {}MistralForCausalLM)",
                    hf_class, names);
}

std::optional<std::string> gguf_tensor_name(std::string_view hf_name) {
  for (const auto& [gguf_name, hf] : kGlobal) {
    if (hf_name == hf) return std::string(gguf_name);
  }
  if (!hf_name.starts_with("model.layers.")) return std::nullopt;
  std::string_view rest = hf_name.substr(13);
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view layer = rest.substr(0, dot);
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  rest.remove_prefix(dot + 1);
  const std::size_t suffix_dot = rest.rfind('.');
  if (suffix_dot == std::string_view::npos) return std::nullopt;
  const std::string_view part = rest.substr(0, suffix_dot), suffix = rest.substr(suffix_dot + 1);
  if (suffix != "weight" && suffix != "bias") return std::nullopt;
  for (const auto& [gguf_part, hf_part] : kLayer) {
    if (part == hf_part) return fmt::format("blk.{}.{}.{}", layer, gguf_part, suffix);
  }
  return std::nullopt;
}

void permute_rows(const std::byte* src, std::byte* dst, int64_t rows, int64_t row_bytes, int64_t heads) {
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t t = 0; t < 2; ++t) {
      for (int64_t j = 0; j < half; ++j) {
        std::memcpy(dst + (h * head_dim + 2 * j + t) * row_bytes, src + (h * head_dim + t * half + j) * row_bytes,
                    static_cast<std::size_t>(row_bytes));
      }
    }
  }
}

void unpermute_rows(const std::byte* src, std::byte* dst, int64_t rows, int64_t row_bytes, int64_t heads) {
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t t = 0; t < 2; ++t) {
      for (int64_t j = 0; j < half; ++j) {
        const int64_t hf_row = h * head_dim + t * half + j;
        const int64_t stored_row = h * head_dim + 2 * j + t;
        std::memcpy(dst + hf_row * row_bytes, src + stored_row * row_bytes, static_cast<std::size_t>(row_bytes));
      }
    }
  }
}

}  // namespace llaisys::gguf
