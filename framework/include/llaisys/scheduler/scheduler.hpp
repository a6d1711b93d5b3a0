#pragma once
// The Scheduler concept: decides what each engine step computes; the engine applies the decision.
//
// Contract (vLLM v1 / nano-vllm shape):
//  - add(request) queues a request (state waiting); abort(id) finishes it as aborted, wherever it is.
//  - schedule() returns a plain value, S::Output, describing the step: which sequences run, how many
//    tokens of each, the blocks to allocate / copy / free, who was preempted. It does not run the model.
//  - update(result) records the step's sampled tokens and finishes sequences that stopped. Nothing
//    else mutates scheduler or KV state.
//  - has_unfinished() is false once every added request has finished.

#include <concepts>
#include <cstddef>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

template <class S>
concept Scheduler = requires(S& scheduler, const S& const_scheduler, typename S::Request request,
                             RequestId id, const typename S::StepResult& result) {
  typename S::Output;
  { scheduler.add(std::move(request)) } -> std::same_as<Status>;
  { scheduler.abort(id) } -> std::same_as<bool>;
  { scheduler.schedule() } -> std::same_as<typename S::Output>;
  { scheduler.update(result) };
  { const_scheduler.has_unfinished() } -> std::same_as<bool>;
  { const_scheduler.num_waiting() } -> std::convertible_to<std::size_t>;
  { const_scheduler.num_running() } -> std::convertible_to<std::size_t>;
};

}  // namespace llaisys
