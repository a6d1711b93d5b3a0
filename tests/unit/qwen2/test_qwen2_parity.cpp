// Parity of the qwen2 plugin with llama.cpp (f32) on the tiny model: tests/data/tiny-qwen2.

#include <algorithm>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "reference_cases.hpp"
#include "tiny_model.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

constexpr float kTolerance = 2e-3f;
constexpr int32_t kChunk = 64;  // teacher-forced tokens per forward pass

}  // namespace

TEST_CASE("qwen2 teacher-forced top-5 logits match llama.cpp within 2e-3 at every position", "[qwen2][parity]") {
  AnyModel model = open_model(tiny_model_dir());
  float max_error = 0;
  std::size_t positions_checked = 0;
  std::vector<std::string> failures;
  for_each_teacher_forced_row(model, kChunk, [&](const ReferenceCase& c, int32_t p, const std::vector<float>& logits,
                                                 const Top5& reference) {
    const std::string problem = compare_top5(logits, reference, kTolerance, max_error);
    ++positions_checked;
    if (!problem.empty()) failures.push_back(fmt::format("{} position {}:{}", c.name, p, problem));
  });
  fmt::print("qwen2 parity: {} positions checked, max |logit - reference| = {:.3g}, {} failing\n",
             positions_checked, max_error, failures.size());
  INFO(fmt::format("{} failing positions, first: {}", failures.size(), failures.empty() ? "" : failures.front()));
  CHECK(failures.empty());
  CHECK(positions_checked > 900);
  CHECK(max_error < kTolerance);
}

TEST_CASE("qwen2 free greedy generation reproduces all 32 reference tokens of every case", "[qwen2][parity]") {
  AnyModel model = open_model(tiny_model_dir());
  for (const ReferenceCase& c : reference_cases()) {
    const auto prompt_len = static_cast<int32_t>(c.prompt_ids.size());
    const std::vector<BlockId> table = block_range(0, (prompt_len + 32 + 15) / 16);
    std::vector<TokenId> generated;
    // Prefill the prompt, then decode one token per pass from the KV cache.
    auto rows = run_batch(model, {{.tokens = c.prompt_ids, .start = 0, .table = table}});
    while (generated.size() < c.greedy_tokens.size()) {
      const TokenId next = top_k(rows.front(), 1).front().first;
      generated.push_back(next);
      const int32_t position = prompt_len + static_cast<int32_t>(generated.size()) - 1;
      if (generated.size() < c.greedy_tokens.size()) {
        rows = run_batch(model, {{.tokens = {next}, .start = position, .table = table}});
      }
    }
    INFO(c.name);
    CHECK(generated == c.greedy_tokens);
  }
}
