#include "gguf_convert.hpp"

#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cpu/quant.hpp"
#include "llaisys/model/gguf_model.hpp"
#include "llaisys/model/safetensors.hpp"
#include "tokenizer_metadata.hpp"

namespace llaisys::convert {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct TypeScheme {
  std::string_view name;
  gguf::TensorType base;
  gguf::TensorType output;     // the output head (the embedding when tied)
  gguf::TensorType more_bits;  // attn_v / ffn_down of llama.cpp's "more bits" layers
  uint32_t file_type;          // general.file_type (llama.cpp's LLAMA_FTYPE_*)
};

using TT = gguf::TensorType;
constexpr TypeScheme kSchemes[] = {
    {"f32", TT::F32, TT::F32, TT::F32, 0},          {"f16", TT::F16, TT::F16, TT::F16, 1},
    {"bf16", TT::BF16, TT::BF16, TT::BF16, 32},     {"q8_0", TT::Q8_0, TT::Q8_0, TT::Q8_0, 7},
    {"q4_0", TT::Q4_0, TT::Q6_K, TT::Q4_0, 2},      {"q4_k_m", TT::Q4_K, TT::Q6_K, TT::Q6_K, 15},
    {"q5_k_m", TT::Q5_K, TT::Q6_K, TT::Q6_K, 17},   {"q6_k", TT::Q6_K, TT::Q6_K, TT::Q6_K, 18},
};

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third in between.
bool more_bits_layer(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// The type for rows of `cols` elements: a K-quant whose rows are not whole 256-blocks falls back as
// llama-quantize does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0), then F16 if even that does not fit.
gguf::TensorType fit(gguf::TensorType wanted, int64_t cols) {
  const auto fits = [&](gguf::TensorType t) {
    const auto block = gguf::tensor_type_block(static_cast<uint32_t>(t));
    return block && cols % block->elements == 0;
  };
  if (fits(wanted)) return wanted;
  gguf::TensorType fallback = TT::F16;
  if (wanted == TT::Q4_K) fallback = TT::Q5_0;
  if (wanted == TT::Q5_K) fallback = TT::Q5_1;
  if (wanted == TT::Q6_K) fallback = TT::Q8_0;
  return fits(fallback) ? fallback : TT::F16;
}

// One config key, converted; absent (or not an integer): nullopt.
std::optional<int64_t> int_key(const json::object& c, std::string_view key) {
  const json::value* v = c.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  boost::system::error_code ec;
  const auto value = v->to_number<int64_t>(ec);
  if (ec) return std::nullopt;
  return value;
}
std::optional<double> number_key(const json::object& c, std::string_view key) {
  const json::value* v = c.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

// An integer in [1, 2^31 - 1] (what the GGUF keys hold as u32 and the decoder reads as int32).
Result<int64_t> required(const json::object& c, std::string_view key) {
  const std::optional<int64_t> v = int_key(c, key);
  if (!v) return make_error(ErrorCode::invalid_argument, "config.json: missing integer \"{}\"", key);
  if (*v < 1 || *v > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::invalid_argument, "config.json: \"{}\" = {} is outside [1, 2^31 - 1]", key, *v);
  }
  return *v;
}
Result<int64_t> optional_positive(const json::object& c, std::string_view key, int64_t fallback) {
  if (!c.contains(key) || c.at(key).is_null()) return fallback;
  return required(c, key);
}

// Keys that change what the model computes and that the GGUF metadata written here cannot carry.
constexpr std::string_view kUncarriedKeys[] = {
    "attn_logit_softcapping", "final_logit_softcapping", "logit_scale",        "embedding_multiplier",
    "query_pre_attn_scalar",  "residual_multiplier",     "attention_multiplier", "logits_scaling",
    "num_experts",            "num_local_experts",       "moe_intermediate_size", "layer_types",
};

// A host tensor's rows as f32.
void to_f32(const TensorView& t, std::vector<float>& out) {
  const auto n = static_cast<std::size_t>(t.numel());
  out.resize(n);
  cpu::dequantize(t.dtype(), t.data(), static_cast<int64_t>(n), out.data());
}

// The metadata llama.cpp reads for `arch` from config.json (the keys that change the computation
// and that GGUF cannot say are refused).
Status add_model_metadata(const json::object& c, std::string_view arch, gguf::Writer& w) {
  const std::string p = std::string(arch) + ".";
  LLAISYS_ASSIGN_OR_RETURN(const int64_t hidden, required(c, "hidden_size"));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t heads, required(c, "num_attention_heads"));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t kv_heads, optional_positive(c, "num_key_value_heads", heads));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t head_dim, optional_positive(c, "head_dim", hidden / heads));
  if (head_dim < 1 || heads % kv_heads != 0) {
    return make_error(ErrorCode::invalid_argument, "config.json: {} heads of {} with {} KV heads", heads, head_dim, kv_heads);
  }
  for (std::string_view key : kUncarriedKeys) {
    const json::value* v = c.if_contains(key);
    if (v != nullptr && !v->is_null() && !(v->is_bool() && !v->as_bool())) {
      return make_error(ErrorCode::unsupported, "config.json: \"{}\" = {} cannot be written as GGUF metadata", key,
                        json::serialize(*v));
    }
  }
  if (const json::value* act = c.if_contains("hidden_act"); act != nullptr && !(act->is_string() && act->as_string() == "silu")) {
    return make_error(ErrorCode::unsupported, "config.json: \"hidden_act\" = {} cannot be written as GGUF metadata (silu)",
                      json::serialize(*act));
  }
  LLAISYS_ASSIGN_OR_RETURN(const int64_t layers, required(c, "num_hidden_layers"));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t ffn, required(c, "intermediate_size"));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t vocab, required(c, "vocab_size"));
  LLAISYS_ASSIGN_OR_RETURN(const int64_t context, optional_positive(c, "max_position_embeddings", 4096));
  // transformers v5 keeps RoPE's settings in rope_parameters (rope_theta and rope_type inside).
  const json::object* rope = c.contains("rope_parameters") && c.at("rope_parameters").is_object()
                                 ? &c.at("rope_parameters").as_object()
                                 : nullptr;
  const double theta = rope != nullptr && number_key(*rope, "rope_theta") ? *number_key(*rope, "rope_theta")
                                                                          : number_key(c, "rope_theta").value_or(10000.0);
  w.add_u32(p + "vocab_size", static_cast<uint32_t>(vocab));
  w.add_u32(p + "context_length", static_cast<uint32_t>(context));
  w.add_u32(p + "embedding_length", static_cast<uint32_t>(hidden));
  w.add_u32(p + "block_count", static_cast<uint32_t>(layers));
  w.add_u32(p + "feed_forward_length", static_cast<uint32_t>(ffn));
  w.add_u32(p + "attention.head_count", static_cast<uint32_t>(heads));
  w.add_u32(p + "attention.head_count_kv", static_cast<uint32_t>(kv_heads));
  w.add_u32(p + "attention.key_length", static_cast<uint32_t>(head_dim));
  w.add_u32(p + "attention.value_length", static_cast<uint32_t>(head_dim));
  w.add_u32(p + "rope.dimension_count", static_cast<uint32_t>(head_dim));
  w.add_f32(p + "rope.freq_base", static_cast<float>(theta));
  w.add_f32(p + "attention.layer_norm_rms_epsilon", static_cast<float>(number_key(c, "rms_norm_eps").value_or(1e-6)));
  const json::value* scaling = c.if_contains("rope_scaling");
  if (rope != nullptr) {  // rope_parameters: default RoPE carries over, anything else as rope_scaling would
    const json::value* type = rope->if_contains("rope_type");
    if (type != nullptr && !(type->is_string() && type->as_string() == "default")) scaling = &c.at("rope_parameters");
  }
  if (scaling != nullptr && !scaling->is_null()) {
    const json::object* s = scaling->if_object();
    const json::value* type = s ? (s->contains("rope_type") ? s->if_contains("rope_type") : s->if_contains("type")) : nullptr;
    const json::value* factor = s ? s->if_contains("factor") : nullptr;
    if (type == nullptr || !type->is_string() || type->as_string() != "linear" || factor == nullptr || !factor->is_number()) {
      return make_error(ErrorCode::unsupported, "config.json: rope_scaling {} cannot be written as GGUF metadata (linear only)",
                        json::serialize(*scaling));
    }
    w.add_string(p + "rope.scaling.type", "linear");
    w.add_f32(p + "rope.scaling.factor", static_cast<float>(factor->to_number<double>()));
  }
  const json::value* window = c.if_contains("sliding_window");
  const json::value* use_window = c.if_contains("use_sliding_window");
  const bool windowed = window != nullptr && !window->is_null() &&
                        !(use_window != nullptr && use_window->is_bool() && !use_window->as_bool());
  if (windowed) return Status(ErrorCode::unsupported, "config.json: a sliding window cannot be written as GGUF metadata for this architecture");
  if (auto factor = number_key(c, "partial_rotary_factor"); factor && *factor != 1.0) {
    return Status(ErrorCode::unsupported, "config.json: partial_rotary_factor cannot be written as GGUF metadata");
  }
  return Status();
}

}  // namespace

std::vector<std::string> gguf_type_names() {
  std::vector<std::string> names;
  for (const TypeScheme& s : kSchemes) names.emplace_back(s.name);
  return names;
}

namespace {

Result<ConvertReport> convert(const fs::path& hf_dir, const fs::path& out_file, const std::string& type,
                              const std::string& name) {
  const TypeScheme* scheme = nullptr;
  for (const TypeScheme& s : kSchemes) {
    if (s.name == type) scheme = &s;
  }
  if (scheme == nullptr) {
    return make_error(ErrorCode::invalid_argument, "unknown GGUF type '{}' (one of {})", type,
                      fmt::join(gguf_type_names(), ", "));
  }
  LLAISYS_ASSIGN_OR_RETURN(json::object config, read_json_object(hf_dir / "config.json"));
  const json::value* classes = config.if_contains("architectures");
  if (classes == nullptr || !classes->is_array() || classes->as_array().size() != 1 || !classes->as_array()[0].is_string()) {
    return Status(ErrorCode::invalid_argument, "config.json: \"architectures\" must name one class");
  }
  LLAISYS_ASSIGN_OR_RETURN(const gguf::GgufArchitecture arch,
                           gguf::gguf_architecture_of(std::string(classes->as_array()[0].as_string())));
  LLAISYS_ASSIGN_OR_RETURN(WeightStore store, WeightStore::open(hf_dir, WeightLoading::map));

  gguf::Writer w;
  w.add_string("general.architecture", std::string(arch.name));
  fs::path dir_name = hf_dir.lexically_normal();
  if (!dir_name.has_filename()) dir_name = dir_name.parent_path();  // "model/" names "model"
  w.add_string("general.name", name.empty() ? dir_name.filename().string() : name);
  w.add_u32("general.file_type", scheme->file_type);
  w.add_u32("general.quantization_version", 2);
  LLAISYS_RETURN_IF_ERROR(add_model_metadata(config, arch.name, w));
  const int64_t heads = *int_key(config, "num_attention_heads");
  const int64_t kv_heads = int_key(config, "num_key_value_heads").value_or(heads);
  const int64_t layers = *int_key(config, "num_hidden_layers");
  if (fs::exists(hf_dir / "tokenizer.json")) {
    LLAISYS_RETURN_IF_ERROR(add_tokenizer_metadata(hf_dir, *int_key(config, "vocab_size"), int_key(config, "bos_token_id"),
                                                   int_key(config, "eos_token_id"), w));
  }

  ConvertReport report;
  std::map<std::string, int> fallbacks;  // format with the count left open -> count
  const bool tied = !store.contains("lm_head.weight");
  std::vector<float> values;
  std::vector<std::byte> bytes, permuted;
  for (const std::string& hf_name : store.names()) {
    const std::optional<std::string> gguf_name = gguf::gguf_tensor_name(hf_name);
    if (!gguf_name) {
      if (hf_name.ends_with("rotary_emb.inv_freq")) continue;  // recomputed from rope_theta
      return make_error(ErrorCode::unsupported, "tensor '{}' has no GGUF name for {}", hf_name, arch.name);
    }
    LLAISYS_ASSIGN_OR_RETURN(TensorView t, store.find(hf_name));
    if (is_quantized(t.dtype()) || (t.dtype() != DType::f32 && t.dtype() != DType::bf16 && t.dtype() != DType::f16)) {
      return make_error(ErrorCode::unsupported, "tensor '{}' is {}; only F32, F16 and BF16 inputs are converted", hf_name,
                        to_string(t.dtype()));
    }
    to_f32(t, values);
    const int64_t cols = t.dim(t.rank() - 1);
    const int64_t rows = t.numel() / std::max<int64_t>(cols, 1);
    // Vectors stay f32; matrices take the scheme's type for their role.
    gguf::TensorType type_id = TT::F32;
    if (t.rank() == 2) {
      type_id = scheme->base;
      const bool output = *gguf_name == "output.weight" || (tied && *gguf_name == "token_embd.weight");
      int64_t layer = -1;
      if (gguf_name->starts_with("blk.")) layer = std::stoll(gguf_name->substr(4));
      if (output) {
        type_id = scheme->output;
      } else if (layer >= 0 && (gguf_name->find(".attn_v.") != std::string::npos || gguf_name->find(".ffn_down.") != std::string::npos) &&
                 more_bits_layer(layer, layers)) {
        type_id = scheme->more_bits;
      }
      const gguf::TensorType fitted = fit(type_id, cols);
      if (fitted != type_id) {
        ++fallbacks[fmt::format("{} -> {} for {{}} tensors (rows of {})",
                                *gguf::tensor_type_name(static_cast<uint32_t>(type_id)),
                                *gguf::tensor_type_name(static_cast<uint32_t>(fitted)), cols)];
        type_id = fitted;
      }
    }
    const DType dtype = *gguf::dtype_of(static_cast<uint32_t>(type_id));
    const int64_t row_bytes = dtype_bytes(dtype, cols);
    bytes.resize(static_cast<std::size_t>(rows * row_bytes));
    for (int64_t r = 0; r < rows; ++r) {
      cpu::quantize(dtype, values.data() + r * cols, cols, bytes.data() + r * row_bytes);
    }
    if (arch.permuted_qk && (gguf_name->find(".attn_q.") != std::string::npos || gguf_name->find(".attn_k.") != std::string::npos)) {
      // Whole rows of a matrix, single elements of a bias: the rows are always dim 0.
      const int64_t n = gguf_name->find(".attn_q.") != std::string::npos ? heads : kv_heads;
      const int64_t head_rows = t.dim(0);
      if (head_rows % n != 0 || (head_rows / n) % 2 != 0) {
        return make_error(ErrorCode::invalid_argument, "tensor '{}' has {} rows, not {} heads of an even size", hf_name,
                          head_rows, n);
      }
      permuted.assign(bytes.size(), std::byte{0});
      gguf::permute_rows(bytes.data(), permuted.data(), head_rows, static_cast<int64_t>(bytes.size()) / head_rows, n);
      bytes.swap(permuted);
    }
    std::vector<int64_t> dims(t.shape().dims().rbegin(), t.shape().dims().rend());  // GGUF: innermost first
    LLAISYS_RETURN_IF_ERROR(w.add_tensor(*gguf_name, std::move(dims), static_cast<uint32_t>(type_id), bytes));
    ++report.tensors;
  }
  for (const auto& [line, count] : fallbacks) report.fallbacks.push_back(fmt::format(fmt::runtime(line), count));
  const fs::path partial = fs::path(out_file.string() + ".partial");
  LLAISYS_RETURN_IF_ERROR(w.write(partial));
  std::error_code ec;
  fs::rename(partial, out_file, ec);
  if (ec) {
    fs::remove(partial, ec);
    return make_error(ErrorCode::io_error, "cannot rename {} to {}: {}", partial.string(), out_file.string(), ec.message());
  }
  report.file_bytes = fs::file_size(out_file);
  return report;
}

}  // namespace

Result<ConvertReport> convert_to_gguf(const fs::path& hf_dir, const fs::path& out_file, const std::string& type,
                                      const std::string& name) {
  try {
    return convert(hf_dir, out_file, type, name);
  } catch (const std::exception& e) {  // the Writer refuses misuse (a key twice, a string too long) by throwing
    return make_error(ErrorCode::invalid_argument, "{}: {}", hf_dir.string(), e.what());
  }
}

}  // namespace llaisys::convert
