// The mistral plugin on tests/data/tiny-mistral (MistralForCausalLM, a 16-token sliding window on
// every layer: query q sees keys q-15..q) against a float64 pass of transformers' modeling_mistral.py.
// Five of the six prompts are longer than twice the window; full attention, or a 17-token window,
// changes the top-1 token at many of their positions.

#include <catch2/catch.hpp>

#include "architecture_checks.hpp"

using namespace llaisys::test;

namespace {

const ArchitectureUnderTest kMistral{
    .name = "mistral",
    .shape = "tiny-mistral",
    .plugin_file = "libllaisys-mistral.so",
    .sliding_window = 16,
    // One token per pass (every window read back from the cache), chunks narrower than the window
    // and not aligned with it, exactly the window, one more, three windows, and each sequence whole
    // (at most 328 tokens) in a single pass.
    .chunk_sizes = {1, 5, 16, 17, 48, 512},
};

}  // namespace

TEST_CASE("mistral teacher-forced top-5 logits match the reference within 2e-3 at every position", "[mistral][parity]") {
  check_teacher_forced(kMistral);
}

TEST_CASE("mistral free greedy generation reproduces the reference's tokens", "[mistral][parity]") {
  check_free_greedy(kMistral);
}

TEST_CASE("mistral logits are bit-identical alone and inside mixed prefill/decode batches", "[mistral][batch]") {
  check_batch_invariance(kMistral);
}

TEST_CASE("mistral chunked prefill gives the bits of a single pass", "[mistral][batch]") {
  check_chunk_invariance(kMistral);
}
