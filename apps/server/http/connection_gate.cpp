#include "http/connection_gate.hpp"

namespace llaisys::server {

ConnectionGate::ConnectionGate(const ServerConfig& config)
    : max_connections_(config.max_connections),
      max_per_client_(config.max_connections_per_client),
      max_pending_heads_(config.max_pending_heads_per_client),
      max_body_bytes_in_flight_(config.max_body_bytes_in_flight) {}

ConnectionGate::Verdict ConnectionGate::admit_connection(const std::string& client) {
  const int32_t open = open_.fetch_add(1, std::memory_order_relaxed) + 1;
  ClientCount from_client;
  {
    std::lock_guard lock(mutex_);
    ClientCount& c = per_client_[client];
    ++c.open;
    ++c.pending_heads;
    from_client = c;
  }
  if (from_client.open > max_per_client_) return Verdict::over_client;
  if (open > max_connections_ + kReservedConnections) return Verdict::over_total;
  if (open > max_connections_) return Verdict::health_only;
  return from_client.pending_heads > max_pending_heads_ ? Verdict::crowded : Verdict::admitted;
}

void ConnectionGate::head_received(const std::string& client) {
  std::lock_guard lock(mutex_);
  const auto it = per_client_.find(client);
  if (it != per_client_.end() && it->second.pending_heads > 0) --it->second.pending_heads;
}

void ConnectionGate::release_connection(const std::string& client, bool head_pending) {
  open_.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  const auto it = per_client_.find(client);
  if (it == per_client_.end()) return;
  if (head_pending && it->second.pending_heads > 0) --it->second.pending_heads;
  if (--it->second.open <= 0) per_client_.erase(it);
}

bool ConnectionGate::reserve_body(int64_t bytes) {
  int64_t current = body_bytes_.load(std::memory_order_relaxed);
  do {
    if (current + bytes > max_body_bytes_in_flight_) return false;
  } while (!body_bytes_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

void ConnectionGate::release_body(int64_t bytes) { body_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

}  // namespace llaisys::server
