#pragma once
// tests/data/tiny-qwen2/reference.json: prompts, their top-5 logits at every position and 32 greedy
// steps, computed by llama.cpp in f32 on the tiny model (see WEIGHTS.md there). The reading and the
// comparisons are tests/support/reference_data.hpp's; this binds them to the qwen2 fixture.

#include "reference_data.hpp"

namespace llaisys::test {

const std::vector<ReferenceCase>& reference_cases();

// for_each_teacher_forced_row over the tiny-qwen2 cases.
void for_each_teacher_forced_row(AnyModel& model, int32_t chunk, const TeacherForcedCheck& check);

}  // namespace llaisys::test
