#pragma once
// A Hugging Face model directory written as one GGUF file (llaisys-quantize; llaisys-mkmodel
// --format gguf), in llama.cpp's conventions, so that llama.cpp and llaisys both read it:
// `<arch>.*` hyperparameters, `blk.N.*` tensor names with llama's q/k rows interleaved as its
// converter does, `tokenizer.ggml.*` (byte-level BPE "gpt2" with its pre-tokenizer name, or
// SentencePiece-style "llama" with scores from the vocabulary order), the chat template, and each
// matrix in the requested type. Vectors (norms, biases) stay F32, as llama.cpp keeps them.
//
// Types: f32, f16, bf16, q8_0, q4_0, q6_k (every matrix), and llama.cpp's mixes q4_k_m / q5_k_m
// (Q4_K / Q5_K, with Q6_K for the output head and for attn_v / ffn_down of the layers llama.cpp
// gives more bits: the first and last eighth and every third in between). A K-quant needs rows of
// a multiple of 256: a matrix whose rows are not falls back as llama-quantize does (Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0), and the tool says so.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llaisys/core/status.hpp"

namespace llaisys::convert {

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k".
std::vector<std::string> gguf_type_names();

struct ConvertReport {
  uint64_t file_bytes = 0;
  int64_t tensors = 0;
  // Each fallback once, with how many tensors took it: "Q4_K -> Q5_0 for 120 tensors (rows of 896)".
  std::vector<std::string> fallbacks;
};

// Writes `out_file` (via `out_file`.partial, renamed at the end) from the model directory `hf_dir`.
Result<ConvertReport> convert_to_gguf(const std::filesystem::path& hf_dir, const std::filesystem::path& out_file,
                                      const std::string& type, const std::string& name = {});

}  // namespace llaisys::convert
