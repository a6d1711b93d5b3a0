// The qwen3 plugin on tests/data/tiny-qwen3 (Qwen3ForCausalLM: per-head q/k RMSNorm, head_dim 64
// with 8 query heads, so an attention width of 512 beside hidden 256, no biases) against llama.cpp's
// f32 reference; the prompts are tiny-qwen2's, up to a 702-token conversation.

#include <catch2/catch.hpp>

#include "architecture_checks.hpp"

using namespace llaisys::test;

namespace {

const ArchitectureUnderTest kQwen3{
    .name = "qwen3",
    .shape = "tiny-qwen3",
    .plugin_file = "libllaisys-qwen3.so",
    .sliding_window = 0,
    // No window to cross; a few sizes, since every row carries a 151936-entry lm_head.
    .chunk_sizes = {7, 29, 64},
};

}  // namespace

TEST_CASE("qwen3 teacher-forced top-5 logits match the reference within 2e-3 at every position", "[qwen3][parity]") {
  check_teacher_forced(kQwen3);
}

TEST_CASE("qwen3 free greedy generation reproduces the reference's tokens", "[qwen3][parity]") {
  check_free_greedy(kQwen3);
}

TEST_CASE("qwen3 logits are bit-identical alone and inside mixed prefill/decode batches", "[qwen3][batch]") {
  check_batch_invariance(kQwen3);
}

TEST_CASE("qwen3 chunked prefill gives the bits of a single pass", "[qwen3][batch]") {
  check_chunk_invariance(kQwen3);
}
