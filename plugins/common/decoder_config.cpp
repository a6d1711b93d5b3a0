#include "decoder_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/json.hpp>

#include "llaisys/core/log.hpp"

namespace llaisys::decoder {
namespace {

// Keys of Hugging Face configs that do not change what the model computes (training-only settings,
// bookkeeping, generation defaults that llaisys takes per request).
constexpr std::string_view kNoEffectKeys[] = {
    "_name_or_path", "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "use_cache",
    "initializer_range", "attention_dropout", "hidden_dropout", "dropout", "embd_pdrop", "resid_pdrop",
    "pad_token_id", "sep_token_id", "output_attentions", "output_hidden_states", "return_dict", "use_return_dict",
    "id2label", "label2id", "auto_map", "tokenizer_class", "task_specific_params", "problem_type",
    "finetuning_task", "is_decoder", "is_encoder_decoder", "chunk_size_feed_forward", "pretraining_tp",
    "cache_implementation", "max_length", "min_length", "do_sample", "temperature", "top_k", "top_p",
    "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "num_beams", "num_return_sequences",
    "early_stopping", "bad_words_ids", "decoder_start_token_id", "tie_encoder_decoder", "prefix",
    "torchscript", "use_bfloat16", "add_cross_attention", "cross_attention_hidden_size"};

// Keys that change the computation when set: refused when no architecture read them.
constexpr std::string_view kComputationKeys[] = {
    "quantization_config", "sliding_window", "use_sliding_window", "layer_types", "attn_logit_softcapping",
    "final_logit_softcapping", "query_pre_attn_scalar", "rope_scaling", "rope_parameters",
    "partial_rotary_factor", "embedding_multiplier", "residual_multiplier", "logits_scaling",
    "attention_multiplier", "use_qk_norm", "qk_layernorm", "logit_scale", "attention_bias", "mlp_bias",
    "hidden_activation", "hidden_act", "head_dim"};

// A computation key set to what changes nothing: false, or layer_types with every layer full.
bool is_neutral(const ConfigReader& config, std::string_view key) {
  const std::string text = config.value_text(key);
  if (text == "false") return true;
  if (key == "layer_types") {
    auto types = config.strings(key);
    return types.ok() && std::all_of(types->begin(), types->end(), [](const std::string& t) { return t == "full_attention"; });
  }
  return false;
}

template <std::size_t N>
bool listed(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

Result<RopeScaling> read_rope_scaling(const ConfigReader& scaling) {
  // transformers reads "rope_type", older files say "type".
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> kind, scaling.string("rope_type"));
  if (!kind) {
    LLAISYS_ASSIGN_OR_RETURN(kind, scaling.string("type"));
  }
  scaling.mark_read({"rope_type", "type", "rope_theta"});
  if (!kind) {
    return make_error(ErrorCode::invalid_argument, "{}: no \"rope_type\" string", scaling.source());
  }
  if (*kind == "default") return RopeScaling{};
  if (*kind == "linear") {
    LLAISYS_ASSIGN_OR_RETURN(double factor, scaling.number("factor"));
    if (!(factor > 0)) return scaling.invalid("factor", "linear rope scaling needs a positive factor");
    return RopeScaling{.kind = RopeScaling::Kind::linear, .factor = factor};
  }
  if (*kind == "llama3") {
    // All four keys are required, as transformers' _validate_llama3_parameters demands.
    RopeScaling r{.kind = RopeScaling::Kind::llama3};
    LLAISYS_ASSIGN_OR_RETURN(r.factor, scaling.number("factor"));
    LLAISYS_ASSIGN_OR_RETURN(r.low_freq_factor, scaling.number("low_freq_factor"));
    LLAISYS_ASSIGN_OR_RETURN(r.high_freq_factor, scaling.number("high_freq_factor"));
    LLAISYS_ASSIGN_OR_RETURN(r.original_max_position_embeddings, scaling.integer("original_max_position_embeddings"));
    if (r.factor < 1.0) return scaling.invalid("factor", "llama3 rope scaling needs a factor of at least 1");
    if (!(r.low_freq_factor > 0)) return scaling.invalid("low_freq_factor", "must be positive");
    if (!(r.high_freq_factor > r.low_freq_factor)) {
      return scaling.invalid("high_freq_factor", fmt::format("must exceed low_freq_factor ({})", r.low_freq_factor));
    }
    return r;
  }
  return make_error(ErrorCode::unsupported,
                    "{}: rope_scaling type '{}' is not supported (llaisys implements: default, linear, llama3)",
                    scaling.source(), *kind);
}

Status read_rope(const ConfigReader& config, RopeSpec& rope) {
  LLAISYS_ASSIGN_OR_RETURN(rope.theta, config.number("rope_theta", 10000.0));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<ConfigReader> scaling, config.object("rope_scaling"));
  // transformers v5 writes RoPE settings as "rope_parameters" (rope_type, rope_theta, factor, ...):
  // read them too, never silently fall back to default RoPE.
  LLAISYS_ASSIGN_OR_RETURN(std::optional<ConfigReader> parameters, config.object("rope_parameters"));
  if (scaling && parameters) {
    return make_error(ErrorCode::invalid_argument, "{}: both \"rope_scaling\" and \"rope_parameters\" are given",
                      config.source());
  }
  if (parameters) {
    LLAISYS_ASSIGN_OR_RETURN(rope.theta, parameters->number("rope_theta", rope.theta));
    scaling = std::move(parameters);
  }
  if (!(rope.theta > 0)) return config.invalid("rope_theta", "must be positive");
  if (scaling) {
    LLAISYS_ASSIGN_OR_RETURN(rope.scaling, read_rope_scaling(*scaling));
    if (std::vector<std::string> rest = scaling->unread_keys(); !rest.empty()) {
      return make_error(ErrorCode::unsupported, "{}: \"{}\" is not supported for this rope type", scaling->source(),
                        rest.front());
    }
  }
  if (config.contains("partial_rotary_factor")) {
    LLAISYS_ASSIGN_OR_RETURN(double factor, config.number("partial_rotary_factor"));
    if (factor != 1.0) return config.unsupported("partial_rotary_factor", "llaisys rotates whole heads (only 1)");
  }
  config.mark_read({"partial_rotary_factor"});
  return Status();
}

}  // namespace

int32_t DecoderSpec::kv_window() const {
  if (layer_windows.empty()) return 0;
  int32_t window = 0;
  for (int32_t w : layer_windows) {
    if (w == 0) return 0;
    window = std::max(window, w);
  }
  return window;
}

Result<DecoderSpec> read_decoder_config(const ConfigReader& config, std::string_view architecture,
                                        const FamilyDefaults& defaults) {
  DecoderSpec s;
  s.architecture = std::string(architecture);
  LLAISYS_ASSIGN_OR_RETURN(s.vocab_size, config.integer("vocab_size"));
  LLAISYS_ASSIGN_OR_RETURN(s.hidden_size, config.integer("hidden_size"));
  LLAISYS_ASSIGN_OR_RETURN(s.intermediate_size, config.integer("intermediate_size"));
  LLAISYS_ASSIGN_OR_RETURN(s.num_layers, config.integer("num_hidden_layers"));
  LLAISYS_ASSIGN_OR_RETURN(s.num_heads, config.integer("num_attention_heads"));
  LLAISYS_ASSIGN_OR_RETURN(s.num_kv_heads, config.integer("num_key_value_heads", s.num_heads));
  LLAISYS_ASSIGN_OR_RETURN(s.max_context, config.integer("max_position_embeddings"));
  if (s.hidden_size % s.num_heads != 0 && !config.contains("head_dim")) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: hidden_size {} is not a multiple of num_attention_heads {} and no head_dim is given",
                      config.source(), s.hidden_size, s.num_heads);
  }
  LLAISYS_ASSIGN_OR_RETURN(s.head_dim, config.integer("head_dim", s.hidden_size / s.num_heads));
  if (s.head_dim % 2 != 0) return config.invalid("head_dim", "must be even for rotary embeddings");
  if (s.num_heads % s.num_kv_heads != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", config.source(),
                      s.num_heads, s.num_kv_heads);
  }
  LLAISYS_RETURN_IF_ERROR(read_rope(config, s.rope));
  LLAISYS_ASSIGN_OR_RETURN(double eps, config.number("rms_norm_eps", 1e-6));
  // The kernels take eps as a float: below the smallest normal float it would round to 0 (an all-zero
  // row then normalises to NaN), above 1 it is no epsilon.
  constexpr double kMinEps = static_cast<double>(std::numeric_limits<float>::min());
  if (eps < kMinEps || eps > 1.0) {
    return make_error(ErrorCode::invalid_argument, "{}: \"rms_norm_eps\" = {} is outside [{}, 1]", config.source(), eps,
                      kMinEps);
  }
  s.norm_eps = static_cast<float>(eps);
  LLAISYS_ASSIGN_OR_RETURN(s.tie_word_embeddings, config.boolean("tie_word_embeddings", defaults.tie_word_embeddings));

  LLAISYS_ASSIGN_OR_RETURN(s.bos_token_id, config.integer("bos_token_id", -1, 0));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::vector<int32_t>> eos, config.integers("eos_token_id"));
  if (const ConfigReader* generation = config.generation()) {
    // generation_config.json's tokens, when it has them, are what generate() stops on.
    LLAISYS_ASSIGN_OR_RETURN(std::optional<std::vector<int32_t>> gen_eos, generation->integers("eos_token_id"));
    if (gen_eos) eos = std::move(gen_eos);
    LLAISYS_ASSIGN_OR_RETURN(s.bos_token_id, generation->integer("bos_token_id", s.bos_token_id, 0));
  }
  if (eos) s.eos_token_ids = std::move(*eos);
  // The plugin ABI carries up to 8 (llaisys_model_info::eos_token_ids): refuse more rather than
  // silently never stop on the rest.
  if (s.eos_token_ids.size() > 8) {
    return make_error(ErrorCode::unsupported, "{}: {} eos_token_id values; llaisys supports up to 8", config.source(),
                      s.eos_token_ids.size());
  }
  for (TokenId id : s.eos_token_ids) {
    if (id >= s.vocab_size) {
      return make_error(ErrorCode::invalid_argument, "{}: eos_token_id {} is outside the vocabulary of {}",
                        config.source(), id, s.vocab_size);
    }
  }
  return s;
}

Result<ops::Activation> read_activation(const ConfigReader& config, std::string_view key,
                                        std::initializer_list<ops::Activation> allowed) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string> name, config.string(key));
  if (!name) return *allowed.begin();
  const std::optional<ops::Activation> activation = ops::parse_activation(*name);
  if (!activation || std::find(allowed.begin(), allowed.end(), *activation) == allowed.end()) {
    std::vector<std::string_view> names;
    for (ops::Activation a : allowed) names.push_back(ops::to_string(a));
    return config.unsupported(key, fmt::format("this architecture implements {}", fmt::join(names, ", ")));
  }
  return *activation;
}

Result<std::optional<std::vector<bool>>> read_layer_types(const ConfigReader& config, int32_t num_layers) {
  LLAISYS_ASSIGN_OR_RETURN(std::vector<std::string> types, config.strings("layer_types"));
  if (!config.contains("layer_types")) return std::optional<std::vector<bool>>();
  if (types.size() != static_cast<std::size_t>(num_layers)) {
    return config.invalid("layer_types", fmt::format("needs one entry per layer ({})", num_layers));
  }
  std::vector<bool> sliding;
  for (const std::string& type : types) {
    if (type != "full_attention" && type != "sliding_attention") {
      return config.unsupported("layer_types", fmt::format("layer type '{}' (llaisys implements full_attention, "
                                                           "sliding_attention)", type));
    }
    sliding.push_back(type == "sliding_attention");
  }
  return std::optional<std::vector<bool>>(std::move(sliding));
}

Status refuse_if_set(const ConfigReader& config, std::string_view key, std::string_view why, std::string_view neutral) {
  config.mark_read({key});
  if (!config.contains(key)) return Status();
  if (!neutral.empty() && config.value_text(key) == neutral) return Status();
  return config.unsupported(key, why);
}

Status finish_config(const ConfigReader& config, const DecoderSpec& spec) {
  std::vector<std::string> unknown;
  for (const std::string& key : config.unread_keys()) {
    if (listed(kNoEffectKeys, key)) continue;
    if (listed(kComputationKeys, key)) {
      if (!config.contains(key) || is_neutral(config, key)) continue;  // not set
      return config.unsupported(key, fmt::format("{} does not implement it", spec.architecture));
    }
    unknown.push_back(boost::json::serialize(boost::json::string(key)));  // quoted, control bytes escaped
  }
  if (!unknown.empty()) {
    log::warn("{}: {} ignores these keys it does not know: {} (if they change the model, its output will differ)",
              config.source(), spec.architecture, fmt::join(unknown, ", "));
  }
  return Status();
}

}  // namespace llaisys::decoder
