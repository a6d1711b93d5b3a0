// The qwen3, mistral and gemma2 plugins on the CUDA path ({"device": "cuda"}) against their fixtures'
// references (tests/data/tiny-*): teacher-forced top-5 logits at every position in chunks that cross
// the sliding windows, and free greedy generation. The GPU path rounds activations to bf16 before
// every GEMM and keeps a bf16 KV cache, so the bound is the bf16 one, per architecture, not the CPU's
// 2e-3. Measured on an H200 (docs/CUDA.md, 2026-11-26): qwen3 0.084, mistral 0.108, gemma2 0.510.
// Gemma 2 is the most sensitive (embeddings scaled by sqrt(hidden), post-norms, soft caps): the CPU's
// own bf16 matmul mode, an independent implementation of the same roundings, lands 0.388 from its
// reference; qwen2 in that mode lands 0.081 from llama.cpp's logits. Bounds: 0.1 for qwen3, 0.15 for
// mistral, 0.75 for gemma2 (about 1.4x the measured maxima). Skipped without a GPU.

#include <catch2/catch.hpp>

#include "architecture_checks.hpp"

using namespace llaisys::test;

namespace {

ArchitectureUnderTest on_cuda(ArchitectureUnderTest arch, float bf16_tolerance) {
  arch.options = R"({"device": "cuda"})";
  arch.tolerance = bf16_tolerance;
  return arch;
}

const ArchitectureUnderTest kQwen3 = on_cuda(
    {.name = "qwen3", .shape = "tiny-qwen3", .plugin_file = "libllaisys-qwen3.so", .chunk_sizes = {1, 64}},
    0.1f);
const ArchitectureUnderTest kMistral = on_cuda({.name = "mistral",
                                                .shape = "tiny-mistral",
                                                .plugin_file = "libllaisys-mistral.so",
                                                .sliding_window = 16,
                                                .chunk_sizes = {1, 5, 17, 512}},
                                               0.15f);
const ArchitectureUnderTest kGemma2 = on_cuda({.name = "gemma2",
                                               .shape = "tiny-gemma2",
                                               .plugin_file = "libllaisys-gemma2.so",
                                               .sliding_window = 32,
                                               .chunk_sizes = {1, 7, 33, 512}},
                                              0.75f);

}  // namespace

TEST_CASE("cuda qwen3: teacher-forced top-5 logits within 0.1 of the reference", "[cuda][qwen3]") {
  check_teacher_forced(kQwen3);
}
TEST_CASE("cuda qwen3: free greedy generation follows the reference", "[cuda][qwen3]") { check_free_greedy(kQwen3); }
TEST_CASE("cuda mistral: teacher-forced top-5 logits within 0.15 of the reference", "[cuda][mistral]") {
  check_teacher_forced(kMistral);
}
TEST_CASE("cuda mistral: free greedy generation follows the reference", "[cuda][mistral]") {
  check_free_greedy(kMistral);
}
TEST_CASE("cuda gemma2: teacher-forced top-5 logits within 0.75 of the reference", "[cuda][gemma2]") {
  check_teacher_forced(kGemma2);
}
TEST_CASE("cuda gemma2: free greedy generation follows the reference", "[cuda][gemma2]") {
  check_free_greedy(kGemma2);
}
