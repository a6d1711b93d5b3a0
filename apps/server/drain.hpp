#pragma once
// Graceful shutdown. The first SIGTERM or SIGINT starts a drain: readiness (/ready) turns 503 so that
// load balancers and Kubernetes stop sending, new requests on connections still open are refused with
// 503 + Retry-After (a load balancer retries them on another replica), and the requests in flight
// finish. The server exits once none is left; at --drain-timeout the ones still running are cut
// (a clean end: an SSE error event and [DONE], or a 503 body) and it exits when they are answered.
//
// What is "in flight" is counted by the transport: every request it hands to ServerApp takes a
// Ticket, released when its response is complete (or its connection is gone); the ticket's cut is
// how the drain timeout reaches the request's job. Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace llaisys::server {

class Drain {
 public:
  // Called at most once, from the thread that calls cut_all(); it must only post work elsewhere.
  using Cut = std::function<void()>;

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : drain_(other.drain_), id_(other.id_) { other.drain_ = nullptr; }
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }
    // The request's response is complete, or its connection is gone.
    void release();
    bool held() const { return drain_ != nullptr; }

   private:
    friend class Drain;
    Ticket(Drain* drain, uint64_t id) : drain_(drain), id_(id) {}
    Drain* drain_ = nullptr;
    uint64_t id_ = 0;
  };

  Ticket admit(Cut cut);
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  // Starts the drain (false when it had started already). `on_idle` runs once no request is in
  // flight: here when none is, else on the thread that releases the last ticket.
  bool begin(std::function<void()> on_idle);
  // The drain timeout: every request still in flight gets its cut; returns how many.
  std::size_t cut_all();
  int64_t in_flight() const;

 private:
  void release(uint64_t id);

  mutable std::mutex mutex_;
  std::atomic<bool> draining_{false};
  uint64_t next_id_ = 0;
  std::unordered_map<uint64_t, Cut> in_flight_;  // guarded by mutex_
  std::function<void()> on_idle_;                 // guarded by mutex_; emptied when it has run
};

}  // namespace llaisys::server
