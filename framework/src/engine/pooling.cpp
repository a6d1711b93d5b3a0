#include "pooling.hpp"

#include <algorithm>
#include <cmath>

namespace llaisys::engine_detail {

bool pool_hidden(PoolState& state, const ScheduledChunk& chunk, std::span<const float> rows, int32_t hidden_size) {
  const auto width = static_cast<std::size_t>(hidden_size);
  state.pooled.resize(width, 0.0);
  const std::size_t num_rows = width > 0 ? rows.size() / width : 0;
  if (state.pooling == Pooling::mean) {
    // After a preemption the prompt is recomputed from the start: pool each position once.
    const auto first = static_cast<std::size_t>(std::max(0, state.num_pooled - chunk.start_position));
    for (std::size_t t = first; t < num_rows; ++t) {
      for (std::size_t i = 0; i < width; ++i) state.pooled[i] += static_cast<double>(rows[t * width + i]);
    }
    state.num_pooled = std::max(state.num_pooled, chunk.start_position + static_cast<int32_t>(num_rows));
  } else if (num_rows > 0) {
    for (std::size_t i = 0; i < width; ++i) state.pooled[i] = static_cast<double>(rows[(num_rows - 1) * width + i]);
    state.num_pooled = 1;
  }
  if (!chunk.completes_sequence) return false;
  double norm = 0.0;
  for (double& v : state.pooled) {
    v /= std::max(state.num_pooled, 1);
    norm += v * v;
  }
  norm = std::sqrt(norm);
  state.embedding.resize(width);
  for (std::size_t i = 0; i < width; ++i) {
    state.embedding[i] =
        static_cast<float>(state.normalize && norm > 0.0 ? state.pooled[i] / norm : state.pooled[i]);
  }
  return true;
}

}  // namespace llaisys::engine_detail
