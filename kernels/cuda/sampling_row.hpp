#pragma once
// The per-row parameters of sample_tokens (sampling.hpp) and of the slot and preprocessing kernels
// (sampling_prep.hpp), shared with the device code.

#include <cstdint>

#include "host_device.hpp"

namespace llaisys::cuda {

// Words of a token bitmask over `vocab` tokens (bit t % 32 of word t / 32).
LLAISYS_CUDA_HOST_DEVICE inline int64_t mask_words(int64_t vocab) { return (vocab + 31) / 32; }

// Device memory of the sequence slots (owned by the caller; see sampling_prep.hpp).
struct SlotArrays {
  int32_t* output_counts = nullptr;  // [num_slots, vocab]: times each token was sampled
  uint32_t* prompt_bits = nullptr;   // [num_slots, mask_words(vocab)]: prompt tokens
  int64_t num_slots = 0;
  int64_t vocab = 0;
};

struct RowSampling {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  double uniform = 0.0;      // in [0, 1): uniform01() of the row's sequence generator
};

// Rebuilds one sequence slot from its history: history[history_begin, + num_history), the first
// num_prompt of them prompt tokens, the rest output tokens.
struct SlotReset {
  int32_t slot = 0;
  int32_t history_begin = 0;
  int32_t num_history = 0;
  int32_t num_prompt = 0;
};

// What prepare_rows does to one logits row, in place: penalties from `slot` (-1: none), then the
// bias entries [bias_begin, + num_bias), then the allowed mask at word mask_begin (-1: none).
struct RowPrep {
  int32_t row = 0;
  int32_t slot = -1;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t bias_begin = 0;
  int32_t num_bias = 0;
  int64_t mask_begin = -1;
};

// What finish_rows does after a row's token is picked: moves a disallowed token to the lowest
// allowed id (mask at word mask_begin, -1: none), then counts the token in `slot` (-1: none).
struct RowFinish {
  int32_t slot = -1;
  int64_t mask_begin = -1;
};

}  // namespace llaisys::cuda
