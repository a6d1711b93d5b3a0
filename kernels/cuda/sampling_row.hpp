#pragma once
// The per-row parameters of sample_tokens (sampling.hpp), shared with the device code.

#include <cstdint>

namespace llaisys::cuda {

struct RowSampling {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  double uniform = 0.0;      // in [0, 1): uniform01() of the row's sequence generator
};

}  // namespace llaisys::cuda
