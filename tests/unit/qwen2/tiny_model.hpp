#pragma once
// The tiny Qwen2 model (tests/data/tiny-qwen2/WEIGHTS.md, mkmodel shape "tiny"), generated once per
// test process (tests/support/generated_model.hpp), and how to run it through the qwen2 plugin.

#include <filesystem>
#include <string>
#include <vector>

#include "llaisys/model/registry.hpp"
#include "plugin_model.hpp"

namespace llaisys::test {

// model.safetensors (shards == 1) or `shards` files plus the index. Cached per process.
const std::filesystem::path& tiny_model_dir(int shards = 1);

// Opens `model_dir` through the qwen2 plugin (dlopen, C table, AnyModel) with a KV pool of
// `num_blocks` x 16 tokens.
AnyModel open_model(const std::filesystem::path& model_dir, int32_t num_threads = 2,
                    const std::string& options_json = "{}", int32_t num_blocks = 256);

}  // namespace llaisys::test
