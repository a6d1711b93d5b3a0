#pragma once
// ServedModel: everything a front end (offline batch, terminal chat, server) needs to serve one
// model directory: the engine over the plugin's model, the tokenizer and the chat template.
// One loader so that every app opens a model the same way and takes the same engine flags.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "llaisys/core/device.hpp"
#include "llaisys/engine/draft_model_proposer.hpp"
#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/grammar/grammar_compiler.hpp"
#include "llaisys/model/registry.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::app {

// The engine knobs every app exposes (see add_engine_options for their flags).
struct EngineOptions {
  int32_t max_context = 4096;           // 0: the model's own context length
  int32_t max_num_seqs = 64;
  int32_t max_batched_tokens = 2048;
  int64_t kv_cache_mb = 1024;
  int32_t block_size = 16;
  bool no_prefix_cache = false;
  std::optional<uint64_t> seed;         // seeds requests without their own seed
  std::string speculative = "none";     // none, ngram, or draft:MODEL_DIR (a draft model)
  int32_t num_speculative_tokens = 4;
};

// --max-context, --max-num-seqs, --max-batched-tokens, --kv-cache-mb, --block-size,
// --no-prefix-cache, --seed.
void add_engine_options(CLI::App& cmd, EngineOptions& options);

// --speculative none|ngram|draft:MODEL_DIR, --num-speculative-tokens K.
void add_speculative_options(CLI::App& cmd, EngineOptions& options);

// The draft model's directory of `--speculative draft:DIR`; empty for the other methods.
std::filesystem::path draft_model_dir(const EngineOptions& options);

// Every value within its range (a TOML file skips the flags' checks): max_context [0, 2^24],
// max_num_seqs [1, 4096], max_batched_tokens [1, 2^20], kv_cache_mb [1, 2^24], block_size [1, 1024].
Status validate_engine_options(const EngineOptions& options);

// options must have passed validate_engine_options (an unknown speculative method reads as none).
EngineConfig to_engine_config(const EngineOptions& options, std::string cache_namespace = {});

struct ModelLoadOptions {
  std::filesystem::path model_dir;
  Device device{};
  int32_t num_threads = 0;              // 0: all cores
  std::string plugin_options_json = "{}";
  std::filesystem::path chat_template_file;  // overrides the model's template when set
  EngineOptions engine;
  std::string cache_namespace;          // prefix-cache key space (several models in one process)
};

// The chat template for models that have none (e.g. base models such as stories260K): ChatML, as
// llama.cpp falls back to. Each message becomes "<|im_start|>{role}\n{content}<|im_end|>\n", then
// "<|im_start|>assistant\n" asks for the answer; BOS comes first when the tokenizer adds one to plain
// text. The markers are plain text to a model that was not trained on them, so such a model only
// approximates a chat.
extern const char* const kFallbackChatTemplate;

// kFallbackChatTemplate for `tokenizer`'s model (with its BOS when the tokenizer adds one).
Result<text::ChatTemplate> fallback_chat_template(const text::Tokenizer& tokenizer);

struct ServedModel {
  std::filesystem::path model_dir;
  ModelInfo info;
  std::shared_ptr<const text::Tokenizer> tokenizer;  // null when the model has none (model_text.hpp)
  std::optional<text::ChatTemplate> chat_template;   // absent: chat_template_status says why
  Status chat_template_status;
  // Which template chat requests use: "model" (tokenizer_config.json or chat_template.jinja), "file"
  // (ModelLoadOptions::chat_template_file), "fallback: chatml" (the model has none), or "none"
  // (no tokenizer, or the model's template is broken: chat_template_status says why).
  std::string chat_template_source = "none";
  std::unique_ptr<LLMEngine> engine;
  // `--speculative draft:DIR`: the draft model the engine's speculation runs (null otherwise).
  std::shared_ptr<DraftModelProposer> draft;
  // Structured output's grammars for this model's vocabulary (null without a tokenizer).
  std::shared_ptr<grammar::GrammarCompiler> grammars;
};

// Opens the model (a directory or a GGUF file) through the registry, then its tokenizer (when it has one) and chat
// template (the model's; kFallbackChatTemplate when it has none; a broken template is not fatal:
// chat requests get chat_template_status).
Result<ServedModel> load_served_model(const PluginRegistry& registry, const ModelLoadOptions& options);

// `--speculative draft:DIR`: opens DIR on the target's device, checks that its tokenizer names every
// token id as the target's does, and gives it a KV pool of its own.
Result<std::shared_ptr<DraftModelProposer>> load_draft_model(const PluginRegistry& registry,
                                                             const ModelLoadOptions& options, const ServedModel& target);

}  // namespace llaisys::app
