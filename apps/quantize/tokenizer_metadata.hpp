#pragma once
// A model directory's tokenizer.json / tokenizer_config.json (and chat template) as GGUF metadata
// (tokenizer_metadata.cpp says how).

#include <cstdint>
#include <filesystem>
#include <optional>

#include <boost/json.hpp>

#include "llaisys/model/gguf.hpp"

namespace llaisys::convert {

// A JSON file that must hold an object (not_found / parse_error naming the file otherwise).
Result<boost::json::object> read_json_object(const std::filesystem::path& path);

// `vocab_size`: the model's embedding rows (the token list is padded to it); `config_bos` /
// `config_eos`: config.json's ids, used where tokenizer_config.json names no token.
Status add_tokenizer_metadata(const std::filesystem::path& hf_dir, int64_t vocab_size, std::optional<int64_t> config_bos,
                              std::optional<int64_t> config_eos, gguf::Writer& out);

}  // namespace llaisys::convert
