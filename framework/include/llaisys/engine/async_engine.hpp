#pragma once
// AsyncEngine: an LLMEngine on its own thread, for servers and interactive front ends.
//
// Contract:
//  - submit() is thread-safe. It validates the request on the caller's thread (invalid_argument,
//    with a message fit for an HTTP 400), refuses when max_in_flight requests are unfinished
//    (resource_exhausted: answer 429/503) or when shutting down (cancelled), and otherwise returns
//    the request's stream at once; the engine thread picks the request up before its next step.
//  - abort(id) is thread-safe and idempotent; see RequestStream::abort.
//  - Every accepted request's stream ends with exactly one final output, whatever happens: normal
//    finish, abort, a failed model pass (finish_reason error), shutdown.
//  - shutdown(drain) stops accepting and returns when everything in flight has finished;
//    shutdown(abort) aborts everything in flight first. The destructor is shutdown(abort).
//    Neither may be called from an OutputNotifier (they wait for the engine thread).
//  - stats() is a snapshot taken after the latest step (thread-safe), for metrics endpoints.

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/engine/request_stream.hpp"

namespace llaisys {

namespace engine_detail {
struct EngineInbox;
}

struct AsyncEngineConfig {
  int32_t max_in_flight = 4096;  // unfinished requests (queued, running, undelivered)
};

enum class ShutdownMode : uint8_t { drain, abort };

class AsyncEngine {
 public:
  static Result<std::unique_ptr<AsyncEngine>> start(std::unique_ptr<LLMEngine> engine,
                                                    AsyncEngineConfig config = {});
  ~AsyncEngine();
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  Result<RequestStream> submit(GenerateRequest request, OutputNotifier notifier = {});
  Result<RequestStream> submit(EmbedRequest request, OutputNotifier notifier = {});
  void abort(RequestId id);
  void shutdown(ShutdownMode mode);

  EngineStats stats() const;
  int32_t num_in_flight() const { return in_flight_.load(); }
  // Immutable facts about the model, safe from any thread.
  const ModelInfo& model_info() const { return engine_->model_info(); }
  int32_t max_sequence_tokens() const { return engine_->max_sequence_tokens(); }
  const std::shared_ptr<const text::Tokenizer>& tokenizer() const { return engine_->tokenizer(); }

 private:
  AsyncEngine(std::unique_ptr<LLMEngine> engine, AsyncEngineConfig config);
  template <class R>
  Result<RequestStream> enqueue(R request, OutputNotifier notifier);
  void run();
  void deliver(std::vector<RequestOutput> outputs);

  std::unique_ptr<LLMEngine> engine_;  // the engine thread's, apart from the immutable getters
  AsyncEngineConfig config_;
  std::shared_ptr<engine_detail::EngineInbox> inbox_;
  std::unordered_map<RequestId, std::shared_ptr<engine_detail::StreamState>> streams_;  // engine thread
  std::atomic<RequestId> next_id_{1};
  std::atomic<int32_t> in_flight_{0};
  mutable std::mutex stats_mutex_;
  EngineStats stats_;
  std::mutex shutdown_mutex_;
  std::thread thread_;
};

}  // namespace llaisys
