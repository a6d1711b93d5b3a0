#include "drain.hpp"

#include <utility>
#include <vector>

namespace llaisys::server {

Drain::Ticket& Drain::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    release();
    drain_ = std::exchange(other.drain_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

void Drain::Ticket::release() {
  if (Drain* drain = std::exchange(drain_, nullptr)) drain->release(id_);
}

Drain::Ticket Drain::admit(Cut cut) {
  std::lock_guard lock(mutex_);
  const uint64_t id = ++next_id_;
  in_flight_.emplace(id, std::move(cut));
  return Ticket(this, id);
}

void Drain::release(uint64_t id) {
  std::function<void()> idle;
  {
    std::lock_guard lock(mutex_);
    in_flight_.erase(id);
    if (in_flight_.empty() && on_idle_) idle = std::exchange(on_idle_, nullptr);
  }
  if (idle) idle();
}

bool Drain::begin(std::function<void()> on_idle) {
  std::function<void()> idle;
  {
    std::lock_guard lock(mutex_);
    if (draining_.exchange(true, std::memory_order_acq_rel)) return false;
    if (in_flight_.empty()) {
      idle = std::move(on_idle);
    } else {
      on_idle_ = std::move(on_idle);
    }
  }
  if (idle) idle();
  return true;
}

std::size_t Drain::cut_all() {
  std::vector<Cut> cuts;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, cut] : in_flight_) {
      if (cut) cuts.push_back(std::exchange(cut, nullptr));
    }
  }
  for (Cut& cut : cuts) cut();  // outside the lock: a cut may release (and so lock) synchronously
  return cuts.size();
}

int64_t Drain::in_flight() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(in_flight_.size());
}

}  // namespace llaisys::server
