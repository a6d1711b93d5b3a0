#pragma once
// The offline batch: every request is submitted to the engine at once, the engine is stepped until
// all have finished, and one JSON line per input line is written in input order, each as soon as
// it and every line before it are done.
//
// Output line: {"id", "prompt_ids", "output_ids", "text" (with a tokenizer), "reasoning" (a reasoning
// model's chat prompt: its think block, null when the answer had none; "text" is then the rest),
// "finish_reason",
// "usage": {"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens"}} plus
// "finish_detail" when there is one, "logprobs" and "top_logits" when asked for, and "choices" (one object per
// choice with index, output_ids, text, finish_reason) when n > 1. A bad line gets
// {"error": {"message", "type", "line"}}.

#include <cstdio>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/engine/llm_engine.hpp"
#include "progress.hpp"
#include "reasoning.hpp"

namespace llaisys::offline {

struct BatchJob {
  boost::json::value id;                 // echoed back (null when the line has none)
  std::size_t line_number = 0;
  Result<GenerateRequest> request = Status(ErrorCode::internal, "unset");
  std::optional<app::ReasoningOptions> reasoning;  // a reasoning model's chat prompt
};

BatchTotals run_batch(LLMEngine& engine, std::vector<BatchJob>& jobs, std::FILE* out, ProgressReporter& progress);

}  // namespace llaisys::offline
