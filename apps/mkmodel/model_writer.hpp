#pragma once
// Writes a complete Hugging Face model directory: config.json, generation_config.json, the weights
// (model.safetensors, or N shards plus model.safetensors.index.json) and the tokenizer files.

#include <cstdint>
#include <filesystem>

#include "llaisys/core/status.hpp"
#include "model_shape.hpp"

namespace llaisys::mkmodel {

struct WriteOptions {
  ModelShape shape;
  uint64_t seed = 0;
  int32_t num_shards = 1;                    // 1: a single model.safetensors
  std::filesystem::path tokenizer_dir;       // tokenizer.json + tokenizer_config.json; empty: none
  bool overwrite = false;                    // replace an existing out_dir
};

// Builds the model in `out_dir`.partial, then renames it to `out_dir`, so an interrupted run never
// leaves something that looks like a model. Fails if `out_dir` exists (unless `overwrite`).
Status write_model(const std::filesystem::path& out_dir, const WriteOptions& options);

// The default tokenizer directory of `shape` for an executable: <exe_dir>/../share/llaisys/<shape.tokenizer>
// (qwen2-tokenizer, or stories260K-tokenizer for tiny-mistral and tiny-gemma2).
std::filesystem::path default_tokenizer_dir(const ModelShape& shape);

}  // namespace llaisys::mkmodel
