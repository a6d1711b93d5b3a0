#pragma once
// The rotary frequencies of a Llama-family decoder, derived once from its config (rope_theta,
// head_dim, rope_scaling), and the per-batch cos/sin tables cpu::rope_apply consumes.
//
//   default:  inv_freq[i] = theta^(-2i / head_dim), angle = position * inv_freq[i]
//   linear:   positions are divided by `factor` first (position_scale)
//   llama3:   inv_freq is rescaled per frequency band (transformers' _compute_llama3_parameters):
//             wavelength 2 pi / f below original / high_freq_factor: kept; above original /
//             low_freq_factor: f / factor; in between: (1 - s) f / factor + s f with
//             s = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor).
//
// Everything is computed in double and each cos/sin rounded once to f32, as cpu::rope_tables does
// (so the default and linear kinds give exactly its bits).

#include <cstdint>
#include <vector>

#include "llaisys/model/hf_config.hpp"

namespace llaisys::decoder {

struct RopeFrequencies {
  std::vector<double> inv_freq;  // [head_dim / 2]
  double position_scale = 1.0;   // positions are divided by it (linear scaling)
};

// head_dim must be even and positive; theta positive (hf_config checks both).
RopeFrequencies make_rope_frequencies(int32_t head_dim, double theta, const RopeScaling& scaling);

// cos_table, sin_table: [num_tokens, head_dim / 2].
void fill_rope_tables(const RopeFrequencies& frequencies, const int32_t* positions, int64_t num_tokens,
                      float* cos_table, float* sin_table);

}  // namespace llaisys::decoder
