#pragma once
// The tiny Qwen2 model (tests/data/tiny-qwen2/WEIGHTS.md), generated once per test process with the
// llaisys-mkmodel library into a temporary directory, and helpers to run it through the plugin.

#include <filesystem>
#include <string>
#include <vector>

#include "llaisys/model/registry.hpp"

namespace llaisys::test {

// model.safetensors (shards == 1) or `shards` files plus the index. Cached per process.
const std::filesystem::path& tiny_model_dir(int shards = 1);

// Opens `model_dir` through the qwen2 plugin (dlopen, C table, AnyModel) with a KV pool of
// `num_blocks` x 16 tokens.
AnyModel open_model(const std::filesystem::path& model_dir, int32_t num_threads = 2,
                    const std::string& options_json = "{}", int32_t num_blocks = 256);

// A run of consecutive tokens of one sequence inside a batch.
struct SeqChunk {
  std::vector<TokenId> tokens;
  int32_t start = 0;              // position of tokens[0]
  std::vector<BlockId> table;     // the sequence's block table
  bool all_outputs = false;       // a logits row for every token, not just the last
};

// One forward pass over the chunks; returns the logits rows in order (per chunk: its last token, or
// all of its tokens).
std::vector<std::vector<float>> run_batch(AnyModel& model, const std::vector<SeqChunk>& chunks);

// Blocks [first, first + count).
std::vector<BlockId> block_range(BlockId first, int32_t count);

}  // namespace llaisys::test
