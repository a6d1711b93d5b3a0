#pragma once
// What the listener lets in, shared by every session: open connections (--max-connections, plus
// kReservedConnections that serve only GET /health, /ready and /metrics, so a monitor still gets an answer
// when the slots are taken),
// connections per client address (--max-connections-per-client, so that one address cannot take
// every slot), those of them still sending their first request head (--max-pending-heads-per-client:
// beyond it a connection gets a short header deadline, so a slow sender of headers holds few slots
// for long while a burst of fresh connections that send their heads at once is served) and
// request-body bytes being received at once (--max-body-bytes-in-flight, so that
// many large bodies cannot exhaust memory; a body's bytes are reserved from its head: its
// Content-Length, or --max-body-bytes when chunked). Thread-safe: sessions run on several threads.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server_config.hpp"

namespace llaisys::server {

class ConnectionGate {
 public:
  explicit ConnectionGate(const ServerConfig& config);

  // Connections beyond --max-connections that may still read a request head, to answer /health or
  // /metrics (anything else gets 503).
  static constexpr int32_t kReservedConnections = 16;
  // Beyond --max-pending-heads-per-client a connection's first head must arrive within this.
  static constexpr int64_t kCrowdedHeadTimeoutMs = 1000;
  // crowded: admitted, but its address has too many heads pending (kCrowdedHeadTimeoutMs).
  enum class Verdict { admitted, crowded, health_only, over_total, over_client };
  // Counts a new connection from `client`, its first request head still to come (whatever the
  // verdict: release_connection undoes it), and says whether it may be served.
  Verdict admit_connection(const std::string& client);
  // The connection's first request head has arrived: it no longer counts as pending.
  void head_received(const std::string& client);
  void release_connection(const std::string& client, bool head_pending);

  // Reserves `bytes` of the body budget; false, with nothing reserved, when they do not fit.
  bool reserve_body(int64_t bytes);
  void release_body(int64_t bytes);
  int64_t body_bytes_in_flight() const { return body_bytes_.load(std::memory_order_relaxed); }

 private:
  const int32_t max_connections_;
  const int32_t max_per_client_;
  const int32_t max_pending_heads_;
  const int64_t max_body_bytes_in_flight_;
  std::atomic<int32_t> open_{0};
  std::atomic<int64_t> body_bytes_{0};
  std::mutex mutex_;
  struct ClientCount {
    int32_t open = 0;
    int32_t pending_heads = 0;
  };
  std::unordered_map<std::string, ClientCount> per_client_;  // guarded by mutex_
};

}  // namespace llaisys::server
