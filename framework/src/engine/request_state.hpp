#pragma once
// The engine's per-request state (internal to the engine): what OutputProcessor tracks for stop
// rules, text and usage, and what SamplingRows reads to tell the model how to sample.

#include <optional>
#include <vector>

#include "llaisys/engine/request.hpp"
#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/text/incremental_detokenizer.hpp"

namespace llaisys::engine_detail {

struct Choice {
  SeqId seq = -1;
  uint64_t seed = 0;                 // the draw at position p is counter_uniform01(seed, p)
  int32_t slot = -1;                 // the model's sequence slot (penalties), -1: none held
  std::vector<TokenId> output_ids;   // kept when penalties need the history for a slot reset
  std::optional<text::IncrementalDetokenizer> detokenizer;
  std::optional<grammar::GrammarMatcher> matcher;  // structured output: where the choice is in its grammar
  ChoiceDelta delta;                 // news since the last output
  bool has_news = false;
  bool finished = false;
  int32_t num_output_tokens = 0;
};

// The running sum (mean) or last row of an embedding request's hidden states.
struct PoolState {
  Pooling pooling = Pooling::last;
  bool normalize = true;
  std::vector<double> pooled;
  int32_t num_pooled = 0;
  std::vector<float> embedding;      // the result, once the prompt is complete
};

struct RequestState {
  GenerateRequest request;           // prompt_ids kept only when penalties or prompt logprobs need them
  bool has_penalties = false;        // then choices keep their output ids for slot resets
  bool is_embedding = false;
  PoolState pool;
  std::vector<TokenId> bias_ids;     // request.sampling.logit_bias as the model takes it
  std::vector<float> bias_values;
  std::vector<Choice> choices;
  Usage usage;
  RequestTimes times;
  bool cached_tokens_known = false;
  int32_t num_unfinished = 0;
  // Prompt logprobs: positions 1..num_prompt_logprobs are scored (a recompute after a preemption
  // skips them); delivered together once the prompt is complete.
  std::vector<TokenLogprob> prompt_logprobs;
  int32_t num_prompt_logprobs = 0;
  bool prompt_logprobs_sent = false;
};

}  // namespace llaisys::engine_detail
