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
#include "llaisys/engine/llm_engine.hpp"
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
};

// --max-context, --max-num-seqs, --max-batched-tokens, --kv-cache-mb, --block-size,
// --no-prefix-cache, --seed.
void add_engine_options(CLI::App& cmd, EngineOptions& options);

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

struct ServedModel {
  std::filesystem::path model_dir;
  ModelInfo info;
  std::shared_ptr<const text::Tokenizer> tokenizer;  // null when the directory has no tokenizer.json
  std::optional<text::ChatTemplate> chat_template;   // absent: chat_template_status says why
  Status chat_template_status;
  std::unique_ptr<LLMEngine> engine;
};

// Opens the model through the registry, then its tokenizer (when tokenizer.json exists) and chat
// template (a missing or broken template is not fatal: chat requests get chat_template_status).
Result<ServedModel> load_served_model(const PluginRegistry& registry, const ModelLoadOptions& options);

}  // namespace llaisys::app
