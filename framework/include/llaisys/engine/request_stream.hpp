#pragma once
// RequestStream: the consumer's end of one request submitted to an AsyncEngine.
//
// Contract:
//  - The engine thread pushes RequestOutputs (deltas, see request.hpp); the consumer pops them in
//    order, from any one thread at a time. The last one has finished = true; nothing follows it.
//  - try_pop() never blocks (for event loops such as an Asio strand); pop() blocks until an output
//    arrives or the stream has ended (then std::nullopt); pop_for() blocks at most `timeout`.
//  - The notifier given at submit() is called on the engine thread after each push (including the
//    last). It must be quick and must not block: post a handler to your executor and call
//    try_pop() from there. It must not call AsyncEngine::shutdown(), and must keep alive whatever it
//    touches (capture a shared_ptr or weak_ptr, not a raw pointer to a connection that may be gone).
//  - abort() asks the engine to stop the request; it takes effect before the next engine step, so
//    its KV blocks are freed within one step, and its final output (finish_reason abort) follows.
//  - Destroying (or move-assigning over) a stream whose request has not finished aborts it: a
//    dropped handle is a cancelled request.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "llaisys/engine/request.hpp"

namespace llaisys {

namespace engine_detail {
struct StreamState;
}

using OutputNotifier = std::function<void()>;

class RequestStream {
 public:
  RequestStream() = default;
  RequestStream(RequestStream&& other) noexcept = default;
  RequestStream& operator=(RequestStream&& other) noexcept;
  RequestStream(const RequestStream&) = delete;
  RequestStream& operator=(const RequestStream&) = delete;
  ~RequestStream();

  bool valid() const { return state_ != nullptr; }
  RequestId id() const;
  std::optional<RequestOutput> try_pop();
  std::optional<RequestOutput> pop();
  std::optional<RequestOutput> pop_for(std::chrono::milliseconds timeout);
  // The last output has been pushed (it may still be waiting to be popped).
  bool finished() const;
  void abort();

 private:
  friend class AsyncEngine;
  explicit RequestStream(std::shared_ptr<engine_detail::StreamState> state) : state_(std::move(state)) {}
  std::shared_ptr<engine_detail::StreamState> state_;
};

}  // namespace llaisys
