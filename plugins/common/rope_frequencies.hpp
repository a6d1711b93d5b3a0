#pragma once
// The rotary embedding of a Llama-family decoder as config.json describes it (rope_theta, and
// rope_scaling or transformers v5's rope_parameters), and the frequencies it gives (ops::Rope).
//
//   default:  inv_freq[i] = theta^(-2i / head_dim), angle = position * inv_freq[i]
//   linear:   positions are divided by `factor` first (position_scale)
//   llama3:   inv_freq is rescaled per frequency band (transformers' _compute_llama3_parameters):
//             wavelength 2 pi / f below original / high_freq_factor: kept; above original /
//             low_freq_factor: f / factor; in between: (1 - s) f / factor + s f with
//             s = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor).
// Everything in double; ops::fill_rope_tables rounds each cos/sin once to f32.

#include <cstdint>

#include "llaisys/ops/pass.hpp"

namespace llaisys::decoder {

struct RopeScaling {
  enum class Kind { none, linear, llama3 };
  Kind kind = Kind::none;
  double factor = 1.0;  // linear: positions are divided by it; llama3: low frequencies are
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int32_t original_max_position_embeddings = 0;
};

struct RopeSpec {
  double theta = 10000.0;
  RopeScaling scaling;
};

// head_dim must be even and positive, theta positive (decoder_config.cpp checks both).
ops::RopeFrequencies make_rope_frequencies(int32_t head_dim, const RopeSpec& rope);

}  // namespace llaisys::decoder
