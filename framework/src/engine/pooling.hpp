#pragma once
// Embedding pooling (internal to the engine): folds an embedding request's chunks of final hidden
// states into its pooled vector, once per prompt position even when a preemption recomputes some.

#include <span>

#include "llaisys/scheduler/step_plan.hpp"
#include "request_state.hpp"

namespace llaisys::engine_detail {

// rows: [chunk.num_tokens(), width]. Returns true when the chunk completes the prompt, with
// state.embedding then holding the (normalised, if asked) result.
bool pool_hidden(PoolState& state, const ScheduledChunk& chunk, std::span<const float> rows, int32_t width);

}  // namespace llaisys::engine_detail
