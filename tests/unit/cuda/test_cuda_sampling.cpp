// Device sampling against LogitsSampler (the CPU sampler) and an independent sorted-order draw.
//
// Greedy rows must equal llaisys::argmax exactly (ties, NaN, -inf included). For sampled rows the
// GPU is given uniform01() of a generator and the CPU sampler a copy of that same generator, so both
// draw with the same u. With top_k set both walk the candidates in probability order and must pick
// the same token (a mismatch needs u within ~1e-7 of a cumulative boundary: with these seeds it
// does not happen). Without top_k the CPU walks top-p candidates in token order, so the GPU
// token is checked against an independent double-precision reference that walks the sorted
// candidate set, and must belong to the CPU's candidate set.
//
// Then the whole model-side sampler (ops::Sampler, plugin ABI v2): the CUDA one against the CPU one
// (StepSampler) on the same rows, with sequence slots, penalties, logit_bias and allowed masks:
// greedy rows and sampled rows with top_k must give the same tokens (the preprocessing is
// bit-identical, u = counter_uniform01(seed, counter) on both), slots must carry their counts
// across steps, and logprobs / raw rows must be those of the raw row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "cuda/sampling.hpp"
#include "cuda_test_util.hpp"
#include "llaisys/model/step.hpp"
#include "llaisys/ops/device_context.hpp"
#include "llaisys/ops/sample.hpp"
#include "llaisys/sampling/sampler.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

namespace {

// Sorted-order reference: temperature, min_p, top_k, top_p, then the first candidate whose
// cumulative weight exceeds u * total. Returns the token and the candidate set.
std::pair<TokenId, std::vector<TokenId>> reference_draw(const std::vector<float>& row, const cuda::RowSampling& p) {
  const float inv_t = 1.0f / p.temperature;
  std::vector<TokenId> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> scaled(row.size());
  for (std::size_t i = 0; i < row.size(); ++i) scaled[i] = row[i] * inv_t;
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) { return row[a] > row[b]; });
  const float max_scaled = scaled[order[0]];
  const float floor = p.min_p > 0.0f ? max_scaled + std::log(p.min_p) : -INFINITY;
  std::vector<TokenId> cand;
  for (TokenId t : order) {
    if (scaled[t] >= floor && scaled[t] > -INFINITY) cand.push_back(t);
  }
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < cand.size()) cand.resize(p.top_k);
  auto weight = [&](TokenId t) { return std::exp(static_cast<double>(scaled[t] - max_scaled)); };
  if (p.top_p < 1.0f) {
    double total = 0.0;
    for (TokenId t : cand) total += weight(t);
    double prefix = 0.0;
    std::size_t keep = cand.size();
    for (std::size_t i = 0; i < cand.size(); ++i) {
      prefix += weight(cand[i]);
      if (prefix >= static_cast<double>(p.top_p) * total) {
        keep = i + 1;
        break;
      }
    }
    cand.resize(keep);
  }
  double total = 0.0;
  for (TokenId t : cand) total += weight(t);
  double prefix = 0.0;
  for (TokenId t : cand) {
    prefix += weight(t);
    if (prefix > p.uniform * total) return {t, cand};
  }
  return {cand.back(), cand};
}

std::vector<int32_t> run_gpu(Fixture& f, const std::vector<float>& logits, int64_t rows, int64_t vocab,
                             const std::vector<cuda::RowSampling>& params) {
  auto dl = to_device(logits);
  auto dt = to_device(std::vector<int32_t>(static_cast<std::size_t>(rows), -7));
  cuda::SamplingWorkspace ws;
  REQUIRE(cuda::sample_tokens(f.ctx, dl.data(), vocab, rows, vocab, params, ws, dt.data()).ok());
  return to_host(dt);
}

}  // namespace

TEST_CASE("cuda greedy sampling equals argmax (ties to the lower id, NaN, -inf)", "[cuda][sampling]") {
  Fixture f;
  const int64_t vocab = 151936, rows = 6;
  auto logits = random_floats(static_cast<std::size_t>(rows * vocab), 40, -10.0f, 10.0f);
  logits[0 * vocab + 5000] = 50.0f;  // row 0: tie at 5000 and 90000 -> 5000
  logits[0 * vocab + 90000] = 50.0f;
  logits[1 * vocab + 0] = NAN;       // row 1: NaN first -> 0 (as llaisys::argmax)
  logits[2 * vocab + 77] = NAN;      // row 2: NaN elsewhere is ignored
  for (int64_t i = 0; i < vocab; ++i) logits[3 * vocab + i] = -INFINITY;  // row 3: all -inf -> 0
  logits[4 * vocab + vocab - 1] = 1e30f;  // row 4: the last id
  std::vector<cuda::RowSampling> params(rows);
  const auto got = run_gpu(f, logits, rows, vocab, params);
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    CHECK(got[r] == argmax(std::span<const float>(logits.data() + r * vocab, vocab)));
  }
  CHECK(got[0] == 5000);
}

TEST_CASE("cuda sampling matches the CPU sampler and a sorted-order reference", "[cuda][sampling]") {
  Fixture f;
  const int64_t vocab = 32000, rows = 48;
  const auto logits = random_floats(static_cast<std::size_t>(rows * vocab), 50, -6.0f, 6.0f);
  std::vector<cuda::RowSampling> params(rows);
  std::vector<SamplingParams> cpu_params(rows);
  std::vector<Rng> rngs;
  for (int64_t r = 0; r < rows; ++r) {
    SamplingParams& sp = cpu_params[r];
    switch (r % 6) {
      case 0: sp.temperature = 0.0f; break;
      case 1: sp.temperature = 0.7f; sp.top_k = 40; break;
      case 2: sp.temperature = 1.3f; sp.top_k = 5; sp.top_p = 0.8f; break;
      case 3: sp.temperature = 1.0f; sp.top_p = 0.9f; break;
      case 4: sp.temperature = 0.5f; sp.min_p = 0.05f; break;
      default: sp.temperature = 1.0f; break;
    }
    rngs.push_back(make_rng(1234, static_cast<uint32_t>(r)));
    Rng copy = rngs.back();
    params[r] = {.temperature = sp.temperature, .top_k = sp.top_k, .top_p = sp.top_p, .min_p = sp.min_p,
                 .uniform = uniform01(copy)};
  }
  const auto got = run_gpu(f, logits, rows, vocab, params);
  LogitsSampler sampler;
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r, params[r].temperature, params[r].top_k, params[r].top_p, params[r].min_p, params[r].uniform);
    std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    std::vector<float> cpu_row = row;
    const TokenId cpu_token = sampler.sample(cpu_row, TokenHistory{}, cpu_params[r], rngs[r]);
    if (cpu_params[r].greedy()) {
      CHECK(got[r] == cpu_token);
      continue;
    }
    const auto [ref_token, candidates] = reference_draw(row, params[r]);
    CHECK(got[r] == ref_token);
    CHECK(std::find(candidates.begin(), candidates.end(), cpu_token) != candidates.end());
    if (cpu_params[r].top_k > 0) CHECK(got[r] == cpu_token);
  }
}

TEST_CASE("cuda sampling: every u lands on the reference token (boundaries included)", "[cuda][sampling]") {
  Fixture f;
  // A small vocabulary with a known distribution: scaled logits log(1), log(2), log(3), log(4).
  const int64_t vocab = 4, rows = 64;
  std::vector<float> logits;
  std::vector<cuda::RowSampling> params;
  for (int64_t r = 0; r < rows; ++r) {
    for (float w : {1.0f, 2.0f, 3.0f, 4.0f}) logits.push_back(std::log(w));
    params.push_back({.temperature = 1.0f, .uniform = (static_cast<double>(r) + 0.5) / static_cast<double>(rows)});
  }
  const auto got = run_gpu(f, logits, rows, vocab, params);
  for (int64_t r = 0; r < rows; ++r) {
    // Sorted: ids 3 (0.4), 2 (0.3), 1 (0.2), 0 (0.1).
    const double u = params[r].uniform;
    const int32_t want = u < 0.4 ? 3 : u < 0.7 ? 2 : u < 0.9 ? 1 : 0;
    CAPTURE(r, u);
    CHECK(got[r] == want);
  }
}

TEST_CASE("cuda sampling rejects bad parameters", "[cuda][sampling]") {
  Fixture f;
  auto dl = to_device(std::vector<float>(8, 0.0f));
  auto dt = to_device(std::vector<int32_t>(1));
  cuda::SamplingWorkspace ws;
  const std::vector<cuda::RowSampling> bad_u = {{.temperature = 1.0f, .uniform = 1.0}};
  CHECK(cuda::sample_tokens(f.ctx, dl.data(), 8, 1, 8, bad_u, ws, dt.data()).code() == ErrorCode::invalid_argument);
  const std::vector<cuda::RowSampling> two = {{}, {}};
  CHECK(cuda::sample_tokens(f.ctx, dl.data(), 8, 1, 8, two, ws, dt.data()).code() == ErrorCode::invalid_argument);
}

// ---- ops::Sampler: CUDA against CPU -------------------------------------------------------------

namespace {

template <class T>
T take(Result<T> result) {
  INFO(result.status().message());
  REQUIRE(result.ok());
  return std::move(result).value();
}

// The two samplers under test, each with num_slots sequence slots.
struct SamplerPair {
  std::unique_ptr<ops::DeviceContext> cpu_ctx;
  std::unique_ptr<ops::DeviceContext> gpu_ctx;
  std::unique_ptr<ops::Sampler> cpu;
  std::unique_ptr<ops::Sampler> gpu;

  SamplerPair(int32_t vocab, int32_t num_slots)
      : cpu_ctx(take(ops::make_cpu_context({.num_threads = 2}))),
        gpu_ctx(take(ops::make_cuda_context({.device = 0}))),
        cpu(take(ops::make_sampler(*cpu_ctx, vocab))),
        gpu(take(ops::make_sampler(*gpu_ctx, vocab))) {
    REQUIRE(cpu->init_slots(num_slots).ok());
    REQUIRE(gpu->init_slots(num_slots).ok());
  }
};

// What one step wrote (sentinels where nothing should have).
struct StepResult {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  int32_t top_width = 0;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  std::vector<float> rows;
};

StepResult run_sampler(ops::DeviceContext& ctx, ops::Sampler& sampler, const std::vector<float>& logits,
                       std::span<const SampleRow> rows, int64_t vocab, int32_t top_width = 0,
                       int32_t num_logits_rows = 0) {
  const std::size_t n = rows.size();
  StepResult r{.tokens = std::vector<int32_t>(n, -7),
               .logprobs = std::vector<float>(n, 1.0f),
               .top_width = top_width,
               .top_ids = std::vector<int32_t>(n * static_cast<std::size_t>(top_width), -7),
               .top_logprobs = std::vector<float>(n * static_cast<std::size_t>(top_width), 1.0f),
               .rows = std::vector<float>(static_cast<std::size_t>(num_logits_rows * vocab), 12345.0f)};
  REQUIRE(logits.size() == n * static_cast<std::size_t>(vocab));
  const std::size_t bytes = logits.size() * sizeof(float);
  const ops::Buffer buffer = take(ctx.allocate(bytes));
  REQUIRE(ctx.copy_from_host(buffer.data(), logits.data(), bytes).ok());
  const TensorView view(buffer.data(), DType::f32, Shape{static_cast<int64_t>(n), vocab}, ctx.device());
  const StepOutput out{.tokens = r.tokens,
                       .logprobs = r.logprobs,
                       .top_width = top_width,
                       .top_ids = r.top_ids,
                       .top_logprobs = r.top_logprobs,
                       .rows = r.rows};
  const Status status = sampler.sample(view, rows, out);
  INFO(status.message());
  REQUIRE(status.ok());
  return r;
}

// The ids of a row's `n` largest logits, largest first.
std::vector<TokenId> top_ids_of(const float* row, int64_t vocab, std::size_t n) {
  std::vector<TokenId> ids(static_cast<std::size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                    [&](TokenId a, TokenId b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  ids.resize(n);
  return ids;
}

// Owns what SampleRow's spans point at. Fill every row's storage, then call bind().
struct RowStorage {
  std::vector<std::vector<TokenId>> history, bias_ids;
  std::vector<std::vector<float>> bias_values;
  std::vector<std::vector<uint32_t>> allowed;

  explicit RowStorage(std::size_t rows) : history(rows), bias_ids(rows), bias_values(rows), allowed(rows) {}
  void bind(std::vector<SampleRow>& rows) const {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      rows[r].history = history[r];
      rows[r].logit_bias_ids = bias_ids[r];
      rows[r].logit_bias_values = bias_values[r];
      rows[r].allowed = allowed[r];
    }
  }
};

// A random mask allowing about half the vocabulary (bits past it set at random too: they are ignored).
std::vector<uint32_t> random_mask(int64_t vocab, std::mt19937& rng) {
  std::vector<uint32_t> mask(allowed_mask_words(static_cast<int32_t>(vocab)));
  for (uint32_t& word : mask) word = static_cast<uint32_t>(rng());
  return mask;
}

std::vector<uint32_t> mask_of(int64_t vocab, std::initializer_list<TokenId> tokens) {
  std::vector<uint32_t> mask(allowed_mask_words(static_cast<int32_t>(vocab)), 0u);
  for (TokenId t : tokens) mask[static_cast<std::size_t>(t) / 32] |= 1u << (static_cast<uint32_t>(t) % 32);
  return mask;
}

// Row r of a penalties / bias / mask mix (kind = r % 6) whose penalties touch its most likely tokens,
// so they change the pick: the history holds them.
void mixed_row(SampleRow& row, RowStorage& storage, std::size_t r, const float* logits, int64_t vocab,
               std::mt19937& rng) {
  const std::vector<TokenId> top = top_ids_of(logits, vocab, 8);
  std::uniform_int_distribution<TokenId> any_token(0, static_cast<TokenId>(vocab - 1));
  auto reset = [&](std::vector<TokenId> prompt, std::vector<TokenId> output) {
    row.seq_slot = static_cast<int32_t>(r);
    row.reset_slot = true;
    for (int i = 0; i < 20; ++i) prompt.push_back(any_token(rng));
    for (int i = 0; i < 10; ++i) output.push_back(any_token(rng));
    row.num_history_prompt = static_cast<int32_t>(prompt.size());
    storage.history[r] = prompt;
    storage.history[r].insert(storage.history[r].end(), output.begin(), output.end());
  };
  switch (r % 6) {
    case 0:
      reset({top[0], top[1], top[2], top[3]}, {});
      row.repetition_penalty = 1.3f;
      break;
    case 1:
      reset({}, {top[0], top[0], top[0], top[1]});
      row.presence_penalty = 0.5f;
      row.frequency_penalty = 0.7f;
      break;
    case 2: {
      reset({top[2]}, {top[1], top[1]});
      row.repetition_penalty = 1.2f;
      row.presence_penalty = 0.3f;
      row.frequency_penalty = 0.2f;
      const TokenId boosted = any_token(rng);
      storage.bias_ids[r] = {boosted, top[0], boosted};  // a repeated id adds twice
      storage.bias_values[r] = {1.5f, -INFINITY, 1.75f};
      break;
    }
    case 3: storage.allowed[r] = random_mask(vocab, rng); break;
    case 4:
      reset({top[0]}, {top[1]});
      row.repetition_penalty = 1.5f;
      storage.allowed[r] = random_mask(vocab, rng);
      storage.bias_ids[r] = {top[2], top[5]};
      storage.bias_values[r] = {-2.0f, 0.5f};
      break;
    default: break;  // nothing to prepare
  }
}

}  // namespace

TEST_CASE("cuda ops::Sampler equals the CPU sampler on greedy rows with penalties, bias and masks",
          "[cuda][sampling][sampler]") {
  const int64_t vocab = 32003;  // a partial last mask word
  const std::size_t num_mixed = 24, num_rows = num_mixed + 2;
  SamplerPair samplers(static_cast<int32_t>(vocab), 32);
  auto logits = random_floats(num_rows * static_cast<std::size_t>(vocab), 60, -6.0f, 6.0f);
  std::mt19937 rng(61);
  std::vector<SampleRow> rows(num_rows);
  RowStorage storage(num_rows);
  for (std::size_t r = 0; r < num_mixed; ++r) {
    mixed_row(rows[r], storage, r, logits.data() + r * static_cast<std::size_t>(vocab), vocab, rng);
  }
  // Every allowed token forbidden by the bias: the lowest allowed id.
  const std::size_t all_forbidden = num_mixed;
  storage.allowed[all_forbidden] = mask_of(vocab, {31000, 7, 100});
  storage.bias_ids[all_forbidden] = {7, 100, 31000};
  storage.bias_values[all_forbidden] = {-INFINITY, -INFINITY, -INFINITY};
  // A NaN on a disallowed token never wins: the better of the two allowed ones.
  const std::size_t nan_row = num_mixed + 1;
  float* nan_logits = logits.data() + nan_row * static_cast<std::size_t>(vocab);
  nan_logits[0] = NAN;
  nan_logits[3] = 1.0f;
  nan_logits[9] = 2.0f;
  storage.allowed[nan_row] = mask_of(vocab, {3, 9});
  storage.bind(rows);

  const StepResult gpu = run_sampler(*samplers.gpu_ctx, *samplers.gpu, logits, rows, vocab);
  const StepResult cpu = run_sampler(*samplers.cpu_ctx, *samplers.cpu, logits, rows, vocab);
  int changed = 0;
  for (std::size_t r = 0; r < num_rows; ++r) {
    CAPTURE(r, r % 6);
    CHECK(gpu.tokens[r] == cpu.tokens[r]);
    REQUIRE(gpu.tokens[r] >= 0);
    REQUIRE(gpu.tokens[r] < vocab);
    CHECK(rows[r].is_allowed(gpu.tokens[r]));
    const float* raw = logits.data() + r * static_cast<std::size_t>(vocab);
    changed += gpu.tokens[r] != argmax(std::span<const float>(raw, static_cast<std::size_t>(vocab))) ? 1 : 0;
  }
  CHECK(gpu.tokens[all_forbidden] == 7);
  CHECK(gpu.tokens[nan_row] == 9);
  CHECK(changed >= 16);  // the preprocessing did something (4 of 6 kinds always move the argmax)
}

TEST_CASE("cuda ops::Sampler equals the CPU sampler on sampled rows with top_k (same seed and counter)",
          "[cuda][sampling][sampler]") {
  const int64_t vocab = 32003;
  const std::size_t num_rows = 48;
  SamplerPair samplers(static_cast<int32_t>(vocab), static_cast<int32_t>(num_rows));
  const auto logits = random_floats(num_rows * static_cast<std::size_t>(vocab), 70, -6.0f, 6.0f);
  std::mt19937 rng(71);
  std::vector<SampleRow> rows(num_rows);
  RowStorage storage(num_rows);
  for (std::size_t r = 0; r < num_rows; ++r) {
    SampleRow& row = rows[r];
    mixed_row(row, storage, r, logits.data() + r * static_cast<std::size_t>(vocab), vocab, rng);
    row.seed = 1000 + r;
    row.counter = 3 * r + 1;
    switch (r % 8) {
      case 0: row.temperature = 0.7f; row.top_k = 40; break;
      case 1: row.temperature = 1.0f; row.top_k = 5; break;
      case 2: row.temperature = 1.3f; row.top_k = 200; row.top_p = 0.9f; break;
      case 3: row.temperature = 0.5f; row.top_k = 20; row.min_p = 0.05f; break;
      case 4: row.temperature = 1.0f; row.top_k = 1; break;
      case 5: row.temperature = 2.0f; row.top_k = 1000; row.top_p = 0.8f; row.min_p = 0.01f; break;
      case 6: row.temperature = 1.0f; row.top_p = 0.9f; break;  // no top_k: candidate order differs
      default: row.temperature = 0.8f; break;                    // no top_k
    }
  }
  storage.bind(rows);
  const StepResult gpu = run_sampler(*samplers.gpu_ctx, *samplers.gpu, logits, rows, vocab);
  const StepResult cpu = run_sampler(*samplers.cpu_ctx, *samplers.cpu, logits, rows, vocab);
  for (std::size_t r = 0; r < num_rows; ++r) {
    CAPTURE(r, rows[r].temperature, rows[r].top_k, rows[r].top_p, rows[r].min_p);
    REQUIRE(gpu.tokens[r] >= 0);
    REQUIRE(gpu.tokens[r] < vocab);
    CHECK(rows[r].is_allowed(gpu.tokens[r]));
    if (rows[r].top_k > 0) CHECK(gpu.tokens[r] == cpu.tokens[r]);
  }
}

TEST_CASE("cuda ops::Sampler keeps slots across steps as the CPU sampler does", "[cuda][sampling][sampler]") {
  const int64_t vocab = 5003;
  const int num_steps = 6;
  SamplerPair samplers(static_cast<int32_t>(vocab), 8);
  // Four sequences: A greedy with frequency and presence penalties; B sampled (top_k) with a
  // repetition penalty; C greedy, penalties only from step 3 (its slot counted silently before); D
  // greedy with a repetition penalty and a mask, reset to a new history at step 4.
  const std::vector<TokenId> a_history = {10, 11, 12}, b_history = {13, 14, 15, 16}, d_history = {10, 12, 14},
                             d_history2 = {10, 12, 14, 16, 16};
  const std::vector<uint32_t> even_tokens = [&] {
    std::vector<uint32_t> mask(allowed_mask_words(static_cast<int32_t>(vocab)), 0x55555555u);
    return mask;
  }();
  std::vector<std::vector<int32_t>> gpu_tokens(4);
  for (int step = 0; step < num_steps; ++step) {
    CAPTURE(step);
    // Ten hot tokens (10..19) well above the rest: without penalties greedy would repeat one.
    auto logits = random_floats(4 * static_cast<std::size_t>(vocab), 80 + static_cast<uint32_t>(step), -1.0f, 1.0f);
    for (std::size_t s = 0; s < 4; ++s) {
      for (std::size_t t = 10; t < 20; ++t) logits[s * static_cast<std::size_t>(vocab) + t] += 4.0f;
    }
    std::vector<SampleRow> rows(4);
    rows[0] = {.presence_penalty = 0.5f, .frequency_penalty = 1.0f, .seq_slot = 6};
    if (step == 0) {
      rows[0].reset_slot = true;
      rows[0].history = a_history;
      rows[0].num_history_prompt = 2;
    }
    rows[1] = {.temperature = 0.8f, .top_k = 5, .repetition_penalty = 1.4f, .seed = 77,
               .counter = static_cast<uint64_t>(step), .seq_slot = 1};
    if (step == 0) {
      rows[1].reset_slot = true;
      rows[1].history = b_history;
      rows[1].num_history_prompt = 4;
    }
    rows[2] = {.seq_slot = 3};
    if (step >= 3) rows[2].frequency_penalty = 2.0f;
    rows[2].reset_slot = step == 0;  // an empty history
    rows[3] = {.repetition_penalty = 1.3f, .seq_slot = 0, .allowed = even_tokens};
    if (step == 0 || step == 4) {
      rows[3].reset_slot = true;
      rows[3].history = step == 0 ? d_history : d_history2;
      rows[3].num_history_prompt = 3;
    }
    const StepResult gpu = run_sampler(*samplers.gpu_ctx, *samplers.gpu, logits, rows, vocab);
    const StepResult cpu = run_sampler(*samplers.cpu_ctx, *samplers.cpu, logits, rows, vocab);
    for (std::size_t s = 0; s < 4; ++s) {
      CAPTURE(s);
      CHECK(gpu.tokens[s] == cpu.tokens[s]);
      gpu_tokens[s].push_back(gpu.tokens[s]);
    }
    CHECK(gpu.tokens[3] % 2 == 0);
  }
  // The penalties did their job through the slots: A never picks one token twice in a row here.
  const std::vector<int32_t>& a_tokens = gpu_tokens[0];
  for (std::size_t step = 1; step < a_tokens.size(); ++step) CHECK(a_tokens[step] != a_tokens[step - 1]);
}

TEST_CASE("cuda ops::Sampler reports logprobs and logits of the raw row", "[cuda][sampling][sampler]") {
  const int64_t vocab = 32003;
  const std::size_t num_rows = 6;
  const int32_t top_width = 5, num_logits_rows = 3;
  SamplerPair samplers(static_cast<int32_t>(vocab), 4);
  const auto logits = random_floats(num_rows * static_cast<std::size_t>(vocab), 90, -6.0f, 6.0f);
  std::mt19937 rng(91);
  std::vector<SampleRow> rows(num_rows);
  RowStorage storage(num_rows);
  mixed_row(rows[0], storage, 0, logits.data(), vocab, rng);  // slot 0, repetition penalty
  rows[0].num_top_logprobs = 5;
  rows[0].logits_row = 2;
  storage.allowed[1] = random_mask(vocab, rng);
  rows[1] = {.temperature = 1.0f, .top_k = 20, .seed = 5, .counter = 9, .num_top_logprobs = 0};
  const TokenId raw_best_2 = argmax(std::span<const float>(logits.data() + 2 * vocab, static_cast<std::size_t>(vocab)));
  storage.bias_ids[2] = {raw_best_2};
  storage.bias_values[2] = {-INFINITY};
  rows[2].logits_row = 0;
  rows[4] = {.temperature = 1.0f, .top_k = 3, .seed = 6, .counter = 1, .num_top_logprobs = 3, .logits_row = 1};
  const TokenId raw_best_5 = argmax(std::span<const float>(logits.data() + 5 * vocab, static_cast<std::size_t>(vocab)));
  storage.bias_ids[5] = {raw_best_5};
  storage.bias_values[5] = {-INFINITY};
  rows[5].num_top_logprobs = 2;
  storage.bind(rows);

  const StepResult gpu = run_sampler(*samplers.gpu_ctx, *samplers.gpu, logits, rows, vocab, top_width, num_logits_rows);
  const StepResult cpu = run_sampler(*samplers.cpu_ctx, *samplers.cpu, logits, rows, vocab, top_width, num_logits_rows);
  for (std::size_t r = 0; r < num_rows; ++r) {
    CAPTURE(r);
    CHECK(gpu.tokens[r] == cpu.tokens[r]);
    const int32_t n = rows[r].num_top_logprobs;
    if (n < 0) continue;
    CHECK(gpu.logprobs[r] == cpu.logprobs[r]);
    for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) {
      CAPTURE(k);
      CHECK(gpu.top_ids[r * top_width + k] == cpu.top_ids[r * top_width + k]);
      CHECK(gpu.top_logprobs[r * top_width + k] == cpu.top_logprobs[r * top_width + k]);
    }
  }
  // Raw rows, bit for bit: row 2 -> logits row 0, row 4 -> 1, row 0 -> 2.
  const std::size_t width = static_cast<std::size_t>(vocab);
  for (const auto& [row, logits_row] : {std::pair<std::size_t, std::size_t>{2, 0}, {4, 1}, {0, 2}}) {
    CAPTURE(row, logits_row);
    const std::vector<float> want(logits.begin() + static_cast<std::ptrdiff_t>(row * width),
                                  logits.begin() + static_cast<std::ptrdiff_t>((row + 1) * width));
    const std::vector<float> got(gpu.rows.begin() + static_cast<std::ptrdiff_t>(logits_row * width),
                                 gpu.rows.begin() + static_cast<std::ptrdiff_t>((logits_row + 1) * width));
    CHECK(test::same_bits(got, want));
  }
  CHECK(gpu.rows == cpu.rows);
  // Row 5's pick is not the raw argmax (biased away), yet its top logprob is: logprobs are raw.
  CHECK(gpu.tokens[5] != raw_best_5);
  CHECK(gpu.top_ids[5 * top_width] == raw_best_5);
  CHECK(gpu.logprobs[5] < gpu.top_logprobs[5 * top_width]);
}
