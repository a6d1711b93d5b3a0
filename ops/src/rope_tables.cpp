#include <cmath>

#include "llaisys/ops/pass.hpp"

namespace llaisys::ops {

void fill_rope_tables(const RopeFrequencies& frequencies, const int32_t* positions, int64_t num_tokens,
                      float* cos_table, float* sin_table) {
  const auto half = static_cast<int64_t>(frequencies.inv_freq.size());
  for (int64_t t = 0; t < num_tokens; ++t) {
    const double position = static_cast<double>(positions[t]) / frequencies.position_scale;
    for (int64_t i = 0; i < half; ++i) {
      const double angle = position * frequencies.inv_freq[static_cast<std::size_t>(i)];
      cos_table[t * half + i] = static_cast<float>(std::cos(angle));
      sin_table[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

}  // namespace llaisys::ops
