#pragma once
// A model's text side, whichever form the model comes in: a Hugging Face directory (tokenizer.json,
// tokenizer_config.json / chat_template.jinja) or a GGUF file (its tokenizer.ggml.* and
// tokenizer.chat_template keys, text/gguf_tokenizer.hpp). Every app opens tokenizers and templates
// through these, so `--model` takes either form everywhere.

#include <filesystem>
#include <memory>
#include <string_view>

#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::app {

// Whether the model has a tokenizer at all (a directory with tokenizer.json, a GGUF file with
// tokenizer.ggml.model).
bool has_tokenizer(const std::filesystem::path& model);

Result<std::shared_ptr<const text::Tokenizer>> load_tokenizer(const std::filesystem::path& model);

// The model's chat template (`name`: a named one; empty: the default). not_found when it has none.
Result<text::ChatTemplate> load_chat_template(const std::filesystem::path& model, std::string_view name = "");

// A template file overriding the model's, with the model's special token strings (bos_token,
// eos_token) defined for it, whichever form the model comes in.
Result<text::ChatTemplate> load_chat_template_file(const std::filesystem::path& model,
                                                   const std::filesystem::path& template_file);

}  // namespace llaisys::app
