#pragma once
// tests/data/tiny-qwen2/reference.json: prompts, their top-5 logits at every position and 32 greedy
// steps, computed by llama.cpp in f32 on the tiny model (see WEIGHTS.md there).

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "llaisys/model/types.hpp"
#include "plugin_model.hpp"

namespace llaisys::test {

using Top5 = std::vector<std::pair<TokenId, float>>;  // highest first

struct ReferenceCase {
  std::string name;
  std::vector<TokenId> prompt_ids;
  std::vector<Top5> prompt_top5;     // [prompt length]: next-token logits after each prompt position
  std::vector<TokenId> greedy_tokens;  // [32]
  std::vector<Top5> greedy_top5;     // [32]: greedy_top5[s] belongs to position prompt_len - 1 + s
};

const std::vector<ReferenceCase>& reference_cases();

// Compares `logits` (a full row) with a reference top-5 within `tolerance`: the five reference ids'
// logits, and the ranking wherever neighbouring reference logits differ by more than the tolerance
// (a different id at rank 5 must be within tolerance of the reference's fifth logit). Returns an
// empty string when they agree, else what differs. `max_error` is raised to the largest difference.
std::string compare_top5(const std::vector<float>& logits, const Top5& reference, float tolerance,
                         float& max_error);

// Teacher forcing: feeds every case's prompt followed by its greedy tokens (the last one is never
// fed) to `model`, `chunk` tokens per forward pass, and calls `check(case, position, logits,
// reference)` for each reference row of each position: prompt_top5[p] while p is in the prompt and
// greedy_top5[p - (prompt length - 1)] from the prompt's last position on (that position has both).
using TeacherForcedCheck =
    std::function<void(const ReferenceCase&, int32_t position, const std::vector<float>& logits, const Top5& reference)>;
void for_each_teacher_forced_row(AnyModel& model, int32_t chunk, const TeacherForcedCheck& check);

// The k highest entries of a row, highest first (lower id first on ties).
Top5 top_k(const std::vector<float>& logits, int k);

}  // namespace llaisys::test
