#include "http/connection_gate.hpp"

namespace llaisys::server {

ConnectionGate::ConnectionGate(const ServerConfig& config)
    : max_connections_(config.max_connections),
      max_per_client_(config.max_connections_per_client),
      max_body_bytes_in_flight_(config.max_body_bytes_in_flight) {}

ConnectionGate::Verdict ConnectionGate::admit_connection(const std::string& client) {
  const int32_t open = open_.fetch_add(1, std::memory_order_relaxed) + 1;
  int32_t from_client = 0;
  {
    std::lock_guard lock(mutex_);
    from_client = ++per_client_[client];
  }
  if (from_client > max_per_client_) return Verdict::over_client;
  if (open > max_connections_ + kReservedConnections) return Verdict::over_total;
  if (open > max_connections_) return Verdict::health_only;
  return Verdict::admitted;
}

void ConnectionGate::release_connection(const std::string& client) {
  open_.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  const auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
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
