#include "batch_runner.hpp"

#include <unordered_map>

#include "jsonl.hpp"

namespace llaisys::offline {
namespace json = boost::json;
namespace {

struct ChoiceResult {
  std::vector<TokenId> output_ids;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::vector<std::vector<std::pair<TokenId, float>>> top_logits;
  FinishReason finish_reason = FinishReason::error;
  std::string finish_detail;
};

struct JobResult {
  std::vector<ChoiceResult> choices;
  Usage usage;
  bool done = false;
  std::optional<Status> error;  // the line never reached the engine
};

json::array logprobs_json(const std::vector<TokenLogprob>& logprobs) {
  json::array entries;
  for (const TokenLogprob& lp : logprobs) {
    json::array top;
    for (const auto& [token, value] : lp.top) top.push_back(json::array{token, value});
    entries.push_back(json::object{{"token", lp.token}, {"logprob", lp.logprob}, {"top", std::move(top)}});
  }
  return entries;
}

json::object choice_json(const ChoiceResult& choice, bool with_text,
                         const std::optional<app::ReasoningOptions>& reasoning) {
  json::object object;
  object["output_ids"] = json::value_from(choice.output_ids);
  if (with_text && reasoning) {
    app::ReasoningParser parser(*reasoning);
    app::ReasoningSplit split = parser.feed(choice.text, {}, /*last=*/true);
    object["text"] = std::move(split.content);
    object["reasoning"] = parser.saw_reasoning() ? json::value(split.reasoning) : json::value(nullptr);
  } else if (with_text) {
    object["text"] = choice.text;
  }
  object["finish_reason"] = to_string(choice.finish_reason);
  if (!choice.finish_detail.empty()) object["finish_detail"] = choice.finish_detail;
  if (!choice.logprobs.empty()) object["logprobs"] = logprobs_json(choice.logprobs);
  if (!choice.top_logits.empty()) {
    json::array steps;
    for (const auto& step : choice.top_logits) {
      json::array top;
      for (const auto& [token, logit] : step) top.push_back(json::array{token, logit});
      steps.push_back(std::move(top));
    }
    object["top_logits"] = std::move(steps);
  }
  return object;
}

json::value result_json(const BatchJob& job, const JobResult& result, bool with_text) {
  if (result.error) {
    json::object error = app::error_object(*result.error, job.line_number);
    if (!job.id.is_null()) error["id"] = job.id;  // so a result can be matched by its id, failed or not
    return error;
  }
  json::object object;
  object["id"] = job.id;
  object["prompt_ids"] = json::value_from(job.request->prompt_ids);
  const json::object first = choice_json(result.choices.front(), with_text, job.reasoning);
  for (const auto& [key, value] : first) object[key] = value;
  if (result.choices.size() > 1) {
    json::array choices;
    for (std::size_t c = 0; c < result.choices.size(); ++c) {
      json::object choice = choice_json(result.choices[c], with_text, job.reasoning);
      choice["index"] = c;
      choices.push_back(std::move(choice));
    }
    object["choices"] = std::move(choices);
  }
  object["usage"] = json::object{{"prompt_tokens", result.usage.prompt_tokens},
                                 {"completion_tokens", result.usage.completion_tokens},
                                 {"total_tokens", result.usage.total_tokens()},
                                 {"cached_tokens", result.usage.cached_tokens}};
  return object;
}

}  // namespace

BatchTotals run_batch(LLMEngine& engine, std::vector<BatchJob>& jobs, std::FILE* out, ProgressReporter& progress) {
  BatchTotals totals{.num_requests = static_cast<int64_t>(jobs.size())};
  std::vector<JobResult> results(jobs.size());
  std::unordered_map<RequestId, std::size_t> job_of;
  int64_t done = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    Result<RequestId> id = jobs[j].request.ok() ? engine.submit(*jobs[j].request) : jobs[j].request.status();
    if (id.ok()) {
      job_of[*id] = j;
      results[j].choices.resize(static_cast<std::size_t>(jobs[j].request->n));
    } else {
      results[j].error = id.status();
      results[j].done = true;
      ++done;
    }
  }
  const bool with_text = engine.tokenizer() != nullptr;
  std::size_t next_to_write = 0;
  auto write_ready = [&] {
    for (; next_to_write < jobs.size() && results[next_to_write].done; ++next_to_write) {
      app::write_json_line(out, result_json(jobs[next_to_write], results[next_to_write], with_text));
    }
  };
  write_ready();
  while (engine.has_unfinished()) {
    for (RequestOutput& output : engine.step()) {
      const std::size_t j = job_of.at(output.id);
      JobResult& result = results[j];
      for (ChoiceDelta& delta : output.choices) {
        ChoiceResult& choice = result.choices[static_cast<std::size_t>(delta.index)];
        choice.output_ids.insert(choice.output_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
        choice.text += delta.text;
        choice.logprobs.insert(choice.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
        for (auto& step : delta.top_logits) choice.top_logits.push_back(std::move(step));
        if (delta.finish_reason) {
          choice.finish_reason = *delta.finish_reason;
          choice.finish_detail = std::move(delta.finish_detail);
        }
      }
      result.usage = output.usage;
      if (output.finished) {
        result.done = true;
        ++done;
      }
    }
    write_ready();
    progress.update(done, engine.stats().num_generated_tokens);
  }
  write_ready();
  progress.finish(done, engine.stats().num_generated_tokens);
  for (const JobResult& result : results) {
    if (result.error) {
      ++totals.num_failed;
      continue;
    }
    totals.prompt_tokens += result.usage.prompt_tokens;
    totals.cached_prompt_tokens += result.usage.cached_tokens;
    totals.generated_tokens += result.usage.completion_tokens;
    bool failed = false;
    for (const ChoiceResult& choice : result.choices) {
      ++totals.finish_reasons[static_cast<std::size_t>(choice.finish_reason)];
      failed |= choice.finish_reason == FinishReason::error || choice.finish_reason == FinishReason::ignored;
    }
    totals.num_failed += failed;
  }
  return totals;
}

}  // namespace llaisys::offline
