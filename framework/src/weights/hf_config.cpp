#include "llaisys/model/hf_config.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <boost/json.hpp>

#include "strict_json.hpp"

namespace llaisys {
namespace json = boost::json;
namespace {

constexpr std::size_t kMaxConfigBytes = 4u << 20;

Result<json::object> parse_object(std::string_view text, std::string_view source) {
  weights::StrictJsonError error;
  json::value value = weights::parse_strict_json(text, error);
  if (error.kind == weights::StrictJsonError::Kind::syntax) {
    return make_error(ErrorCode::parse_error, "{}: invalid JSON: {}", source, error.message);
  }
  if (error.kind == weights::StrictJsonError::Kind::duplicate_key) {
    return make_error(ErrorCode::parse_error, "{}: duplicate key '{}'", source, error.duplicate.key);
  }
  if (!value.is_object()) return make_error(ErrorCode::parse_error, "{}: expected a JSON object", source);
  return std::move(value.as_object());
}

// Reads an integer key into `out`. Absent: `required` decides between an error and leaving `out`.
Status read_int(const json::object& o, std::string_view key, int32_t& out, bool required,
                std::string_view source, int64_t min_value = 1) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (required) return make_error(ErrorCode::invalid_argument, "{}: missing \"{}\"", source, key);
    return Status();
  }
  int64_t value = 0;
  if (v->is_int64()) {
    value = v->as_int64();
  } else if (v->is_uint64()) {
    value = std::numeric_limits<int64_t>::max();
  } else {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be an integer, got {}", source, key,
                      json::serialize(*v));
  }
  if (value < min_value || value > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" = {} is outside [{}, {}]", source, key, value,
                      min_value, std::numeric_limits<int32_t>::max());
  }
  out = static_cast<int32_t>(value);
  return Status();
}

Status read_number(const json::object& o, std::string_view key, double& out, std::string_view source) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_number()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be a number, got {}", source, key,
                      json::serialize(*v));
  }
  out = v->to_number<double>();
  if (!std::isfinite(out) || out <= 0) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be positive, got {}", source, key,
                      json::serialize(*v));
  }
  return Status();
}

Status read_bool(const json::object& o, std::string_view key, bool& out, std::string_view source) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_bool()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be true or false, got {}", source, key,
                      json::serialize(*v));
  }
  out = v->as_bool();
  return Status();
}

// An int or a list of ints (eos_token_id). Absent or null leaves `out` alone.
Status read_token_ids(const json::object& o, std::string_view key, std::vector<TokenId>& out,
                      std::string_view source) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status();
  std::vector<TokenId> ids;
  auto add = [&](const json::value& item) -> Status {
    if (!item.is_int64() || item.as_int64() < 0 || item.as_int64() > std::numeric_limits<int32_t>::max()) {
      return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must hold token ids, got {}", source, key,
                        json::serialize(item));
    }
    ids.push_back(static_cast<TokenId>(item.as_int64()));
    return Status();
  };
  if (v->is_array()) {
    for (const json::value& item : v->as_array()) LLAISYS_RETURN_IF_ERROR(add(item));
  } else {
    LLAISYS_RETURN_IF_ERROR(add(*v));
  }
  out = std::move(ids);
  return Status();
}

// `key` is "rope_scaling" or (transformers v5) "rope_parameters": the same fields.
Status read_rope_scaling(const json::object& o, RopeScaling& out, std::string_view source,
                         std::string_view key = "rope_scaling") {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status();
  const json::object* scaling = v->if_object();
  if (scaling == nullptr) {
    return make_error(ErrorCode::invalid_argument, "{}: \"{}\" must be an object or null", source, key);
  }
  // transformers reads "rope_type", older files say "type".
  const json::value* kind = scaling->if_contains("rope_type");
  if (kind == nullptr) kind = scaling->if_contains("type");
  if (kind == nullptr || !kind->is_string()) {
    return make_error(ErrorCode::invalid_argument, "{}: \"rope_scaling\" has no \"rope_type\" string", source);
  }
  const std::string_view name(kind->as_string().data(), kind->as_string().size());
  if (name == "default") return Status();
  if (name == "linear") {
    double factor = 0;
    LLAISYS_RETURN_IF_ERROR(read_number(*scaling, "factor", factor, source));
    if (factor <= 0) {
      return make_error(ErrorCode::invalid_argument, "{}: linear rope_scaling needs a positive \"factor\"",
                        source);
    }
    out = {.kind = RopeScaling::Kind::linear, .factor = factor};
    return Status();
  }
  if (name == "llama3") {
    // All four keys are required, as transformers' _validate_llama3_parameters demands.
    RopeScaling r{.kind = RopeScaling::Kind::llama3, .factor = 0, .low_freq_factor = 0, .high_freq_factor = 0};
    for (const char* field : {"factor", "low_freq_factor", "high_freq_factor"}) {
      if (!scaling->contains(field)) {
        return make_error(ErrorCode::invalid_argument, "{}: llama3 rope_scaling needs \"{}\"", source, field);
      }
    }
    LLAISYS_RETURN_IF_ERROR(read_number(*scaling, "factor", r.factor, source));
    LLAISYS_RETURN_IF_ERROR(read_number(*scaling, "low_freq_factor", r.low_freq_factor, source));
    LLAISYS_RETURN_IF_ERROR(read_number(*scaling, "high_freq_factor", r.high_freq_factor, source));
    LLAISYS_RETURN_IF_ERROR(read_int(*scaling, "original_max_position_embeddings", r.original_max_position_embeddings,
                                     true, source));
    if (r.factor < 1.0) {
      return make_error(ErrorCode::invalid_argument, "{}: llama3 rope_scaling \"factor\" must be at least 1, got {}",
                        source, r.factor);
    }
    if (r.high_freq_factor <= r.low_freq_factor) {
      return make_error(ErrorCode::invalid_argument,
                        "{}: llama3 rope_scaling needs high_freq_factor ({}) > low_freq_factor ({})", source,
                        r.high_freq_factor, r.low_freq_factor);
    }
    out = r;
    return Status();
  }
  return make_error(ErrorCode::unsupported,
                    "{}: rope_scaling type '{}' is not supported (llaisys implements: default, linear, llama3)",
                    source, name);
}

}  // namespace

Result<HfTransformerConfig> parse_hf_config(std::string_view config_json,
                                            std::optional<std::string_view> generation_config_json,
                                            std::string_view source) {
  LLAISYS_ASSIGN_OR_RETURN(json::object o, parse_object(config_json, source));
  HfTransformerConfig c;
  if (const json::value* archs = o.if_contains("architectures"); archs != nullptr && archs->is_array()) {
    for (const json::value& a : archs->as_array()) {
      if (a.is_string()) c.architectures.emplace_back(a.as_string());
    }
  }
  if (const json::value* type = o.if_contains("model_type"); type != nullptr && type->is_string()) {
    c.model_type = std::string(type->as_string());
  }
  LLAISYS_RETURN_IF_ERROR(read_int(o, "vocab_size", c.vocab_size, true, source));
  LLAISYS_RETURN_IF_ERROR(read_int(o, "hidden_size", c.hidden_size, true, source));
  LLAISYS_RETURN_IF_ERROR(read_int(o, "intermediate_size", c.intermediate_size, true, source));
  LLAISYS_RETURN_IF_ERROR(read_int(o, "num_hidden_layers", c.num_layers, true, source));
  LLAISYS_RETURN_IF_ERROR(read_int(o, "num_attention_heads", c.num_heads, true, source));
  c.num_kv_heads = c.num_heads;
  LLAISYS_RETURN_IF_ERROR(read_int(o, "num_key_value_heads", c.num_kv_heads, false, source));
  LLAISYS_RETURN_IF_ERROR(read_int(o, "max_position_embeddings", c.max_position_embeddings, true, source));
  if (c.hidden_size % c.num_heads != 0 && !o.contains("head_dim")) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: hidden_size {} is not a multiple of num_attention_heads {} and no head_dim is given",
                      source, c.hidden_size, c.num_heads);
  }
  c.head_dim = c.hidden_size / c.num_heads;
  LLAISYS_RETURN_IF_ERROR(read_int(o, "head_dim", c.head_dim, false, source));
  if (c.head_dim % 2 != 0) {
    return make_error(ErrorCode::invalid_argument, "{}: head_dim {} must be even for rotary embeddings", source,
                      c.head_dim);
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", source,
                      c.num_heads, c.num_kv_heads);
  }
  LLAISYS_RETURN_IF_ERROR(read_number(o, "rope_theta", c.rope_theta, source));
  LLAISYS_RETURN_IF_ERROR(read_number(o, "rms_norm_eps", c.rms_norm_eps, source));
  // The kernels take eps as a float: below the smallest normal float it would round to 0 (an
  // all-zero row then normalises to NaN), above 1 it is no epsilon (and past FLT_MAX, undefined).
  constexpr double kMinEps = static_cast<double>(std::numeric_limits<float>::min());
  if (c.rms_norm_eps < kMinEps || c.rms_norm_eps > 1.0) {
    return make_error(ErrorCode::invalid_argument, "{}: \"rms_norm_eps\" = {} is outside [{}, 1]", source,
                      c.rms_norm_eps, kMinEps);
  }
  LLAISYS_RETURN_IF_ERROR(read_rope_scaling(o, c.rope_scaling, source));
  // transformers v5 writes RoPE settings as "rope_parameters" (rope_type, rope_theta, factor, ...):
  // read them too, never silently fall back to default RoPE.
  if (const json::value* p = o.if_contains("rope_parameters"); p != nullptr && !p->is_null()) {
    if (o.contains("rope_scaling") && !o.at("rope_scaling").is_null()) {
      return make_error(ErrorCode::invalid_argument, "{}: both \"rope_scaling\" and \"rope_parameters\" are given",
                        source);
    }
    LLAISYS_RETURN_IF_ERROR(read_rope_scaling(o, c.rope_scaling, source, "rope_parameters"));
    LLAISYS_RETURN_IF_ERROR(read_number(p->as_object(), "rope_theta", c.rope_theta, source));
  }
  LLAISYS_RETURN_IF_ERROR(read_bool(o, "tie_word_embeddings", c.tie_word_embeddings, source));
  LLAISYS_RETURN_IF_ERROR(read_bool(o, "attention_bias", c.attention_bias, source));
  LLAISYS_RETURN_IF_ERROR(read_bool(o, "mlp_bias", c.mlp_bias, source));

  bool sliding_window = false;
  LLAISYS_RETURN_IF_ERROR(read_bool(o, "use_sliding_window", sliding_window, source));
  if (sliding_window) {
    return make_error(ErrorCode::unsupported, "{}: use_sliding_window is true; sliding-window attention is not implemented",
                      source);
  }
  if (const json::value* act = o.if_contains("hidden_act"); act != nullptr && !act->is_null()) {
    if (!act->is_string() || (act->as_string() != "silu" && act->as_string() != "swish")) {
      return make_error(ErrorCode::unsupported, "{}: hidden_act {} is not supported (llaisys implements: silu)",
                        source, json::serialize(*act));
    }
  }
  if (const json::value* f = o.if_contains("partial_rotary_factor"); f != nullptr && !f->is_null()) {
    if (!f->is_number() || f->to_number<double>() != 1.0) {
      return make_error(ErrorCode::unsupported, "{}: partial_rotary_factor {} is not supported (only 1)", source,
                        json::serialize(*f));
    }
  }
  if (const json::value* dtype = o.if_contains("torch_dtype"); dtype != nullptr && dtype->is_string()) {
    c.torch_dtype = parse_dtype(std::string_view(dtype->as_string().data(), dtype->as_string().size()));
  }
  int32_t bos = -1;
  LLAISYS_RETURN_IF_ERROR(read_int(o, "bos_token_id", bos, false, source, 0));
  c.bos_token_id = bos;
  LLAISYS_RETURN_IF_ERROR(read_token_ids(o, "eos_token_id", c.eos_token_ids, source));

  if (generation_config_json) {
    const std::string gen_source = fmt::format("{} (generation_config.json)", source);
    LLAISYS_ASSIGN_OR_RETURN(json::object g, parse_object(*generation_config_json, gen_source));
    LLAISYS_RETURN_IF_ERROR(read_token_ids(g, "eos_token_id", c.eos_token_ids, gen_source));
    int32_t gen_bos = c.bos_token_id;
    LLAISYS_RETURN_IF_ERROR(read_int(g, "bos_token_id", gen_bos, false, gen_source, 0));
    c.bos_token_id = gen_bos;
  }
  // The plugin ABI carries up to 8 (llaisys_model_info::eos_token_ids): refuse more rather than
  // silently never stop on the rest.
  if (c.eos_token_ids.size() > 8) {
    return make_error(ErrorCode::unsupported, "{}: {} eos_token_id values; llaisys supports up to 8", source,
                      c.eos_token_ids.size());
  }
  for (TokenId id : c.eos_token_ids) {
    if (id >= c.vocab_size) {
      return make_error(ErrorCode::invalid_argument, "{}: eos_token_id {} is outside the vocabulary of {}", source,
                        id, c.vocab_size);
    }
  }
  return c;
}

Result<HfTransformerConfig> load_hf_config(const std::filesystem::path& model_dir) {
  auto read_text = [](const std::filesystem::path& path) -> Result<std::string> {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return make_error(ErrorCode::not_found, "cannot read {}: {}", path.string(), ec.message());
    if (size > kMaxConfigBytes) {
      return make_error(ErrorCode::parse_error, "{} is {} bytes, over the {} byte limit", path.string(), size,
                        kMaxConfigBytes);
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) return make_error(ErrorCode::io_error, "cannot read {}", path.string());
    return text.str();
  };
  const std::filesystem::path config_path = model_dir / "config.json";
  LLAISYS_ASSIGN_OR_RETURN(std::string config, read_text(config_path));
  const std::filesystem::path gen_path = model_dir / "generation_config.json";
  std::optional<std::string> generation;
  std::error_code ec;
  if (std::filesystem::exists(gen_path, ec)) {
    LLAISYS_ASSIGN_OR_RETURN(std::string text, read_text(gen_path));
    generation = std::move(text);
  }
  return parse_hf_config(config, generation ? std::optional<std::string_view>(*generation) : std::nullopt,
                         config_path.string());
}

}  // namespace llaisys
