#include "llaisys/engine/request_stream.hpp"

#include "llaisys/core/log.hpp"
#include "stream_state.hpp"

namespace llaisys {
namespace engine_detail {

void StreamState::push(RequestOutput output) {
  {
    std::lock_guard lock(mutex);
    finished = finished || output.finished;
    queue.push_back(std::move(output));
  }
  ready.notify_all();
  if (notifier) {
    try {
      notifier();
    } catch (const std::exception& e) {
      log::error("engine: an output notifier threw: {}", e.what());
    } catch (...) {
      log::error("engine: an output notifier threw");
    }
  }
}

}  // namespace engine_detail

RequestStream& RequestStream::operator=(RequestStream&& other) noexcept {
  if (this != &other) {
    if (state_ && !finished()) abort();
    state_ = std::move(other.state_);
  }
  return *this;
}

RequestStream::~RequestStream() {
  if (state_ && !finished()) abort();
}

RequestId RequestStream::id() const { return state_ ? state_->id : -1; }

std::optional<RequestOutput> RequestStream::try_pop() {
  if (!state_) return std::nullopt;
  std::lock_guard lock(state_->mutex);
  if (state_->queue.empty()) return std::nullopt;
  RequestOutput output = std::move(state_->queue.front());
  state_->queue.pop_front();
  return output;
}

std::optional<RequestOutput> RequestStream::pop() {
  if (!state_) return std::nullopt;
  std::unique_lock lock(state_->mutex);
  state_->ready.wait(lock, [&] { return !state_->queue.empty() || state_->finished; });
  if (state_->queue.empty()) return std::nullopt;
  RequestOutput output = std::move(state_->queue.front());
  state_->queue.pop_front();
  return output;
}

std::optional<RequestOutput> RequestStream::pop_for(std::chrono::milliseconds timeout) {
  if (!state_) return std::nullopt;
  std::unique_lock lock(state_->mutex);
  state_->ready.wait_for(lock, timeout, [&] { return !state_->queue.empty() || state_->finished; });
  if (state_->queue.empty()) return std::nullopt;
  RequestOutput output = std::move(state_->queue.front());
  state_->queue.pop_front();
  return output;
}

bool RequestStream::finished() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->finished;
}

void RequestStream::abort() {
  if (!state_) return;
  if (auto inbox = state_->inbox.lock()) inbox->abort(state_->id);
}

}  // namespace llaisys
