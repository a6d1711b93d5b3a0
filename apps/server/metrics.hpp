#pragma once
// Prometheus metrics (text format 0.0.4). Every per-model series is labelled model="<id>" (the vllm:
// copies model_name="<id>"); the server-wide series: llaisys_server_draining,
// llaisys_http_requests_in_flight and llaisys_http_requests_total{status}, which counts every HTTP response (also those
// refused before a model is known: malformed JSON, a bad key, unknown routes). Counters and
// histograms are recorded by the request handlers; gauges come from the engine's stats snapshot,
// which the engine refreshes after every step.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "llaisys/engine/llm_engine.hpp"

namespace llaisys::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // per bucket (not cumulative), +Inf last
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct MetricsSnapshot {
  std::map<int, uint64_t> requests_by_status;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  int64_t cached_prompt_tokens = 0;
  Histogram ttft{{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30}};
  Histogram itl{{0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                 0.75, 1, 2.5}};
  Histogram e2e{{0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 300}};
};

// Thread-safe recorder for one model.
class ModelMetrics {
 public:
  void count_request(int status);
  void add_tokens(int64_t prompt, int64_t generated, int64_t cached);
  void observe_ttft(double seconds);
  void observe_itl(double seconds, int count = 1);
  void observe_e2e(double seconds);
  MetricsSnapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  MetricsSnapshot data_;
};

// Inter-token latency, one observation per generated token after the first. Each delta with new
// tokens is timed by the engine's RequestTimes::last_token (when its step sampled them, not when the
// server sent them); the gap since the previous such delta is split evenly over the delta's new
// tokens per choice (a decode step gives every choice one token: one observation per step).
class TokenGapTracker {
 public:
  // Records the gaps `out` closes into `metrics`; returns the number of observations.
  int observe(const RequestOutput& out, ModelMetrics& metrics);

 private:
  RequestTimes::TimePoint previous_{};
};

// Server-wide HTTP responses by status (thread-safe).
class HttpMetrics {
 public:
  void count(int status);
  std::map<int, uint64_t> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<int, uint64_t> by_status_;
};

struct ModelMetricsView {
  std::string model;
  MetricsSnapshot metrics;
  std::optional<EngineStats> engine;  // absent while the model loads
};

// Server-wide gauges of the lifecycle (http/drain.hpp).
struct ServerGauges {
  bool draining = false;
  int64_t requests_in_flight = 0;
};

// The whole /metrics page: the llaisys_ series, then the same values under vLLM's names (vllm:*,
// label model_name) for routers, autoscalers and dashboards built for vLLM.
std::string render_prometheus(const std::vector<ModelMetricsView>& models,
                              const std::map<int, uint64_t>& http_by_status = {}, const ServerGauges& server = {});

// Prometheus label value escaping: backslash, double quote and newline.
std::string escape_label(std::string_view value);

}  // namespace llaisys::server
