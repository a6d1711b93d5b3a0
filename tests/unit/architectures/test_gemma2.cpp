// The gemma2 plugin on tests/data/tiny-gemma2 (Gemma2ForCausalLM: (1 + w) norms, pre/post norms,
// tanh-GELU, embeddings scaled by sqrt(hidden), query_pre_attn_scalar 96, attention and final soft
// caps, a 32-token window on layers 0 and 2 with layers 1 and 3 global) against a float64 pass of
// transformers' modeling_gemma2.py. Its WEIGHTS.md puts float32 noise here at about 1e-3.

#include <catch2/catch.hpp>

#include "architecture_checks.hpp"

using namespace llaisys::test;

namespace {

const ArchitectureUnderTest kGemma2{
    .name = "gemma2",
    .shape = "tiny-gemma2",
    .plugin_file = "libllaisys-gemma2.so",
    .sliding_window = 32,
    // One token per pass, chunks narrower than the window and not aligned with it, exactly the
    // window, one more, two and a half windows, and each sequence whole in a single pass.
    .chunk_sizes = {1, 7, 32, 33, 80, 512},
};

}  // namespace

TEST_CASE("gemma2 teacher-forced top-5 logits match the reference within 2e-3 at every position", "[gemma2][parity]") {
  check_teacher_forced(kGemma2);
}

TEST_CASE("gemma2 free greedy generation reproduces the reference's tokens", "[gemma2][parity]") {
  check_free_greedy(kGemma2);
}

TEST_CASE("gemma2 logits are bit-identical alone and inside mixed prefill/decode batches", "[gemma2][batch]") {
  check_batch_invariance(kGemma2);
}

TEST_CASE("gemma2 chunked prefill gives the bits of a single pass", "[gemma2][batch]") {
  check_chunk_invariance(kGemma2);
}
