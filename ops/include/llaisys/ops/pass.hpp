#pragma once
// Pass: the tokens of one forward pass as the ops on a device read them, uploaded once per pass by
// DeviceContext::begin_pass: token ids, positions, sequence indices, block tables and output rows
// (the host arrays themselves on the CPU), each token's rotary cos/sin, and on CUDA the attention
// plan and its workspace. embedding, gather_rows, rope_write_kv and attention take it.
//
// Rope: a model's rotary frequencies on a device (the CPU computes each pass's cos/sin from them; CUDA
// keeps a table of the positions passes have reached, grown by doubling).

#include <cstdint>
#include <utility>
#include <vector>

#include "llaisys/model/forward_batch.hpp"

namespace llaisys::ops {

// Rotary frequencies ("neox" layout, rotate_half): element i < head_dim / 2 of a head pairs with
// i + head_dim / 2 and turns by (position / position_scale) * inv_freq[i]. An architecture computes
// inv_freq from its config (theta, scaling kind: plugins/common/rope_frequencies.hpp).
struct RopeFrequencies {
  std::vector<double> inv_freq;  // [head_dim / 2]
  double position_scale = 1.0;   // linear rope scaling divides positions by it
};

// cos/sin in double, each rounded once to f32 (reference implementations differ in how they round
// the angle; this is the exact value). cos_table, sin_table: [num_tokens, inv_freq.size()].
void fill_rope_tables(const RopeFrequencies& frequencies, const int32_t* positions, int64_t num_tokens,
                      float* cos_table, float* sin_table);

class Rope {
 public:
  virtual ~Rope() = default;
  const RopeFrequencies& frequencies() const { return frequencies_; }
  int64_t head_dim() const { return static_cast<int64_t>(frequencies_.inv_freq.size()) * 2; }
  int32_t max_positions() const { return max_positions_; }

 protected:
  Rope(RopeFrequencies frequencies, int32_t max_positions)
      : frequencies_(std::move(frequencies)), max_positions_(max_positions) {}

 private:
  RopeFrequencies frequencies_;
  int32_t max_positions_ = 0;
};

// The attention shape a pass is planned for.
struct PassShape {
  int64_t num_q_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 0;
  const Rope* rope = nullptr;  // the model's, from the same context
  // A window every layer's attention stays within (0: some layer attends to everything): CUDA plans
  // its attention splits over the keys a window reads.
  int32_t window = 0;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The pass's batch as the caller gave it (host arrays, valid until the pass ends).
  const ForwardBatch& batch() const { return batch_; }
  const PassShape& shape() const { return shape_; }
  int64_t num_tokens() const { return batch_.num_tokens(); }
  int64_t num_outputs() const { return batch_.num_outputs(); }

 protected:
  ForwardBatch batch_;
  PassShape shape_;
};

}  // namespace llaisys::ops
