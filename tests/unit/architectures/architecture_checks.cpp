#include "architecture_checks.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "generated_model.hpp"

namespace llaisys::test {
namespace {

constexpr int32_t kBlockSize = 16;  // open_plugin_model's

// Blocks for `num_tokens` positions.
int32_t blocks_for(int32_t num_tokens) { return (num_tokens + kBlockSize - 1) / kBlockSize; }

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<TokenId> slice(const std::vector<TokenId>& v, std::size_t begin, std::size_t end) {
  return {v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end)};
}

// The prompts that reach past twice the window: every window edge is crossed by the prompt itself.
std::vector<const ReferenceCase*> beyond_twice_the_window(const ArchitectureUnderTest& arch) {
  std::vector<const ReferenceCase*> out;
  for (const ReferenceCase& c : reference_cases_of(arch)) {
    if (c.prompt_ids.size() > static_cast<std::size_t>(2 * arch.sliding_window)) out.push_back(&c);
  }
  return out;
}

// Three cases for the batch tests, shortest first, each longer than twice the window (and than one
// block), so that every sequence of the batch has crossed the window when it is compared.
std::vector<const ReferenceCase*> batch_cases(const ArchitectureUnderTest& arch) {
  std::vector<const ReferenceCase*> out;
  for (const ReferenceCase* c : beyond_twice_the_window(arch)) {
    if (c->prompt_ids.size() > static_cast<std::size_t>(kBlockSize)) out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const ReferenceCase* a, const ReferenceCase* b) {
    return a->prompt_ids.size() < b->prompt_ids.size();
  });
  if (out.size() < 3) throw std::runtime_error(arch.shape + "/reference.json: fewer than 3 prompts for the batch tests");
  out.resize(3);
  return out;
}

}  // namespace

const std::vector<ReferenceCase>& reference_cases_of(const ArchitectureUnderTest& arch) {
  return reference_cases(std::filesystem::path(LLAISYS_TEST_DATA_DIR) / arch.shape / "reference.json");
}

AnyModel open_model(const ArchitectureUnderTest& arch, int32_t num_threads) {
  const std::filesystem::path plugin = std::filesystem::path(LLAISYS_PLUGIN_DIR) / arch.plugin_file;
  if (!std::filesystem::exists(plugin)) {
    throw std::runtime_error(fmt::format("the {} plugin is not built: {} does not exist (CMake target '{}')",
                                         arch.name, plugin.string(), arch.name));
  }
  return open_plugin_model(arch.plugin_file, generated_model_dir(arch.shape), num_threads, arch.options);
}

void check_teacher_forced(const ArchitectureUnderTest& arch) {
  const std::vector<ReferenceCase>& cases = reference_cases_of(arch);
  const std::vector<const ReferenceCase*> long_cases = beyond_twice_the_window(arch);
  if (arch.sliding_window > 0) {
    // The fixture's point: prompts whose every window edge lies inside the prompt, and chunks that
    // are wider than the window as well as chunks narrower than it (windows reaching back into
    // earlier passes).
    REQUIRE(!long_cases.empty());
    REQUIRE(std::ranges::any_of(arch.chunk_sizes, [&](int32_t n) { return n > arch.sliding_window; }));
    REQUIRE(std::ranges::any_of(arch.chunk_sizes, [&](int32_t n) { return n < arch.sliding_window; }));
  }
  AnyModel model = open_model(arch);
  std::map<std::string, std::size_t> rows_checked;  // per case, over all chunk sizes
  std::vector<std::string> failures;
  float max_error = 0;
  for (const int32_t chunk : arch.chunk_sizes) {
    float chunk_max_error = 0;
    std::size_t positions = 0, failing = 0;
    for_each_teacher_forced_row(model, cases, chunk, [&](const ReferenceCase& c, int32_t p,
                                                         const std::vector<float>& logits, const Top5& reference) {
      const std::string problem = compare_top5(logits, reference, arch.tolerance, chunk_max_error);
      ++positions;
      ++rows_checked[c.name];
      if (!problem.empty()) {
        ++failing;
        failures.push_back(fmt::format("{} position {} (chunks of {}):{}", c.name, p, chunk, problem));
      }
    });
    fmt::print("{} parity, chunks of {}: {} rows checked, max |logit - reference| = {:.3g}, {} failing\n", arch.name,
               chunk, positions, chunk_max_error, failing);
    max_error = std::max(max_error, chunk_max_error);
  }
  INFO(fmt::format("{} failing rows, first: {}", failures.size(), failures.empty() ? "" : failures.front()));
  CHECK(failures.empty());
  CHECK(max_error <= arch.tolerance);
  // Every position of every case, for every chunk size: the prompt's rows and the 32 greedy ones.
  for (const ReferenceCase& c : cases) {
    INFO(c.name);
    CHECK(rows_checked[c.name] == arch.chunk_sizes.size() * (c.prompt_top5.size() + c.greedy_top5.size()));
  }
  if (arch.sliding_window > 0) {
    std::vector<std::size_t> lengths;
    for (const ReferenceCase* c : long_cases) lengths.push_back(c->prompt_ids.size());
    fmt::print("{}: {} of {} prompts are longer than twice the {}-token window ({} tokens), every position checked\n",
               arch.name, long_cases.size(), cases.size(), arch.sliding_window, fmt::join(lengths, ", "));
  }
}

void check_free_greedy(const ArchitectureUnderTest& arch) {
  AnyModel model = open_model(arch);
  std::size_t steps_compared = 0, steps_total = 0, long_cases_compared = 0;
  std::vector<std::string> near_ties;  // reference steps where either token is right
  float max_error = 0;
  for (const ReferenceCase& c : reference_cases_of(arch)) {
    INFO(c.name);
    const auto prompt_len = static_cast<int32_t>(c.prompt_ids.size());
    const auto num_steps = static_cast<int32_t>(c.greedy_tokens.size());
    steps_total += c.greedy_tokens.size();
    for (int32_t s = 0; s < num_steps; ++s) {
      const Top5& reference = c.greedy_top5[static_cast<std::size_t>(s)];
      if (reference[0].second - reference[1].second <= arch.tolerance) {
        near_ties.push_back(fmt::format("{} step {} (gap {:.2g})", c.name, s, reference[0].second - reference[1].second));
      }
    }
    const std::vector<BlockId> table = block_range(0, blocks_for(prompt_len + num_steps));
    // Prefill the prompt, then decode one token per pass from the KV cache.
    auto rows = run_batch(model, {{.tokens = c.prompt_ids, .start = 0, .table = table}});
    for (int32_t s = 0; s < num_steps; ++s) {
      INFO("step " << s);
      const Top5& reference = c.greedy_top5[static_cast<std::size_t>(s)];
      const std::string problem = compare_top5(rows.front(), reference, arch.tolerance, max_error);
      INFO(problem);
      CHECK(problem.empty());
      const TokenId ours = top_k(rows.front(), 1).front().first;
      const TokenId theirs = c.greedy_tokens[static_cast<std::size_t>(s)];
      ++steps_compared;
      if (ours != theirs) {
        // Right only where the reference itself is tied within the tolerance, with our token among
        // the tied ones; the reference's later steps then continue another text.
        const float gap = reference[0].second - reference[1].second;
        const auto tied = std::ranges::find_if(reference, [&](const auto& entry) {
          return entry.first == ours && reference[0].second - entry.second <= arch.tolerance;
        });
        INFO(fmt::format("token {} where the reference has {} (its top-1/top-2 gap {:.3g}, tolerance {:.3g})", ours,
                         theirs, gap, arch.tolerance));
        CHECK(tied != reference.end());
        if (tied != reference.end()) {
          fmt::print("{} greedy: {} takes the other side of a near tie at step {}; its later steps are not compared\n",
                     arch.name, c.name, s);
        }
        break;
      }
      if (s + 1 < num_steps) rows = run_batch(model, {{.tokens = {ours}, .start = prompt_len + s, .table = table}});
    }
    if (c.prompt_ids.size() > static_cast<std::size_t>(2 * arch.sliding_window)) ++long_cases_compared;
  }
  fmt::print("{} greedy: {} of {} steps compared, max |logit - reference| = {:.3g}; reference steps whose top-1/top-2 "
             "gap is within the {:.3g} tolerance (either token accepted): {}\n",
             arch.name, steps_compared, steps_total, max_error, arch.tolerance,
             near_ties.empty() ? "none" : fmt::format("{}", fmt::join(near_ties, ", ")));
  // The prompts past twice the window are among those generated from.
  if (arch.sliding_window > 0) {
    CHECK(long_cases_compared > 0);
    CHECK(long_cases_compared == beyond_twice_the_window(arch).size());
  }
}

void check_batch_invariance(const ArchitectureUnderTest& arch) {
  const std::vector<const ReferenceCase*> picked = batch_cases(arch);
  const std::vector<TokenId>& a = picked[0]->prompt_ids;
  const std::vector<TokenId>& b = picked[1]->prompt_ids;
  const std::vector<TokenId>& c = picked[2]->prompt_ids;
  const auto a_len = static_cast<int32_t>(a.size()), b_len = static_cast<int32_t>(b.size()),
             c_len = static_cast<int32_t>(c.size());
  const TokenId a_next = picked[0]->greedy_tokens.front();
  INFO(fmt::format("A = {} ({} tokens), B = {} ({}), C = {} ({})", picked[0]->name, a_len, picked[1]->name, b_len,
                   picked[2]->name, c_len));

  // A alone: its whole prompt in one pass (a row per position), then one decode step.
  AnyModel alone = open_model(arch);
  const auto a_table = block_range(0, blocks_for(a_len + 1));
  const auto a_prefill = run_batch(alone, {{.tokens = a, .start = 0, .table = a_table, .all_outputs = true}});
  const auto a_decode = run_batch(alone, {{.tokens = {a_next}, .start = a_len, .table = a_table}});

  // The same sequence among others, in other blocks: B's prompt but two tokens first, then a step
  // with B's next token (a one-token chunk), A's whole prompt and C's first third, then a step with
  // the rest of C, A's decode and B's last token.
  AnyModel mixed = open_model(arch);
  const auto b_blocks = block_range(0, blocks_for(b_len));
  const auto c_blocks = block_range(blocks_for(b_len), blocks_for(c_len));
  const auto a_blocks = block_range(blocks_for(b_len) + blocks_for(c_len), blocks_for(a_len + 1));
  const std::size_t c_split = c.size() / 3;
  run_batch(mixed, {{.tokens = slice(b, 0, b.size() - 2), .start = 0, .table = b_blocks}});
  const auto step1 = run_batch(mixed, {{.tokens = slice(b, b.size() - 2, b.size() - 1), .start = b_len - 2, .table = b_blocks},
                                       {.tokens = a, .start = 0, .table = a_blocks, .all_outputs = true},
                                       {.tokens = slice(c, 0, c_split), .start = 0, .table = c_blocks}});
  REQUIRE(step1.size() == 1 + a.size() + 1);
  for (std::size_t p = 0; p < a.size(); ++p) {
    INFO("position " << p);
    CHECK(bit_identical(step1[1 + p], a_prefill[p]));
  }
  const auto step2 = run_batch(mixed, {{.tokens = slice(c, c_split, c.size()), .start = static_cast<int32_t>(c_split), .table = c_blocks},
                                       {.tokens = {a_next}, .start = a_len, .table = a_blocks},
                                       {.tokens = slice(b, b.size() - 1, b.size()), .start = b_len - 1, .table = b_blocks}});
  REQUIRE(step2.size() == 3);
  CHECK(bit_identical(step2[1], a_decode[0]));
  // Sanity: the batch-mates really did compute something else.
  CHECK_FALSE(bit_identical(step2[0], step2[1]));
  CHECK_FALSE(bit_identical(step2[2], step2[1]));
}

void check_chunk_invariance(const ArchitectureUnderTest& arch) {
  const ReferenceCase& c = *batch_cases(arch)[2];
  const std::vector<TokenId>& prompt = c.prompt_ids;
  const auto table = block_range(0, blocks_for(static_cast<int32_t>(prompt.size())));
  AnyModel one_pass = open_model(arch);
  const auto whole = run_batch(one_pass, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});

  // Chunk edges just before, at and after the window's width and its double (16 stands in for a
  // window where there is none), then the rest.
  const std::size_t w = static_cast<std::size_t>(arch.sliding_window > 0 ? arch.sliding_window : 16);
  std::vector<std::size_t> edges = {0, w - 1, w, 2 * w + 3, prompt.size()};
  INFO(fmt::format("{} ({} tokens) in chunks [{}]", c.name, prompt.size(), fmt::join(edges, ", ")));
  REQUIRE(2 * w + 3 < prompt.size());
  AnyModel chunked = open_model(arch);
  for (std::size_t e = 0; e + 1 < edges.size(); ++e) {
    const auto rows = run_batch(chunked, {{.tokens = slice(prompt, edges[e], edges[e + 1]),
                                           .start = static_cast<int32_t>(edges[e]),
                                           .table = table,
                                           .all_outputs = true}});
    REQUIRE(rows.size() == edges[e + 1] - edges[e]);
    for (std::size_t p = edges[e]; p < edges[e + 1]; ++p) {
      INFO("position " << p);
      CHECK(bit_identical(rows[p - edges[e]], whole[p]));
    }
  }
}

}  // namespace llaisys::test
