// StepSampler (plugin ABI v2 sampling): Philox known answers, slots, agreement with LogitsSampler
// for the same uniform, independence from the rest of the batch and from threading, the allowed
// mask, logprobs and raw rows, and chi-square tests of the distributions with counters as the
// random stream.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "distribution.hpp"
#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/sampling/step_sampler.hpp"

using namespace llaisys;
using namespace llaisys::sampling_test;

namespace {

// A SampleRow with the arrays its spans point to.
struct OwnedRow {
  SampleRow params;
  std::vector<TokenId> history;
  std::vector<TokenId> bias_ids;
  std::vector<float> bias_values;
  std::vector<uint32_t> allowed;

  SampleRow view() const {
    SampleRow row = params;
    row.history = history;
    row.logit_bias_ids = bias_ids;
    row.logit_bias_values = bias_values;
    row.allowed = allowed;
    return row;
  }
  std::span<const TokenId> prompt() const {
    return std::span<const TokenId>(history).first(static_cast<std::size_t>(params.num_history_prompt));
  }
  std::span<const TokenId> prior_output() const {
    return std::span<const TokenId>(history).subspan(static_cast<std::size_t>(params.num_history_prompt));
  }
};

// Buffers of a StepOutput for num_rows rows.
struct Outputs {
  Outputs(std::size_t num_rows, int32_t width, std::size_t num_logits_rows, std::size_t vocab)
      : tokens(num_rows, -7),
        logprobs(num_rows, 7.0f),
        top_width(width),
        top_ids(num_rows * static_cast<std::size_t>(width), -7),
        top_logprobs(num_rows * static_cast<std::size_t>(width), 7.0f),
        rows(num_logits_rows * vocab, 7.0f) {}

  StepOutput view() {
    return {.tokens = tokens, .logprobs = logprobs, .top_width = top_width, .top_ids = top_ids,
            .top_logprobs = top_logprobs, .rows = rows};
  }

  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  int32_t top_width;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  std::vector<float> rows;
};

std::vector<uint32_t> mask_of(const std::vector<TokenId>& ids, int32_t vocab) {
  std::vector<uint32_t> words(allowed_mask_words(vocab), 0u);
  for (TokenId t : ids) words[static_cast<std::size_t>(t) / 32] |= 1u << (static_cast<uint32_t>(t) % 32);
  return words;
}

std::vector<float> random_logits(std::mt19937& gen, std::size_t n, float sigma = 2.5f) {
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> logits(n);
  for (float& l : logits) l = normal(gen);
  return logits;
}

// Every mix of the chain's settings, by `variant`; a slot when penalties are on (or `slot` >= 0).
OwnedRow random_row(std::mt19937& gen, int32_t vocab, int variant, int32_t slot) {
  std::uniform_int_distribution<TokenId> token(0, vocab - 1);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  OwnedRow r;
  SampleRow& p = r.params;
  p.temperature = variant % 7 == 0 ? 0.0f : 0.3f + 1.4f * unit(gen);
  switch (variant % 5) {
    case 1: p.top_k = 1 + static_cast<int32_t>(gen() % 50); break;
    case 2: p.top_p = 0.2f + 0.79f * unit(gen); break;
    case 3: p.min_p = 0.01f + 0.3f * unit(gen); break;
    case 4:
      p.top_k = 1 + static_cast<int32_t>(gen() % 200);
      p.top_p = 0.5f + 0.49f * unit(gen);
      p.min_p = 0.05f * unit(gen);
      break;
    default: break;
  }
  switch (variant % 4) {
    case 1: p.repetition_penalty = 0.5f + 1.5f * unit(gen); break;
    case 2:
      p.presence_penalty = -2.0f + 4.0f * unit(gen);
      p.frequency_penalty = -2.0f + 4.0f * unit(gen);
      break;
    case 3:
      p.repetition_penalty = 1.3f;
      p.presence_penalty = 0.5f;
      p.frequency_penalty = 0.25f;
      break;
    default: break;
  }
  if (variant % 3 == 1) {
    for (int i = 0; i < 5; ++i) {
      r.bias_ids.push_back(token(gen));
      r.bias_values.push_back(i == 0 ? -INFINITY : -20.0f + 40.0f * unit(gen));
    }
  }
  p.seed = gen();
  p.counter = gen() % 1000;
  p.seq_slot = p.has_penalties() ? slot : -1;
  if (slot >= 0 && variant % 2 == 0) p.seq_slot = slot;
  if (p.seq_slot >= 0) {
    p.reset_slot = true;
    const int num_prompt = static_cast<int>(gen() % 40), num_output = static_cast<int>(gen() % 30);
    std::uniform_int_distribution<TokenId> hot(0, std::min(vocab - 1, 60));  // repeats
    for (int i = 0; i < num_prompt + num_output; ++i) r.history.push_back(i % 2 ? hot(gen) : token(gen));
    p.num_history_prompt = num_prompt;
  }
  return r;
}

// The reference: LogitsSampler's chain with the penalties from a TokenHistory.
TokenId reference_pick(std::vector<float> logits, const OwnedRow& r, std::span<const TokenId> output) {
  SamplingParams params{.temperature = r.params.temperature,
                        .top_k = r.params.top_k,
                        .top_p = r.params.top_p,
                        .min_p = r.params.min_p,
                        .repetition_penalty = r.params.repetition_penalty,
                        .presence_penalty = r.params.presence_penalty,
                        .frequency_penalty = r.params.frequency_penalty};
  for (std::size_t i = 0; i < r.bias_ids.size(); ++i) params.logit_bias.emplace_back(r.bias_ids[i], r.bias_values[i]);
  if (r.params.seq_slot < 0) {  // no slot: no penalties
    params.repetition_penalty = 1.0f;
    params.presence_penalty = params.frequency_penalty = 0.0f;
  }
  SlotCounts scratch;
  apply_penalties(logits, TokenHistory(r.prompt(), output), params, scratch);
  LogitsSampler chain;
  const double u = r.params.greedy() ? 0.0 : counter_uniform01(r.params.seed, r.params.counter);
  return chain.pick(logits, draw_params(params), u, r.allowed);
}

// ParallelFor from plain threads: four workers take every fourth row.
void four_threads(int64_t count, const std::function<void(int64_t)>& body) {
  std::vector<std::thread> workers;
  for (int64_t w = 0; w < 4; ++w) {
    workers.emplace_back([&body, count, w] {
      for (int64_t i = w; i < count; i += 4) body(i);
    });
  }
  for (std::thread& t : workers) t.join();
}

void reversed(int64_t count, const std::function<void(int64_t)>& body) {
  for (int64_t i = count - 1; i >= 0; --i) body(i);
}

// What a step gave one row.
struct RowResult {
  TokenId token = -1;
  float logprob = 0.0f;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  std::vector<float> raw;
  bool operator==(const RowResult&) const = default;
};

// Samples `rows` (in that order) from `logits` rows, with logits rows and top_width 8.
std::vector<RowResult> run_step(StepSampler& sampler, const std::vector<const OwnedRow*>& rows,
                                const std::vector<const std::vector<float>*>& logits, const ParallelFor& parallel) {
  const auto vocab = static_cast<std::size_t>(sampler.vocab_size());
  std::vector<SampleRow> views;
  std::vector<float> batch;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    views.push_back(rows[i]->view());
    views.back().logits_row = rows[i]->params.logits_row >= 0 ? static_cast<int32_t>(i) : -1;
    batch.insert(batch.end(), logits[i]->begin(), logits[i]->end());
  }
  Outputs out(rows.size(), 8, rows.size(), vocab);
  sampler.sample(batch, views, out.view(), parallel);
  std::vector<RowResult> results(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    RowResult& r = results[i];
    r.token = out.tokens[i];
    if (views[i].num_top_logprobs >= 0) {
      r.logprob = out.logprobs[i];
      r.top_ids.assign(out.top_ids.begin() + static_cast<std::ptrdiff_t>(i * 8),
                       out.top_ids.begin() + static_cast<std::ptrdiff_t>(i * 8 + 8));
      r.top_logprobs.assign(out.top_logprobs.begin() + static_cast<std::ptrdiff_t>(i * 8),
                            out.top_logprobs.begin() + static_cast<std::ptrdiff_t>(i * 8 + 8));
    }
    if (views[i].logits_row >= 0) {
      r.raw.assign(out.rows.begin() + static_cast<std::ptrdiff_t>(i * vocab),
                   out.rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * vocab));
    }
  }
  return results;
}

const std::vector<float> kLogits = {2.0f, 1.5f, 1.0f, 0.6f, 0.2f, -0.3f, -1.0f, -2.5f};

// Frequencies of n draws of `row` over kLogits with counters 0..n-1 (slot 0, reset every draw).
std::vector<int> draw_counters(const OwnedRow& row, int n) {
  StepSampler sampler(static_cast<int32_t>(kLogits.size()));
  sampler.init_slots(1);
  std::vector<int> counts(kLogits.size(), 0);
  Outputs out(1, 0, 0, kLogits.size());
  for (int i = 0; i < n; ++i) {
    SampleRow view = row.view();
    view.counter = static_cast<uint64_t>(i);
    std::vector<float> logits = kLogits;
    sampler.sample(logits, std::span<const SampleRow>(&view, 1), out.view());
    ++counts[static_cast<std::size_t>(out.tokens[0])];
  }
  return counts;
}

void check_distribution(const OwnedRow& row, const std::vector<double>& expected) {
  const std::vector<int> counts = draw_counters(row, 20000);
  check_chi_square(counts, expected, softmax(kLogits, 1.0));
}

OwnedRow counters_row(SampleRow params) {
  OwnedRow row;
  row.params = params;
  row.params.seed = 20240601;
  return row;
}

}  // namespace

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors") {
  // Random123 tests/kat_vectors: counter (4 words), key (2 words), expected output (4 words).
  struct Kat {
    std::array<uint32_t, 4> counter;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> expected;
  };
  const Kat kats[] = {
      {{0x00000000, 0x00000000, 0x00000000, 0x00000000}, {0x00000000, 0x00000000},
       {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& kat : kats) {
    const uint64_t key = (uint64_t{kat.key[1]} << 32) | kat.key[0];
    CHECK(philox4x32_10(kat.counter, key) == kat.expected);
  }
  // The uniform takes the top 53 bits of words 0 and 1 of block (counter, 0, 0) under key seed.
  const double u = counter_uniform01(0, 0);
  CHECK(u == static_cast<double>(((uint64_t{0x6627e8d5} << 32) | 0xe169c58d) >> 11) * 0x1.0p-53);
}

TEST_CASE("counter_uniform01 is uniform over counters and differs between seeds") {
  constexpr int kBins = 16, kDraws = 64000;
  std::vector<int> bins(kBins, 0);
  int same = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double u = counter_uniform01(42, static_cast<uint64_t>(i));
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    ++bins[static_cast<std::size_t>(u * kBins)];
    same += u == counter_uniform01(43, static_cast<uint64_t>(i));
  }
  double stat = 0;
  for (int b : bins) stat += (b - kDraws / kBins) * (b - kDraws / kBins) / (kDraws / double{kBins});
  CHECK(stat < 37.70);  // chi-square, 15 degrees of freedom, significance 0.001
  CHECK(same == 0);
  CHECK(counter_uniform01(42, uint64_t{1} << 32) != counter_uniform01(42, 0));  // the high word counts
}

TEST_CASE("SlotCounts: a reset then one add_output per token equals a reset with the whole history") {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_int_distribution<TokenId> token(0, trial % 2 ? 20 : 5000);
    std::vector<TokenId> prompt(gen() % 30), output(gen() % 60);
    for (TokenId& t : prompt) t = token(gen);
    for (TokenId& t : output) t = token(gen);
    const std::size_t split = output.empty() ? 0 : gen() % output.size();
    SlotCounts incremental;
    incremental.reset(prompt, std::span<const TokenId>(output).first(split));
    for (std::size_t i = split; i < output.size(); ++i) incremental.add_output(output[i]);
    SlotCounts whole;
    whole.reset(prompt, output);
    CHECK(incremental == whole);
    // Against the definition.
    std::vector<TokenId> seen = prompt;
    seen.insert(seen.end(), output.begin(), output.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    CHECK(whole.seen == seen);
    for (const auto& [t, count] : whole.output) CHECK(count == std::count(output.begin(), output.end(), t));
    int32_t total = 0;
    for (const auto& entry : whole.output) total += entry.second;
    CHECK(total == static_cast<int32_t>(output.size()));
    CHECK(std::is_sorted(whole.output.begin(), whole.output.end()));
  }
}

TEST_CASE("penalties from SlotCounts equal penalties from a TokenHistory and the sorted definition, bit for bit") {
  std::mt19937 gen(9);
  const int32_t vocab = 700;
  for (int trial = 0; trial < 200; ++trial) {
    OwnedRow r = random_row(gen, vocab, trial, 0);
    if (trial % 4 == 0) r.params.repetition_penalty = 1.7f;  // every mix, including all three
    const std::vector<float> raw = random_logits(gen, vocab);
    SamplingParams params{.repetition_penalty = r.params.repetition_penalty,
                          .presence_penalty = r.params.presence_penalty,
                          .frequency_penalty = r.params.frequency_penalty};
    std::vector<TokenId> prompt(gen() % 50), output(gen() % 50);
    for (TokenId& t : prompt) t = static_cast<TokenId>(gen() % 100);
    for (TokenId& t : output) t = static_cast<TokenId>(gen() % 100);
    for (std::size_t i = 0; i < r.bias_ids.size(); ++i) params.logit_bias.emplace_back(r.bias_ids[i], r.bias_values[i]);

    std::vector<float> from_history = raw;
    SlotCounts scratch;
    apply_penalties(from_history, TokenHistory(prompt, output), params, scratch);

    SlotCounts slot;
    slot.reset(prompt, {});
    for (TokenId t : output) slot.add_output(t);
    std::vector<float> from_slot = raw;
    apply_penalties(from_slot, slot, penalty_params(params));
    apply_logit_bias(from_slot, r.bias_ids, r.bias_values);

    // The definition, as the sampler wrote it before slots: sort the history every time.
    std::vector<float> reference = raw;
    std::vector<TokenId> seen = prompt;
    seen.insert(seen.end(), output.begin(), output.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    if (params.repetition_penalty != 1.0f) {
      for (TokenId t : seen) {
        float& l = reference[static_cast<std::size_t>(t)];
        l = l > 0.0f ? l / params.repetition_penalty : l * params.repetition_penalty;
      }
    }
    if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
      std::vector<TokenId> sorted = output;
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t i = 0; i < sorted.size();) {
        std::size_t j = i;
        while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
        reference[static_cast<std::size_t>(sorted[i])] -=
            params.presence_penalty + params.frequency_penalty * static_cast<float>(j - i);
        i = j;
      }
    }
    for (const auto& [t, b] : params.logit_bias) reference[static_cast<std::size_t>(t)] += b;

    INFO("trial " << trial);
    CHECK(std::memcmp(from_history.data(), from_slot.data(), raw.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(reference.data(), from_slot.data(), raw.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("StepSampler slots: reset once, then each step's token is counted, and init_slots clears") {
  std::mt19937 gen(11);
  const int32_t vocab = 300;
  StepSampler sampler(vocab);
  sampler.init_slots(3);
  REQUIRE(sampler.num_slots() == 3);
  OwnedRow r;
  r.params = {.temperature = 1.0f, .frequency_penalty = 0.5f, .seed = 77, .seq_slot = 2, .reset_slot = true};
  r.history = {5, 6, 7, 5, 9, 9};
  r.params.num_history_prompt = 3;
  std::vector<TokenId> output(r.history.begin() + 3, r.history.end());
  Outputs out(1, 0, 0, vocab);
  for (int step = 0; step < 40; ++step) {
    r.params.counter = static_cast<uint64_t>(step);
    SampleRow row = r.view();
    row.reset_slot = step == 0;
    std::vector<float> logits = random_logits(gen, vocab, 0.5f);
    const TokenId expected = reference_pick(logits, r, output);
    sampler.sample(logits, std::span<const SampleRow>(&row, 1), out.view());
    CHECK(out.tokens[0] == expected);
    output.push_back(out.tokens[0]);
  }
  SlotCounts whole;
  whole.reset(std::span<const TokenId>(r.history).first(3), output);
  CHECK(sampler.slot(2) == whole);
  CHECK(sampler.slot(0) == SlotCounts{});
  sampler.init_slots(2);
  REQUIRE(sampler.num_slots() == 2);
  CHECK(sampler.slot(0) == SlotCounts{});
  CHECK(sampler.slot(1) == SlotCounts{});
}

TEST_CASE("StepSampler picks what LogitsSampler picks for the same uniform, over every parameter mix") {
  std::mt19937 gen(21);
  const int32_t vocab = 2000;
  StepSampler sampler(vocab);
  sampler.init_slots(1);
  int sampled = 0;
  for (int trial = 0; trial < 420; ++trial) {
    const OwnedRow r = random_row(gen, vocab, trial, 0);
    std::vector<TokenId> output(r.prior_output().begin(), r.prior_output().end());
    // A few steps of one sequence: the slot carries the tokens, the reference gets the history.
    for (int step = 0; step < 3; ++step) {
      SampleRow row = r.view();
      row.reset_slot = row.reset_slot && step == 0;
      row.counter += static_cast<uint64_t>(step);
      OwnedRow ref = r;
      ref.params.counter = row.counter;
      std::vector<float> logits = random_logits(gen, vocab);
      const TokenId expected = reference_pick(logits, ref, output);
      Outputs out(1, 0, 0, vocab);
      sampler.sample(logits, std::span<const SampleRow>(&row, 1), out.view());
      INFO("trial " << trial << ", step " << step);
      CHECK(out.tokens[0] == expected);
      sampled += !row.greedy();
      output.push_back(out.tokens[0]);
    }
  }
  CHECK(sampled > 600);
}

TEST_CASE("LogitsSampler::sample is its chain with one uniform01 of the generator") {
  std::mt19937 gen(23);
  const int32_t vocab = 1000;
  LogitsSampler wrapper, core;
  for (int trial = 0; trial < 100; ++trial) {
    SamplingParams params{.temperature = trial % 5 == 0 ? 0.0f : 0.8f, .top_k = trial % 3 ? 0 : 30,
                          .top_p = trial % 2 ? 0.9f : 1.0f, .repetition_penalty = 1.2f};
    const std::vector<TokenId> prompt = {1, 2, 3}, output = {3, 4};
    Rng rng = make_rng(99, static_cast<uint32_t>(trial));
    Rng copy = rng;
    std::vector<float> a = random_logits(gen, vocab);
    std::vector<float> b = a;
    const TokenId got = wrapper.sample(a, TokenHistory(prompt, output), params, rng);
    SlotCounts scratch;
    apply_penalties(b, TokenHistory(prompt, output), params, scratch);
    const TokenId want = core.pick(b, draw_params(params), params.greedy() ? 0.0 : uniform01(copy));
    CHECK(got == want);
    CHECK(rng == copy);  // one draw, none for greedy
  }
}

TEST_CASE("a row's token and logprobs do not depend on the rest of the batch, its order or threads") {
  std::mt19937 gen(31);
  const int32_t vocab = 1500;
  constexpr int kRows = 32;
  std::vector<OwnedRow> rows;
  std::vector<std::vector<float>> logits;
  for (int i = 0; i < kRows; ++i) {
    rows.push_back(random_row(gen, vocab, i, i));
    rows.back().params.num_top_logprobs = i % 3 == 0 ? -1 : i % 9;
    rows.back().params.logits_row = i % 4 == 0 ? 0 : -1;  // placeholder: run_step numbers them
    if (i % 5 == 0) rows.back().allowed = mask_of({3, 77, 500, 1499, static_cast<TokenId>(i)}, vocab);
    logits.push_back(random_logits(gen, vocab));
  }
  StepSampler sampler(vocab);
  sampler.init_slots(kRows);
  // Each row alone (every row resets its slot, so reruns see the same counts).
  std::vector<RowResult> alone;
  for (int i = 0; i < kRows; ++i) alone.push_back(run_step(sampler, {&rows[i]}, {&logits[i]}, {})[0]);

  const std::vector<std::pair<const char*, ParallelFor>> runners = {
      {"serial", ParallelFor{}}, {"four threads", four_threads}, {"reversed", reversed}};
  std::vector<std::size_t> order(kRows);
  std::iota(order.begin(), order.end(), 0);
  for (int arrangement = 0; arrangement < 4; ++arrangement) {
    if (arrangement == 1) std::reverse(order.begin(), order.end());
    if (arrangement >= 2) std::shuffle(order.begin(), order.end(), gen);
    std::vector<const OwnedRow*> batch_rows;
    std::vector<const std::vector<float>*> batch_logits;
    for (std::size_t i : order) {
      batch_rows.push_back(&rows[i]);
      batch_logits.push_back(&logits[i]);
    }
    for (const auto& [name, runner] : runners) {
      const std::vector<RowResult> got = run_step(sampler, batch_rows, batch_logits, runner);
      for (std::size_t k = 0; k < order.size(); ++k) {
        INFO("arrangement " << arrangement << ", " << name << ", row " << order[k] << " at " << k);
        CHECK(got[k] == alone[order[k]]);
      }
    }
  }
}

TEST_CASE("the allowed mask: every sampled token is allowed, for every setting") {
  std::mt19937 gen(41);
  const int32_t vocab = 1000;  // not a multiple of 32: the last word is partial
  const std::vector<TokenId> allowed_ids = {17, 31, 32, 250, 251, 600, 998, 999};  // not 0: argmax's default
  const std::vector<uint32_t> mask = mask_of(allowed_ids, vocab);
  auto is_allowed = [&](TokenId t) {
    return std::find(allowed_ids.begin(), allowed_ids.end(), t) != allowed_ids.end();
  };
  const TokenId disallowed = 123;

  struct Setting {
    const char* name;
    SampleRow params;
    std::vector<std::pair<TokenId, float>> bias;
  };
  std::vector<Setting> settings = {
      {"greedy", {.temperature = 0.0f}, {}},
      {"temperature", {.temperature = 1.0f}, {}},
      {"hot temperature", {.temperature = 2.0f}, {}},
      {"top-k 1", {.temperature = 1.0f, .top_k = 1}, {}},
      {"top-k 5", {.temperature = 1.0f, .top_k = 5}, {}},
      {"top-p", {.temperature = 1.0f, .top_p = 0.5f}, {}},
      {"min-p", {.temperature = 1.0f, .min_p = 0.3f}, {}},
      {"all of them", {.temperature = 0.7f, .top_k = 3, .top_p = 0.9f, .min_p = 0.1f}, {}},
      {"penalties", {.temperature = 1.0f, .repetition_penalty = 0.5f, .presence_penalty = -2.0f,
                     .frequency_penalty = -2.0f}, {}},
      {"greedy, bias on a disallowed token", {.temperature = 0.0f}, {{disallowed, 100.0f}}},
      {"sampled, bias on a disallowed token", {.temperature = 1.0f}, {{disallowed, 100.0f}}},
      {"overflowing temperature, bias on a disallowed token", {.temperature = 1e-39f}, {{disallowed, 100.0f}}},
  };
  std::vector<std::pair<TokenId, float>> forbid_all;
  for (TokenId t : allowed_ids) forbid_all.emplace_back(t, -INFINITY);
  settings.push_back({"greedy, every allowed token at -inf", {.temperature = 0.0f}, forbid_all});
  settings.push_back({"sampled, every allowed token at -inf", {.temperature = 1.0f, .top_p = 0.9f}, forbid_all});

  StepSampler sampler(vocab);
  sampler.init_slots(1);
  SECTION("every setting") {
  for (const Setting& setting : settings) {
    OwnedRow r;
    r.params = setting.params;
    r.params.seed = 5;
    for (const auto& [t, b] : setting.bias) {
      r.bias_ids.push_back(t);
      r.bias_values.push_back(b);
    }
    if (r.params.has_penalties()) {
      r.params.seq_slot = 0;
      r.params.reset_slot = true;
      r.history = {disallowed, disallowed, 5, 6, 7};  // negative penalties favour them
    }
    r.allowed = mask;
    std::vector<int> counts(static_cast<std::size_t>(vocab), 0);
    for (int i = 0; i < 300; ++i) {
      r.params.counter = static_cast<uint64_t>(i);
      std::vector<float> logits = random_logits(gen, vocab, 4.0f);
      const std::vector<float> raw = logits;
      const SampleRow row = r.view();
      Outputs out(1, 0, 0, vocab);
      sampler.sample(logits, std::span<const SampleRow>(&row, 1), out.view());
      const TokenId t = out.tokens[0];
      INFO(setting.name << ", draw " << i << ": token " << t);
      REQUIRE(is_allowed(t));
      ++counts[static_cast<std::size_t>(t)];
      if (setting.bias == forbid_all) CHECK(t == allowed_ids.front());
      if (r.params.greedy() && setting.bias != forbid_all) {  // the best allowed token
        TokenId best = allowed_ids.front();
        for (TokenId a : allowed_ids) {
          if (raw[static_cast<std::size_t>(a)] > raw[static_cast<std::size_t>(best)]) best = a;
        }
        CHECK(t == best);
      }
    }
    if (!r.params.greedy() && setting.bias != forbid_all && r.params.top_k != 1 && r.params.temperature > 1e-30f) {
      CHECK(std::count_if(counts.begin(), counts.end(), [](int c) { return c > 0; }) > 1);  // still random
    }
  }
  }

  SECTION("NaN rows: every allowed token NaN, or NaN next to a disallowed best") {
    for (const float temperature : {0.0f, 1.0f}) {
      std::vector<float> logits(static_cast<std::size_t>(vocab), 1.0f);
      for (TokenId t : allowed_ids) logits[static_cast<std::size_t>(t)] = NAN;
      OwnedRow r;
      r.params = {.temperature = temperature};
      r.allowed = mask;
      const SampleRow row = r.view();
      Outputs out(1, 0, 0, vocab);
      sampler.sample(logits, std::span<const SampleRow>(&row, 1), out.view());
      CHECK(out.tokens[0] == allowed_ids.front());
    }
  }

  SECTION("a mask with every bit set changes nothing; masked and unmasked rows mix in one batch") {
    std::vector<OwnedRow> rows;
    std::vector<std::vector<float>> logits;
    for (int i = 0; i < 24; ++i) {
      rows.push_back(random_row(gen, vocab, i, i));
      if (i % 2 == 0) rows.back().allowed = mask;
      if (i % 6 == 1) rows.back().allowed.assign(allowed_mask_words(vocab), ~0u);
      logits.push_back(random_logits(gen, vocab));
    }
    sampler.init_slots(24);
    std::vector<const OwnedRow*> batch_rows;
    std::vector<const std::vector<float>*> batch_logits;
    for (int i = 0; i < 24; ++i) {
      batch_rows.push_back(&rows[static_cast<std::size_t>(i)]);
      batch_logits.push_back(&logits[static_cast<std::size_t>(i)]);
    }
    const std::vector<RowResult> batch = run_step(sampler, batch_rows, batch_logits, four_threads);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      INFO("row " << i);
      if (i % 2 == 0) CHECK(is_allowed(batch[i].token));
      CHECK(batch[i].token == reference_pick(logits[i], rows[i], rows[i].prior_output()));
      if (i % 6 == 1) {  // the full mask: the same token as without one
        OwnedRow unmasked = rows[i];
        unmasked.allowed.clear();
        CHECK(batch[i].token == reference_pick(logits[i], unmasked, rows[i].prior_output()));
      }
    }
  }
}

TEST_CASE("logprobs and top logprobs come from the raw row, and logits_row copies it") {
  std::mt19937 gen(51);
  const int32_t vocab = 3000;
  constexpr std::size_t kRows = 6;
  constexpr int32_t kWidth = 12;
  const int32_t num_top[kRows] = {0, 1, 5, 12, -1, 3};
  std::vector<OwnedRow> rows;
  std::vector<float> batch;
  for (std::size_t i = 0; i < kRows; ++i) {
    OwnedRow r = random_row(gen, vocab, static_cast<int>(i) * 7 + 1, static_cast<int32_t>(i));  // penalties, bias
    r.params.num_top_logprobs = num_top[i];
    r.params.logits_row = i % 2 == 0 ? static_cast<int32_t>(i / 2) : -1;
    rows.push_back(r);
    std::vector<float> logits = random_logits(gen, vocab);
    logits[10] = logits[20] = 30.0f;  // a tie at the top: the lower id first
    logits[2999] = 29.0f;
    batch.insert(batch.end(), logits.begin(), logits.end());
  }
  const std::vector<float> raw = batch;
  std::vector<SampleRow> views;
  for (const OwnedRow& r : rows) views.push_back(r.view());
  StepSampler sampler(vocab);
  sampler.init_slots(static_cast<int32_t>(kRows));
  Outputs out(kRows, kWidth, kRows / 2 + 1, static_cast<std::size_t>(vocab));
  sampler.sample(batch, views, out.view());
  for (std::size_t i = 0; i < kRows; ++i) {
    INFO("row " << i);
    const auto width = static_cast<std::size_t>(vocab);
    const std::span<const float> raw_row(raw.data() + i * width, width);
    if (num_top[i] >= 0) {
      const TokenLogprob want = compute_logprobs(raw_row, out.tokens[i], num_top[i]);
      CHECK(out.logprobs[i] == want.logprob);
      for (std::size_t k = 0; k < static_cast<std::size_t>(kWidth); ++k) {
        const std::size_t at = i * static_cast<std::size_t>(kWidth) + k;
        if (k < want.top.size()) {
          CHECK(out.top_ids[at] == want.top[k].first);
          CHECK(out.top_logprobs[at] == want.top[k].second);
        } else {
          CHECK(out.top_ids[at] == -1);
          CHECK(out.top_logprobs[at] == 0.0f);
        }
      }
      if (num_top[i] >= 3) {
        CHECK(out.top_ids[i * static_cast<std::size_t>(kWidth)] == 10);
        CHECK(out.top_ids[i * static_cast<std::size_t>(kWidth) + 1] == 20);
        CHECK(out.top_ids[i * static_cast<std::size_t>(kWidth) + 2] == 2999);
      }
    } else {
      CHECK(out.logprobs[i] == 7.0f);  // untouched
    }
    if (views[i].logits_row >= 0) {
      const float* copied = out.rows.data() + static_cast<std::size_t>(views[i].logits_row) * width;
      CHECK(std::memcmp(copied, raw_row.data(), raw_row.size() * sizeof(float)) == 0);
    }
  }
  // The row nobody asked for stays as it was.
  CHECK(std::all_of(out.rows.end() - vocab, out.rows.end(), [](float x) { return x == 7.0f; }));
}

TEST_CASE("compute_logprobs' top tokens equal a full sort, ties and -inf included") {
  std::mt19937 gen(61);
  for (const std::size_t size : {1, 2, 7, 100, 5000}) {
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<float> logits = random_logits(gen, size);
      for (float& l : logits) l = std::round(l);  // many ties
      if (trial % 3 == 0) logits[gen() % size] = -INFINITY;
      std::vector<TokenId> order(size);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
        return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)] ||
               (logits[static_cast<std::size_t>(a)] == logits[static_cast<std::size_t>(b)] && a < b);
      });
      for (const int32_t n : {0, 1, 3, 20, 10000}) {
        const TokenLogprob lp = compute_logprobs(logits, 0, n);
        REQUIRE(lp.top.size() == std::min<std::size_t>(static_cast<std::size_t>(n), size));
        for (std::size_t k = 0; k < lp.top.size(); ++k) CHECK(lp.top[k].first == order[k]);
      }
    }
  }
}

TEST_CASE("StepSampler with counters as the random stream: temperature follows softmax(logits / T)") {
  check_distribution(counters_row({.temperature = 0.6f}), softmax(kLogits, 0.6));
}

TEST_CASE("StepSampler with counters: top-k keeps the k most likely, renormalized") {
  std::vector<bool> keep(kLogits.size(), false);
  keep[0] = keep[1] = keep[2] = true;
  check_distribution(counters_row({.temperature = 1.0f, .top_k = 3}), renormalized(softmax(kLogits, 1.0), keep));
}

TEST_CASE("StepSampler with counters: top-p keeps the smallest set reaching p, renormalized") {
  const std::vector<double> p = softmax(kLogits, 1.0);
  std::vector<bool> keep(p.size(), false);
  double mass = 0;
  for (std::size_t i = 0; i < p.size() && mass < 0.75; ++i) {
    keep[i] = true;
    mass += p[i];
  }
  REQUIRE(std::count(keep.begin(), keep.end(), true) == 3);
  check_distribution(counters_row({.temperature = 1.0f, .top_p = 0.75f}), renormalized(p, keep));
}

TEST_CASE("StepSampler with counters: min-p keeps tokens at least min_p times the best, renormalized") {
  const std::vector<double> p = softmax(kLogits, 1.0);
  std::vector<bool> keep(p.size(), false);
  for (std::size_t i = 0; i < p.size(); ++i) keep[i] = p[i] >= 0.2 * p[0];
  REQUIRE(std::count(keep.begin(), keep.end(), true) == 4);
  check_distribution(counters_row({.temperature = 1.0f, .min_p = 0.2f}), renormalized(p, keep));
}

TEST_CASE("StepSampler with counters: penalties from the slot shape the distribution") {
  // Prompt {0}, output {1, 1, 2}: repetition 1.5 on 0, 1, 2; presence 0.4 and frequency 0.3 on 1, 2.
  OwnedRow row = counters_row({.temperature = 1.0f, .repetition_penalty = 1.5f, .presence_penalty = 0.4f,
                               .frequency_penalty = 0.3f, .seq_slot = 0, .reset_slot = true});
  row.history = {0, 1, 1, 2};
  row.params.num_history_prompt = 1;
  std::vector<float> penalized = kLogits;
  penalized[0] = 2.0f / 1.5f;
  penalized[1] = 1.5f / 1.5f - (0.4f + 0.3f * 2);
  penalized[2] = 1.0f / 1.5f - (0.4f + 0.3f);
  check_distribution(row, softmax(penalized, 1.0));
}

TEST_CASE("StepSampler with counters: logit_bias adds, and -inf forbids") {
  OwnedRow row = counters_row({.temperature = 1.0f});
  row.bias_ids = {7, 0};
  row.bias_values = {4.0f, -INFINITY};
  const std::vector<double> p = softmax({2.0f, 1.5f, 1.0f, 0.6f, 0.2f, -0.3f, -1.0f, 1.5f}, 1.0);
  std::vector<bool> keep(p.size(), true);
  keep[0] = false;
  check_distribution(row, renormalized(p, keep));
}

TEST_CASE("StepSampler with counters: the same (seed, counter) gives the same token, other seeds differ") {
  OwnedRow a = counters_row({.temperature = 1.0f});
  OwnedRow b = a;
  b.params.seed += 1;
  const std::vector<int> first = draw_counters(a, 2000);
  CHECK(draw_counters(a, 2000) == first);
  CHECK(draw_counters(b, 2000) != first);
}
