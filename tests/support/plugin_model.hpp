#pragma once
// Running a model through a built plugin in tests (dlopen, C table, AnyModel), as the engine would.

#include <filesystem>
#include <string>
#include <vector>

#include "llaisys/model/registry.hpp"

namespace llaisys::test {

// Opens `model_dir` through the plugin file `plugin` (e.g. "libllaisys-qwen2.so") of the build's
// plugin directory, with a KV pool of `num_blocks` x 16 tokens. Throws on failure. Unless
// `options_json` sets "matmul", the model runs the exact f32 products ("matmul": "f32" is added):
// the references are compared within f32 tolerances.
AnyModel open_plugin_model(const std::string& plugin, const std::filesystem::path& model_dir,
                           int32_t num_threads = 2, const std::string& options_json = "{}",
                           int32_t num_blocks = 256);

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
