// Engine outputs (RequestOutput deltas) as C outputs: the deltas popped together are merged per
// choice, so a slow consumer gets one output with everything new rather than one per engine step.

#include <algorithm>
#include <cmath>

#include "capi_internal.hpp"

namespace llaisys::capi {
namespace {

struct ChoiceStorage {
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  int32_t finish_reason = LLAISYS_FINISH_NONE;
  std::string finish_detail;
};

// The C struct first (as a base: llaisys_output_free gets the whole object back with a
// static_cast), then what its pointers point into.
struct OutputStorage : llaisys_output {
  std::vector<ChoiceStorage> storage;
  std::vector<llaisys_choice> views;
  std::vector<int32_t> prompt_ids;
};

ChoiceStorage& choice_of(std::vector<ChoiceStorage>& choices, int32_t index) {
  for (ChoiceStorage& choice : choices) {
    if (choice.index == index) return choice;
  }
  ChoiceStorage& added = choices.emplace_back();
  added.index = index;
  return added;
}

void append(ChoiceStorage& choice, ChoiceDelta& delta, int32_t num_top) {
  choice.text += delta.text;
  choice.token_ids.insert(choice.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
  if (num_top >= 0) {
    // One logprob entry per new token when they were asked for; a token without one (not expected)
    // reads as NaN rather than shifting the rest.
    for (std::size_t t = 0; t < delta.token_ids.size(); ++t) {
      const TokenLogprob* lp = t < delta.logprobs.size() ? &delta.logprobs[t] : nullptr;
      choice.logprobs.push_back(lp != nullptr ? lp->logprob : std::nanf(""));
      for (int32_t k = 0; k < num_top; ++k) {
        const bool has = lp != nullptr && static_cast<std::size_t>(k) < lp->top.size();
        choice.top_ids.push_back(has ? lp->top[static_cast<std::size_t>(k)].first : -1);
        choice.top_logprobs.push_back(has ? lp->top[static_cast<std::size_t>(k)].second : -INFINITY);
      }
    }
  }
  if (delta.finish_reason) {
    choice.finish_reason = 1 + static_cast<int32_t>(*delta.finish_reason);
    choice.finish_detail = std::move(delta.finish_detail);
  }
}

}  // namespace

llaisys_output* merge_outputs(std::vector<RequestOutput>& outputs, RequestRecord& record) {
  auto result = std::make_unique<OutputStorage>();
  const int32_t num_top = record.num_top_logprobs;
  llaisys_output& c = *result;
  c = llaisys_output{.struct_size = sizeof(llaisys_output), .request_id = outputs.front().id};
  for (RequestOutput& output : outputs) {
    for (ChoiceDelta& delta : output.choices) append(choice_of(result->storage, delta.index), delta, num_top);
    c.prompt_tokens = output.usage.prompt_tokens;
    c.completion_tokens = output.usage.completion_tokens;
    c.cached_tokens = output.usage.cached_tokens;
    c.finished = c.finished || output.finished;
  }
  std::sort(result->storage.begin(), result->storage.end(),
            [](const ChoiceStorage& a, const ChoiceStorage& b) { return a.index < b.index; });
  result->views.reserve(result->storage.size());
  for (const ChoiceStorage& s : result->storage) {
    result->views.push_back({.index = s.index,
                             .text = s.text.c_str(),
                             .text_len = s.text.size(),
                             .token_ids = s.token_ids.data(),
                             .num_tokens = static_cast<int32_t>(s.token_ids.size()),
                             .logprobs = num_top >= 0 ? s.logprobs.data() : nullptr,
                             .num_top_logprobs = std::max(num_top, 0),
                             .top_ids = num_top > 0 ? s.top_ids.data() : nullptr,
                             .top_logprobs = num_top > 0 ? s.top_logprobs.data() : nullptr,
                             .finish_reason = s.finish_reason,
                             .finish_detail = s.finish_detail.c_str()});
  }
  c.num_choices = static_cast<int32_t>(result->views.size());
  c.choices = result->views.empty() ? nullptr : result->views.data();
  if (!record.prompt_delivered) {
    record.prompt_delivered = true;
    result->prompt_ids = std::move(record.prompt_ids);
    c.prompt_token_ids = result->prompt_ids.data();
    c.num_prompt_token_ids = static_cast<int32_t>(result->prompt_ids.size());
  }
  record.finished = record.finished || c.finished != 0;
  return result.release();
}

}  // namespace llaisys::capi

extern "C" void llaisys_output_free(llaisys_output* output) {
  delete static_cast<llaisys::capi::OutputStorage*>(output);
}
