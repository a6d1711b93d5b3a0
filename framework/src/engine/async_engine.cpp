#include "llaisys/engine/async_engine.hpp"

#include "llaisys/core/log.hpp"
#include "stream_state.hpp"

namespace llaisys {

using engine_detail::EngineInbox;
using engine_detail::StreamState;
using engine_detail::Submission;

namespace {

// The last output of a request the engine could not take or lost.
RequestOutput error_output(RequestId id, const std::string& message) {
  RequestOutput output{.id = id, .finished = true};
  output.choices.push_back({.finish_reason = FinishReason::error, .finish_detail = message});
  return output;
}

}  // namespace

Result<std::unique_ptr<AsyncEngine>> AsyncEngine::start(std::unique_ptr<LLMEngine> engine,
                                                        AsyncEngineConfig config) {
  if (!engine) return Status(ErrorCode::invalid_argument, "AsyncEngine needs an engine");
  if (engine->has_unfinished()) {
    return Status(ErrorCode::invalid_argument, "AsyncEngine needs an engine with no requests in it");
  }
  std::unique_ptr<AsyncEngine> async(new AsyncEngine(std::move(engine), config));
  async->thread_ = std::thread([raw = async.get()] { raw->run(); });
  return async;
}

AsyncEngine::AsyncEngine(std::unique_ptr<LLMEngine> engine, AsyncEngineConfig config)
    : engine_(std::move(engine)), config_(config), inbox_(std::make_shared<EngineInbox>()),
      stats_(engine_->stats()) {}

AsyncEngine::~AsyncEngine() { shutdown(ShutdownMode::abort); }

Result<RequestStream> AsyncEngine::submit(GenerateRequest request, OutputNotifier notifier) {
  LLAISYS_RETURN_IF_ERROR(engine_->validate(request));
  return enqueue(std::move(request), std::move(notifier));
}

Result<RequestStream> AsyncEngine::submit(EmbedRequest request, OutputNotifier notifier) {
  LLAISYS_RETURN_IF_ERROR(engine_->validate(request));
  return enqueue(std::move(request), std::move(notifier));
}

template <class R>
Result<RequestStream> AsyncEngine::enqueue(R request, OutputNotifier notifier) {
  const RequestId id = next_id_++;
  auto stream = std::make_shared<StreamState>(id, std::move(notifier), inbox_);
  {
    std::lock_guard lock(inbox_->mutex);
    if (inbox_->stopping) return Status(ErrorCode::cancelled, "the engine is shutting down");
    if (in_flight_.load() >= config_.max_in_flight) {
      return make_error(ErrorCode::resource_exhausted, "{} requests are in flight, the limit", config_.max_in_flight);
    }
    ++in_flight_;
    inbox_->submissions.push_back(
        {.id = id, .request = std::move(request), .stream = stream, .submitted = std::chrono::steady_clock::now()});
  }
  inbox_->wake.notify_one();
  return RequestStream(std::move(stream));
}

void AsyncEngine::abort(RequestId id) { inbox_->abort(id); }

void AsyncEngine::shutdown(ShutdownMode mode) {
  std::lock_guard serial(shutdown_mutex_);
  {
    std::lock_guard lock(inbox_->mutex);
    inbox_->stopping = true;
    inbox_->abort_all = inbox_->abort_all || mode == ShutdownMode::abort;
  }
  inbox_->wake.notify_one();
  if (thread_.joinable()) thread_.join();
}

EngineStats AsyncEngine::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void AsyncEngine::deliver(std::vector<RequestOutput> outputs) {
  for (RequestOutput& output : outputs) {
    auto it = streams_.find(output.id);
    if (it == streams_.end()) continue;
    const bool last = output.finished;
    std::shared_ptr<StreamState> stream = it->second;
    if (last) {
      streams_.erase(it);
      --in_flight_;
    }
    stream->push(std::move(output));
  }
}

void AsyncEngine::run() {
  while (true) {
    std::vector<Submission> submissions;
    std::vector<RequestId> aborts;
    bool stopping = false, abort_all = false;
    {
      std::unique_lock lock(inbox_->mutex);
      inbox_->wake.wait(lock, [&] {
        return !inbox_->submissions.empty() || !inbox_->aborts.empty() || inbox_->stopping ||
               engine_->has_unfinished();
      });
      submissions.swap(inbox_->submissions);
      aborts.swap(inbox_->aborts);
      stopping = inbox_->stopping;
      abort_all = inbox_->abort_all;
    }
    for (Submission& s : submissions) {
      Status added = std::visit(
          [&](auto& request) {
            if constexpr (std::is_same_v<std::decay_t<decltype(request)>, GenerateRequest>) {
              return engine_->add_request(s.id, std::move(request), s.submitted);
            } else {
              return engine_->add_embedding(s.id, std::move(request), s.submitted);
            }
          },
          s.request);
      if (added.ok()) {
        streams_.emplace(s.id, s.stream);
      } else {
        --in_flight_;
        s.stream->push(error_output(s.id, added.message()));
      }
    }
    for (RequestId id : aborts) engine_->abort(id);
    if (abort_all) {
      for (const auto& [id, stream] : streams_) engine_->abort(id);
    }
    if (engine_->has_unfinished()) {
      try {
        deliver(engine_->step());
      } catch (const std::exception& e) {
        // Not expected (the engine reports errors as values); keep serving, fail what was in flight.
        log::error("engine: step failed: {}; failing the requests in flight", e.what());
        engine_->fail_all(std::string("internal error: ") + e.what());
        try {
          deliver(engine_->step());
        } catch (...) {
          for (auto& [id, stream] : streams_) stream->push(error_output(id, "internal error"));
          in_flight_ -= static_cast<int32_t>(streams_.size());
          streams_.clear();
        }
      }
    }
    {
      std::lock_guard lock(stats_mutex_);
      stats_ = engine_->stats();
    }
    if (stopping && !engine_->has_unfinished()) {
      std::lock_guard lock(inbox_->mutex);
      if (inbox_->submissions.empty()) break;
    }
  }
}

}  // namespace llaisys
