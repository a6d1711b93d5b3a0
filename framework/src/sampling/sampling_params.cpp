#include <cmath>

#include "llaisys/sampling/sampler.hpp"
#include "llaisys/sampling/sampling_params.hpp"

namespace llaisys {

Status SamplingParams::validate(int32_t vocab_size) const {
  auto bad = [](std::string_view name, std::string_view range, double value) {
    return make_error(ErrorCode::invalid_argument, "{} must be {}, got {}", name, range, value);
  };
  if (!std::isfinite(temperature) || temperature < 0.0f || temperature > 2.0f) {
    return bad("temperature", "in [0, 2]", temperature);
  }
  if (top_k < 0) return bad("top_k", ">= 0 (0 disables it)", top_k);
  if (!std::isfinite(top_p) || top_p <= 0.0f || top_p > 1.0f) return bad("top_p", "in (0, 1]", top_p);
  if (!std::isfinite(min_p) || min_p < 0.0f || min_p > 1.0f) return bad("min_p", "in [0, 1]", min_p);
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0.0f) {
    return bad("repetition_penalty", "> 0", repetition_penalty);
  }
  if (!std::isfinite(presence_penalty) || presence_penalty < -2.0f || presence_penalty > 2.0f) {
    return bad("presence_penalty", "in [-2, 2]", presence_penalty);
  }
  if (!std::isfinite(frequency_penalty) || frequency_penalty < -2.0f || frequency_penalty > 2.0f) {
    return bad("frequency_penalty", "in [-2, 2]", frequency_penalty);
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return make_error(ErrorCode::invalid_argument, "logit_bias: token {} outside the vocabulary of {}",
                        token, vocab_size);
    }
    if (!std::isfinite(bias) || bias < -100.0f || bias > 100.0f) {
      return bad("logit_bias values", "in [-100, 100]", bias);
    }
  }
  if (num_logprobs > 20) return bad("top_logprobs", "in [0, 20]", num_logprobs);
  if (num_top_logits < 0 || num_top_logits > 1000) return bad("top_logits", "in [0, 1000]", num_top_logits);
  return Status();
}

TokenId argmax(std::span<const float> logits) {
  if (logits.empty()) return -1;
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<TokenId>(best);
}

}  // namespace llaisys
