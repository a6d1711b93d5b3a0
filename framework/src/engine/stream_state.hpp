#pragma once
// The shared state behind RequestStream and the AsyncEngine's inbox (private to the engine).

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

#include "llaisys/engine/request_stream.hpp"

namespace llaisys::engine_detail {

struct EngineInbox;

// One request's queue of outputs: the engine thread pushes, the consumer pops.
struct StreamState {
  StreamState(RequestId request_id, OutputNotifier on_output, std::weak_ptr<EngineInbox> engine_inbox)
      : id(request_id), notifier(std::move(on_output)), inbox(std::move(engine_inbox)) {}

  // Engine thread: queues `output` and calls the notifier (outside the lock).
  void push(RequestOutput output);

  const RequestId id;
  const OutputNotifier notifier;
  const std::weak_ptr<EngineInbox> inbox;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<RequestOutput> queue;
  bool finished = false;  // the last output was pushed
};

struct Submission {
  RequestId id = -1;
  std::variant<GenerateRequest, EmbedRequest> request;
  std::shared_ptr<StreamState> stream;
  RequestTimes::TimePoint submitted;
};

// What other threads hand the engine thread; `wake` is signalled on every change.
struct EngineInbox {
  void abort(RequestId id) {
    {
      std::lock_guard lock(mutex);
      aborts.push_back(id);
    }
    wake.notify_one();
  }

  std::mutex mutex;
  std::condition_variable wake;
  std::vector<Submission> submissions;
  std::vector<RequestId> aborts;
  bool stopping = false;
  bool abort_all = false;
};

}  // namespace llaisys::engine_detail
