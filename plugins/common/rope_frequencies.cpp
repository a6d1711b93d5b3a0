#include "rope_frequencies.hpp"

#include <cmath>
#include <numbers>

namespace llaisys::decoder {

ops::RopeFrequencies make_rope_frequencies(int32_t head_dim, const RopeSpec& rope) {
  ops::RopeFrequencies f;
  const int32_t half = head_dim / 2;
  f.inv_freq.resize(static_cast<std::size_t>(half));
  for (int32_t i = 0; i < half; ++i) {
    // The same expression as cpu::rope_tables, so unscaled models keep their bits.
    f.inv_freq[static_cast<std::size_t>(i)] =
        std::pow(rope.theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  }
  const RopeScaling& scaling = rope.scaling;
  switch (scaling.kind) {
    case RopeScaling::Kind::none: break;
    case RopeScaling::Kind::linear: f.position_scale = scaling.factor; break;
    case RopeScaling::Kind::llama3: {
      const double original = scaling.original_max_position_embeddings;
      const double low_freq_wavelength = original / scaling.low_freq_factor;
      const double high_freq_wavelength = original / scaling.high_freq_factor;
      for (double& inv_freq : f.inv_freq) {
        const double wavelength = 2.0 * std::numbers::pi / inv_freq;
        if (wavelength < high_freq_wavelength) continue;  // high frequencies: unchanged
        if (wavelength > low_freq_wavelength) {           // low frequencies: interpolated by factor
          inv_freq /= scaling.factor;
          continue;
        }
        const double smooth = (original / wavelength - scaling.low_freq_factor) /
                              (scaling.high_freq_factor - scaling.low_freq_factor);
        inv_freq = (1.0 - smooth) * inv_freq / scaling.factor + smooth * inv_freq;
      }
      break;
    }
  }
  return f;
}

}  // namespace llaisys::decoder
