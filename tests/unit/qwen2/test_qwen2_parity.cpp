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
  for (const ReferenceCase& c : reference_cases()) {
    // The prompt, then the reference's greedy tokens (the last one is never fed).
    std::vector<TokenId> tokens = c.prompt_ids;
    tokens.insert(tokens.end(), c.greedy_tokens.begin(), c.greedy_tokens.end() - 1);
    const auto num_tokens = static_cast<int32_t>(tokens.size());
    const std::vector<BlockId> table = block_range(0, (num_tokens + 15) / 16);
    const auto prompt_len = static_cast<int32_t>(c.prompt_ids.size());
    for (int32_t start = 0; start < num_tokens; start += kChunk) {
      const int32_t end = std::min(num_tokens, start + kChunk);
      const auto rows = run_batch(model, {{.tokens = std::vector<TokenId>(tokens.begin() + start, tokens.begin() + end),
                                           .start = start,
                                           .table = table,
                                           .all_outputs = true}});
      for (int32_t p = start; p < end; ++p) {
        const std::vector<float>& logits = rows[static_cast<std::size_t>(p - start)];
        std::vector<const Top5*> references;
        if (p < prompt_len) references.push_back(&c.prompt_top5[static_cast<std::size_t>(p)]);
        if (p >= prompt_len - 1) references.push_back(&c.greedy_top5[static_cast<std::size_t>(p - (prompt_len - 1))]);
        for (const Top5* reference : references) {
          const std::string problem = compare_top5(logits, *reference, kTolerance, max_error);
          ++positions_checked;
          if (!problem.empty()) failures.push_back(fmt::format("{} position {}:{}", c.name, p, problem));
        }
      }
    }
  }
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
