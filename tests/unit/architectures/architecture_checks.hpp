#pragma once
// The checks each decoder plugin of this folder passes on its tiny fixture model (tests/data/<shape>/:
// WEIGHTS.md defines the weights llaisys-mkmodel generates, reference.json holds an independent
// implementation's logits and greedy tokens). test_<name>.cpp describes its architecture and runs them.

#include <cstdint>
#include <string>
#include <vector>

#include "plugin_model.hpp"
#include "reference_data.hpp"

namespace llaisys::test {

struct ArchitectureUnderTest {
  std::string name;                  // "qwen3": the plugin's CMake target, and the name in messages
  std::string shape;                 // the llaisys-mkmodel shape and tests/data fixture: "tiny-qwen3"
  std::string plugin_file;           // in the build's plugin directory: "libllaisys-qwen3.so"
  int32_t sliding_window = 0;        // tokens seen by a query on the windowed layers; 0: no window
  std::vector<int32_t> chunk_sizes;  // teacher-forced tokens per forward pass: one pass over the cases each
  float tolerance = 2e-3f;           // allowed |logit - reference|
  std::string options = "{}";        // model options: {"device": "cuda"} runs the checks on the GPU path
};

// tests/data/<shape>/reference.json.
const std::vector<ReferenceCase>& reference_cases_of(const ArchitectureUnderTest& arch);

// The generated model through the architecture's plugin file, with a KV pool of 256 x 16 tokens.
// Throws, saying so, when the plugin is not built or does not serve the model's architecture.
AnyModel open_model(const ArchitectureUnderTest& arch, int32_t num_threads = 2);

// Feeds every case's prompt and greedy tokens in chunks of each of arch.chunk_sizes and compares the
// top-5 logits at every position by token id (compare_top5); prints the largest error per chunk
// size; checks that the prompts longer than twice the window are among the cases and fully checked.
void check_teacher_forced(const ArchitectureUnderTest& arch);

// Prefills each prompt, then generates one token per pass through the KV cache. The tokens must be
// the reference's at every step whose reference top-1/top-2 gap exceeds the tolerance; at a step
// within it, either of the tied tokens is right, and a different one ends the comparison of that
// case (the reference's later tokens follow its own choice). Each step's logits are compared too.
void check_free_greedy(const ArchitectureUnderTest& arch);

// A sequence's logits are bit-identical alone and inside a batch mixing prefill chunks and decode
// steps of other sequences (in other blocks).
void check_batch_invariance(const ArchitectureUnderTest& arch);

// A prompt prefilled in chunks that cross the window edges gives the bits of a single pass.
void check_chunk_invariance(const ArchitectureUnderTest& arch);

}  // namespace llaisys::test
