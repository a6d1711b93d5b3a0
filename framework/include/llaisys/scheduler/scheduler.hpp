#pragma once
// The Scheduler concept: decides what each engine step computes; the engine applies the decision.
//
// Contract (vLLM v1 / nano-vllm shape):
//  - add(request) queues a request (its sequences start waiting) and returns their ids, one per
//    choice. A request that can never run (prompt longer than the context or the KV cache) is
//    accepted and finishes as finished_ignored at the next schedule(), with the reason.
//  - schedule() returns a plain value, S::Output, describing the step: which sequences run, how
//    many tokens of each (with their ids, positions and block tables), the blocks to copy before the
//    pass, who was preempted, who finished without running. It reserves the step's KV slots but
//    does not run the model.
//  - update(result) records the step: the chunks scheduled are now computed (their full blocks join
//    the prefix cache), sampled tokens are appended, stop decisions finish sequences (their KV is
//    released). fail_step() instead undoes the step's KV reservations and admissions; nothing
//    computed in a failed pass reaches the cache. Nothing else mutates scheduler or KV state,
//    except finish_request() (abort, errors), which frees the request's KV immediately.
//  - has_unfinished() is false once every added request has finished.

#include <concepts>
#include <cstddef>
#include <string>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"
#include "llaisys/scheduler/sequence.hpp"

namespace llaisys {

// A sequence that finished outside update(): in schedule() (ignored, capped) or finish_request().
struct FinishedSeq {
  SeqId seq = -1;
  RequestId request_id = -1;
  int32_t choice = 0;
  SeqStatus status = SeqStatus::finished_aborted;
  std::string detail;
};

template <class S>
concept Scheduler = requires(S& scheduler, const S& const_scheduler, typename S::Request request,
                             RequestId id, SeqStatus status, std::string detail,
                             const typename S::StepResult& result) {
  typename S::Output;
  { scheduler.add(std::move(request)) } -> std::same_as<Result<std::vector<SeqId>>>;
  { scheduler.schedule() } -> std::same_as<typename S::Output>;
  { scheduler.update(result) };
  { scheduler.fail_step() };
  { scheduler.finish_request(id, status, detail) } -> std::same_as<std::vector<FinishedSeq>>;
  { const_scheduler.has_unfinished() } -> std::same_as<bool>;
  { const_scheduler.num_waiting() } -> std::convertible_to<std::size_t>;
  { const_scheduler.num_running() } -> std::convertible_to<std::size_t>;
};

}  // namespace llaisys
