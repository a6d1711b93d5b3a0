#pragma once
// Reading an architecture's config.json into a DecoderSpec: the keys the Llama family shares, read
// once here, and the rules every architecture plugin follows (plugins/<arch>/*.cpp call these, then
// read and set what is their own).
//
// Contract: a setting that would change what the model computes and that the architecture does not
// implement is refused at load (unsupported, naming the key and its value) — never ignored. Missing
// or ill-typed required keys, and values the kernels cannot take, are invalid_argument naming the
// key. Keys that do not change the computation (dropout, initializer_range, use_cache, ...) are
// accepted; any other key no one read is logged as a warning by finish_config().

#include <initializer_list>
#include <string_view>
#include <vector>

#include "decoder_spec.hpp"
#include "llaisys/model/config_reader.hpp"

namespace llaisys::decoder {

// Defaults that differ between architectures' transformers config classes.
struct FamilyDefaults {
  bool tie_word_embeddings = false;
};

// vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: the heads), head_dim (default hidden / heads), max_position_embeddings,
// rope_theta with rope_scaling or rope_parameters (default, linear, llama3), partial_rotary_factor
// (only 1), rms_norm_eps (in [FLT_MIN, 1]), tie_word_embeddings, bos/eos_token_id (generation_config.json's
// when it has them; at most 8 EOS ids, each inside the vocabulary), and the keys that change nothing.
Result<DecoderSpec> read_decoder_config(const ConfigReader& config, std::string_view architecture,
                                        const FamilyDefaults& defaults = {});

// `key` names the MLP activation; anything not in `allowed` is refused (default when absent: the first).
Result<ops::Activation> read_activation(const ConfigReader& config, std::string_view key,
                                        std::initializer_list<ops::Activation> allowed);

// transformers' `layer_types` ("full_attention" / "sliding_attention" per layer): which layers slide.
// Absent: nullopt. A list of another length or with another value is refused.
Result<std::optional<std::vector<bool>>> read_layer_types(const ConfigReader& config, int32_t num_layers);

// Refuses `key` when it is set (present and not null) to anything but `neutral` (a JSON text, e.g.
// "false"; empty: any value is refused): the architecture does not implement it.
Status refuse_if_set(const ConfigReader& config, std::string_view key, std::string_view why,
                     std::string_view neutral = "");

// After the architecture read what it implements: refuses keys known to change the computation that
// no one read (e.g. sliding_window on an architecture without one, quantization_config), and logs the
// other unknown keys once.
Status finish_config(const ConfigReader& config, const DecoderSpec& spec);

}  // namespace llaisys::decoder
